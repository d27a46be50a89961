import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findImageBytes } from '../../src/contract/image-bytes.js';
import {
  envelopeText,
  isCommandLevelFailure,
  mayHoldImageBytes,
  quickOutcome,
  ROUGH_SIZE_VALUES,
  roughValueSize,
  roughValueWalk,
  thrownFailure,
  withAbsoluteArtifacts,
  withLastObservation,
} from '../../src/record/outcome.js';
import { isoTime } from '../../src/record/time.js';
import { callToolResult, makePng } from './helpers.js';

describe('quickOutcome', () => {
  it('tells success from the flags alone, and says "unknown" when there is none', () => {
    expect(quickOutcome({ content: [], isError: false })).toEqual({ shape: 'call-tool-result', ok: true });
    expect(quickOutcome({ content: [], isError: true })).toEqual({ shape: 'call-tool-result', ok: false });
    expect(quickOutcome({ content: [] })).toEqual({ shape: 'call-tool-result', ok: undefined });
    expect(quickOutcome({ ok: true })).toEqual({ shape: 'envelope', ok: true });
    expect(quickOutcome({ jsonrpc: '2.0', id: 1, result: { content: [], isError: false } })).toEqual({
      shape: 'json-rpc',
      ok: true,
    });
    expect(quickOutcome({ jsonrpc: '2.0', id: 1, error: { code: -1 } })).toEqual({
      shape: 'json-rpc',
      ok: undefined,
    });
    expect(quickOutcome({ success: false, command: 'x' })).toEqual({ shape: 'legacy', ok: false });
    for (const v of [null, 3, 'text', [], { foo: 1 }]) expect(quickOutcome(v).ok).toBeUndefined();
  });
});

describe('withLastObservation', () => {
  const failure = {
    sessionId: 's',
    ok: false,
    error: { code: 'element-not-found', category: 'no-target', detail: 'x' },
  };
  const lo = { found: true };

  it('rewrites the envelope in the same shape and leaves the original alone', () => {
    const bare = withLastObservation(failure, 'envelope', lo) as typeof failure & {
      error: { lastObservation: unknown };
    };
    expect(bare.error.lastObservation).toEqual(lo);
    expect(failure.error).not.toHaveProperty('lastObservation');
    const ctr = callToolResult(failure, undefined);
    ctr.extra = 'kept';
    const out = withLastObservation(ctr, 'call-tool-result', lo) as Record<string, unknown>;
    expect(out).toMatchObject({ isError: true, extra: 'kept' });
    expect(JSON.parse(envelopeText(out, 'call-tool-result')!)).toEqual({
      ...failure,
      error: { ...failure.error, lastObservation: lo },
    });
    expect(envelopeText(ctr, 'call-tool-result')).toBe(JSON.stringify(failure));
    const rpc = { jsonrpc: '2.0', id: 4, result: ctr };
    const outRpc = withLastObservation(rpc, 'json-rpc-result', lo) as { id: number; result: unknown };
    expect(outRpc.id).toBe(4);
    expect(JSON.parse(envelopeText(outRpc, 'json-rpc-result')!).error.lastObservation).toEqual(lo);
  });

  it('gives up (undefined) on what it cannot rewrite', () => {
    expect(
      withLastObservation({ content: [{ type: 'text', text: 'not json' }] }, 'call-tool-result', lo),
    ).toBeUndefined();
    expect(withLastObservation({ ok: true }, 'envelope', lo)).toBeUndefined();
    expect(withLastObservation({ success: false }, 'legacy-command-result', lo)).toBeUndefined();
  });
});

describe('thrownFailure', () => {
  it('builds the internal failure in every shape', () => {
    const lo = { found: true };
    const ctr = thrownFailure('click', 'boom', 'abc', lo, 'call-tool-result');
    expect(ctr.envelope).toEqual({
      sessionId: 'abc',
      ok: false,
      error: { code: 'unhandled', category: 'internal', detail: 'boom', lastObservation: lo },
    });
    expect(ctr.output).toEqual({
      content: [{ type: 'text', text: JSON.stringify(ctr.envelope) }],
      isError: true,
    });
    expect(thrownFailure('click', 'boom', undefined, undefined, 'envelope').output).toEqual({
      ok: false,
      error: { code: 'unhandled', category: 'internal', detail: 'boom' },
    });
    expect(thrownFailure('click', 'boom', undefined, undefined, 'json-rpc').output).toMatchObject({
      jsonrpc: '2.0',
      result: { isError: true },
    });
    expect(thrownFailure('click', 'boom', undefined, undefined, 'legacy').output).toEqual({
      success: false,
      command: 'click',
      error: 'boom',
      errorCode: 'unhandled',
      errorCategory: 'internal',
    });
  });
});

describe('isCommandLevelFailure', () => {
  it('excludes refusals made before the tool ran and meta tools, not command-level argument errors (mcec-wire §9)', () => {
    const e = (code: string, category = 'internal') => ({ code, category, detail: '' }) as never;
    expect(isCommandLevelFailure('find', e('selector-matched-3', 'ambiguous-selector'))).toBe(true);
    expect(isCommandLevelFailure('wait-for', e('wait-condition-timeout', 'timeout'))).toBe(true);
    expect(isCommandLevelFailure('invoke', e('uia-faulted'))).toBe(true);
    expect(isCommandLevelFailure('invoke', e('emergency-stopped'))).toBe(false);
    expect(isCommandLevelFailure('invoke', e('consent-denied'))).toBe(false);
    // MCEC's commands check these while running, so their failures carry the last good observation.
    expect(isCommandLevelFailure('capture', e('region-too-large', 'invalid-argument'))).toBe(true);
    expect(isCommandLevelFailure('clipboard', e('action-unknown', 'invalid-argument'))).toBe(true);
    expect(isCommandLevelFailure('record', e('recording-in-progress', 'invalid-argument'))).toBe(true);
    // Refused before the tool ran: none.
    expect(isCommandLevelFailure('find', e('unknown-session', 'invalid-argument'))).toBe(false);
    expect(isCommandLevelFailure('capture', e('bad-arguments', 'invalid-argument'))).toBe(false);
    expect(isCommandLevelFailure('launch', e('command-disabled'))).toBe(false);
    expect(isCommandLevelFailure('send_command', e('send-command-timeout'))).toBe(false);
    expect(isCommandLevelFailure('session-end', e('unhandled'))).toBe(false);
  });
});

describe('withAbsoluteArtifacts', () => {
  it('makes every capture summary artifact absolute, in a copy', () => {
    const v = {
      a: { kind: 'capture-summary', artifact: 'artifacts/x.png' },
      b: [{ kind: 'capture-summary', artifact: '/abs/y.png' }],
    };
    const out = withAbsoluteArtifacts(v, '/sessions/s1');
    expect(out).toEqual({
      a: { kind: 'capture-summary', artifact: '/sessions/s1/artifacts/x.png' },
      b: [{ kind: 'capture-summary', artifact: '/abs/y.png' }],
    });
    expect(v.a.artifact).toBe('artifacts/x.png');
  });
});

describe('isoTime', () => {
  it('equals toISOString, across seconds and for odd dates', () => {
    for (const ms of [
      0, 999, 1000, 1_764_670_502_123, 1_764_670_502_007, 1_764_670_503_050, 253_402_300_799_999,
    ]) {
      expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
    }
    expect(isoTime(new Date(-1))).toBe(new Date(-1).toISOString());
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (ms) => isoTime(new Date(ms)) === new Date(ms).toISOString(),
      ),
    );
  });
});

describe('mayHoldImageBytes', () => {
  it('is true for every form findImageBytes finds, wherever it sits in a JSON text', async () => {
    const png = (await makePng(8, 8, [1, 2, 3])).toString('base64');
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
    ]).toString('base64');
    const gif = Buffer.from('GIF89a\u0001\u0000\u0001\u0000\u0000\u0000\u0000;junkjunkjunk').toString(
      'base64',
    );
    const bmp = Buffer.alloc(40);
    bmp.write('BM', 0);
    bmp.writeUInt32LE(14 + 40, 10);
    bmp.writeUInt32LE(40, 14);
    const leaves: unknown[] = [
      { base64: 'AAAA' },
      { type: 'image', data: png, mimeType: 'image/png' },
      `DATA:IMAGE/PNG;BASE64,${png}`,
      png,
      jpeg,
      gif,
      bmp.toString('base64'),
      JSON.stringify({ success: true, data: { base64: png } }),
      JSON.stringify({ nested: JSON.stringify({ inner: jpeg }) }),
    ];
    for (const leaf of leaves) {
      const value = { ok: true, result: { output: leaf } };
      expect(findImageBytes(value).length, JSON.stringify(leaf).slice(0, 60)).toBeGreaterThan(0);
      expect(mayHoldImageBytes(JSON.stringify(value))).toBe(true);
      // The server's escaping of `/` keeps the hint.
      expect(mayHoldImageBytes(JSON.stringify(value).replaceAll('/', '\\/'))).toBe(true);
    }
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(...leaves), fc.boolean(), (json, leaf, inArray) => {
        const value = inArray ? [json, leaf] : { x: json, y: leaf };
        return findImageBytes(value).length === 0 || mayHoldImageBytes(JSON.stringify(value));
      }),
    );
    fc.assert(
      fc.property(
        fc.jsonValue(),
        (json) => findImageBytes(json).length === 0 || mayHoldImageBytes(JSON.stringify(json)),
      ),
    );
    expect(
      mayHoldImageBytes(JSON.stringify({ ok: true, result: { found: true, element: { name: 'Save' } } })),
    ).toBe(false);
  });
});

describe('roughValueSize', () => {
  it('sizes a small value whole: strings by length, other values and keys by a few bytes', () => {
    expect(roughValueSize({ a: 'xy', b: [1, null] })).toBe(2 + (1 + 4 + 4) + (1 + 4 + (2 + 8 + 8)));
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(roughValueSize(cycle)).toBe(2 + 4 + 4);
  });

  it('visits at most ROUGH_SIZE_VALUES values of a pathological value, the rest estimated', () => {
    const sparse = roughValueWalk(new Array(1e7));
    expect(sparse.visited).toBeLessThanOrEqual(ROUGH_SIZE_VALUES + 1);
    expect(sparse.bytes).toBe(2 + 8e7); // each hole read as a value
    const items = Array.from({ length: 1e5 }, (_, i) => ({ i, s: 'x' }));
    const many = roughValueWalk({ items });
    expect(many.visited).toBeLessThanOrEqual(ROUGH_SIZE_VALUES + 1);
    const whole = 2 + (5 + 4) + 2 + 1e5 * (2 + (1 + 4 + 8) + (1 + 4 + 3));
    expect(Math.abs(many.bytes - whole) / whole).toBeLessThan(0.01);
    let deep: unknown = 'end';
    for (let i = 0; i < 1e5; i++) deep = { d: deep };
    expect(roughValueWalk(deep).visited).toBeLessThanOrEqual(ROUGH_SIZE_VALUES + 1);
  });
});
