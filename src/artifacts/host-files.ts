/**
 * Evidence that exists only as files on the MCEC host (mcec-wire §8): path-only captures (`artifact`), capture
 * `file`, `record` GIFs (`file`) and the server's own capture-summary `artifact` in a `lastObservation`. When
 * such a path is readable here (directly, or through a `hostPathMap` entry), the file is copied into the
 * session's `artifacts/` by the ArtifactStore (one file per sha256, within its budget) and referenced.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { formatPointer, sniffImageFormat } from '../contract/image-bytes.js';
import type { BlankCheck } from '../contract/types.js';
import { WINDOWS_DEVICE_NAME } from '../paths/naming.js';
import { NO_FOLLOW_NO_BLOCK } from '../util/file-stat.js';
import { isRecord } from '../util/json.js';
import { type ArtifactStore, failed, type SavedImage } from './artifact-store.js';
import type { CompactResult, ImageMasker, MaskFacts } from './compact.js';
import { cloneJson, getAt } from './json-pointer.js';

/** Where a host file was named: a path-only capture, a capture's `file`, a `record` GIF, the server's observation. */
export type HostFileRole = 'host-capture' | 'host-capture-file' | 'host-recording' | 'host-observation';

/** One path on the MCEC host named by an envelope. */
export interface HostFileRef {
  /** JSON pointer of the string in the envelope, e.g. `/result/artifact`. */
  jsonPath: string;
  /** Segments of the object holding it. */
  container: string[];
  key: 'artifact' | 'file';
  hostPath: string;
  role: HostFileRole;
}

/** One host file's fate: a SavedImage (a copy, or why not) plus where it lies on the MCEC host. */
export interface CollectedHostFile extends SavedImage, MaskFacts {
  role: HostFileRole;
  jsonPath: string;
  hostPath: string;
}

/** One `hostPathMap` entry: a folder as the MCEC host names it, and where it is readable here. */
export interface HostPathMapping {
  from: string;
  to: string;
}

export interface HostFileOptions {
  /** Copy readable host files into the session (default true). */
  enabled?: boolean;
  /** Longest matching `from` wins; win32 `from` prefixes match case-insensitively with either separator. */
  pathMap?: readonly HostPathMapping[];
  /** Largest file copied (default 64 MiB); bigger ones are refused before any byte is read. */
  maxFileBytes?: number;
  /** Platform whose native absolute paths are read directly (default process.platform; a test seam). */
  platform?: NodeJS.Platform;
}

/** Default largest host file copied: 64 MiB (a 60 s full-screen GIF fits; a 4K PNG is under 30 MB). */
export const DEFAULT_MAX_HOST_FILE_BYTES = 64 * 1024 * 1024;

/** How deep and how wide the envelope walk looks (paths sit at depth 2-4; a UIA tree is not searched). */
const MAX_DEPTH = 6;
const MAX_NODES = 5000;
const MAX_REFS = 16;
const MAX_PATH_CHARS = 1024;
/** Bytes read first, to refuse a file by its magic bytes before reading the rest. */
const MAGIC_BYTES = 16;
/** `C:\\...`, `C:/...`, or a UNC / device path (`\\\\server\\share`, `\\\\.\\...`: the latter refused later). */
const WIN32_ABSOLUTE = /^(?:[A-Za-z]:[\\/]|[\\/]{2}[^\\/])/;

/** A path the MCEC host (or a simulator on this machine) could have written: win32 or posix absolute. */
export function looksLikeHostPath(v: unknown): v is string {
  if (typeof v !== 'string' || v.length < 2 || v.length > MAX_PATH_CHARS) return false;
  return WIN32_ABSOLUTE.test(v) || (v.startsWith('/') && !v.startsWith('//'));
}

function roleOf(container: string[], key: 'artifact' | 'file', obj: Record<string, unknown>, tool: string) {
  if (container.includes('lastObservation')) return 'host-observation';
  if (key === 'artifact') return 'host-capture';
  return tool === 'record' || 'frames' in obj ? 'host-recording' : 'host-capture-file';
}

/**
 * The host paths an envelope names: string `artifact` / `file` values that are absolute paths, in objects
 * within a few levels of the top (result, partialResult, lastObservation, session-status's lastObservation).
 * The recorder's own relative `artifacts/...` paths are not host paths.
 */
export function findHostFiles(envelope: unknown, tool: string): HostFileRef[] {
  const refs: HostFileRef[] = [];
  if (!isRecord(envelope)) return refs;
  let nodes = 0;
  const stack: Array<[unknown, string[]]> = [[envelope, []]];
  while (stack.length > 0 && nodes < MAX_NODES && refs.length < MAX_REFS) {
    const [value, at] = stack.pop()!;
    nodes += 1;
    if (Array.isArray(value)) {
      if (at.length < MAX_DEPTH)
        for (let i = Math.min(value.length, 64) - 1; i >= 0; i--) stack.push([value[i], [...at, String(i)]]);
      continue;
    }
    if (!isRecord(value)) continue;
    for (const key of ['artifact', 'file'] as const) {
      const v = value[key];
      if (Object.hasOwn(value, key) && looksLikeHostPath(v) && refs.length < MAX_REFS) {
        refs.push({
          jsonPath: formatPointer([...at, key]),
          container: at,
          key,
          hostPath: v,
          role: roleOf(at, key, value, tool),
        });
      }
    }
    if (at.length >= MAX_DEPTH) continue;
    // UIA trees and window lists cannot name evidence files: not walked.
    for (const k of Object.keys(value).reverse()) {
      if (k === 'tree' || k === 'windows' || k === 'children') continue;
      const child = value[k];
      if (typeof child === 'object' && child !== null) stack.push([child, [...at, k]]);
    }
  }
  return refs.sort((a, b) => (a.jsonPath < b.jsonPath ? -1 : a.jsonPath > b.jsonPath ? 1 : 0));
}

/** Why a host path is refused as written (before any mapping or file system access), or undefined. */
function refusedAsWritten(hostPath: string): string | undefined {
  if (hostPath.includes('\0')) return 'refused: the path holds a NUL character';
  const win = WIN32_ABSOLUTE.test(hostPath);
  if (win && /^[\\/]{2}[.?][\\/]/.test(hostPath)) return 'refused: a Windows device path';
  const parts = hostPath.split(win ? /[\\/]+/ : /\/+/);
  if (parts.some((p) => p === '..' || p === '.')) return 'refused: the path has a ".." or "." segment';
  if (win) {
    // A colon past the drive letter names an alternate data stream.
    if (hostPath.indexOf(':', 2) !== -1)
      return 'refused: a colon past the drive letter (an alternate data stream)';
    if (parts.some((p) => WINDOWS_DEVICE_NAME.test(p))) return 'refused: a Windows device name';
  }
  return undefined;
}

function trimSeparators(p: string): string {
  return p.replace(/[\\/]+$/, '');
}

/**
 * Where a host path is readable here: through the longest matching `pathMap` entry (then `root` is the
 * entry's `to`, and the file must stay inside it), else as is when it is a native absolute path of this
 * platform; `{error}` otherwise.
 */
export function resolveHostPath(
  hostPath: string,
  options: Pick<HostFileOptions, 'pathMap' | 'platform'> = {},
): { local: string; root?: string } | { error: string } {
  const refused = refusedAsWritten(hostPath);
  if (refused) return { error: refused };
  const win = WIN32_ABSOLUTE.test(hostPath);
  const entries = [...(options.pathMap ?? [])].sort((a, b) => b.from.length - a.from.length);
  for (const { from, to } of entries) {
    if (!from || !to) continue;
    const fromWin = WIN32_ABSOLUTE.test(from);
    if (fromWin !== win) continue;
    const norm = (p: string) => (win ? p.replaceAll('/', '\\').toLowerCase() : p);
    const prefix = trimSeparators(norm(from));
    const candidate = norm(hostPath);
    if (candidate.length !== hostPath.length) continue; // a case fold that changed lengths: no safe slice
    const sep = win ? '\\' : '/';
    if (candidate !== prefix && !candidate.startsWith(prefix + sep)) continue;
    const rest = hostPath
      .slice(prefix.length)
      .split(win ? /[\\/]+/ : /\/+/)
      .filter(Boolean);
    const root = path.resolve(to);
    return { local: path.join(root, ...rest), root };
  }
  const platform = options.platform ?? process.platform;
  if (win && platform === 'win32') return { local: hostPath };
  if (!win && platform !== 'win32') return { local: hostPath };
  return {
    error: win
      ? 'not readable from this machine: a Windows path with no --host-path-map entry for it'
      : 'not readable from this machine: a POSIX path on a Windows recorder',
  };
}

function errorText(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'not found from this machine';
  if (code === 'EACCES' || code === 'EPERM') return `not readable from this machine (${code})`;
  if (code === 'ELOOP') return 'refused: a symbolic link';
  const msg = err instanceof Error ? err.message.split('\n', 1)[0]!.slice(0, 200) : String(err).slice(0, 200);
  return code && !msg.startsWith(code) ? `${code}: ${msg}` : msg;
}

/** A host file read safely: a regular file, within the size limit, beginning like an image. */
async function readHostFile(
  local: string,
  root: string | undefined,
  maxBytes: number,
): Promise<{ buf: Buffer; identity: string } | { error: string }> {
  const before = await fsp.lstat(local);
  if (before.isSymbolicLink()) return { error: 'refused: a symbolic link' };
  if (before.isDirectory()) return { error: 'refused: a directory, not a file' };
  if (!before.isFile()) return { error: 'refused: not a regular file (a device, FIFO or socket)' };
  if (root !== undefined) {
    // Through a mapping the file must stay inside the mapped folder, whatever links lie on the way.
    const [real, realRoot] = await Promise.all([fsp.realpath(local), fsp.realpath(root)]);
    const rel = path.relative(realRoot, real);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel))
      return { error: 'refused: resolves outside the mapped folder' };
  }
  const handle = await fsp.open(local, NO_FOLLOW_NO_BLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { error: 'refused: not a regular file' };
    if (st.ino !== before.ino || st.dev !== before.dev)
      return { error: 'refused: the file changed while it was opened' };
    if (st.size === 0) return { error: 'refused: an empty file' };
    if (st.size > maxBytes)
      return { error: `refused: ${st.size} bytes is over the per-file limit (${maxBytes} bytes)` };
    const size = st.size;
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    // The magic bytes first: anything that is not a recognised image is refused before the rest is read.
    while (got < Math.min(MAGIC_BYTES, size)) {
      const { bytesRead } = await handle.read(buf, got, Math.min(MAGIC_BYTES, size) - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    if (!sniffImageFormat(buf.subarray(0, got)))
      return { error: 'refused: not a recognised image (unrecognised magic bytes)' };
    while (got < size) {
      const { bytesRead } = await handle.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    if (got !== size) return { error: 'refused: the file shrank while it was read' };
    return { buf, identity: `${st.dev}:${st.ino}:${size}:${st.mtimeMs}` };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function declaredBlankCheck(v: unknown): BlankCheck | undefined {
  if (!isRecord(v)) return undefined;
  const f = v.dominantFraction;
  if (typeof v.blank !== 'boolean' || typeof f !== 'number' || !(f >= 0 && f <= 1)) return undefined;
  return { blank: v.blank, dominantFraction: f, dominantIsDark: v.dominantIsDark === true };
}

/** Copies the host files envelopes name into each session's ArtifactStore; never throws. */
export class HostFileCollector {
  readonly enabled: boolean;
  private readonly options: HostFileOptions;
  private readonly maxFileBytes: number;
  /** Per store: saves by file identity (device, inode, size, mtime), so a path named again is not re-read. */
  private readonly seen = new WeakMap<ArtifactStore, Map<string, Promise<SavedImage>>>();

  constructor(options: HostFileOptions = {}) {
    this.options = options;
    this.enabled = options.enabled !== false;
    this.maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_HOST_FILE_BYTES;
  }

  /** The host paths in an envelope (none when copying is off). */
  find(envelope: unknown, tool: string): HostFileRef[] {
    return this.enabled ? findHostFiles(envelope, tool) : [];
  }

  /**
   * Copy each referenced file into `store` and return a copy of `envelope` whose containers also carry
   * `<key>Copy` (the copy, relative to the session dir) or `<key>CopyError` (why not), the original path kept.
   */
  async collect(
    envelope: unknown,
    refs: readonly HostFileRef[],
    store: ArtifactStore,
    masker?: ImageMasker,
  ): Promise<{ value: unknown; files: CollectedHostFile[] }> {
    const value = cloneJson(envelope);
    const files: CollectedHostFile[] = [];
    for (const ref of refs) {
      let saved: SavedImage & MaskFacts;
      try {
        saved = await this.copy(ref, getAt(value, ref.container), store, masker);
      } catch (err) {
        saved = failed(`artifact store failure: ${errorText(err)}`, 'store');
      }
      files.push({ ...saved, role: ref.role, jsonPath: ref.jsonPath, hostPath: ref.hostPath });
      const container = getAt(value, ref.container);
      if (isRecord(container)) {
        if (saved.path && saved.error === undefined) container[`${ref.key}Copy`] = saved.path;
        else container[`${ref.key}CopyError`] = saved.error ?? 'not copied';
        // The copy's masks beside it (a capture-summary's own `masked` when the container is one).
        if (saved.masked?.length) {
          container.masked = saved.masked;
          if (saved.maskedOnExport) container.maskedOnExport = true;
        }
      }
    }
    return { value, files };
  }

  /**
   * `compacted` (the envelope after inline images were compacted, or the envelope itself) with the host files
   * copied and referenced: their records appended to `images`.
   */
  async addTo(
    compacted: CompactResult | undefined,
    envelope: unknown,
    refs: readonly HostFileRef[],
    store: ArtifactStore,
    masker?: ImageMasker,
  ): Promise<CompactResult> {
    const { value, files } = await this.collect(compacted ? compacted.value : envelope, refs, store, masker);
    return {
      value,
      images: [...(compacted?.images ?? []), ...files],
      violations: compacted?.violations ?? [],
    };
  }

  private async copy(
    ref: HostFileRef,
    container: unknown,
    store: ArtifactStore,
    masker?: ImageMasker,
  ): Promise<SavedImage & MaskFacts> {
    const where = resolveHostPath(ref.hostPath, this.options);
    if ('error' in where) return failed(where.error, 'refused');
    let read: Awaited<ReturnType<typeof readHostFile>>;
    try {
      read = await readHostFile(where.local, where.root, this.maxFileBytes);
    } catch (err) {
      return failed(errorText(err), 'refused');
    }
    if ('error' in read) return failed(read.error, 'refused');
    let bySession = this.seen.get(store);
    if (!bySession) {
      bySession = new Map();
      this.seen.set(store, bySession);
    }
    const earlier = bySession.get(read.identity);
    if (earlier) {
      const first = await earlier;
      if (first.failure !== 'disk') return { ...first, deduplicated: true };
    }
    const known = isRecord(container) ? declaredBlankCheck(container.blankCheck) : undefined;
    const pending = this.maskThenSave(
      read.buf,
      isRecord(container) ? container : undefined,
      ref,
      store,
      known,
      masker,
    );
    bySession.set(read.identity, pending);
    return pending;
  }

  /** The file's bytes through the masker (when there is one), then saved; a refusal saves nothing. */
  private async maskThenSave(
    buf: Buffer,
    container: Record<string, unknown> | undefined,
    ref: HostFileRef,
    store: ArtifactStore,
    known: BlankCheck | undefined,
    masker: ImageMasker | undefined,
  ): Promise<SavedImage & MaskFacts> {
    if (!masker) return this.save(buf, store, ref.role, known);
    const mask = await masker({ bytes: buf, ...(container ? { container } : {}), role: ref.role });
    if (mask.refuse !== undefined)
      return { ...failed(mask.refuse, 'refused'), ...(mask.masked ? { masked: mask.masked } : {}) };
    const saved: SavedImage & MaskFacts = await this.save(mask.bytes ?? buf, store, ref.role, known);
    if (mask.masked?.length) {
      saved.masked = mask.masked;
      if (mask.onExport) saved.maskedOnExport = true;
    }
    return saved;
  }

  private async save(
    buf: Buffer,
    store: ArtifactStore,
    role: HostFileRole,
    known: BlankCheck | undefined,
  ): Promise<SavedImage> {
    const saved = await store.save(buf, {
      ...(known ? { knownBlankCheck: known } : {}),
      namePrefix: role === 'host-recording' || sniffImageFormat(buf) === 'gif' ? 'recording' : 'capture',
    });
    // blankCheck only when the envelope declared none; never for a GIF (a recording is not one frame).
    if (!saved.blankCheck && !known && saved.format !== 'gif' && saved.path && saved.sha256) {
      const computed = await store.ensureBlankCheck(saved.sha256, buf);
      if (computed) saved.blankCheck = computed;
    }
    return saved;
  }
}
