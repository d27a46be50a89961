/**
 * Pure helpers about what a dispatch returned: a cheap success check for the critical path, the agent's value
 * rebuilt in the same shape with a changed envelope, the failure for a throwing dispatch, and which failures
 * get the last good observation (mcec-wire §3).
 */
import path from 'node:path';
import { META_TOOLS, REFUSAL_CODES } from '../contract/tool-catalog.js';
import type { Envelope, ToolError, ToolOutput, ToolOutputKind } from '../contract/types.js';
import { isRecord } from '../util/json.js';

/** The transport shape a dispatch returns; a thrown dispatch's failure is given back in the same shape. */
export type OutputShape = 'envelope' | 'call-tool-result' | 'json-rpc' | 'legacy' | 'other';

/**
 * What can be told about an output without parsing it: its shape, and `ok` when a flag says so
 * (`isError` of a CallToolResult, `ok` of a bare envelope, `success` of a legacy CommandResult).
 */
export function quickOutcome(v: unknown): { shape: OutputShape; ok: boolean | undefined } {
  if (!isRecord(v)) return { shape: 'other', ok: undefined };
  if (Array.isArray(v.content))
    return { shape: 'call-tool-result', ok: typeof v.isError === 'boolean' ? !v.isError : undefined };
  if (typeof v.ok === 'boolean') return { shape: 'envelope', ok: v.ok };
  if (v.jsonrpc !== undefined) {
    const r = v.result;
    if (isRecord(r) && Array.isArray(r.content))
      return { shape: 'json-rpc', ok: typeof r.isError === 'boolean' ? !r.isError : undefined };
    return { shape: 'json-rpc', ok: undefined };
  }
  if (typeof v.success === 'boolean') return { shape: 'legacy', ok: v.success };
  return { shape: 'other', ok: undefined };
}

/** Index of the last text block of a CallToolResult (where the envelope is), or -1. */
export function envelopeBlockIndex(result: Record<string, unknown>): number {
  const content = result.content;
  if (!Array.isArray(content)) return -1;
  for (let i = content.length - 1; i >= 0; i -= 1) {
    const b = content[i];
    if (isRecord(b) && b.type === 'text') return i;
  }
  return -1;
}

/** A CallToolResult carrying `envelope` as its only block. */
export function callToolResultOf(envelope: Envelope): Record<string, unknown> {
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: !envelope.ok };
}

/**
 * The raw output with its envelope's `error.lastObservation` set, in the same shape (bare envelope,
 * CallToolResult, JSON-RPC response). Shallow copies: the dispatch's own objects are not changed.
 * Returns undefined when the output has no envelope it can rewrite.
 */
export function withLastObservation(
  raw: unknown,
  kind: ToolOutputKind,
  lastObservation: Record<string, unknown>,
): unknown {
  const patch = (env: unknown): Record<string, unknown> | undefined => {
    if (!isRecord(env) || !isRecord(env.error)) return undefined;
    return { ...env, error: { ...env.error, lastObservation } };
  };
  const patchResult = (result: unknown): Record<string, unknown> | undefined => {
    if (!isRecord(result)) return undefined;
    const i = envelopeBlockIndex(result);
    if (i < 0) return undefined;
    const content = result.content as unknown[];
    const block = content[i] as Record<string, unknown>;
    if (typeof block.text !== 'string') return undefined;
    let env: unknown;
    try {
      env = JSON.parse(block.text);
    } catch {
      return undefined;
    }
    const patched = patch(env);
    if (!patched) return undefined;
    const copy = content.slice();
    copy[i] = { ...block, text: JSON.stringify(patched) };
    return { ...result, content: copy };
  };
  if (kind === 'envelope') return patch(raw);
  if (kind === 'call-tool-result') return patchResult(raw);
  if (kind === 'json-rpc-result' && isRecord(raw)) {
    const result = patchResult(raw.result);
    return result ? { ...raw, result } : undefined;
  }
  return undefined;
}

/** The `internal` / `unhandled` failure for a dispatch that threw, in the shape it returns. */
export function thrownFailure(
  tool: string,
  message: string,
  sessionId: string | undefined,
  lastObservation: Record<string, unknown> | undefined,
  shape: OutputShape,
): { envelope: Envelope; output: unknown } {
  const error: ToolError = { code: 'unhandled', category: 'internal', detail: message };
  if (lastObservation) error.lastObservation = lastObservation;
  const envelope: Envelope = sessionId === undefined ? { ok: false, error } : { sessionId, ok: false, error };
  switch (shape) {
    case 'envelope':
      return { envelope, output: envelope };
    case 'json-rpc':
      return { envelope, output: { jsonrpc: '2.0', id: null, result: callToolResultOf(envelope) } };
    case 'legacy':
      return {
        envelope,
        output: {
          success: false,
          command: tool,
          error: message,
          errorCode: 'unhandled',
          errorCategory: 'internal',
        },
      };
    default:
      return { envelope, output: callToolResultOf(envelope) };
  }
}

/** The message of anything thrown, without a stack. */
export function thrownMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return `non-Error thrown: ${JSON.stringify(err)?.slice(0, 500) ?? String(err)}`;
  } catch {
    return 'non-Error thrown';
  }
}

/**
 * True for a command-level failure, which the server would have given the last good observation: any
 * failure of an observation or action tool except the refusals made before it ran (the catalog's error
 * table). Command-level `invalid-argument` failures (action-unknown, region-too-large) carry one.
 */
export function isCommandLevelFailure(tool: string, error: ToolError): boolean {
  if (META_TOOLS.has(tool)) return false;
  return !REFUSAL_CODES.has(error.code);
}

/** Keys under which the recorder references its copy of a file named by a host path. */
const COPY_KEYS = ['artifactCopy', 'fileCopy'] as const;

/**
 * A deep copy of `value` where every capture summary's relative `artifact` (and every `artifactCopy` /
 * `fileCopy`) is made absolute under `dir` (what the agent gets; the log keeps paths relative to the session dir).
 */
export function withAbsoluteArtifacts<T>(value: T, dir: string): T {
  const walk = (v: unknown, depth: number): unknown => {
    // Capture summaries sit near the top; below this the value is shared, not copied (and no stack overflow).
    if (depth > MAX_SUMMARY_DEPTH) return v;
    if (Array.isArray(v)) return v.map((c) => walk(c, depth + 1));
    if (!isRecord(v)) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(v)) out[k] = walk(child, depth + 1);
    if (v.kind === 'capture-summary' && typeof v.artifact === 'string' && !path.isAbsolute(v.artifact))
      out.artifact = path.join(dir, v.artifact);
    // The recorder's copies of host files (artifactCopy, fileCopy) are relative to the session dir too.
    for (const k of COPY_KEYS) {
      const c = v[k];
      if (typeof c === 'string' && c.startsWith('artifacts/')) out[k] = path.join(dir, c);
    }
    return out;
  };
  return walk(value, 0) as T;
}

/** How deep withAbsoluteArtifacts looks for capture summaries. */
const MAX_SUMMARY_DEPTH = 64;

/**
 * Substrings without which a JSON text cannot hold what findImageBytes finds: a `base64` key, an `image` block
 * or data: URI, or the base64 of PNG/JPEG/GIF/BMP magic at a string's start (`/` maybe escaped). A plain
 * alternation: linear, safe on 100 MB texts.
 */
const IMAGE_HINT = /base64|image|Image|IMAGE|iVBORw0KGgo|\/9j\/|\\\/9j\\\/|R0lGOD|Qk/;

/**
 * False when a JSON text certainly holds no inline image bytes, so the structural scan can be skipped.
 * True means "scan it".
 */
export function mayHoldImageBytes(text: string): boolean {
  return IMAGE_HINT.test(text);
}

/** The envelope's JSON text of a CallToolResult (or a JSON-RPC response carrying one), when there is one. */
export function envelopeText(raw: unknown, kind: ToolOutputKind): string | undefined {
  const result =
    kind === 'call-tool-result' ? raw : kind === 'json-rpc-result' && isRecord(raw) ? raw.result : undefined;
  if (!isRecord(result)) return undefined;
  const i = envelopeBlockIndex(result);
  if (i < 0) return undefined;
  const text = (result.content as Array<Record<string, unknown>>)[i]!.text;
  return typeof text === 'string' ? text : undefined;
}

/** A rough byte size of an output, for the queue bound: the big strings of the usual shapes. */
export function roughSize(v: unknown): number {
  let n = 256;
  if (!isRecord(v)) return typeof v === 'string' ? n + v.length : n;
  const content = Array.isArray(v.content) ? v.content : isRecord(v.result) ? v.result.content : undefined;
  if (Array.isArray(content)) {
    for (const b of content) {
      if (!isRecord(b)) continue;
      if (typeof b.text === 'string') n += b.text.length;
      if (typeof b.data === 'string') n += b.data.length;
    }
  } else if (isRecord(v.result) && typeof v.result.base64 === 'string') n += v.result.base64.length;
  return n;
}

/** roughValueSize walks at most this many values: past it, what is left of an array or object is estimated. */
export const ROUGH_SIZE_VALUES = 10_000;
/** Deeper than this a value is charged as one (8 bytes), not walked. */
const ROUGH_SIZE_DEPTH = 256;

/**
 * A rough byte size of any JSON-like value (a request's arguments, an event's detail), for the queue bound:
 * its strings' lengths and a few bytes per other value and key. roughSize reads only an answer's usual
 * shapes; this walks the value (each object once: a cycle is not followed again; a typed array by its
 * byteLength), at most ROUGH_SIZE_VALUES values of it: the members of an array or object left unwalked then
 * are charged the mean of its members walked (8 bytes each when none was). Bounded work on the proxy's
 * thread, whatever the value (a sparse array of 10^7, a request of 10^5 objects).
 */
export function roughValueSize(v: unknown): number {
  return roughValueWalk(v).bytes;
}

/** roughValueSize's walk: its bytes, and how many values it visited (at most ROUGH_SIZE_VALUES + 1; for tests). */
export function roughValueWalk(v: unknown): { bytes: number; visited: number } {
  const walk: Walk = { left: ROUGH_SIZE_VALUES, seen: new Set<object>() };
  const bytes = sizeOf(v, walk, 0);
  return { bytes, visited: ROUGH_SIZE_VALUES - walk.left };
}

interface Walk {
  /** Values the walk may still visit. */
  left: number;
  seen: Set<object>;
}

function sizeOf(x: unknown, walk: Walk, depth: number): number {
  walk.left -= 1;
  if (typeof x === 'string') return x.length + 2;
  if (typeof x !== 'object' || x === null || depth > ROUGH_SIZE_DEPTH) return 8;
  if (ArrayBuffer.isView(x)) return x.byteLength;
  if (walk.seen.has(x)) return 0;
  walk.seen.add(x);
  let n = 2;
  let walked = 0;
  let members = 0;
  try {
    if (Array.isArray(x)) {
      members = x.length;
      for (; walked < members && walk.left > 0; walked++) n += sizeOf(x[walked], walk, depth + 1);
    } else {
      const keys = Object.keys(x);
      members = keys.length;
      for (; walked < members && walk.left > 0; walked++) {
        const key = keys[walked] as string;
        n += key.length + 4 + sizeOf((x as Record<string, unknown>)[key], walk, depth + 1);
      }
    }
  } catch {
    return n; // a getter or a Proxy trap that throws: the size so far (the value is recorded as it can be)
  }
  if (walked < members) n += Math.round((members - walked) * (walked > 0 ? (n - 2) / walked : 8));
  return n;
}

/** The `response` of the usual CallToolResult (one envelope block), prebuilt: nothing in it to scan or redact. */
const PLAIN_RESPONSES = new Map<boolean, { value: unknown; json: string }>(
  [false, true].map((isError) => {
    const value = { content: [{ type: 'text', text: '[envelope]' }], isError };
    return [isError, { value, json: JSON.stringify(value) }];
  }),
);

/** True for `{content: [{type: 'text', text}], isError}` and nothing else. */
function isPlainCallToolResult(r: Record<string, unknown>): boolean {
  const content = r.content as unknown[];
  if (content.length !== 1 || typeof r.isError !== 'boolean') return false;
  let keys = 0;
  for (const _ in r) keys += 1;
  if (keys !== 2) return false;
  const block = content[0];
  if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') return false;
  keys = 0;
  for (const _ in block) keys += 1;
  return keys === 2;
}

export function isPlainResponse(v: unknown): boolean {
  return v === PLAIN_RESPONSES.get(false)!.value || v === PLAIN_RESPONSES.get(true)!.value;
}

export function plainResponseJson(v: unknown): string {
  return PLAIN_RESPONSES.get(v === PLAIN_RESPONSES.get(true)!.value)!.json;
}

/** The raw output's shape for the `response` column: the envelope's text block as "[envelope]". */
export function responseShape(raw: unknown, out: ToolOutput): unknown {
  const mask = (r: unknown): unknown => {
    if (!isRecord(r) || out.synthesized || out.plain) return r;
    if (isPlainCallToolResult(r)) return PLAIN_RESPONSES.get(r.isError as boolean)!.value;
    const i = envelopeBlockIndex(r);
    if (i < 0) return r;
    const content = (r.content as unknown[]).slice();
    content[i] = { ...(content[i] as Record<string, unknown>), text: '[envelope]' };
    return { ...r, content };
  };
  switch (out.kind) {
    case 'envelope':
      return undefined;
    case 'call-tool-result':
      return mask(raw);
    case 'json-rpc-result':
      return isRecord(raw) && isRecord(raw.result) && Array.isArray(raw.result.content)
        ? { ...raw, result: mask(raw.result) }
        : raw;
    case 'legacy-command-result':
      return isRecord(raw) && raw.data !== undefined ? { ...raw, data: '[envelope]' } : raw;
    default:
      return raw;
  }
}
