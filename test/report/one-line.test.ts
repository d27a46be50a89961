import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  clip,
  escapeFormatChars,
  isUnsafeFormatChar,
  looksLikeImageBytes,
  oneLine,
} from '../../src/report/text.js';

/** oneLine as first written (character by character), kept as the reference for the faster one. */
function referenceOneLine(value: unknown, max = 120): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : String(value);
  if (looksLikeImageBytes(text)) return `[image bytes omitted, ${text.length} chars]`;
  const truncated = text.length > max * 4 + 16;
  if (truncated) text = text.slice(0, max * 4 + 16);
  let out = '';
  let lastSpace = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const isSpace = c < 32 || c === 127 || c === 0x2028 || c === 0x2029 || c === 32;
    if (isSpace) {
      if (!lastSpace) out += ' ';
      lastSpace = true;
    } else {
      out += text[i];
      lastSpace = false;
    }
  }
  out = out.trim();
  return truncated && out.length <= max ? clip(`${out}…`, max) : clip(out, max);
}

/** Strings rich in what oneLine changes: spaces, controls, line separators, non-breaking spaces, surrogates. */
const tricky = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        ' ',
        '  ',
        '\n',
        '\r\n',
        '\t',
        '\u0000',
        '\u007f',
        '\u2028',
        '\u2029',
        '\u00a0',
        '\ufeff',
      ),
      fc.constantFrom('a', 'Save', '`', '😀', '\ud83d', 'é', '—'),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 200 },
  )
  .map((parts) => parts.join(''));

describe('oneLine', () => {
  it('returns what the character-by-character version returns', () => {
    fc.assert(
      fc.property(tricky, fc.integer({ min: 1, max: 300 }), (text, max) => {
        expect(oneLine(text, max)).toBe(referenceOneLine(text, max));
      }),
      { numRuns: 3000 },
    );
  });

  it('returns clean text as it is, and collapses what is not', () => {
    const clean = 'capture 800x600 png 14 KB of Untitled - Notepad';
    expect(oneLine(clean, 200)).toBe(clean);
    expect(oneLine(' a  b\t\tc\r\nd\u2028e ', 200)).toBe('a b c d e');
    expect(oneLine('a \n b', 200)).toBe('a b');
    expect(oneLine(42)).toBe('42');
    expect(oneLine(null)).toBe('');
  });
});

describe('escapeFormatChars', () => {
  it('escapes exactly the isUnsafeFormatChar characters, alone and inside clean text', () => {
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      const want = isUnsafeFormatChar(c) ? `\\u${c.toString(16).padStart(4, '0')}` : ch;
      expect(escapeFormatChars(ch), `U+${c.toString(16)}`).toBe(want);
      if (c % 97 === 0) expect(escapeFormatChars(`ab${ch}cd`)).toBe(`ab${want}cd`);
    }
  });

  it('returns clean text itself, untouched', () => {
    const line = 'f00000000000  2026-11-25 00:00:00Z  405 ms  6  1  PASS\n'.repeat(1000);
    expect(escapeFormatChars(line)).toBe(line);
    expect(escapeFormatChars(`${line}\u202e`)).toBe(`${line}\\u202e`);
  });
});
