/**
 * Stored JSON (already redacted, image bytes already out) pretty-printed and clipped for report.html. Image
 * bytes a log should never hold (planted past the recorder) are replaced again here: the page must not carry them.
 */
import { findImageBytes, setAtPointer } from '../../contract/image-bytes.js';

/** A pretty-printed, clipped copy of a stored JSON column. */
export interface PrettyJson {
  /** The text to show (not yet HTML-escaped). */
  text: string;
  /** Characters left out at the end (0 when complete). */
  clipped: number;
  /** True when the stored text was shown as is (too big to re-indent cheaply, or not JSON). */
  raw: boolean;
}

/** Stored values longer than this many times the allowance are shown compact instead of parsed and re-indented. */
const PARSE_FACTOR = 4;

/** Pretty-print `stored` within `maxChars`, cutting at a line break where one is near; null when nothing is stored. */
export function prettyJson(stored: string | null | undefined, maxChars: number): PrettyJson | null {
  if (stored == null || stored === '') return null;
  let text = stored;
  let raw = true;
  if (stored.length <= Math.max(maxChars, 1) * PARSE_FACTOR) {
    try {
      text = JSON.stringify(withoutImageBytes(JSON.parse(stored), stored), null, 2) ?? stored;
      raw = false;
    } catch {
      // Not JSON after all: show the stored text.
    }
  }
  if (raw) text = redactBase64Images(text);
  if (text.length <= maxChars) return { text, clipped: 0, raw };
  let cut = Math.max(0, maxChars);
  const lineBreak = text.lastIndexOf('\n', cut);
  if (lineBreak > cut / 2) cut = lineBreak;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut), clipped: text.length - cut, raw };
}

/** What stands where image bytes were (as in the bundle's JSON files). */
const REDACTED_BASE64 = '<redacted base64>';
/** Substrings without which findImageBytes cannot find anything: most rows skip the walk. */
const IMAGE_HINTS = ['base64', 'image', 'iVBORw0KGgo', '/9j/', 'R0lGOD', '"Qk'];

function withoutImageBytes(value: unknown, stored: string): unknown {
  if (!IMAGE_HINTS.some((h) => stored.includes(h))) return value;
  let root = value;
  for (const loc of findImageBytes(value)) root = setAtPointer(root, loc.path, REDACTED_BASE64).root;
  return root;
}

/** How PNG, JPEG and GIF bytes begin once base64-encoded. */
const BASE64_SIGNATURES = ['iVBORw0KGgo', '/9j/', 'R0lGOD'];
/** A run this long that begins like an image is image bytes (the verifier's threshold). */
const MIN_IMAGE_RUN = 64;

/** Text that is not parsed (too big, not JSON) with every base64 run that begins like an image replaced. */
export function redactBase64Images(text: string): string {
  let out = '';
  let last = 0;
  let from = 0;
  for (;;) {
    let at = -1;
    for (const sig of BASE64_SIGNATURES) {
      const i = text.indexOf(sig, from);
      if (i !== -1 && (at === -1 || i < at)) at = i;
    }
    if (at === -1) break;
    let end = at;
    for (;;) {
      const c = text.charCodeAt(end);
      if (isBase64Char(c)) end += 1;
      else if (c === 92 && text.charCodeAt(end + 1) === 47)
        end += 2; // an escaped slash
      else if (c === 92 && isEscapedBase64(text, end + 1))
        end += 6; // \u002B, \u002F, \u003D
      else break;
    }
    if (end - at >= MIN_IMAGE_RUN) {
      out += text.slice(last, at) + REDACTED_BASE64;
      last = end;
    }
    from = Math.max(end, at + 1);
  }
  return last === 0 ? text : out + text.slice(last);
}

function isEscapedBase64(text: string, at: number): boolean {
  const hex = text.slice(at, at + 5).toLowerCase();
  return hex === 'u002b' || hex === 'u002f' || hex === 'u003d';
}

function isBase64Char(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 47 && c <= 57) || c === 43 || c === 61;
}

/** Escape text for an HTML text node: `&`, `<`, `>` (quotes are harmless there and would bloat JSON sixfold). */
export function escapeTextNode(text: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const rep = c === 38 ? '&amp;' : c === 60 ? '&lt;' : c === 62 ? '&gt;' : null;
    if (rep) {
      out += text.slice(last, i) + rep;
      last = i + 1;
    }
  }
  return last === 0 ? text : out + text.slice(last);
}
