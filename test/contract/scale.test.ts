import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decodeBase64Strict,
  findImageBytes,
  getAtPointer,
  readToolOutput,
  setAtPointer,
  validateEnvelope,
} from '../../src/contract/index.js';
import { redPng } from '../support/images.js';

const png = await redPng();
const pngBase64 = png.toString('base64');
const DEPTH = 10_000;

/** ~7.5 MB of bytes that start like a PNG, so their base64 is ~10 MB. */
function bigImage(): Buffer {
  return Buffer.concat([png.subarray(0, 16), randomBytes(7_500_000)]);
}

/** A value nested `depth` objects deep, `{a:{a:...{leaf}}}`, built without recursion. */
function deepObject(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

describe('big envelopes (no timing assertions: they complete and give the right answer)', () => {
  it('reads a 10 MB MCEC capture CallToolResult and finds both copies of the bytes', () => {
    const image = bigImage();
    const b64 = image.toString('base64');
    expect(b64.length).toBeGreaterThan(10_000_000);
    const env = {
      sessionId: '5f19c9c01a3f',
      ok: true,
      result: { width: 1920, height: 1080, encoding: 'png', bytes: image.length, base64: b64 },
    };
    // The server writes + as \u002B; only base64 strings hold + in this envelope.
    const text = JSON.stringify(env).split('+').join('\\u002B');
    const ctr = {
      content: [
        { type: 'image', data: b64, mimeType: 'image/png' },
        { type: 'text', text },
      ],
      isError: false,
    };
    const out = readToolOutput(ctr);
    expect(out.violations).toEqual([]);
    expect(out.envelope?.ok).toBe(true);
    expect(out.images).toHaveLength(1);
    expect(findImageBytes(ctr)).toEqual([
      {
        path: '/content/0/data',
        form: 'image-block',
        decodedBytes: image.length,
        format: 'png',
        mimeType: 'image/png',
      },
      {
        path: '/content/1/text/#json/result/base64',
        form: 'base64-field',
        decodedBytes: image.length,
        format: 'png',
      },
    ]);
    const decoded = decodeBase64Strict(b64);
    expect(Buffer.isBuffer(decoded) && decoded.equals(image)).toBe(true);
  });

  it('flags a 10 MB base64 left in lastObservation without copying it into the violation', () => {
    const b64 = bigImage().toString('base64');
    const res = validateEnvelope({
      ok: false,
      error: {
        code: 'window-closed',
        category: 'stale-element',
        detail: '',
        lastObservation: { base64: b64 },
      },
    });
    expect(res.violations).toHaveLength(1);
    expect(res.violations[0]!.path).toBe('/error/lastObservation/base64');
    expect(JSON.stringify(res).length).toBeLessThan(500);
  });

  it('sniffs a 100 MB base64 string by its head and estimates its size', () => {
    const big = `iVBORw0KGgoAAAANSUhEUgAA${'A'.repeat(100_000_000)}`;
    expect(findImageBytes({ result: { shot: big } })).toEqual([
      {
        path: '/result/shot',
        form: 'sniffed',
        decodedBytes: Math.floor((big.length * 3) / 4),
        format: 'png',
      },
    ]);
  });
});

describe('deep nesting never blows the stack', () => {
  it(`finds bytes at the bottom of ${DEPTH} nested objects`, () => {
    const v = deepObject(DEPTH, { base64: pngBase64 });
    const locs = findImageBytes(v);
    expect(locs).toHaveLength(1);
    expect(locs[0]!.path).toBe(`${'/a'.repeat(DEPTH)}/base64`);
    expect(getAtPointer(v, locs[0]!.path)).toBe(pngBase64);
    expect(setAtPointer(v, locs[0]!.path, '<redacted>').ok).toBe(true);
    expect(findImageBytes(v)).toEqual([]);
  });

  it('walks 100,000 nested arrays', () => {
    let v: unknown = [pngBase64];
    for (let i = 0; i < 100_000; i++) v = [v];
    expect(findImageBytes(v).map((l) => l.form)).toEqual(['sniffed']);
  });

  it(`validates an envelope whose result and lastObservation are ${DEPTH} levels deep`, () => {
    expect(validateEnvelope({ ok: true, result: deepObject(DEPTH, 1) })).toEqual({
      valid: true,
      violations: [],
    });
    const res = validateEnvelope({
      ok: false,
      error: {
        code: 'x',
        category: 'internal',
        detail: '',
        lastObservation: deepObject(DEPTH, { shot: pngBase64 }),
      },
    });
    expect(res.violations.map((v) => v.path)).toEqual([`/error/lastObservation${'/a'.repeat(DEPTH)}/shot`]);
  });

  it(`reads a CallToolResult whose envelope text nests ${DEPTH} levels`, () => {
    const deepJson = `${'{"a":'.repeat(DEPTH)}"${pngBase64}"${'}'.repeat(DEPTH)}`;
    const text = `{"ok":true,"result":${deepJson}}`;
    const ctr = { content: [{ type: 'text', text }], isError: false };
    const out = readToolOutput(ctr);
    expect(out.kind).toBe('call-tool-result');
    expect(out.violations).toEqual([]);
    expect(out.envelope?.ok).toBe(true);
    expect(findImageBytes(ctr)[0]?.path).toBe(`/content/0/text/#json/result${'/a'.repeat(DEPTH)}`);
    // Re-serializing a value this deep overflows JSON.stringify: setAtPointer reports it instead of throwing.
    const res = setAtPointer(ctr, findImageBytes(ctr)[0]!.path, '<redacted>');
    expect(typeof res.ok).toBe('boolean');
  });

  it('reads deep junk as invalid, and deep legacy data as legacy', () => {
    let arr: unknown = 0;
    for (let i = 0; i < DEPTH; i++) arr = [arr];
    expect(readToolOutput(arr).kind).toBe('invalid');
    const legacy = readToolOutput({ success: true, command: 'query', data: deepObject(DEPTH, null) });
    expect(legacy.kind).toBe('legacy-command-result');
    expect(legacy.violations).toEqual([]);
  });

  it('follows JSON nested in strings ten times over', () => {
    let v: unknown = { base64: pngBase64 };
    for (let i = 0; i < 10; i++) v = { s: JSON.stringify(v) };
    const [loc] = findImageBytes(v);
    expect(loc?.path).toBe(`${'/s/#json'.repeat(10)}/base64`);
    expect(getAtPointer(v, loc!.path)).toBe(pngBase64);
    const res = setAtPointer(v, loc!.path, '<redacted>');
    expect(res.ok).toBe(true);
    expect(findImageBytes(v)).toEqual([]);
    expect(getAtPointer(v, loc!.path)).toBe('<redacted>');
  });
});
