import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeJsonText, serializeWire } from '../../src/sim/wire.js';
import { isPrintableAscii } from './helpers.js';

describe('serializeWire: the server escaping (mcec-wire §4)', () => {
  it("writes + < > & ' and non-ASCII as uppercase \\uXXXX inside strings", () => {
    const text = serializeWire({ s: "a+b <i> & 'q' café ☕ 😀" });
    expect(text).toBe(
      '{"s":"a\\u002Bb \\u003Ci\\u003E \\u0026 \\u0027q\\u0027 caf\\u00E9 \\u2615 \\uD83D\\uDE00"}',
    );
    expect(JSON.parse(text)).toEqual({ s: "a+b <i> & 'q' café ☕ 😀" });
  });

  it('escapes keys too, keeps nulls, and leaves a number exponent alone', () => {
    const text = serializeWire({ 'k+': null, n: 1e21, m: -2.5e-7, a: [null, true] });
    expect(text).toBe('{"k\\u002B":null,"n":1e+21,"m":-2.5e-7,"a":[null,true]}');
    expect(JSON.parse(text)).toEqual({ 'k+': null, n: 1e21, m: -2.5e-7, a: [null, true] });
  });

  it('leaves existing escapes intact (quotes, backslashes, control characters)', () => {
    const value = { s: 'say "hi"\\+\n\t\u0001' };
    const text = serializeWire(value);
    expect(text).toBe('{"s":"say \\"hi\\"\\\\\\u002B\\n\\t\\u0001"}');
    expect(JSON.parse(text)).toEqual(value);
  });

  it('base64 on the wire carries \\u002B, never a raw +', () => {
    const base64 = Buffer.from([0xfb, 0xef, 0xbe, 0xfb]).toString('base64');
    expect(base64).toContain('+');
    const text = serializeWire({ base64 });
    expect(text).toContain('\\u002B');
    expect(text).not.toContain('+');
  });

  it('round-trips any JSON value and only ever emits printable ASCII', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = serializeWire(value);
        expect(isPrintableAscii(text)).toBe(true);
        for (const ch of ['<', '>', '&', "'"]) expect(text).not.toContain(ch);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
  });

  it('returns the same string when nothing needs escaping, and rejects undefined', () => {
    const plain = '{"a":"b","c":[1,2]}';
    expect(escapeJsonText(plain)).toBe(plain);
    expect(() => serializeWire(undefined)).toThrow(TypeError);
  });
});
