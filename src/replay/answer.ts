/**
 * The answer builder: a recorded call back into what MCEC sent, a CallToolResult on its real wire. The images
 * the recorder took out are read from `artifacts/` and put back byte for byte where they were (the capture
 * object's `base64` in MCEC's key order, the image block first), host-file copies the recorder added are
 * taken out again, and the envelope is written with the server's escaping (src/wire/json-text.ts).
 */
import path from 'node:path';
import { JSON_MARKER, parsePointer } from '../contract/image-bytes.js';
import { windowsNameProblem } from '../paths/naming.js';
import { readRegularFile } from '../util/file-stat.js';
import { isRecord } from '../util/json.js';
import { serializeWire } from '../wire/json-text.js';
import type { CallToolResult, ContentBlock } from '../wire/mcp-types.js';
import { holdsRedaction } from './matcher.js';
import type { RecordedCall } from './recording.js';

/** A rebuilt answer and what went into it. */
export interface BuiltAnswer {
  result: CallToolResult;
  /** The envelope as served (images restored), for the replay's own bookkeeping. */
  envelope: Record<string, unknown>;
  /** Images put back from artifacts/. */
  restored: number;
  /** Images the recording took out but whose file is missing or was never written: left as summaries. */
  missing: string[];
  /** JSON pointers of envelope strings that hold a redaction (`[redacted]`, `[typed text: N chars]`). */
  redactions: string[];
}

/** Roles whose bytes the recorder took out of the envelope (host-* roles only name files on the MCEC host). */
const INLINE_ROLES = new Set(['result', 'partialResult', 'lastObservation', 'nested']);
/** Keys the recorder adds beside a host path; MCEC never sends them. */
const COPY_KEYS = ['artifactCopy', 'artifactCopyError', 'fileCopy', 'fileCopyError'];
/** Keys of a capture-summary that are the recorder's, not the capture's. */
const SUMMARY_ONLY = new Set([
  'kind',
  'artifact',
  'artifactError',
  'sha256',
  'notRaster',
  'dataUri',
  ...COPY_KEYS,
]);

/** The largest image file put back into an answer: the proxy records no answer over 256 MiB (`--max-record-bytes`). */
const MAX_ARTIFACT_BYTES = 256 * 1024 * 1024;

/** Base64 characters of images kept between calls: the cache held every image a replay ever served. */
export const MAX_CACHED_BASE64_CHARS = 256 * 1024 * 1024;

/**
 * Reads artifact files once per replay (many calls share one image), keeping at most
 * `MAX_CACHED_BASE64_CHARS` of them, the least recently used let go first: a session of a thousand 5 MB
 * captures (or a bundle's 2 GiB) would otherwise stay in memory as base64 for the replay's life.
 */
export class ArtifactFiles {
  private readonly cache = new Map<string, string | null>();
  private chars = 0;
  constructor(private readonly sessionDir: string) {}

  /** Base64 characters held now (for tests). */
  get cachedChars(): number {
    return this.chars;
  }

  /** The file's bytes as base64, or null when it is missing or outside the session dir. */
  base64(relative: string): string | null {
    if (this.cache.has(relative)) {
      const hit = this.cache.get(relative)!;
      this.cache.delete(relative); // most recently used last
      this.cache.set(relative, hit);
      return hit;
    }
    let out: string | null = null;
    const parts = relative.split(/[\\/]/);
    // Only files inside the session's own artifacts/ (a log from a bundle is not trusted with paths), named
    // as Windows keeps them (`windowsNameProblem` also refuses `.` and `..`): `a.png:x` would read a stream.
    const name = parts.length === 2 && parts[0] === 'artifacts' ? parts[1]! : '';
    if (name !== '' && windowsNameProblem(name) === null) {
      try {
        // A regular file only: a symlink (a session dir unpacked from a tar) would serve any file of this
        // machine to the replay's clients, a FIFO would block every client for ever.
        out = readRegularFile(path.join(this.sessionDir, 'artifacts', name), MAX_ARTIFACT_BYTES).toString(
          'base64',
        );
      } catch {
        out = null;
      }
    }
    this.keep(relative, out);
    return out;
  }

  private keep(relative: string, out: string | null): void {
    const size = out?.length ?? 0;
    if (size > MAX_CACHED_BASE64_CHARS) return;
    for (const [key, value] of this.cache) {
      if (this.chars + size <= MAX_CACHED_BASE64_CHARS) break;
      this.cache.delete(key);
      this.chars -= value?.length ?? 0;
    }
    this.cache.set(relative, out);
    this.chars += size;
  }
}

/** Split a pointer into levels: the path in the value, then one more per nested JSON string. */
function levelsOf(pointer: string): string[][] {
  const levels: string[][] = [[]];
  for (const seg of parsePointer(pointer)) {
    if (seg === JSON_MARKER) levels.push([]);
    else levels[levels.length - 1]!.push(seg);
  }
  return levels;
}

function getAt(root: unknown, segs: readonly string[]): unknown {
  let cur = root;
  for (const s of segs) {
    if (Array.isArray(cur)) cur = cur[Number(s)];
    else if (isRecord(cur) && Object.hasOwn(cur, s)) cur = cur[s];
    else return undefined;
  }
  return cur;
}

function setAt(root: unknown, segs: readonly string[], value: unknown): void {
  const parent = getAt(root, segs.slice(0, -1));
  const key = segs[segs.length - 1]!;
  if (Array.isArray(parent)) parent[Number(key)] = value;
  else if (isRecord(parent)) Object.defineProperty(parent, key, { value, enumerable: true, writable: true });
}

/**
 * A capture object from its summary and bytes, in MCEC's key order: a window capture is `handle, width,
 * height, encoding, bytes, base64, window, blankCheck, file?`, a region `encoding, width, height, bytes,
 * base64, blankCheck, file?` (mcec-wire §2).
 */
export function captureFromSummary(summary: Record<string, unknown>, key: string, base64: string) {
  const out: Record<string, unknown> = {};
  const copy = (k: string) => {
    if (Object.hasOwn(summary, k)) out[k] = summary[k];
  };
  const windowed = Object.hasOwn(summary, 'handle') || Object.hasOwn(summary, 'window');
  if (windowed) {
    for (const k of ['handle', 'width', 'height', 'encoding', 'bytes']) copy(k);
    out[key] = base64;
    copy('window');
  } else {
    for (const k of ['encoding', 'width', 'height', 'bytes']) copy(k);
    out[key] = base64;
  }
  copy('blankCheck');
  for (const [k, v] of Object.entries(summary))
    if (!Object.hasOwn(out, k) && !SUMMARY_ONLY.has(k)) out[k] = v;
  return out;
}

/** Put one image back at `levels` inside `doc` (nested JSON strings parsed, restored and re-serialized). */
function restoreAt(doc: unknown, levels: string[][], base64: string): boolean {
  const segs = levels[0]!;
  if (levels.length > 1) {
    const text = getAt(doc, segs);
    if (typeof text !== 'string') return false;
    let inner: unknown;
    try {
      inner = JSON.parse(text);
    } catch {
      return false;
    }
    if (!restoreAt(inner, levels.slice(1), base64)) return false;
    setAt(doc, segs, serializeWire(inner));
    return true;
  }
  const here = getAt(doc, segs);
  // A bare base64 string or data: URI was replaced by a summary in its own place.
  if (isRecord(here) && here.kind === 'capture-summary') {
    // A data: URI comes back whole (its `data:<type>;base64,` recorded as dataUri), not as bare base64.
    setAt(doc, segs, typeof here.dataUri === 'string' ? `data:${here.dataUri},${base64}` : base64);
    return true;
  }
  const parentSegs = segs.slice(0, -1);
  const parent = getAt(doc, parentSegs);
  if (!isRecord(parent) || parent.kind !== 'capture-summary' || segs.length === 0) return false;
  const rebuilt = captureFromSummary(parent, segs[segs.length - 1]!, base64);
  if (parentSegs.length === 0) return false;
  setAt(doc, parentSegs, rebuilt);
  return true;
}

/** Drop the keys the recorder added beside a host path (`artifactCopy`, ...). */
function dropCopyKeys(doc: unknown, pointer: string): void {
  const levels = levelsOf(pointer);
  if (levels.length !== 1) return;
  const container = getAt(doc, levels[0]!.slice(0, -1));
  if (!isRecord(container)) return;
  for (const k of COPY_KEYS) delete container[k];
}

/** JSON pointers of strings in `value` that hold a redaction (bounded walk). */
export function redactionPointers(value: unknown, limit = 50): string[] {
  const out: string[] = [];
  const stack: Array<[unknown, string]> = [[value, '']];
  let visited = 0;
  while (stack.length > 0 && out.length < limit && visited < 200_000) {
    const [v, p] = stack.pop()!;
    visited++;
    if (typeof v === 'string') {
      if (holdsRedaction(v) || v.includes('[image bytes: ~')) out.push(p);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${p}/${i}`]);
    } else if (isRecord(v)) {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i]!;
        stack.push([child, `${p}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`]);
      }
    }
  }
  return out;
}

/** The content array of a stored response shape: a CallToolResult's, or a JSON-RPC result's. */
function contentOf(response: unknown): unknown[] | null {
  if (!isRecord(response)) return null;
  if (Array.isArray(response.content)) return response.content;
  if (isRecord(response.result) && Array.isArray(response.result.content)) return response.result.content;
  return null;
}

function isErrorOf(response: unknown, envelope: Record<string, unknown>): boolean {
  if (isRecord(response)) {
    if (typeof response.isError === 'boolean') return response.isError;
    if (isRecord(response.result) && typeof response.result.isError === 'boolean')
      return response.result.isError;
  }
  return envelope.ok !== true;
}

/** The envelope of a recorded call with its images back, and the copies the recorder added taken out. */
export function restoreEnvelope(
  call: RecordedCall,
  files: ArtifactFiles,
): { envelope: Record<string, unknown>; restored: number; missing: string[] } {
  const envelope = structuredClone(call.envelope ?? {});
  let restored = 0;
  const missing: string[] = [];
  // Deepest first, as they were taken out: a container never hides a deeper location.
  const rows = call.artifacts
    .filter((a) => a.json_path !== null)
    .sort((a, b) => b.json_path!.length - a.json_path!.length);
  for (const row of rows) {
    const pointer = row.json_path!;
    if (row.role.startsWith('host-')) {
      dropCopyKeys(envelope, pointer);
      continue;
    }
    if (!INLINE_ROLES.has(row.role)) continue;
    const base64 = row.path ? files.base64(row.path) : null;
    if (base64 === null) {
      missing.push(
        `${pointer}: ${row.path ? `artifact ${row.path} is missing` : (row.error ?? 'not written')}`,
      );
      continue;
    }
    if (restoreAt(envelope, levelsOf(pointer), base64)) restored++;
    else missing.push(`${pointer}: no capture-summary there to restore`);
  }
  return { envelope, restored, missing };
}

/** A recorded call as MCEC's CallToolResult: image blocks first (restored), the envelope text last. */
export function buildAnswer(
  call: RecordedCall,
  files: ArtifactFiles,
  mapSession: (recorded: string) => string = (id) => id,
): BuiltAnswer {
  const { envelope, restored: inEnvelope, missing } = restoreEnvelope(call, files);
  renameSession(envelope, call, mapSession);
  let restored = inEnvelope;
  const content: ContentBlock[] = [];
  const stored = contentOf(call.response);
  const text = serializeWire(envelope);
  if (stored) {
    const blockRows = call.artifacts.filter((a) => a.role === 'image-block' && a.json_path);
    stored.forEach((block, i) => {
      if (!isRecord(block)) return;
      if (block.type === 'image') {
        const row = blockRows.find((r) => r.json_path!.endsWith(`/content/${i}/data`));
        const data = row?.path ? files.base64(row.path) : null;
        if (data === null) {
          missing.push(
            `/content/${i}/data: ${row?.path ? `artifact ${row.path} is missing` : 'not written'}`,
          );
          return;
        }
        restored++;
        content.push({
          type: 'image',
          data,
          mimeType: (typeof block.mimeType === 'string' ? block.mimeType : 'image/png') as 'image/png',
        });
      } else if (block.type === 'text') {
        content.push({ type: 'text', text: block.text === '[envelope]' ? text : String(block.text ?? '') });
      }
    });
    // The envelope is always the last block on MCEC's wire.
    const last = content[content.length - 1];
    if (last?.type !== 'text' || last.text !== text) content.push({ type: 'text', text });
  } else {
    // A bare envelope was recorded: MCEC sends an image block only for a successful inline capture.
    const result = isRecord(envelope.result) ? envelope.result : null;
    if (envelope.ok === true && typeof result?.base64 === 'string' && call.tool === 'capture')
      content.push({ type: 'image', data: result.base64, mimeType: 'image/png' });
    content.push({ type: 'text', text });
  }
  return {
    result: { content, isError: isErrorOf(call.response, envelope) },
    envelope,
    restored,
    missing,
    redactions: redactionPointers(call.envelope),
  };
}

/** Stamp the live session id where MCEC writes the session: the envelope and session-* results. */
function renameSession(
  envelope: Record<string, unknown>,
  call: RecordedCall,
  mapSession: (recorded: string) => string,
): void {
  const recorded = envelope.sessionId;
  if (typeof recorded !== 'string') return;
  const live = mapSession(recorded);
  if (live === recorded) return;
  envelope.sessionId = live;
  const result = envelope.result;
  if (call.tool.startsWith('session-') && isRecord(result) && result.sessionId === recorded)
    result.sessionId = live;
}

/** An MCEC failure as a CallToolResult: `{ok:false, sessionId, warnings?, error}`, isError true. */
export function failureAnswer(
  sessionId: string | null,
  error: Record<string, unknown>,
  warnings?: unknown[],
): { result: CallToolResult; envelope: Record<string, unknown> } {
  const envelope: Record<string, unknown> = { ok: false, sessionId };
  if (warnings && warnings.length > 0) envelope.warnings = warnings;
  envelope.error = error;
  return { result: { content: [{ type: 'text', text: serializeWire(envelope) }], isError: true }, envelope };
}

/**
 * A recorded call of a server that is not MCEC: its CallToolResult as the server sent it (every content
 * block, structuredContent, isError), image blocks' bytes put back from artifacts/; no MCEC envelope is added.
 * `envelope` is the recorder's reading of it (ok and code), for the replay's report only.
 */
export function buildPlainAnswer(call: RecordedCall, files: ArtifactFiles): BuiltAnswer {
  const response = isRecord(call.response) ? call.response : {};
  const stored = isRecord(response.result)
    ? response.result
    : Array.isArray(response.content)
      ? response
      : {};
  const result = structuredClone(stored) as Record<string, unknown>;
  const missing: string[] = [];
  let restored = 0;
  const blockRows = call.artifacts.filter((a) => a.role === 'image-block' && a.json_path);
  const content = Array.isArray(result.content) ? result.content : [];
  content.forEach((block, i) => {
    if (!isRecord(block) || block.summary === undefined || typeof block.data === 'string') return;
    const row = blockRows.find((r) => r.json_path!.endsWith(`/content/${i}/data`));
    const data = row?.path ? files.base64(row.path) : null;
    if (data === null) {
      missing.push(`/content/${i}/data: ${row?.path ? `artifact ${row.path} is missing` : 'not written'}`);
      return;
    }
    delete block.summary;
    block.data = data;
    restored++;
  });
  // A CreateTaskResult (a task-augmented call's answer) has no content: none is added to it.
  if (Array.isArray(result.content) || !isRecord(result.task)) result.content = content;
  // An image the recorder found elsewhere in the result (an embedded resource's blob, structuredContent): its
  // summary replaced the base64 in place. Pointers are into the recorded output, the JSON-RPC response.
  const underResult = isRecord(response.result);
  for (const row of call.artifacts) {
    if (row.role === 'image-block' || !INLINE_ROLES.has(row.role) || row.json_path === null) continue;
    const pointer = underResult ? row.json_path.replace(/^\/result(?=\/|$)/, '') : row.json_path;
    const base64 = row.path ? files.base64(row.path) : null;
    if (base64 === null) {
      missing.push(
        `${pointer}: ${row.path ? `artifact ${row.path} is missing` : (row.error ?? 'not written')}`,
      );
      continue;
    }
    if (restoreAt(result, levelsOf(pointer), base64)) restored++;
    else missing.push(`${pointer}: no capture-summary there to restore`);
  }
  const envelope = call.envelope ?? { ok: result.isError !== true };
  return {
    result: result as unknown as CallToolResult,
    envelope,
    restored,
    missing,
    redactions: redactionPointers(stored),
  };
}
