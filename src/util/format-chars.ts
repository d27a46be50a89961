/**
 * Control and bidi characters of recorded text, shown as `\\uXXXX` rather than obeyed by a terminal or a page.
 * A leaf apart from src/report/text.ts (which re-exports it) so that every mcec-bundle command escapes its
 * output without loading a report module at start-up.
 */

/** Bidi embeddings and overrides (U+202A-U+202E) and isolates (U+2066-U+2069): they reorder text shown after them. */
export function isBidiControl(c: number): boolean {
  return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/**
 * True for characters that must not reach a terminal or a page as themselves: C0 controls other than tab and
 * line breaks, DEL, C1 controls (U+0080-U+009F: U+009B is an ANSI escape on some terminals) and bidi controls.
 */
export function isUnsafeFormatChar(c: number): boolean {
  return (c < 32 && c !== 9 && c !== 10 && c !== 13) || (c >= 127 && c <= 159) || isBidiControl(c);
}

/** isUnsafeFormatChar as a character class. */
const UNSAFE_FORMAT_CHAR = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/** `text` with every isUnsafeFormatChar character written as a visible `\uXXXX` (also right inside JSON strings). */
export function escapeFormatChars(text: string): string {
  // One regex scan first: nearly all text is clean, and `list` prints 10,000 lines through here.
  if (!UNSAFE_FORMAT_CHAR.test(text)) return text;
  let out = '';
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isUnsafeFormatChar(c)) continue;
    out += `${text.slice(last, i)}\\u${c.toString(16).padStart(4, '0')}`;
    last = i + 1;
  }
  return last === 0 ? text : out + text.slice(last);
}
