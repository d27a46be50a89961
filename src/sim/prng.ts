/** A small seeded PRNG so a seeded simulator hands out the same ids on every run. */

/** A mulberry32 generator: returns the next 32-bit unsigned integer on each call. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A source of 12-lowercase-hex session ids (mcec-wire §5) drawn from `next`. */
export function sessionIdSource(next: () => number): () => string {
  return () => {
    const hi = next().toString(16).padStart(8, '0');
    const lo = next().toString(16).padStart(8, '0');
    return `${hi}${lo}`.slice(0, 12);
  };
}
