/** Stored JSON (already redacted, image bytes already out) pretty-printed and clipped for report.html. */
import { isUnsafeFormatChar } from '../text.js';

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
      text = JSON.stringify(JSON.parse(stored), null, 2) ?? stored;
      raw = false;
    } catch {
      // Not JSON after all: show the stored text.
    }
  }
  if (text.length <= maxChars) return { text, clipped: 0, raw };
  let cut = Math.max(0, maxChars);
  const lineBreak = text.lastIndexOf('\n', cut);
  if (lineBreak > cut / 2) cut = lineBreak;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut), clipped: text.length - cut, raw };
}

/**
 * Escape text for an HTML text node: `&`, `<`, `>` (quotes are harmless there and would bloat JSON sixfold);
 * control and bidi characters (isUnsafeFormatChar) shown as `\uXXXX`, so they cannot reorder what follows.
 */
export function escapeTextNode(text: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const rep =
      c === 38
        ? '&amp;'
        : c === 60
          ? '&lt;'
          : c === 62
            ? '&gt;'
            : isUnsafeFormatChar(c)
              ? `\\u${c.toString(16).padStart(4, '0')}`
              : null;
    if (rep) {
      out += text.slice(last, i) + rep;
      last = i + 1;
    }
  }
  return last === 0 ? text : out + text.slice(last);
}
