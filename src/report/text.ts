/** Small text helpers: clip, one-line, and compact copies of values that never carry image bytes. */
import { isBidiControl } from '../util/format-chars.js';
import { isRecord } from '../util/json.js';

// The escaping of recorded text lives in util: the CLIs use it at start-up, which loads no report module.
export { escapeFormatChars, isUnsafeFormatChar } from '../util/format-chars.js';

// One byte format for every report and program: the report modules take it from here.
export { formatBytes } from '../util/units.js';

/** Cut to at most `max` characters (ellipsis included), never splitting a surrogate pair. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  if (max === 1) return '…';
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

const IMAGE_PREFIXES = ['data:image', 'iVBORw0KGgo', '/9j/', 'R0lGOD', 'Qk0', 'Qk2', 'UklGR'];

/** True for strings that look like image bytes (base64 image magic, data: URIs, long base64 runs). */
export function looksLikeImageBytes(text: string): boolean {
  for (const prefix of IMAGE_PREFIXES) if (text.startsWith(prefix) && text.length >= 16) return true;
  if (text.length < 200) return false;
  // A long run of the base64 alphabet without spaces, mixing upper case, lower case and digits as encoded
  // bytes do (a run of one letter is not bytes); check a bounded prefix only (strings can be 100 MB).
  const n = Math.min(text.length, 512);
  let upper = false;
  let lower = false;
  let digit = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) upper = true;
    else if (c >= 97 && c <= 122) lower = true;
    else if (c >= 48 && c <= 57) digit = true;
    else if (c !== 43 && c !== 47 && c !== 61) return false;
  }
  return upper && lower && digit;
}

/**
 * One line of at most `max` characters: control characters (C0, DEL, C1), bidi controls and line breaks become
 * spaces, image bytes a marker.
 */
export function oneLine(value: unknown, max = 120): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : String(value);
  if (looksLikeImageBytes(text)) return `[image bytes omitted, ${text.length} chars]`;
  // Work on a bounded prefix so a huge value costs nothing more than its first few KB.
  const truncated = text.length > max * 4 + 16;
  if (truncated) text = text.slice(0, max * 4 + 16);
  const out = collapseSpaces(text).trim();
  return truncated && out.length <= max ? clip(`${out}…`, max) : clip(out, max);
}

function isSpaceLike(c: number): boolean {
  return c <= 32 || (c >= 127 && c <= 159) || c === 0x2028 || c === 0x2029 || isBidiControl(c);
}

/** Each run of control characters, line breaks and spaces as one space; the text itself when it has none to change. */
function collapseSpaces(text: string): string {
  // Most values are clean: scan for the first character that changes the text before building anything.
  let i = 0;
  let lastSpace = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32) {
      if (lastSpace) break;
      lastSpace = true;
    } else if (isSpaceLike(c)) break;
    else lastSpace = false;
  }
  if (i === text.length) return text;
  let out = text.slice(0, i);
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isSpaceLike(c)) {
      if (!lastSpace) out += ' ';
      lastSpace = true;
    } else {
      out += text[i];
      lastSpace = false;
    }
  }
  return out;
}

/** Quote a short value for a summary line: `'Save'`, clipped. */
export function quote(value: unknown, max = 40): string {
  return `'${oneLine(value, max)}'`;
}

const DROP_KEYS = new Set(['base64', 'data', 'bytesBase64', 'image', 'png']);

/** A small copy of a value for a report: depth, keys, items and strings bounded; image bytes and trees left out. */
export function compactValue(value: unknown, options: { depth?: number; maxString?: number } = {}): unknown {
  const depth = options.depth ?? 3;
  const maxString = options.maxString ?? 120;
  const walk = (v: unknown, level: number): unknown => {
    if (v === undefined) return null;
    if (v === null || typeof v === 'number' || typeof v === 'boolean') return v;
    if (typeof v === 'string') return oneLine(v, maxString);
    if (typeof v !== 'object') return oneLine(String(v), maxString);
    if (Array.isArray(v)) {
      if (level >= depth) return `[${v.length} items]`;
      const items = v.slice(0, 5).map((x) => walk(x, level + 1));
      if (v.length > 5) items.push(`… ${v.length - 5} more`);
      return items;
    }
    if (level >= depth) return '{…}';
    const out: Record<string, unknown> = {};
    const keys = Object.keys(v as Record<string, unknown>);
    let kept = 0;
    for (const key of keys) {
      const x = (v as Record<string, unknown>)[key];
      if (x === undefined) continue;
      if (DROP_KEYS.has(key) && typeof x === 'string') {
        out[key] = `[${x.length} chars omitted]`;
      } else if (key === 'tree' || key === 'children') {
        out[key] = Array.isArray(x) ? `[${x.length} nodes omitted]` : '[omitted]';
      } else {
        out[key] = walk(x, level + 1);
      }
      if (++kept >= 16) {
        if (keys.length > kept) out['…'] = `${keys.length - kept} more keys`;
        break;
      }
    }
    return out;
  };
  return walk(value, 0);
}

/** Parse JSON text, or undefined when it is absent, too big or not JSON. */
export function parseJson(text: string | null | undefined, maxChars = 32 * 1024 * 1024): unknown {
  if (text == null || text.length > maxChars) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The value as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}
