/**
 * Holding a message (an HTTP answer, a stdio line) for recording only up to a cap. Past the cap only its
 * first and last 64 KiB are kept, enough to read its id and `isError` cheaply; the bytes themselves go to the
 * client elsewhere, unchanged. No unbounded buffer is ever concatenated or turned into a string.
 */

import { constants } from 'node:buffer';
import { expectNumber } from '../util/expect.js';

const MiB = 1024 * 1024;
/** Default cap: well under V8's longest string (about 512 MiB), so a recorded message always fits in one. */
export const DEFAULT_MAX_RECORD_BYTES = 256 * MiB;
/** The highest cap accepted: one byte per character must still fit in a V8 string. */
export const MAX_RECORD_BYTES_LIMIT = constants.MAX_STRING_LENGTH;
/**
 * A usable recording limit (1 byte to {@link MAX_RECORD_BYTES_LIMIT}), or a TypeError/RangeError naming the
 * option (`name`, e.g. `options.maxRecordBytes`).
 */
export function checkRecordLimit(limit: unknown, name: string): void {
  expectNumber(limit, name, { min: 1, max: MAX_RECORD_BYTES_LIMIT, integer: true });
}

/** Bytes kept from each end of an oversize message. */
export const EDGE_BYTES = 64 * 1024;

/** What is left of a message that went over the cap. */
export interface OversizeEdges {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

/** Collects one message's chunks until the cap, then only its edges. */
export class BoundedMessage {
  private parts: Buffer[] = [];
  private head: Buffer | null = null;
  private tail: Buffer = Buffer.alloc(0);
  /** Bytes seen so far (all of them, kept or not). */
  bytes = 0;

  constructor(private readonly limit: number) {}

  /** True once the message went over the cap. */
  get oversize(): boolean {
    return this.head !== null;
  }

  /** Bytes held in memory now (at most the cap, or two edges). */
  get heldBytes(): number {
    return this.head === null
      ? this.parts.reduce((n, p) => n + p.length, 0)
      : this.head.length + this.tail.length;
  }

  /** Add a chunk. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.bytes += chunk.length;
    if (this.head === null) {
      if (this.bytes <= this.limit) {
        this.parts.push(chunk);
        return;
      }
      this.parts.push(chunk);
      this.head = copyHead(this.parts, EDGE_BYTES);
      this.tail = copyTail(this.parts, EDGE_BYTES);
      this.parts = [];
      return;
    }
    this.tail = copyTail([this.tail, chunk], EDGE_BYTES);
  }

  /** The whole message when it stayed within the cap, else null (read {@link edges} then). */
  whole(): Buffer | null {
    if (this.head !== null) return null;
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.bytes);
  }

  /** The size and edges of an oversize message. */
  edges(): OversizeEdges {
    return { bytes: this.bytes, head: this.head ?? Buffer.alloc(0), tail: this.tail };
  }
}

/** A copy of the first `n` bytes of `parts` (a copy: a slice would keep a big chunk alive). */
function copyHead(parts: Buffer[], n: number): Buffer {
  const out = Buffer.allocUnsafe(
    Math.min(
      n,
      parts.reduce((k, p) => k + p.length, 0),
    ),
  );
  let at = 0;
  for (const p of parts) {
    if (at >= out.length) break;
    at += p.copy(out, at, 0, Math.min(p.length, out.length - at));
  }
  return out;
}

/** A copy of the last `n` bytes of `parts`. */
function copyTail(parts: Buffer[], n: number): Buffer {
  const total = parts.reduce((k, p) => k + p.length, 0);
  const out = Buffer.allocUnsafe(Math.min(n, total));
  let skip = total - out.length;
  let at = 0;
  for (const p of parts) {
    if (skip >= p.length) {
      skip -= p.length;
      continue;
    }
    at += p.copy(out, at, skip);
    skip = 0;
  }
  return out;
}

/** What can be told cheaply of an oversize JSON-RPC answer from its edges. */
export interface AnswerPeek {
  /** The top-level `id`, when it came before the big value (MCEC writes jsonrpc, id, then result). */
  id?: string | number | null;
  /** A top-level `error` member was seen: a JSON-RPC error answer. */
  rpcError: boolean;
  /** The last `"isError": true|false` in the tail: the CallToolResult's flag, written after its content. */
  isError?: boolean;
}

/** Read the id, an `error` member and `isError` from the edges of an oversize answer; never throws. */
export function peekAnswer(edges: OversizeEdges): AnswerPeek {
  const peek: AnswerPeek = { rpcError: false };
  scanTopLevel(edges.head.toString('latin1'), (key, value) => {
    if (key === 'id' && value !== undefined) peek.id = value;
    if (key === 'error') peek.rpcError = true;
  });
  // Bounded text (64 KiB) and a pattern without nested quantifiers. Outside JSON strings a quote is raw,
  // so `"isError":` can only be a key; the last one is the result's own (it follows the content).
  const tail = edges.tail.toString('latin1');
  const re = /"isError"\s*:\s*(true|false)/g;
  let m: RegExpExecArray | null = re.exec(tail);
  while (m) {
    peek.isError = m[1] === 'true';
    m = re.exec(tail);
  }
  return peek;
}

/**
 * Walk the members of the top-level object in `text` (a prefix of a JSON document), calling `onMember`
 * with each key and, for scalar values, the value (undefined for objects, arrays and cut-off values).
 * Stops at the end of the prefix.
 */
function scanTopLevel(
  text: string,
  onMember: (key: string, value: string | number | null | undefined) => void,
): void {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return;
  i++;
  for (;;) {
    i = skipSpace(text, i);
    if (text[i] !== '"') return;
    const key = readString(text, i);
    if (!key) return;
    i = skipSpace(text, key.end);
    if (text[i] !== ':') return;
    i = skipSpace(text, i + 1);
    const c = text[i];
    if (c === undefined) {
      onMember(key.value, undefined);
      return;
    }
    if (c === '"') {
      const v = readString(text, i);
      if (!v) {
        onMember(key.value, undefined);
        return;
      }
      onMember(key.value, v.value);
      i = v.end;
    } else if (c === '{' || c === '[') {
      onMember(key.value, undefined);
      const end = skipNested(text, i);
      if (end < 0) return;
      i = end;
    } else {
      const m = /^(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 40));
      if (!m) return;
      const raw = m[1]!;
      onMember(
        key.value,
        raw === 'null' ? null : raw === 'true' || raw === 'false' ? undefined : Number(raw),
      );
      i += raw.length;
    }
    i = skipSpace(text, i);
    if (text[i] !== ',') return;
    i++;
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
    i++;
  return i;
}

/** The JSON string starting at `i` (a quote), decoded, or null when the text ends inside it. */
function readString(text: string, i: number): { value: string; end: number } | null {
  const end = readStringEnd(text, i);
  if (end < 0) return null;
  try {
    // latin1 text of UTF-8 bytes: read again as UTF-8 for non-ASCII keys and ids
    const raw = Buffer.from(text.slice(i, end), 'latin1').toString('utf8');
    return { value: JSON.parse(raw) as string, end };
  } catch {
    return null;
  }
}

/** The index just after the object or array starting at `i`, or -1 when the text ends inside it. */
function skipNested(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '"') {
      const s = readStringEnd(text, j);
      if (s < 0) return -1;
      j = s - 1;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}

/** The index just after the JSON string starting at `i` (a quote), or -1 when the text ends inside it. */
function readStringEnd(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; k > i && text[k] === '\\'; k--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}
