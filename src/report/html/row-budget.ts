/**
 * Sharing report.html's bytes between its timeline rows: every call measured as a bare row (pass 1), the
 * oldest plain successes left out when even bare rows do not fit, then bodies for the failing call, the last
 * good observation and the newest calls (pass 2). Rows are measured, not kept: the page is written later by
 * rendering each kept row again with the allowance decided here.
 */
import type { CallRow } from '../../store/schema.js';
import type { SessionReader } from '../../store/session-reader.js';
import { CallJson } from '../call-json.js';
import { summarizeCall } from '../summarize-call.js';
import { oneLine } from '../text.js';
import type { CallFacts, RowRenderer } from './row-renderer.js';
import type { RowSpool } from './row-spool.js';
import { MIN_BODY_CHARS, type RowCounters, type RowThumb } from './row-view.js';

/** Calls read from the log at a time: a page of rows is alive while it is rendered, so small pages keep old heap small. */
const CALL_PAGE = 64;
/**
 * The rows' loop gives the event loop a turn every this many ms, so the zip's reads and writes (the images,
 * written meanwhile) and thumbnail reads go on while the rows are measured: each of those needs a turn.
 */
const YIELD_MS = 2;

/** How much body text a row may show. */
export const BODY_LIMITS = {
  /** Arguments + envelope + response of one call, at most. */
  perCall: 24_000,
  /** The failing call and the last good observation, at most. */
  special: 64_000,
  /** When not every call can have its bodies, the newest get at least this much each... */
  tight: 1_200,
  /** ... and at most this many of them do. */
  tightRows: 300,
} as const;

/** A timeline row as measured (bare: no bodies, no thumbnails) and what the budget decided for it. */
export interface Entry {
  seq: number;
  line: string;
  /** Bytes of the bare row and its line break. */
  bytes: number;
  hasBodies: boolean;
  /** A success without warnings or images: the first to go when even bare rows do not fit. */
  plain: boolean;
  special: boolean;
  /** The row shows an image first (its thumbnail or image notes depend on the thumbnail plan). */
  ownsImage: boolean;
  dropped: boolean;
  /** Body characters the row shows (0: bare). */
  allowance: number;
  /** The row's final HTML, kept only when the page is built whole in memory. */
  html: string | null;
  /** Where the bare row lies in the row spool (a streamed page), or -1. */
  spooledAt: number;
  /** Where the row's final HTML lies in the spool when it was rendered with bodies or thumbnails (a streamed page). */
  final: { at: number; bytes: number } | null;
}

/** Calls left out of the timeline (the oldest plain successes first). */
export interface Skipped {
  count: number;
  first: number;
  last: number;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

const noCounters = (): RowCounters => ({ clipped: 0, omitted: 0, bodyChars: 0 });

/** Someone else reading the call rows on the measuring pass: every row in seq order, then `end`. */
export interface CallRowListener {
  /** `json`: the row's parsed JSON, shared with its summary line (parsed once for both). */
  add(row: CallRow, json: CallJson): void;
  end(): void;
}

/** Every call in seq order from `fromSeq`, fetched a few dozen at a time. */
export function* callsInSmallPages(reader: SessionReader, fromSeq = 0): Generator<CallRow> {
  let from = fromSeq;
  for (;;) {
    let last = -1;
    for (const row of reader.calls({ fromSeq: from, limit: CALL_PAGE })) {
      last = row.seq;
      yield row;
    }
    if (last === -1) return;
    from = last + 1;
  }
}

/** What a bare row weighs, from the first `sample` calls, times every call (+10%). */
export function estimateBareBytes(reader: SessionReader, rows: RowRenderer, sample: number): number {
  const totalCalls = reader.callCount();
  let sampleBytes = 0;
  let sampled = 0;
  for (const row of reader.calls({ limit: sample })) {
    sampleBytes += byteLength(rows.render(row, summarizeCall(row), 0, [], noCounters())) + 1;
    sampled += 1;
  }
  return sampled > 0 ? (sampleBytes / sampled) * totalCalls * 1.1 : 0;
}

/** Pass 1: every call as a bare row, streamed; what they weigh decides the room for bodies. */
export async function measureRows(
  reader: SessionReader,
  rows: RowRenderer,
  facts: CallFacts,
  special: ReadonlySet<number>,
  keep: {
    html: boolean;
    spool: RowSpool | null;
    callRows?: CallRowListener;
    /** Ended calls' summary lines made already (PageMode.lines). */
    lines?: ReadonlyMap<number, string>;
  },
): Promise<{ entries: Entry[]; tools: Map<string, number>; bareBytes: number }> {
  const entries: Entry[] = [];
  const tools = new Map<string, number>();
  let bareBytes = 0;
  let turnAt = performance.now() + YIELD_MS;
  for (const row of callsInSmallPages(reader)) {
    const json = new CallJson(row);
    keep.callRows?.add(row, json);
    const line = keep.lines?.get(row.seq) ?? summarizeCall(row, json);
    const html = rows.render(row, line, 0, [], noCounters());
    const bytes = byteLength(html) + 1;
    const isSpecial = special.has(row.seq);
    const ownsImage = facts.imageOwners.has(row.seq);
    const tool = oneLine(row.tool, 80);
    tools.set(tool, (tools.get(tool) ?? 0) + 1);
    entries.push({
      seq: row.seq,
      line,
      bytes,
      hasBodies: row.args != null || row.envelope != null || row.response != null,
      plain: !isSpecial && !ownsImage && row.status === 'ok' && !facts.warningsBySeq.has(row.seq),
      special: isSpecial,
      ownsImage,
      dropped: false,
      allowance: 0,
      html: keep.html ? html : null,
      spooledAt: keep.spool ? keep.spool.append(html, bytes - 1) : -1,
      final: null,
    });
    bareBytes += bytes;
    if (performance.now() >= turnAt) {
      await new Promise((resolve) => setImmediate(resolve));
      turnAt = performance.now() + YIELD_MS;
    }
  }
  keep.callRows?.end();
  return { entries, tools, bareBytes };
}

/** Even bare rows may not fit (tens of thousands of calls): the oldest plain successes go first, then any. */
export function dropOverflow(
  entries: Entry[],
  overflowBytes: number,
  thumbsBySeq: ReadonlyMap<number, RowThumb[]>,
): Skipped {
  const skipped = { count: 0, first: 0, last: 0 };
  let overflow = overflowBytes;
  for (const pass of ['plain', 'any'] as const) {
    for (const e of entries) {
      if (overflow <= 0) break;
      if (e.dropped || e.special || thumbsBySeq.has(e.seq) || (pass === 'plain' && !e.plain)) continue;
      e.dropped = true;
      overflow -= e.bytes;
      skipped.count += 1;
      skipped.first = skipped.first === 0 ? e.seq : Math.min(skipped.first, e.seq);
      skipped.last = Math.max(skipped.last, e.seq);
    }
  }
  return skipped;
}

/** The share of what is free that each row gets in pass 2. */
class Allotment {
  private others: number;
  private reserved: number;
  private tightRows = 0;

  constructor(
    private free: number,
    specials: number,
    otherRows: number,
    private readonly special: number,
  ) {
    this.others = otherRows;
    this.reserved = specials * special;
  }

  /** The allowance of the next row (specials first, then the newest first). */
  next(e: Entry): number {
    if (e.special) {
      this.reserved -= this.special;
      return Math.max(0, Math.min(this.special, this.room()));
    }
    const share = this.others > 0 ? this.room() / this.others : 0;
    this.others -= 1;
    // Not enough for everyone: the newest few get a useful slice; the rest stay bare (and cost no re-render).
    const tight = share < BODY_LIMITS.tight;
    if (tight && this.tightRows >= BODY_LIMITS.tightRows) return 0;
    if (tight) this.tightRows += 1;
    return Math.floor(
      Math.min(BODY_LIMITS.perCall, Math.max(share, Math.min(BODY_LIMITS.tight, this.room()))),
    );
  }

  /** What is free beyond the room kept for the specials still to come. */
  room(): number {
    return this.free - this.reserved;
  }

  /** A row's final HTML took `bytes` more than its bare form. */
  spend(bytes: number): void {
    this.free -= bytes;
  }
}

/**
 * Pass 2: bodies. The failing call and the last good observation first, then the newest calls first; each row
 * that shows more than its bare self is rendered to learn its size, and its final HTML kept (a page built
 * whole) or spooled (a streamed page), so it is not rendered again.
 */
export function allotBodies(
  reader: SessionReader,
  rows: RowRenderer,
  kept: Entry[],
  budget: { free: number; special: number; thumbsBySeq: ReadonlyMap<number, RowThumb[]> },
  spool: RowSpool | null,
): { clipped: number; omitted: number } {
  const counts = { clipped: 0, omitted: 0 };
  const specials = kept.filter((e) => e.special);
  const order = [...specials, ...kept.filter((e) => !e.special).reverse()];
  const share = new Allotment(budget.free, specials.length, order.length - specials.length, budget.special);
  for (const e of order) {
    const thumbs = budget.thumbsBySeq.get(e.seq) ?? [];
    let allowance = share.next(e);
    if (!e.hasBodies || allowance < MIN_BODY_CHARS) allowance = 0;
    if (allowance === 0 && thumbs.length === 0 && !e.ownsImage) {
      if (e.hasBodies) counts.omitted += 1;
      continue;
    }
    const row = reader.call(e.seq);
    if (!row) continue;
    const rowThumbBytes = thumbs.reduce((n, t) => n + t.src.length, 0);
    const local = noCounters();
    let html = rows.render(row, e.line, allowance, thumbs, local);
    let htmlBytes = byteLength(html);
    if (allowance > 0 && htmlBytes + 1 - e.bytes - rowThumbBytes > share.room()) {
      // The escaped text came out bigger than its allowance: show this row without bodies.
      Object.assign(local, noCounters());
      allowance = 0;
      html = rows.render(row, e.line, 0, thumbs, local);
      htmlBytes = byteLength(html);
    }
    counts.clipped += local.clipped;
    counts.omitted += local.omitted;
    share.spend(htmlBytes + 1 - e.bytes - rowThumbBytes);
    e.allowance = allowance;
    if (e.html !== null) e.html = html;
    else if (spool) e.final = { at: spool.append(html, htmlBytes), bytes: htmlBytes };
  }
  return counts;
}
