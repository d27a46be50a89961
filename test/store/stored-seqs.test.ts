import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StoredSeqs } from '../../src/store/stored-seqs.js';

describe('StoredSeqs', () => {
  it('answers like a Map of every key, whatever the order keys come in and whether seqs match them', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 3 })), {
          maxLength: 80,
        }),
        (entries) => {
          const seqs = new StoredSeqs();
          const map = new Map<number, number>();
          for (const [key, shift] of entries) {
            if (map.has(key)) continue; // each key is stored once
            const seq = shift === 0 ? key : key + shift * 100;
            seqs.set(key, seq);
            map.set(key, seq);
          }
          for (let key = 0; key <= 62; key++) {
            expect(seqs.get(key)).toBe(map.get(key));
            expect(seqs.has(key)).toBe(map.has(key));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("keeps a single writer's million keys as one range, a held-back key closing its gap", () => {
    const seqs = new StoredSeqs();
    for (let key = 1; key <= 1_000_000; key++) if (key !== 500) seqs.set(key, key);
    expect(seqs.rangeCount).toBe(2);
    expect(seqs.has(500)).toBe(false);
    seqs.set(500, 500);
    expect(seqs.rangeCount).toBe(1);
    expect(seqs.get(500)).toBe(500);
    expect(seqs.get(1_000_000)).toBe(1_000_000);
    expect(seqs.get(1_000_001)).toBeUndefined();
  });
});
