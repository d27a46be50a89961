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

/** The arrays an automaton is made of; a build fills them in stages. */
interface Tables {
  size: number;
  /** Per node: first child, next sibling, and the unit on the edge into it (sibling lists: few children). */
  child: Int32Array;
  sibling: Int32Array;
  label: Uint16Array;
  fail: Int32Array;
  /** Length of the longest pattern that ends at this node (itself or through failure links), 0 if none. */
  out: Int32Array;
  /** Unit -> its index in the patterns' alphabet (0: a unit no pattern holds). */
  alpha: Uint16Array;
  /** Per node: its dense row's start in `dense`, or -1. The root's row starts at 0. */
  denseRow: Int32Array;
  dense: Int32Array;
  /**
   * Per node, side by side: its dense row's start (or -1) and its `out`. A step reads the state's row start
   * and then the new state's out, which the next step's row start sits beside: one cache line, not two.
   */
  rowAndOut: Int32Array;
}

/** Units of work (pattern units, nodes, dense entries) between two points where a build may pause. */
const PAUSE_GRAIN = 4096;

/**
 * An automaton being built, resumable: `advance(work)` does about that many units of work (a pattern unit
 * folded or inserted, a node ordered or linked, a dense entry filled) and says whether it is done, so a
 * caller can spread a big build over many short steps. `new Automaton(build)` finishes it.
 */
export class AutomatonBuild {
  private readonly stages: Generator<number, Tables>;
  private tables: Tables | undefined;
  /** Units of work done so far. */
  worked = 0;

  /** The patterns are copied now: later changes to the iterable's source do not reach the build. */
  constructor(patterns: Iterable<string>) {
    this.stages = buildStages([...patterns]);
  }

  get done(): boolean {
    return this.tables !== undefined;
  }

  /** Do about `work` units (at least one pause grain); true when the build is complete. */
  advance(work: number): boolean {
    const until = this.worked + work;
    while (!this.tables && this.worked < until) {
      const r = this.stages.next();
      if (r.done) this.tables = r.value;
      else this.worked += r.value;
    }
    return this.tables !== undefined;
  }

  /** The finished tables (completing the build first). */
  finish(): Tables {
    this.advance(Number.POSITIVE_INFINITY);
    return this.tables!;
  }
}

export class Automaton {
  /** Number of patterns it was built from (distinct after folding). */
  readonly size: number;
  private readonly tables: Tables;

  /** From patterns (built now), or from a build (finished now if it is not yet). */
  constructor(source: Iterable<string> | AutomatonBuild) {
    this.tables = (source instanceof AutomatonBuild ? source : new AutomatonBuild(source)).finish();
    this.size = this.tables.size;
  }

  /**
   * Every range of `text` covered by a match, overlapping matches merged, in order. Empty when the
   * automaton has no patterns or nothing matches.
   */
  find(text: string): Span[] {
    const spans: Span[] = [];
    if (this.size === 0) return spans;
    const t = this.tables;
    const { rowAndOut, dense, alpha } = t;
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c < 128) {
        if (c >= 65 && c <= 90) c += 32;
      } else c = foldUnit(c);
      // The same one row read from the root as from any shallow state: the cost per unit barely depends
      // on how many secrets there are or what they look like.
      const row = rowAndOut[2 * state]!;
      state = row !== -1 ? dense[row + alpha[c]!]! : step(t, state, c);
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

function findChild(t: Tables, node: number, c: number): number {
  for (let ch = t.child[node]!; ch !== -1; ch = t.sibling[ch]!) if (t.label[ch] === c) return ch;
  return -1;
}

/** The state after reading folded unit `c` in `state` (the root has a row, so the walk ends there). */
function step(t: Tables, state: number, c: number): number {
  let s = state;
  for (;;) {
    const row = t.denseRow[s]!;
    // A unit outside the alphabet leads nowhere from any state (index 0 of every row is 0: the root).
    if (row !== -1) return t.dense[row + t.alpha[c]!]!;
    const next = findChild(t, s, c);
    if (next !== -1) return next;
    s = t.fail[s]!;
  }
}

/** What a build keeps between its pauses, besides the tables. */
interface BuildState {
  patterns: string[];
  seen: Set<string>;
  list: string[];
  depth: Int32Array;
  /** The root's children by unit while the trie is built (never walked whole: 64 Ki walks cost more than a small automaton's patterns). */
  rootChild: Int32Array;
  rootChildren: number[];
  nodes: number;
  /** Nodes in breadth-first order, `tail` of them so far. */
  order: Int32Array;
  tail: number;
  units: number[];
  rows: number;
  /** Where the current stage's loop stands. */
  at: number;
}

/**
 * The build, in stages that pause (yield the work done) about every PAUSE_GRAIN units: fold and
 * deduplicate, insert into the trie, order breadth-first, the alphabet, the dense rows, failure links and
 * rows, the interleaved row/out table. Each stage's loop is a plain function over a range (hot loops stay
 * out of the generator, which V8 optimizes less well).
 */
function* buildStages(patterns: string[]): Generator<number, Tables> {
  const b: BuildState = {
    patterns,
    seen: new Set<string>(),
    list: [],
    depth: new Int32Array(0),
    rootChild: new Int32Array(0),
    rootChildren: [],
    nodes: 1,
    order: new Int32Array(0),
    tail: 0,
    units: [0],
    rows: 1,
    at: 0,
  };
  while (b.at < patterns.length) yield foldPatterns(b);
  b.list = [...b.seen];
  let total = 1;
  for (const p of b.list) total += p.length;
  const t: Tables = {
    size: b.list.length,
    child: new Int32Array(total).fill(-1),
    sibling: new Int32Array(total).fill(-1),
    label: new Uint16Array(total),
    fail: new Int32Array(total),
    out: new Int32Array(total),
    alpha: new Uint16Array(65536),
    denseRow: new Int32Array(0),
    dense: new Int32Array(0),
    rowAndOut: new Int32Array(0),
  };
  b.depth = new Int32Array(total);
  b.rootChild = new Int32Array(65536);
  b.at = 0;
  while (b.at < b.list.length) yield insertPatterns(t, b);
  // Breadth-first order: rows go to the shallowest nodes first, and each node's failure link (shallower)
  // is complete before the node is.
  b.order = new Int32Array(b.nodes);
  for (const n of b.rootChildren) b.order[b.tail++] = n;
  b.at = 0;
  while (b.at < b.tail) yield orderNodes(t, b);
  // The alphabet, and which nodes get a dense row (the root always: row 0).
  b.at = 1;
  while (b.at < b.nodes) yield collectAlphabet(t, b);
  t.denseRow = new Int32Array(b.nodes).fill(-1);
  t.denseRow[0] = 0;
  b.at = 0;
  const maxRows = Math.max(1, Math.floor(MAX_DENSE_ENTRIES / b.units.length));
  while (b.at < b.tail && b.rows < maxRows) yield chooseRows(t, b, maxRows);
  t.dense = new Int32Array(b.rows * b.units.length);
  for (const n of b.rootChildren) t.dense[t.alpha[t.label[n]!]!] = n; // misses stay 0: the root
  b.at = 0;
  while (b.at < b.tail) yield linkNodes(t, b);
  t.rowAndOut = new Int32Array(b.nodes * 2);
  for (let n = 0; n < b.nodes; n++) {
    t.rowAndOut[2 * n] = t.denseRow[n]!;
    t.rowAndOut[2 * n + 1] = t.out[n]!;
  }
  return t;
}

function foldPatterns(b: BuildState): number {
  let work = 0;
  while (b.at < b.patterns.length && work < PAUSE_GRAIN) {
    const p = b.patterns[b.at++]!;
    if (p.length > 0) b.seen.add(foldString(p));
    work += p.length + 1;
  }
  return work;
}

function insertPatterns(t: Tables, b: BuildState): number {
  let work = 0;
  const { rootChild, depth } = b;
  while (b.at < b.list.length && work < PAUSE_GRAIN) {
    const p = b.list[b.at++]!;
    let node = 0;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      let next = node === 0 ? rootChild[c]! || -1 : findChild(t, node, c);
      if (next === -1) {
        next = b.nodes++;
        t.label[next] = c;
        depth[next] = depth[node]! + 1;
        if (node === 0) {
          rootChild[c] = next;
          b.rootChildren.push(next);
        } else {
          t.sibling[next] = t.child[node]!;
          t.child[node] = next;
        }
      }
      node = next;
    }
    t.out[node] = p.length;
    // Counted twice: an insertion walks sibling lists, about twice a folded or linked unit's cost.
    work += 2 * p.length;
  }
  return work;
}

function orderNodes(t: Tables, b: BuildState): number {
  const { order } = b;
  const end = b.at + PAUSE_GRAIN;
  let head = b.at;
  // `tail` grows as children are queued: the loop reads it afresh.
  for (; head < b.tail && head < end; head++)
    for (let ch = t.child[order[head]!]!; ch !== -1; ch = t.sibling[ch]!) order[b.tail++] = ch;
  const work = head - b.at;
  b.at = head;
  return work;
}

function collectAlphabet(t: Tables, b: BuildState): number {
  const { alpha } = t;
  const end = Math.min(b.at + PAUSE_GRAIN, b.nodes);
  for (let n = b.at; n < end; n++) {
    const c = t.label[n]!;
    if (alpha[c] === 0) {
      alpha[c] = b.units.length;
      b.units.push(c);
    }
  }
  const work = end - b.at;
  b.at = end;
  return work;
}

function chooseRows(t: Tables, b: BuildState, maxRows: number): number {
  const alphaSize = b.units.length;
  const end = Math.min(b.at + PAUSE_GRAIN, b.tail);
  let k = b.at;
  for (; k < end && b.rows < maxRows; k++) {
    const n = b.order[k]!;
    let count = 0;
    for (let ch = t.child[n]!; ch !== -1 && count < DENSE_CHILDREN; ch = t.sibling[ch]!) count++;
    if (count >= DENSE_CHILDREN || (count > 0 && b.depth[n]! <= DENSE_DEPTH))
      t.denseRow[n] = b.rows++ * alphaSize;
  }
  const work = k - b.at;
  b.at = k;
  return work;
}

/** Failure links and inherited outputs, and each dense row's complete transitions; the root's children fail to the root (0). */
function linkNodes(t: Tables, b: BuildState): number {
  const { order, units } = b;
  const alphaSize = units.length;
  const { alpha, dense } = t;
  let work = 0;
  while (b.at < b.tail && work < PAUSE_GRAIN) {
    const node = order[b.at++]!;
    const row = t.denseRow[node]!;
    if (row !== -1) {
      // Misses first, then the children over them: one walk of the child list, not one per unit.
      const fail = t.fail[node]!;
      for (let a = 1; a < alphaSize; a++) dense[row + a] = step(t, fail, units[a]!);
      for (let ch = t.child[node]!; ch !== -1; ch = t.sibling[ch]!) dense[row + alpha[t.label[ch]!]!] = ch;
      work += alphaSize;
    }
    for (let ch = t.child[node]!; ch !== -1; ch = t.sibling[ch]!) {
      const c = t.label[ch]!;
      t.fail[ch] = step(t, t.fail[node]!, c);
      const inherited = t.out[t.fail[ch]!]!;
      if (inherited > t.out[ch]!) t.out[ch] = inherited;
      work++;
    }
    work++;
  }
  return work;
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
