/**
 * A case-folding Aho-Corasick automaton: every pattern is found in one pass over the text, so the cost of a
 * scan does not grow with the number of patterns. Built once per set of patterns (rebuilt on change by the
 * caller); pure, no regex. Folding is per UTF-16 unit (`toLowerCase` of that unit when it stays one unit),
 * so a match keeps its length and positions map back to the original text.
 *
 * A node with many children (random secrets: the root's children each have ~16 at 1,000 secrets) gets a
 * dense row over the patterns' alphabet holding its complete transitions (failure links resolved), so a
 * step costs one array read whatever the secrets' shape; sparse nodes (deep in one secret) keep sibling lists.
 */

/** Children from which a node gets a dense row at any depth. */
const DENSE_CHILDREN = 4;
/**
 * Nodes this shallow get a dense row whenever they have a child: ordinary text keeps the state within the
 * first few units of random secrets (their 2- and 3-unit prefixes cover much of the alphabet's pairs), so
 * nearly every step is one row read, the same work as a step from the root with a single secret.
 */
const DENSE_DEPTH = 3;
/** Most dense-row entries (4 bytes each): a large alphabet (non-ASCII secrets) keeps only the shallow rows. */
const MAX_DENSE_ENTRIES = 1 << 21;

/** One UTF-16 unit folded to lower case (ASCII fast path). */
export function foldUnit(c: number): number {
  if (c < 128) return c >= 65 && c <= 90 ? c + 32 : c;
  const lower = String.fromCharCode(c).toLowerCase();
  return lower.length === 1 ? lower.charCodeAt(0) : c;
}

/** A half-open range `[start, end)` of the scanned text. */
export interface Span {
  start: number;
  end: number;
}

export class Automaton {
  /** Number of patterns it was built from (distinct after folding). */
  readonly size: number;
  /** Per node: first child, next sibling, and the unit on the edge into it (sibling lists: few children). */
  private readonly child: Int32Array;
  private readonly sibling: Int32Array;
  private readonly label: Uint16Array;
  private readonly fail: Int32Array;
  /** Length of the longest pattern that ends at this node (itself or through failure links), 0 if none. */
  private readonly out: Int32Array;
  /** Unit -> its index in the patterns' alphabet (0: a unit no pattern holds). */
  private readonly alpha: Uint16Array;
  /** Per node: its dense row's start in `dense`, or -1. The root's row starts at 0. */
  private readonly denseRow: Int32Array;
  private readonly dense: Int32Array;
  /**
   * Per node, side by side: its dense row's start (or -1) and its `out`. A step reads the state's row start
   * and then the new state's out, which the next step's row start sits beside: one cache line, not two.
   */
  private readonly rowAndOut: Int32Array;

  constructor(patterns: Iterable<string>) {
    const list = [...new Set([...patterns].filter((p) => p.length > 0).map(foldString))];
    this.size = list.length;
    let total = 1;
    for (const p of list) total += p.length;
    this.child = new Int32Array(total).fill(-1);
    this.sibling = new Int32Array(total).fill(-1);
    this.label = new Uint16Array(total);
    this.fail = new Int32Array(total);
    this.out = new Int32Array(total);
    const depth = new Int32Array(total);
    // The root's children by unit while the trie is built; the 64 Ki table is never walked whole (a small
    // automaton is rebuilt on every learned secret, and walks of 64 Ki cost more than its patterns).
    const rootChild = new Int32Array(65536);
    const rootChildren: number[] = [];
    let nodes = 1;
    for (const p of list) {
      let node = 0;
      for (let i = 0; i < p.length; i++) {
        const c = p.charCodeAt(i);
        let next = node === 0 ? rootChild[c]! || -1 : this.findChild(node, c);
        if (next === -1) {
          next = nodes++;
          this.label[next] = c;
          depth[next] = depth[node]! + 1;
          if (node === 0) {
            rootChild[c] = next;
            rootChildren.push(next);
          } else {
            this.sibling[next] = this.child[node]!;
            this.child[node] = next;
          }
        }
        node = next;
      }
      this.out[node] = p.length;
    }
    // Breadth-first order: rows go to the shallowest nodes first, and each node's failure link (shallower)
    // is complete before the node is.
    const order = new Int32Array(nodes);
    let tail = 0;
    for (const n of rootChildren) order[tail++] = n;
    for (let head = 0; head < tail; head++)
      for (let ch = this.child[order[head]!]!; ch !== -1; ch = this.sibling[ch]!) order[tail++] = ch;
    // The alphabet, and which nodes get a dense row (the root always: row 0).
    this.alpha = new Uint16Array(65536);
    const units: number[] = [0];
    for (let n = 1; n < nodes; n++) {
      const c = this.label[n]!;
      if (this.alpha[c] === 0) {
        this.alpha[c] = units.length;
        units.push(c);
      }
    }
    const alphaSize = units.length;
    this.denseRow = new Int32Array(nodes).fill(-1);
    this.denseRow[0] = 0;
    let rows = 1;
    const maxRows = Math.max(1, Math.floor(MAX_DENSE_ENTRIES / alphaSize));
    for (let k = 0; k < tail && rows < maxRows; k++) {
      const n = order[k]!;
      let count = 0;
      for (let ch = this.child[n]!; ch !== -1 && count < DENSE_CHILDREN; ch = this.sibling[ch]!) count++;
      if (count >= DENSE_CHILDREN || (count > 0 && depth[n]! <= DENSE_DEPTH))
        this.denseRow[n] = rows++ * alphaSize;
    }
    this.dense = new Int32Array(rows * alphaSize);
    for (const n of rootChildren) this.dense[this.alpha[this.label[n]!]!] = n; // misses stay 0: the root
    // Failure links and inherited outputs; the root's children fail to the root (0).
    for (let k = 0; k < tail; k++) {
      const node = order[k]!;
      const row = this.denseRow[node]!;
      if (row !== -1) {
        // Misses first, then the children over them: one walk of the child list, not one per unit.
        const fail = this.fail[node]!;
        for (let a = 1; a < alphaSize; a++) this.dense[row + a] = this.step(fail, units[a]!);
        for (let ch = this.child[node]!; ch !== -1; ch = this.sibling[ch]!)
          this.dense[row + this.alpha[this.label[ch]!]!] = ch;
      }
      for (let ch = this.child[node]!; ch !== -1; ch = this.sibling[ch]!) {
        const c = this.label[ch]!;
        this.fail[ch] = this.step(this.fail[node]!, c);
        const inherited = this.out[this.fail[ch]!]!;
        if (inherited > this.out[ch]!) this.out[ch] = inherited;
      }
    }
    this.rowAndOut = new Int32Array(nodes * 2);
    for (let n = 0; n < nodes; n++) {
      this.rowAndOut[2 * n] = this.denseRow[n]!;
      this.rowAndOut[2 * n + 1] = this.out[n]!;
    }
  }

  private findChild(node: number, c: number): number {
    for (let ch = this.child[node]!; ch !== -1; ch = this.sibling[ch]!) if (this.label[ch] === c) return ch;
    return -1;
  }

  /** The state after reading folded unit `c` in `state` (the root has a row, so the walk ends there). */
  private step(state: number, c: number): number {
    let s = state;
    for (;;) {
      const row = this.denseRow[s]!;
      // A unit outside the alphabet leads nowhere from any state (index 0 of every row is 0: the root).
      if (row !== -1) return this.dense[row + this.alpha[c]!]!;
      const next = this.findChild(s, c);
      if (next !== -1) return next;
      s = this.fail[s]!;
    }
  }

  /**
   * Every range of `text` covered by a match, overlapping matches merged, in order. Empty when the
   * automaton has no patterns or nothing matches.
   */
  find(text: string): Span[] {
    const spans: Span[] = [];
    if (this.size === 0) return spans;
    const { rowAndOut, dense, alpha } = this;
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c < 128) {
        if (c >= 65 && c <= 90) c += 32;
      } else c = foldUnit(c);
      // The same one row read from the root as from any shallow state: the cost per unit barely depends
      // on how many secrets there are or what they look like.
      const row = rowAndOut[2 * state]!;
      state = row !== -1 ? dense[row + alpha[c]!]! : this.step(state, c);
      const len = rowAndOut[2 * state + 1]!;
      if (len === 0) continue;
      let start = i + 1 - len;
      // A longer match can reach back over earlier spans: absorb every span it touches.
      while (spans.length > 0 && start <= spans[spans.length - 1]!.end) {
        const prev = spans.pop()!;
        if (prev.start < start) start = prev.start;
      }
      spans.push({ start, end: i + 1 });
    }
    return spans;
  }
}

/** A string folded unit by unit, as the automaton compares. */
export function foldString(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length && plain; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) plain = false;
    else if (c >= 128) plain = false;
  }
  if (plain) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) out += String.fromCharCode(foldUnit(s.charCodeAt(i)));
  return out;
}

/** `text` with every span replaced by `replacement` (spans sorted and disjoint, as `find` returns them). */
export function replaceSpans(text: string, spans: readonly Span[], replacement: string): string {
  if (spans.length === 0) return text;
  let out = '';
  let last = 0;
  for (const s of spans) {
    out += text.slice(last, s.start) + replacement;
    last = s.end;
  }
  return out + text.slice(last);
}
