/**
 * Two runs side by side (`mcec-bundle diff <a> <b>`, `diff <id> --last-pass`): both runs' calls aligned by
 * the longest common subsequence of tool + normalized arguments, the first divergence with both calls'
 * arguments and outcomes, UI tree differences of aligned `query` calls (nodes added, removed, renamed), and
 * screenshot differences of aligned calls with images (pixelmatch: the changed-pixel share, and a diff PNG
 * written into the output dir). `schema/diff.schema.json` describes the result.
 */
import fs from 'node:fs';
import path from 'node:path';
import { safeRelativePath } from '../paths/naming.js';
import { categoryLine } from '../report/recovery.js';
import { argsLine } from '../report/target.js';
import { asRecord, clip, oneLine, parseJson } from '../report/text.js';
import { decideVerdict, readVerdictFacts } from '../report/verdict.js';
import type { Catalog, CatalogSession } from '../store/catalog.js';
import type { ArtifactRow, CallRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import { NotARegularFileError, readRegularFile } from '../util/file-stat.js';
import { loadSharp } from '../util/sharp.js';

/** Above this many cells the alignment falls back from the exact LCS to a greedy one. */
const MAX_LCS_CELLS = 16_000_000;
/** Tree differences listed per pair of queries, per kind. */
const MAX_TREE_CHANGES = 50;
/** Screenshot pairs compared (the first ones in call order). */
const MAX_SCREENSHOTS = 50;
/**
 * Largest image compared, in pixels (an 8K screen is 33 M): decoding two 16383 x 16383 PNGs of 784 KB each
 * takes 2 GB and half a minute; past the cap a pair is reported not compared, from the headers alone.
 */
export const MAX_DIFF_PIXELS = 40_000_000;
/** The largest image file read to be compared (a PNG of MAX_DIFF_PIXELS noise is about 160 MB). */
export const MAX_DIFF_IMAGE_BYTES = 256 * 1024 * 1024;
/** Roles of a call's own image, best first. */
const IMAGE_ROLES = ['result', 'image-block', 'nested', 'host-capture', 'host-capture-file', 'partialResult'];

/** One call as the diff shows it. */
export interface DiffCall {
  seq: number;
  tool: string;
  /** Redacted arguments as one line of JSON, without the routing sessionId. */
  args: string;
  status: string;
  code: string | null;
  category: string | null;
  detail: string | null;
  startedAt: string;
}

/** One line of the alignment: a call of each run, or of one only. */
export interface AlignedPair {
  a: number | null;
  b: number | null;
  tool: string;
  /** Each side's outcome: `ok`, or the status and error code (`failed frame-all-black`); null without a call. */
  aOutcome: string | null;
  bOutcome: string | null;
  /** same: matched with the same outcome; changed: matched, other outcome; only-a / only-b: unmatched. */
  kind: 'same' | 'changed' | 'only-a' | 'only-b';
}

export interface TreeDiff {
  aSeq: number;
  bSeq: number;
  window: string | null;
  added: string[];
  removed: string[];
  renamed: Array<{ node: string; from: string; to: string }>;
  omitted: number;
}

export interface ScreenshotDiff {
  aSeq: number;
  bSeq: number;
  tool: string;
  /** Paths relative to each session dir. */
  aImage: string;
  bImage: string;
  width: number;
  height: number;
  changedPixels: number;
  changedShare: number;
  /**
   * False when the pixels were not compared (a file missing or not decodable, an image over the pixel cap):
   * `note` says why, the counts are 0 and the pair counts neither as alike nor as different.
   */
  compared: boolean;
  /** The diff PNG's file name in the output dir (red: changed pixels), or null when none was written. */
  diffImage: string | null;
  /** Set when the images could not be compared as they are (sizes differ, a file is missing). */
  note: string | null;
}

export interface RunFacts {
  sessionId: string;
  dirName: string;
  scenario: string | null;
  verdict: 'PASS' | 'FAIL';
  verdictReason: string;
  startedAt: string;
  calls: number;
}

/** What `mcec-bundle diff --json` prints. */
export interface SessionDiff {
  version: 1;
  a: RunFacts;
  b: RunFacts;
  /** How many aligned pairs of each kind. */
  summary: { same: number; changed: number; onlyA: number; onlyB: number };
  /** The first pair that is not `same`, with both calls. */
  firstDivergence: {
    index: number;
    kind: AlignedPair['kind'];
    a: DiffCall | null;
    b: DiffCall | null;
  } | null;
  aligned: AlignedPair[];
  trees: TreeDiff[];
  screenshots: ScreenshotDiff[];
  /** True when the runs diverge or a compared screenshot changed more than the threshold. */
  differs: boolean;
  /** The output dir (diff PNGs, diff.html), or null when nothing was written. */
  outDir: string | null;
}

export interface DiffOptions {
  /** Where the diff PNGs go (created); none are written without it. */
  outDir?: string;
  /** pixelmatch's per-pixel colour threshold (0-1, default 0.1). */
  threshold?: number;
  /** A screenshot pair counts as different above this changed share (default 0.01). */
  maxChangedShare?: number;
}

/** Volatile argument keys: a window handle differs in every run. */
const VOLATILE_ARGS = new Set(['sessionId', 'handle', 'processId', 'pid', 'timeoutMs', 'timeout']);

/** The alignment key of a call: its tool and arguments without volatile values, keys sorted. */
export function alignmentKey(row: Pick<CallRow, 'tool' | 'args'>): string {
  const args = asRecord(parseJson(row.args, 256 * 1024)) ?? {};
  const norm = (v: unknown, depth: number): unknown => {
    if (depth > 6) return '…';
    if (Array.isArray(v)) return v.slice(0, 50).map((x) => norm(x, depth + 1));
    const rec = asRecord(v);
    if (!rec) return typeof v === 'string' ? v.slice(0, 200) : v;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(rec).sort()) if (!VOLATILE_ARGS.has(k)) out[k] = norm(rec[k], depth + 1);
    return out;
  };
  return `${row.tool} ${JSON.stringify(norm(args, 0))}`;
}

/** Longest common subsequence alignment of two key lists (exact up to MAX_LCS_CELLS, then greedy). */
export function alignKeys(a: readonly string[], b: readonly string[]): Array<[number | null, number | null]> {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf])
    suf++;
  const out: Array<[number | null, number | null]> = [];
  for (let i = 0; i < pre; i++) out.push([i, i]);
  const n = a.length - pre - suf;
  const m = b.length - pre - suf;
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= MAX_LCS_CELLS) {
    // Lengths of the LCS of the suffixes, then one walk from the start.
    const w = m + 1;
    const L = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        L[i * w + j] =
          a[pre + i] === b[pre + j]
            ? L[(i + 1) * w + j + 1]! + 1
            : Math.max(L[(i + 1) * w + j]!, L[i * w + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (a[pre + i] === b[pre + j]) out.push([pre + i++, pre + j++]);
      else if (L[(i + 1) * w + j]! >= L[i * w + j + 1]!) out.push([pre + i++, null]);
      else out.push([null, pre + j++]);
    }
    while (i < n) out.push([pre + i++, null]);
    while (j < m) out.push([null, pre + j++]);
  } else {
    // Greedy: match each call of a with the next equal one of b within a window.
    let j = 0;
    for (let i = 0; i < n; i++) {
      let hit = -1;
      for (let k = j; k < Math.min(m, j + 200); k++) {
        if (a[pre + i] === b[pre + k]) {
          hit = k;
          break;
        }
      }
      if (hit < 0) {
        out.push([pre + i, null]);
        continue;
      }
      while (j < hit) out.push([null, pre + j++]);
      out.push([pre + i, pre + j++]);
    }
    while (j < m) out.push([null, pre + j++]);
  }
  for (let k = 0; k < suf; k++) out.push([a.length - suf + k, b.length - suf + k]);
  return out;
}

/** A call as the diff shows it: redacted arguments as one clipped line, its outcome. */
export function diffCallOf(row: CallRow): DiffCall {
  return {
    seq: row.seq,
    tool: oneLine(row.tool, 80),
    args: argsLine(row.args, 2000),
    status: row.status,
    code: row.error_code ? oneLine(row.error_code, 120) : null,
    category: categoryLine(row),
    detail: row.error_detail ? clip(row.error_detail, 2000) : null,
    startedAt: row.started_at,
  };
}

function sameOutcome(x: CallRow, y: CallRow): boolean {
  return x.status === y.status && (x.error_code ?? '') === (y.error_code ?? '');
}

/** A UI tree flattened to node paths (controlType, automationId or position) and their names. */
function flattenTree(tree: unknown): Map<string, { label: string; name: string }> {
  const out = new Map<string, { label: string; name: string }>();
  let visited = 0;
  const walk = (node: unknown, prefix: string, depth: number) => {
    const n = asRecord(node);
    if (!n || depth > 40 || visited++ > 20_000) return;
    const name = typeof n.name === 'string' ? n.name : '';
    const type = typeof n.controlType === 'string' ? n.controlType : 'node';
    out.set(prefix, { label: `${type}${name ? ` '${oneLine(name, 60)}'` : ''}`, name });
    const kids = Array.isArray(n.children) ? n.children : [];
    const seen = new Map<string, number>();
    for (const kid of kids) {
      const k = asRecord(kid);
      if (!k) continue;
      const kType = typeof k.controlType === 'string' ? k.controlType : 'node';
      const id = typeof k.automationId === 'string' && k.automationId !== '' ? k.automationId : null;
      const base = id ? `${kType}#${id}` : kType;
      const nth = seen.get(base) ?? 0;
      seen.set(base, nth + 1);
      walk(k, `${prefix}/${id ? base : `${base}[${nth}]`}${id && nth > 0 ? `[${nth}]` : ''}`, depth + 1);
    }
  };
  walk(tree, '', 0);
  return out;
}

/** Nodes added, removed and renamed between two query results' trees. */
export function diffTrees(a: unknown, b: unknown): Omit<TreeDiff, 'aSeq' | 'bSeq' | 'window'> {
  const fa = flattenTree(a);
  const fb = flattenTree(b);
  const added: string[] = [];
  const removed: string[] = [];
  const renamed: TreeDiff['renamed'] = [];
  let omitted = 0;
  const push = <T>(list: T[], item: T) => {
    if (list.length < MAX_TREE_CHANGES) list.push(item);
    else omitted += 1;
  };
  for (const [p, node] of fb) if (!fa.has(p)) push(added, `${node.label} at ${p || '/'}`);
  for (const [p, node] of fa) {
    const other = fb.get(p);
    if (!other) push(removed, `${node.label} at ${p || '/'}`);
    else if (other.name !== node.name) {
      push(renamed, { node: p || '/', from: oneLine(node.name, 120), to: oneLine(other.name, 120) });
    }
  }
  return { added, removed, renamed, omitted };
}

function treeOf(row: CallRow): { tree: unknown; window: string | null } | null {
  if (row.status !== 'ok') return null;
  const result = asRecord(asRecord(parseJson(row.envelope, 32 * 1024 * 1024))?.result);
  if (!result || result.tree === undefined) return null;
  const title = asRecord(result.window)?.title;
  return { tree: result.tree, window: typeof title === 'string' ? oneLine(title, 120) : null };
}

function imageOf(reader: SessionReader, seq: number): ArtifactRow | null {
  const rows = reader.artifactsOfCall(seq).filter((r) => r.path && safeRelativePath(r.path));
  for (const role of IMAGE_ROLES) {
    const hit = rows.find((r) => r.role === role && /\.(png|jpe?g|bmp)$/i.test(r.path!));
    if (hit) return hit;
  }
  return null;
}

function runFacts(reader: SessionReader): RunFacts {
  return reader.snapshot(() => {
    const session = reader.session();
    const stats = reader.stats();
    const decision = decideVerdict(readVerdictFacts(reader, { session, stats }));
    return {
      sessionId: session.session_id,
      dirName: path.basename(reader.dir),
      scenario: session.scenario,
      verdict: decision.verdict,
      verdictReason: decision.reason,
      startedAt: session.started_at,
      calls: stats.calls,
    };
  });
}

/** Compare two session dirs (A: the reference, e.g. the last passing run; B: the run under study). */
export async function diffSessions(
  dirA: string,
  dirB: string,
  options: DiffOptions = {},
): Promise<SessionDiff> {
  const ra = SessionReader.open(dirA);
  let rb: SessionReader;
  try {
    rb = SessionReader.open(dirB);
  } catch (err) {
    ra.close(); // a reader may hold a private copy of its log
    throw err;
  }
  try {
    const a = runFacts(ra);
    const b = runFacts(rb);
    const callsA = ra.snapshot(() => [...ra.calls()]);
    const callsB = rb.snapshot(() => [...rb.calls()]);
    const aligned = alignCalls(callsA, callsB);
    const bySeqA = new Map(callsA.map((c) => [c.seq, c]));
    const bySeqB = new Map(callsB.map((c) => [c.seq, c]));
    const firstDivergence = firstDivergenceOf(aligned, bySeqA, bySeqB);
    const { trees, shots } = pairedEvidence(
      aligned,
      { reader: ra, bySeq: bySeqA },
      { reader: rb, bySeq: bySeqB },
    );
    if (options.outDir) fs.mkdirSync(options.outDir, { recursive: true });
    const screenshots: ScreenshotDiff[] = [];
    for (const s of shots) {
      screenshots.push(await compareImages(dirA, dirB, s, options));
    }
    const maxShare = options.maxChangedShare ?? 0.01;
    return {
      version: 1,
      a,
      b,
      summary: summarizeAlignment(aligned),
      firstDivergence,
      aligned,
      trees,
      screenshots,
      // A pair not compared proves no difference: it is reported, not counted.
      differs: firstDivergence !== null || screenshots.some((s) => s.compared && s.changedShare > maxShare),
      outDir: options.outDir ?? null,
    };
  } finally {
    ra.close();
    rb.close();
  }
}

/** A call's outcome in one word or two: `ok`, or its status and error code; null without a call. */
function outcomeOf(c: CallRow | undefined): string | null {
  if (c === undefined) return null;
  if (c.status === 'ok') return 'ok';
  return `${c.status}${c.error_code ? ` ${oneLine(c.error_code, 80)}` : ''}`;
}

/** Both runs' calls aligned by their keys, each pair with its kind. */
function alignCalls(callsA: CallRow[], callsB: CallRow[]): AlignedPair[] {
  const pairs = alignKeys(callsA.map(alignmentKey), callsB.map(alignmentKey));
  return pairs.map(([i, j]) => ({
    a: i === null ? null : callsA[i]!.seq,
    b: j === null ? null : callsB[j]!.seq,
    tool: oneLine((i === null ? callsB[j!]! : callsA[i]!).tool, 80),
    aOutcome: outcomeOf(i === null ? undefined : callsA[i]),
    bOutcome: outcomeOf(j === null ? undefined : callsB[j]),
    kind:
      i === null
        ? 'only-b'
        : j === null
          ? 'only-a'
          : sameOutcome(callsA[i]!, callsB[j]!)
            ? 'same'
            : 'changed',
  }));
}

function summarizeAlignment(aligned: AlignedPair[]): SessionDiff['summary'] {
  const summary = { same: 0, changed: 0, onlyA: 0, onlyB: 0 };
  for (const p of aligned) {
    if (p.kind === 'same') summary.same++;
    else if (p.kind === 'changed') summary.changed++;
    else if (p.kind === 'only-a') summary.onlyA++;
    else summary.onlyB++;
  }
  return summary;
}

function firstDivergenceOf(
  aligned: AlignedPair[],
  bySeqA: Map<number, CallRow>,
  bySeqB: Map<number, CallRow>,
): SessionDiff['firstDivergence'] {
  const index = aligned.findIndex((p) => p.kind !== 'same');
  if (index < 0) return null;
  const pair = aligned[index]!;
  return {
    index,
    kind: pair.kind,
    a: pair.a === null ? null : diffCallOf(bySeqA.get(pair.a)!),
    b: pair.b === null ? null : diffCallOf(bySeqB.get(pair.b)!),
  };
}

/** One run's side of a diff: its reader and its calls by seq. */
interface DiffSide {
  reader: SessionReader;
  bySeq: Map<number, CallRow>;
}

/** A pair of aligned calls' images to compare. */
interface ScreenshotPair {
  pa: ArtifactRow;
  pb: ArtifactRow;
  aSeq: number;
  bSeq: number;
  tool: string;
}

/** Over the matched pairs: their UI tree differences, and the first MAX_SCREENSHOTS pairs with images. */
function pairedEvidence(
  aligned: AlignedPair[],
  sideA: DiffSide,
  sideB: DiffSide,
): { trees: TreeDiff[]; shots: ScreenshotPair[] } {
  const trees: TreeDiff[] = [];
  const shots: ScreenshotPair[] = [];
  for (const p of aligned) {
    if (p.a === null || p.b === null) continue;
    const ca = sideA.bySeq.get(p.a)!;
    const cb = sideB.bySeq.get(p.b)!;
    const ta = treeOf(ca);
    const tb = treeOf(cb);
    if (ta && tb) {
      const d = diffTrees(ta.tree, tb.tree);
      if (d.added.length + d.removed.length + d.renamed.length > 0) {
        trees.push({ aSeq: p.a, bSeq: p.b, window: tb.window ?? ta.window, ...d });
      }
    }
    if (shots.length < MAX_SCREENSHOTS) {
      const ia = imageOf(sideA.reader, p.a);
      const ib = imageOf(sideB.reader, p.b);
      if (ia && ib) shots.push({ pa: ia, pb: ib, aSeq: p.a, bSeq: p.b, tool: oneLine(cb.tool, 60) });
    }
  }
  return { trees, shots };
}

async function compareImages(
  dirA: string,
  dirB: string,
  s: ScreenshotPair,
  options: DiffOptions,
): Promise<ScreenshotDiff> {
  const aImage = safeRelativePath(s.pa.path)!;
  const bImage = safeRelativePath(s.pb.path)!;
  const base: ScreenshotDiff = {
    aSeq: s.aSeq,
    bSeq: s.bSeq,
    tool: s.tool,
    aImage,
    bImage,
    width: 0,
    height: 0,
    changedPixels: 0,
    changedShare: 0,
    compared: true,
    diffImage: null,
    note: null,
  };
  const sharp = await loadSharp();
  const { default: pixelmatch } = await import('pixelmatch');
  let imgA: { data: Buffer; info: { width: number; height: number } };
  let imgB: { data: Buffer; info: { width: number; height: number } };
  let bytesA: Buffer;
  let bytesB: Buffer;
  try {
    // Regular files only, read here: a FIFO under an artifact's name blocked the diff for ever, a symlink
    // compared a file from anywhere on this machine (a session dir unpacked from a tar holds either).
    bytesA = readRegularFile(path.join(dirA, aImage), MAX_DIFF_IMAGE_BYTES);
    bytesB = readRegularFile(path.join(dirB, bImage), MAX_DIFF_IMAGE_BYTES);
  } catch (err) {
    if (!(err instanceof NotARegularFileError)) throw err;
    const side = err.file === path.join(dirA, aImage) ? `A's ${aImage}` : `B's ${bImage}`;
    const why = { missing: 'is missing', 'not-regular': 'is not a regular file', 'too-big': 'is too big' }[
      err.reason
    ];
    return { ...base, compared: false, note: `not compared: ${oneLine(`${side} ${why}`, 200)}` };
  }
  try {
    const metaA = await sharp(bytesA).metadata();
    const metaB = await sharp(bytesB).metadata();
    for (const [name, m] of [
      ['A', metaA],
      ['B', metaB],
    ] as const) {
      const pixels = (m.width ?? 0) * (m.height ?? 0);
      if (pixels > MAX_DIFF_PIXELS)
        return {
          ...base,
          compared: false,
          note: `not compared: ${name} is ${m.width}x${m.height}, over the cap of ${MAX_DIFF_PIXELS} pixels`,
        };
    }
    const limitInputPixels = MAX_DIFF_PIXELS;
    imgA = await sharp(bytesA, { limitInputPixels })
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const { width, height } = imgA.info;
    let pipeline = sharp(bytesB, { limitInputPixels }).ensureAlpha();
    if (metaB.width !== width || metaB.height !== height) {
      base.note = `sizes differ: ${width}x${height} and ${metaB.width}x${metaB.height}; B scaled to A's size`;
      pipeline = pipeline.resize(width, height, { fit: 'fill' });
    }
    imgB = await pipeline.raw().toBuffer({ resolveWithObject: true });
  } catch (err) {
    return { ...base, compared: false, note: `not compared: ${oneLine((err as Error).message, 200)}` };
  }
  const { width, height } = imgA.info;
  const out = Buffer.alloc(width * height * 4);
  const changed = pixelmatch(imgA.data, imgB.data, out, width, height, {
    threshold: options.threshold ?? 0.1,
  });
  let diffImage: string | null = null;
  if (options.outDir) {
    diffImage = `diff-${s.aSeq}-${s.bSeq}.png`;
    await sharp(out, { raw: { width, height, channels: 4 } })
      .png()
      .toFile(path.join(options.outDir, diffImage));
  }
  return {
    ...base,
    width,
    height,
    changedPixels: changed,
    changedShare: Math.round((changed / Math.max(1, width * height)) * 1e6) / 1e6,
    diffImage,
  };
}

function outcome(c: DiffCall): string {
  return c.status === 'ok'
    ? 'ok'
    : `${c.status}${c.code ? ` ${c.code}` : ''}${c.category ? ` (${c.category})` : ''}${c.detail ? `: ${oneLine(c.detail, 200)}` : ''}`;
}

/** The diff for a terminal. */
export function renderDiffText(d: SessionDiff): string {
  const run = (label: string, r: RunFacts) =>
    `${label} ${r.sessionId} ${r.verdict} ${r.startedAt.slice(0, 19)}Z  ${r.calls} calls${r.scenario ? `  ${oneLine(r.scenario, 80)}` : ''}`;
  const lines = [run('A', d.a), run('B', d.b), ''];
  const s = d.summary;
  lines.push(
    `${s.same} calls alike, ${s.changed} with another outcome, ${s.onlyA} only in A, ${s.onlyB} only in B`,
  );
  const f = d.firstDivergence;
  if (!f) lines.push('The runs make the same calls with the same outcomes.');
  else {
    lines.push('', `First divergence (aligned call ${f.index + 1}, ${f.kind}):`);
    for (const [label, c] of [
      ['A', f.a],
      ['B', f.b],
    ] as const) {
      if (!c) lines.push(`  ${label}: (no call here)`);
      else lines.push(`  ${label}: #${c.seq} ${c.tool} ${c.args}`, `     -> ${outcome(c)}`);
    }
  }
  if (d.trees.length > 0) {
    lines.push('', 'UI tree differences:');
    for (const t of d.trees.slice(0, 10)) {
      lines.push(`  query A#${t.aSeq} / B#${t.bSeq}${t.window ? ` '${t.window}'` : ''}:`);
      for (const x of t.added.slice(0, 10)) lines.push(`    + ${x}`);
      for (const x of t.removed.slice(0, 10)) lines.push(`    - ${x}`);
      for (const x of t.renamed.slice(0, 10)) lines.push(`    ~ ${x.node}: '${x.from}' -> '${x.to}'`);
    }
  }
  const compared = d.screenshots.filter((x) => x.compared);
  const changed = compared.filter((x) => x.changedPixels > 0 || x.note);
  const notCompared = d.screenshots.filter((x) => !x.compared);
  if (d.screenshots.length > 0) {
    lines.push(
      '',
      `Screenshots: ${compared.length} compared, ${changed.length} differ${notCompared.length > 0 ? `, ${notCompared.length} not compared` : ''}`,
    );
    for (const x of changed.slice(0, 20)) {
      lines.push(
        `  ${x.tool} A#${x.aSeq} / B#${x.bSeq}: ${(x.changedShare * 100).toFixed(2)}% of ${x.width}x${x.height} pixels changed${x.diffImage && d.outDir ? ` (${path.join(d.outDir, x.diffImage)})` : ''}${x.note ? `; ${x.note}` : ''}`,
      );
    }
    for (const x of notCompared.slice(0, 20)) lines.push(`  ${x.tool} A#${x.aSeq} / B#${x.bSeq}: ${x.note}`);
  }
  return lines.join('\n');
}

/**
 * The latest passing run of the same scenario that started before the session `dirName` (the catalog's
 * view, refreshed by the caller), or null.
 */
export function lastPassOf(catalog: Catalog, dirName: string): CatalogSession | null {
  const self = catalog.session(dirName);
  if (!self) return null;
  const before = (s: CatalogSession) => (s.started_at ?? s.dir_name) < (self.started_at ?? self.dir_name);
  const runs = catalog
    .sessions({ verdict: 'PASS' })
    .filter((s) => s.dir_name !== dirName && s.scenario === self.scenario && s.calls > 0 && before(s));
  // By start time: two runs started within the same second sort by their ids in dir-name order.
  runs.sort((x, y) => Date.parse(x.started_at ?? '') - Date.parse(y.started_at ?? ''));
  return runs.at(-1) ?? null;
}
