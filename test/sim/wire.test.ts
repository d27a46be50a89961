import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeJsonText, serializeWire } from '../../src/wire/json-text.js';
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

  it('writes a quote as \\u0022 and a backtick as \\u0060; backslash, \\n, \\t stay short; controls are uppercase hex', () => {
    const value = { s: 'say "hi" `x`\\+\n\t\u0001\u001f' };
    const text = serializeWire(value);
    expect(text).toBe('{"s":"say \\u0022hi\\u0022 \\u0060x\\u0060\\\\\\u002B\\n\\t\\u0001\\u001F"}');
    expect(JSON.parse(text)).toEqual(value);
  });

  it('escapes a serialized envelope again when it rides as text in the JSON-RPC answer, as the server does', () => {
    const envelope = serializeWire({ ok: true, result: { base64: 'ab+c' } });
    expect(envelope).toBe('{"ok":true,"result":{"base64":"ab\\u002Bc"}}');
    const line = serializeWire({ content: [{ type: 'text', text: envelope }] });
    expect(line).toBe(
      '{"content":[{"type":"text","text":"{\\u0022ok\\u0022:true,\\u0022result\\u0022:{\\u0022base64\\u0022:\\u0022ab\\\\u002Bc\\u0022}}"}]}',
    );
    expect(JSON.parse(JSON.parse(line).content[0].text)).toEqual({ ok: true, result: { base64: 'ab+c' } });
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
        for (const ch of ['<', '>', '&', "'", '`']) expect(text).not.toContain(ch);
        // Past escaped backslashes, no \" remains and every \uXXXX is uppercase.
        const unpaired = text.replaceAll('\\\\', '');
        expect(unpaired).not.toContain('\\"');
        expect(unpaired).not.toMatch(/\\u[0-9A-F]{0,3}[a-f]/);
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
