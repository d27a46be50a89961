/** A stage's throw, sync or async, names the stage it came from (the first stage to see it). */
import { describe, expect, it } from 'vitest';
import { inStage, stageOf } from '../../src/record/stages.js';

describe('inStage', () => {
  it('tags sync throws, rejections and thrown non-errors; an inner stage wins', async () => {
    let err: unknown;
    try {
      inStage('parse', undefined, () => {
        throw new Error('x');
      });
    } catch (e) {
      err = e;
    }
    expect(stageOf(err)).toBe('parse');
    await expect(
      inStage('compact', undefined, () => Promise.reject(new Error('y'))).catch((e) => stageOf(e)),
    ).resolves.toBe('compact');
    try {
      inStage('store', undefined, () =>
        inStage('redact', undefined, () => {
          throw 'plain';
        }),
      );
    } catch (e) {
      err = e;
    }
    expect(stageOf(err)).toBe('redact');
    expect((err as Error).message).toBe('plain');
    expect(stageOf(new Error('untagged'))).toBe('store');
  });

  it('runs the fault seam before the stage', () => {
    const seen: string[] = [];
    const value = inStage(
      'begin',
      (s) => seen.push(s),
      () => 42,
    );
    expect(value).toBe(42);
    expect(seen).toEqual(['begin']);
  });
});
