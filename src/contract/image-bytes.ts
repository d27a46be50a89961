/**
 * Finding inline image bytes in parsed JSON values, plus the base64 and JSON-pointer helpers the recorder
 * uses to take them out. Pure: no I/O. Scans with char codes and indexOf, never with regexes over big strings.
 */
import type { ImageBytesLocation } from './types.js';

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'bmp' | 'webp';

/** The pointer segment that steps into a string holding JSON (`/result/output/#json/data/base64`). */
export const JSON_MARKER = '#json';

/** Strings shorter than this are never sniffed or parsed: too short to hold an image or a capture. */
const MIN_SNIFF_LENGTH = 16;
/** Base64 chars decoded to sniff magic bytes: 24 chars give 18 bytes, enough for every format's header. */
const SNIFF_CHARS = 24;
/** How much of a sniffed string's head is checked to be base64 alphabet (bounded: strings can be 100 MB). */
const ALPHABET_PREFIX_CHECK = 512;
/** Below this length the decoded size is exact (whitespace counted); above it, estimated from the length. */
const EXACT_LENGTH_LIMIT = 1 << 20;

/** Encodes one JSON-pointer segment (RFC 6901). */
export function escapePointerSegment(segment: string): string {
  if (segment.indexOf('~') === -1 && segment.indexOf('/') === -1) return segment;
  return segment.split('~').join('~0').split('/').join('~1');
}

/** Splits a JSON pointer into decoded segments; `''` is the root. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  const raw = pointer.startsWith('/') ? pointer.slice(1) : pointer;
  return raw.split('/').map((s) => s.split('~1').join('/').split('~0').join('~'));
}

/** Builds a JSON pointer from segments. */
export function formatPointer(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) out += `/${escapePointerSegment(String(s))}`;
  return out;
}

function isBase64Char(c: number): boolean {
  return (
    (c >= 65 && c <= 90) || // A-Z
    (c >= 97 && c <= 122) || // a-z
    (c >= 48 && c <= 57) || // 0-9
    c === 43 || // +
    c === 47 // /
  );
}

/** Image format from the first bytes of a buffer, when they carry a known magic number. */
export function sniffImageFormat(buf: Uint8Array): ImageFormat | undefined {
  if (
    buf.length >= 8 &&
    buf[0] === 0x89 &&
    buf[1] === 0x50 &&
    buf[2] === 0x4e &&
    buf[3] === 0x47 &&
    buf[4] === 0x0d &&
    buf[5] === 0x0a &&
    buf[6] === 0x1a &&
    buf[7] === 0x0a
  ) {
    return 'png';
  }
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return 'jpeg';
  if (
    buf.length >= 6 &&
    buf[0] === 0x47 &&
    buf[1] === 0x49 &&
    buf[2] === 0x46 &&
    buf[3] === 0x38 &&
    (buf[4] === 0x37 || buf[4] === 0x39) &&
    buf[5] === 0x61
  ) {
    return 'gif';
  }
  // RIFF container of a WebP: 'RIFF', a 4-byte size, 'WEBP' (MCP servers other than MCEC send them).
  if (
    buf.length >= 12 &&
    buf[0] === 0x52 &&
    buf[1] === 0x49 &&
    buf[2] === 0x46 &&
    buf[3] === 0x46 &&
    buf[8] === 0x57 &&
    buf[9] === 0x45 &&
    buf[10] === 0x42 &&
    buf[11] === 0x50
  ) {
    return 'webp';
  }
  // 'BM' alone is too weak: also require zero reserved bytes and a known DIB header size.
  if (buf.length >= 18 && buf[0] === 0x42 && buf[1] === 0x4d) {
    const reservedZero = buf[6] === 0 && buf[7] === 0 && buf[8] === 0 && buf[9] === 0;
    const dib = (buf[14] ?? 0) | ((buf[15] ?? 0) << 8) | ((buf[16] ?? 0) << 16) | ((buf[17] ?? 0) << 24);
    if (reservedZero && [12, 16, 40, 52, 56, 64, 108, 124].includes(dib)) return 'bmp';
  }
  return undefined;
}

/** Image format of a base64 string, from decoding only its first few characters. */
export function sniffBase64Format(s: string, start = 0): ImageFormat | undefined {
  const end = Math.min(s.length, start + SNIFF_CHARS);
  if (end - start < 4) return undefined;
  for (let i = start; i < end; i++) {
    if (!isBase64Char(s.charCodeAt(i)) && s.charCodeAt(i) !== 61) return undefined;
  }
  return sniffImageFormat(Buffer.from(s.slice(start, end), 'base64'));
}

/** Count of trailing `=` padding chars (ignoring trailing whitespace) and where the payload ends. */
function trailingPadding(s: string, start: number): { pad: number; end: number } {
  let end = s.length;
  while (end > start && isSpace(s.charCodeAt(end - 1))) end--;
  let pad = 0;
  while (end > start && s.charCodeAt(end - 1) === 61) {
    end--;
    pad++;
  }
  return { pad, end };
}

function isSpace(c: number): boolean {
  return c === 10 || c === 13 || c === 32 || c === 9;
}

/** Decoded byte length of base64 text: exact for strings up to 1 MB, estimated from the length beyond. */
export function estimateDecodedLength(s: string, start = 0): number {
  const { end } = trailingPadding(s, start);
  let chars = end - start;
  if (chars <= EXACT_LENGTH_LIMIT) {
    for (let i = start; i < end; i++) if (isSpace(s.charCodeAt(i))) chars--;
  }
  return Math.floor((chars * 3) / 4);
}

/**
 * Decodes standard base64 strictly: rejects chars outside the alphabet (url-safe `-`/`_` too), misplaced or
 * excess padding and impossible lengths; accepts missing padding and `\n`/`\r` line breaks.
 */
export function decodeBase64Strict(s: string): Buffer | { error: string } {
  if (typeof s !== 'string') return { error: 'not a string' };
  const { pad, end } = trailingPadding(s, 0);
  if (pad > 2) return { error: 'too much padding' };
  // Node's decoder skips chars it does not know, so a length check finds them without a per-char loop.
  let breaks = 0;
  for (const ch of ['\n', '\r']) {
    for (let i = s.indexOf(ch); i !== -1 && i < end; i = s.indexOf(ch, i + 1)) breaks++;
  }
  const chars = end - breaks;
  if (chars % 4 === 1) return { error: 'impossible base64 length' };
  if (pad > 0 && (chars + pad) % 4 !== 0) return { error: 'misplaced padding' };
  if (s.indexOf('-') !== -1 || s.indexOf('_') !== -1) return { error: 'url-safe base64 characters' };
  const buf = Buffer.from(s, 'base64');
  if (buf.length !== Math.floor((chars * 3) / 4)) return { error: 'characters outside the base64 alphabet' };
  return buf;
}

/** True when the first `limit` chars of the payload (and its last few) are base64 alphabet or line breaks. */
function looksLikeBase64(s: string, start: number): boolean {
  const { end } = trailingPadding(s, start);
  const head = Math.min(end, start + ALPHABET_PREFIX_CHECK);
  for (let i = start; i < head; i++) {
    const c = s.charCodeAt(i);
    if (!isBase64Char(c) && c !== 10 && c !== 13) return false;
  }
  for (let i = Math.max(head, end - 16); i < end; i++) {
    const c = s.charCodeAt(i);
    if (!isBase64Char(c) && c !== 10 && c !== 13) return false;
  }
  return true;
}

/** Where the payload of a `data:image/...;base64,` URI starts, and its MIME type; undefined otherwise. */
export function parseImageDataUri(s: string): { mimeType: string; start: number } | undefined {
  if (s.length < 11 || s.slice(0, 11).toLowerCase() !== 'data:image/') return undefined;
  const comma = s.indexOf(',');
  if (comma === -1 || comma > 256) return undefined;
  const header = s.slice(5, comma);
  const parts = header.split(';');
  if (!parts.slice(1).some((p) => p.trim().toLowerCase() === 'base64')) return undefined;
  return { mimeType: (parts[0] ?? '').trim().toLowerCase(), start: comma + 1 };
}

/** True when a string's first and last non-space chars make it a JSON object or array candidate. */
function looksLikeJsonContainer(s: string): boolean {
  let i = 0;
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  let j = s.length - 1;
  while (j > i && isSpace(s.charCodeAt(j))) j--;
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(j);
  return (a === 123 && b === 125) || (a === 91 && b === 93);
}

interface Frame {
  value: unknown;
  path: string;
  /** Set for a string already known to hold bytes (a `base64` field or an image block's `data`). */
  declared?: { form: ImageBytesLocation['form']; start: number; mimeType: string | undefined };
}

/**
 * Lists every place in a parsed JSON value that holds inline image bytes: `base64` fields, MCP image blocks'
 * `data`, `data:image/...;base64,` URIs and strings whose base64 starts with PNG/JPEG/GIF/BMP magic, also
 * inside JSON text nested in strings (paths continue after a `#json` segment). Never throws.
 */
export function findImageBytes(value: unknown): ImageBytesLocation[] {
  const found: ImageBytesLocation[] = [];
  try {
    walk(value, found);
  } catch {
    // Defensive only: the walk is iterative and guards cycles, so nothing here is expected to throw.
  }
  return found;
}

/** Only containers and strings long enough to hold bytes are visited (keeps small envelopes cheap). */
function worthVisiting(v: unknown): boolean {
  return typeof v === 'object' ? v !== null : typeof v === 'string' && v.length >= MIN_SNIFF_LENGTH;
}

function walk(root: unknown, found: ImageBytesLocation[]): void {
  const stack: Frame[] = [{ value: root, path: '' }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const { value, path, declared } = stack.pop()!;
    if (declared) {
      found.push(location(value as string, path, declared.form, declared.start, declared.mimeType));
      continue;
    }
    if (typeof value === 'string') {
      inspectString(value, path, stack, found);
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      // Push in reverse so results come out in document order.
      for (let i = value.length - 1; i >= 0; i--) {
        if (worthVisiting(value[i])) stack.push({ value: value[i], path: `${path}/${i}` });
      }
      continue;
    }
    const obj = value as Record<string, unknown>;
    const imageBlock = obj.type === 'image' && typeof obj.data === 'string';
    const keys = Object.keys(obj);
    for (let k = keys.length - 1; k >= 0; k--) {
      const key = keys[k]!;
      const child = obj[key];
      // Declared bytes count whatever their format; a redaction marker in their place is not bytes.
      if (typeof child === 'string' && ((imageBlock && key === 'data') || key === 'base64')) {
        const uri = parseImageDataUri(child);
        const start = uri?.start ?? 0;
        if (child.length > start && looksLikeBase64(child, start)) {
          const mimeType =
            uri?.mimeType ?? (imageBlock && typeof obj.mimeType === 'string' ? obj.mimeType : undefined);
          const form = key === 'base64' ? 'base64-field' : 'image-block';
          // Reported when popped, so locations come out in document order.
          stack.push({ value: child, path: `${path}/${key}`, declared: { form, start, mimeType } });
          continue;
        }
      }
      if (worthVisiting(child)) stack.push({ value: child, path: `${path}/${escapePointerSegment(key)}` });
    }
  }
}

function location(
  s: string,
  path: string,
  form: ImageBytesLocation['form'],
  start: number,
  mimeType: string | undefined,
): ImageBytesLocation {
  const loc: ImageBytesLocation = { path, form, decodedBytes: estimateDecodedLength(s, start) };
  const format = sniffBase64Format(s, start);
  if (format) loc.format = format;
  if (mimeType) loc.mimeType = mimeType;
  return loc;
}

function inspectString(s: string, path: string, stack: Frame[], found: ImageBytesLocation[]): void {
  if (s.length < MIN_SNIFF_LENGTH) return;
  const uri = parseImageDataUri(s);
  if (uri) {
    found.push(location(s, path, 'data-uri', uri.start, uri.mimeType));
    return;
  }
  if (looksLikeJsonContainer(s)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(s);
    } catch {
      return;
    }
    if (parsed !== null && typeof parsed === 'object')
      stack.push({ value: parsed, path: `${path}/${JSON_MARKER}` });
    return;
  }
  const format = sniffBase64Format(s, 0);
  if (format && looksLikeBase64(s, 0)) {
    found.push({ path, form: 'sniffed', decodedBytes: estimateDecodedLength(s, 0), format });
  }
}

/** The value at a JSON pointer; a `#json` segment parses the string it stands on. Undefined when absent. */
export function getAtPointer(root: unknown, pointer: string): unknown {
  let cur: unknown = root;
  for (const seg of parsePointer(pointer)) {
    if (typeof cur === 'string' && seg === JSON_MARKER) {
      try {
        cur = JSON.parse(cur);
      } catch {
        return undefined;
      }
      continue;
    }
    cur = childOf(cur, seg);
    if (cur === undefined) return undefined;
  }
  return cur;
}

function childOf(container: unknown, seg: string): unknown {
  if (Array.isArray(container)) {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(seg)) return undefined;
    return container[Number(seg)];
  }
  if (container !== null && typeof container === 'object' && Object.hasOwn(container, seg)) {
    return (container as Record<string, unknown>)[seg];
  }
  return undefined;
}

export type SetAtPointerResult = { ok: true; root: unknown } | { ok: false; root: unknown; error: string };

/**
 * Replaces the value at a JSON pointer, mutating objects in place; through a `#json` segment the nested JSON
 * string is parsed, changed and re-serialized. Returns the (possibly new) root. Never throws.
 */
export function setAtPointer(root: unknown, pointer: string, value: unknown): SetAtPointerResult {
  try {
    return setSegments(root, parsePointer(pointer), value);
  } catch (e) {
    return { ok: false, root, error: `cannot set ${pointer.slice(0, 200)}: ${(e as Error).name}` };
  }
}

function setSegments(root: unknown, segs: string[], value: unknown): SetAtPointerResult {
  if (segs.length === 0) return { ok: true, root: value };
  // Walk to the parent of the last segment, stopping at the first #json marker on a string.
  let cur: unknown = root;
  let parent: unknown;
  let parentSeg = '';
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    if (typeof cur === 'string' && seg === JSON_MARKER) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(cur);
      } catch {
        return { ok: false, root, error: `not JSON at segment ${i}` };
      }
      const inner = setSegments(parsed, segs.slice(i + 1), value);
      if (!inner.ok) return { ok: false, root, error: inner.error };
      const text = JSON.stringify(inner.root);
      if (parent === undefined) return { ok: true, root: text };
      assign(parent, parentSeg, text);
      return { ok: true, root };
    }
    if (i === segs.length - 1) {
      if (!canAssign(cur, seg)) return { ok: false, root, error: `no container at segment ${i}` };
      assign(cur, seg, value);
      return { ok: true, root };
    }
    const next = childOf(cur, seg);
    if (next === undefined) return { ok: false, root, error: `nothing at segment ${i}` };
    parent = cur;
    parentSeg = seg;
    cur = next;
  }
  return { ok: false, root, error: 'unreachable' };
}

function canAssign(container: unknown, seg: string): boolean {
  if (Array.isArray(container)) return /^(0|[1-9][0-9]{0,9})$/.test(seg) && Number(seg) < container.length;
  return container !== null && typeof container === 'object';
}

function assign(container: unknown, seg: string, value: unknown): void {
  if (Array.isArray(container)) container[Number(seg)] = value;
  else (container as Record<string, unknown>)[seg] = value;
}
