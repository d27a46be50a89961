/**
 * serverEscaped (the MCEC server's JSON escapes of an echoed value) in one regex pass: the same text as the
 * char-by-char loop it replaced, which took ~0.5 s per MB of typed text (a plain server's `write_file
 * {content}` is typed text since e8a079c, and every call's echoes are escaped several ways).
 */
import { describe, expect, it } from 'vitest';
import { serverEscaped } from '../../src/redact/echoes.js';

/** The loop serverEscaped was, kept as the reference. */
function referenceServerEscaped(json: string): string {
  let out = '';
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 92 && json.charCodeAt(i + 1) === 34) {
      out += '\\u0022';
      i++;
      continue;
    }
    out +=
      c > 0x7e || c === 43 || c === 60 || c === 62 || c === 38 || c === 39 || c === 96
        ? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`
        : json[i];
  }
  return out;
}

/** A deterministic generator (xorshift), so a failure names its input and repeats. */
function* strings(count: number): Generator<string> {
  const alphabet = [
    'a',
    '\\',
    '"',
    '+',
    '<',
    '>',
    '&',
    "'",
    '`',
    '\u007f',
    '~',
    'é',
    '\ud83d',
    '\ude00',
    '\n',
    'u',
    '0',
    '\u2028',
    ' ',
  ];
  let x = 0x2545f491;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  for (let n = 0; n < count; n++) {
    let s = '';
    const len = Math.floor(next() * 12);
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(next() * alphabet.length)];
    yield s;
  }
}

describe('serverEscaped', () => {
  it("escapes as MCEC does: quotes, + < > & ' ` and every code unit from DEL up, upper-case hex", () => {
    expect(serverEscaped('a\\"b+<>&\'`~\u007fé\ud83d\ude00')).toBe(
      'a\\u0022b\\u002B\\u003C\\u003E\\u0026\\u0027\\u0060~\\u007F\\u00E9\\uD83D\\uDE00',
    );
    // An escaped backslash before an escaped quote: the pair stays, the quote is escaped.
    expect(serverEscaped('\\\\\\"')).toBe('\\\\\\u0022');
  });

  it('gives the same text as the char-by-char loop, raw and JSON-escaped', () => {
    for (const s of strings(20_000))
      for (const text of [s, JSON.stringify(s).slice(1, -1)])
        expect(serverEscaped(text), JSON.stringify(text)).toBe(referenceServerEscaped(text));
  });
});
