/**
 * The stored seq of each call key a writer committed (`SessionLog`). A single writer's seqs are its keys, so
 * those are kept as ranges of keys (a handful, however long the session); only a seq that differs from its
 * key (another writer of the file took seqs meanwhile) takes an entry of its own. A Map of every key grew by
 * about 33 bytes a call: 33 MB of heap after a million calls in one session (the soak, bench/soak.ts).
 */
export class StoredSeqs {
  /** Disjoint ranges of keys stored under their own value, sorted, flat: first0, last0, first1, last1, ... */
  private readonly ranges: number[] = [];
  /** Keys stored under another seq. */
  private readonly moved = new Map<number, number>();

  /** The seq `key` was stored under, or undefined when it was not. */
  get(key: number): number | undefined {
    const seq = this.moved.get(key);
    if (seq !== undefined) return seq;
    return this.rangeAt(key) >= 0 ? key : undefined;
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  /** Record that `key` was stored under `seq` (each key once: its seq never changes). */
  set(key: number, seq: number): void {
    if (seq !== key || !Number.isSafeInteger(key)) this.moved.set(key, seq);
    else this.addKey(key);
  }

  /** Ranges held (for tests: a single writer's session keeps a handful). */
  get rangeCount(): number {
    return this.ranges.length / 2;
  }

  /** How many ranges start at or below `key` (binary search). */
  private rangesFrom(key: number): number {
    let lo = 0;
    let hi = this.ranges.length / 2;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ranges[2 * mid]! <= key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The index of the range holding `key`, or -1. */
  private rangeAt(key: number): number {
    const q = this.rangesFrom(key);
    return q > 0 && this.ranges[2 * (q - 1) + 1]! >= key ? q - 1 : -1;
  }

  private addKey(key: number): void {
    const r = this.ranges;
    const n = r.length;
    // Keys come in rising order, but for a call whose row was held back by a commit.
    if (n === 0 || key > r[n - 1]! + 1) {
      r.push(key, key);
      return;
    }
    if (key === r[n - 1]! + 1) {
      r[n - 1] = key;
      return;
    }
    const q = this.rangesFrom(key);
    if (q > 0 && r[2 * (q - 1) + 1]! >= key) return; // held already
    const joinsPrevious = q > 0 && r[2 * (q - 1) + 1] === key - 1;
    const joinsNext = q < n / 2 && r[2 * q] === key + 1;
    if (joinsPrevious && joinsNext) {
      r[2 * (q - 1) + 1] = r[2 * q + 1]!;
      r.splice(2 * q, 2);
    } else if (joinsPrevious) r[2 * (q - 1) + 1] = key;
    else if (joinsNext) r[2 * q] = key;
    else r.splice(2 * q, 0, key, key);
  }
}
