/**
 * Render report.html: a self-contained timeline page (inline CSS, script and thumbnails; no network). The page
 * is planned first (what each row shows within the size cap, the thumbnails, the page around the rows), then
 * written: either whole, or streamed row by row, each row rendered again from the log (the same bytes).
 */

import { randomBytes } from 'node:crypto';
import { isRasterArtifact } from '../../artifacts/image-file.js';
import { safeRelativePath } from '../../paths/naming.js';
import type { CallRow } from '../../store/schema.js';
import { SessionReader } from '../../store/session-reader.js';
import {
  expectInstance,
  expectNumber,
  expectObject,
  expectOptions,
  expectString,
} from '../../util/expect.js';
import { PlayerCollector, type PlayerModel } from '../player/model.js';
import { playerView } from '../player/player-view.js';
import { serverVersionOf } from '../player/read-model.js';
import { isPlainServer } from '../server-kind.js';
import { escapeFormatChars } from '../text.js';
import type { ImageLeftOut, SessionSummary } from '../types.js';
import { applyCsp } from './csp.js';
import { imageRef } from './image-ref.js';
import { lastGoodImageOf, notices, type PageInputs, pageContext, type Shortfalls } from './page-view.js';
import {
  allotBodies,
  BODY_LIMITS,
  type CallRowListener,
  callsInSmallPages,
  dropOverflow,
  type Entry,
  estimateBareBytes,
  measureRows,
} from './row-budget.js';
import {
  type CallFacts,
  isRecording,
  type LeftOutKeys,
  leftOutNote,
  RowRenderer,
  readCallFacts,
} from './row-renderer.js';
import { RowSpool } from './row-spool.js';
import type { RowThumb } from './row-view.js';
import { loadReportTemplate, type ReportTemplate } from './template.js';
import { planThumbnails, type ThumbnailPlan, type ThumbnailRequest } from './thumbnails.js';

/** Options for renderReportHtml. */
export interface ReportHtmlOptions {
  /** A folder whose `report.html.hbs` overrides the built-in template. */
  templatesDir?: string;
  /** Most bytes the page may have (default 5,000,000). */
  maxBytes?: number;
  /** Where the full images are, relative to the page (default `artifacts/`). */
  artifactBase?: string;
  /**
   * Most thumbnails besides the failing call's and the last good observation's (default 48, the newest):
   * one not made at record time costs a PNG decode (~10 ms of CPU for 800x600), and bundles are built on the clock.
   */
  maxThumbnails?: number;
}

/** Default size cap of report.html: 5 MB. */
export const DEFAULT_REPORT_HTML_MAX_BYTES = 5_000_000;
/** The smallest size cap: the page around the rows takes most of it (shellGuess + shellMargin). */
export const MIN_REPORT_HTML_MAX_BYTES = 100_000;
/** Default number of thumbnails besides the priority ones. */
export const DEFAULT_MAX_THUMBNAILS = 48;

/** The page's shares of its size cap, decided before the rows are known. */
const SHARES = {
  /** The page around the rows before it is measured (CSS, script, header). */
  shellGuess: 60_000,
  /** Room kept for what is only known after the rows (notices, the tool list). */
  shellMargin: 24_000,
  /** Share of the page thumbnails may take at most, and at least when the rows would leave less. */
  thumbMax: 0.6,
  thumbMin: 0.15,
} as const;
/** Calls rendered up front to learn what a bare row weighs. */
const ROW_SAMPLE = 50;
/** Rows beyond which the timeline lets the browser skip off-screen rows (a short page screenshots whole). */
const LONG_TIMELINE = 500;
const MAX_TOOLS_LISTED = 200;
/** Bytes gathered before a chunk of the streamed page is handed on. */
const CHUNK_BYTES = 64 * 1024;

/**
 * report.html planned: the page around the rows, and the rows it shows. `rows()` renders each again from the
 * log (the reader must stay open until it is done), unless the plan kept them (`renderReportHtml`).
 */
export interface ReportHtmlPage {
  /** The page before the rows; the whole page when the template has no rows. */
  head: string;
  /** The page after the rows; null when the template has no rows. */
  tail: string | null;
  /** Each shown row's HTML, in order. */
  rows(): Generator<string>;
  /** The run as the player shows it (the bundle reads it first, for run.gif, and hands it in: `PageMode.player`). */
  player: PlayerModel;
  /**
   * The page as read where `images` are not beside it (a bundle that left them out, each with why in its
   * words): where each would be (the images at the top, its rows, the player) it is named with why, with no
   * link and no thumbnail; a notice says how many. Only the rows that show one are rendered again.
   */
  without(images: readonly ImageLeftOut[]): PageParts;
}

/** A page's bytes as `pageChunks` streams them: the head, the rows, the tail. */
export type PageParts = Pick<ReportHtmlPage, 'head' | 'tail' | 'rows'>;

/**
 * renderReportHtml's options, checked at the public boundary (writeReportHtml's too): a TypeError or RangeError
 * naming the first bad one. `maxThumbnails` may be Infinity (every image gets one).
 */
export function checkReportHtmlOptions(value: unknown): ReportHtmlOptions {
  const o = expectOptions(value);
  expectString(o.templatesDir, 'options.templatesDir', { nonEmpty: true });
  expectNumber(o.maxBytes, 'options.maxBytes', { min: MIN_REPORT_HTML_MAX_BYTES, integer: true });
  expectString(o.artifactBase, 'options.artifactBase');
  if (o.maxThumbnails !== Number.POSITIVE_INFINITY)
    expectNumber(o.maxThumbnails, 'options.maxThumbnails', { min: 0, integer: true });
  return o as ReportHtmlOptions;
}

/** Render report.html for one session: a server-rendered timeline that filters with JavaScript and reads without it. */
export async function renderReportHtml(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions = {},
): Promise<string> {
  expectInstance(reader, 'reader', SessionReader);
  expectObject(summary, 'summary');
  checkReportHtmlOptions(options);
  const page = await renderReportHtmlParts(reader, summary, options, { keepRows: true });
  if (page.tail === null) return page.head;
  return [page.head, ...page.rows(), page.tail].join('\n');
}

/** renderReportHtml's page as UTF-8 bytes, in chunks of about 64 KiB: no more of it is in memory at a time. */
export async function renderReportHtmlStream(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions = {},
): Promise<Generator<Buffer>> {
  return pageChunks(await renderReportHtmlParts(reader, summary, options, { keepRows: false }));
}

/** The page's bytes in chunks: the head, each row after a line break, then the tail after one. */
export function* pageChunks(page: PageParts): Generator<Buffer> {
  if (page.tail === null) {
    yield Buffer.from(page.head, 'utf8');
    return;
  }
  let pending: string[] = [page.head];
  let size = page.head.length;
  for (const row of page.rows()) {
    pending.push(row);
    size += row.length + 1;
    if (size >= CHUNK_BYTES) {
      yield Buffer.from(pending.join('\n'), 'utf8');
      // The next chunk starts with the line break that separates it from this one.
      pending = [''];
      size = 0;
    }
  }
  pending.push(page.tail);
  yield Buffer.from(pending.join('\n'), 'utf8');
}

/** The page's settings from the options (checked by checkReportHtmlOptions where they come from a caller). */
function settingsOf(options: ReportHtmlOptions) {
  return {
    maxBytes: options.maxBytes ?? DEFAULT_REPORT_HTML_MAX_BYTES,
    artifactBase: options.artifactBase ?? 'artifacts/',
    maxThumbnails: options.maxThumbnails ?? DEFAULT_MAX_THUMBNAILS,
  };
}

/** The calls the page singles out: the failing call and the last good observation's. */
function specialSeqs(summary: SessionSummary): { failingSeq: number | null; lastGoodSeq: number | null } {
  const lastGood = summary.lastGoodObservation;
  return {
    failingSeq: summary.failingCall?.seq ?? null,
    lastGoodSeq: lastGood && lastGood.tool !== 'lastObservation' ? lastGood.seq : null,
  };
}

/** How renderReportHtmlParts keeps the rows, and who else sees them. */
export interface PageMode {
  /** Keep each row's final HTML (a page built whole), or stream the rows (from the spool, else rendered again). */
  keepRows: boolean;
  /** Where a streamed page spools its rows as they are rendered (a scratch dir), so none is rendered twice. */
  spoolDir?: string;
  /** Handed every call row, in seq order, as the rows are measured (the bundle writes tool-calls.jsonl on this pass). */
  callRows?: CallRowListener;
  /** The player's model read already (`readPlayerModel`, the bundle's run.gif pass): the rows pass does not collect it. */
  player?: PlayerModel;
  /**
   * The calls' summary lines by seq, made on that pass (`readPlayerModel`'s `lines`): a row whose line is here
   * is not summarized again (its JSON is not parsed on the rows pass). Only for a log no writer changes meanwhile.
   */
  lines?: ReadonlyMap<number, string>;
}

/** Plan the page: rows measured, thumbnails made, bodies shared out, the page around the rows rendered. */
export async function renderReportHtmlParts(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions,
  mode: PageMode,
): Promise<ReportHtmlPage> {
  const settings = settingsOf(options);
  const tpl = await loadReportTemplate(options.templatesDir);
  const facts = readCallFacts(reader, settings.artifactBase);
  const seqs = specialSeqs(summary);
  const where = { dir: reader.dir, artifactBase: settings.artifactBase };
  const rows = new RowRenderer(tpl, facts, where, {
    ...seqs,
    plainServer: isPlainServer(summary.environment),
  });
  const special = Math.min(BODY_LIMITS.special, Math.floor(settings.maxBytes / 40));

  // Thumbnails are made (or read) meanwhile, within what the bare rows are expected to leave.
  const requests = thumbnailRequests(facts, summary, where);
  const room =
    settings.maxBytes -
    SHARES.shellGuess -
    SHARES.shellMargin -
    estimateBareBytes(reader, rows, ROW_SAMPLE) -
    2 * special;
  const thumbBudget = Math.floor(
    Math.min(settings.maxBytes * SHARES.thumbMax, Math.max(settings.maxBytes * SHARES.thumbMin, room)),
  );
  // Kept thumbnails are read; one decode at a time for those missing (lower peak memory; the rows keep a core).
  const planned = planThumbnails(requests, thumbBudget, {
    maxCount: settings.maxThumbnails,
    concurrency: 1,
    sessionDir: reader.dir,
  });
  planned.catch(() => undefined); // awaited below; this only keeps an early rejection from being "unhandled"

  // A streamed page keeps its rows in a scratch file as they are rendered (bare when measured, with bodies
  // when those are shared out), so no row is read and rendered a second time to be streamed.
  const spool = !mode.keepRows && mode.spoolDir ? new RowSpool(mode.spoolDir) : null;
  try {
    return await planPage(
      reader,
      summary,
      { tpl, facts, rows, settings, seqs, requests, planned },
      mode,
      spool,
    );
  } finally {
    spool?.finish(); // closed for writing whatever happens: its dir is removed next (Windows: no open files)
  }
}

/** What renderReportHtmlParts reads before the rows are measured. */
interface PageFacts {
  tpl: ReportTemplate;
  facts: CallFacts;
  rows: RowRenderer;
  settings: ReturnType<typeof settingsOf>;
  seqs: ReturnType<typeof specialSeqs>;
  requests: ThumbnailRequest[];
  planned: Promise<ThumbnailPlan>;
}

/** renderReportHtmlParts once the page's facts are read: rows measured, bodies shared out, the shell rendered. */
async function planPage(
  reader: SessionReader,
  summary: SessionSummary,
  read: PageFacts,
  mode: PageMode,
  spool: RowSpool | null,
): Promise<ReportHtmlPage> {
  const { tpl, facts, rows, settings, seqs, requests } = read;
  const special = Math.min(BODY_LIMITS.special, Math.floor(settings.maxBytes / 40));
  const specials = new Set([seqs.failingSeq, seqs.lastGoodSeq].filter((s): s is number => s !== null));
  // The player's model is read on the same pass over the log as the rows, unless it was read before.
  const collector = mode.player
    ? null
    : new PlayerCollector({
        artifactsBySeq: facts.artifactsBySeq,
        firstSeqOfImage: facts.firstSeqOfImage,
        keyOf: (a) => imageRef(reader.dir, a.path, settings.artifactBase)?.key ?? null,
        serverVersion: serverVersionOf(summary),
        failingSeq: seqs.failingSeq,
      });
  const measured = await measureRows(reader, rows, facts, specials, {
    html: mode.keepRows,
    spool,
    lines: mode.lines,
    callRows: {
      add: (row, json) => {
        collector?.add(row, json);
        mode.callRows?.add(row, json);
      },
      end: () => mode.callRows?.end(),
    },
  });
  const player = mode.player ?? collector!.finish();
  const plan = await read.planned;
  rows.usePlan(plan);

  const inputs: PageInputs = {
    hb: tpl.hb,
    dir: reader.dir,
    artifactBase: settings.artifactBase,
    plan,
    totalCalls: measured.entries.length,
    imageCount: facts.refs.size,
    recorderVersion: reader.session().recorder_version,
  };
  const page = pageContext(summary, inputs);
  const { thumbsBySeq, thumbBytes } = placeThumbnails(plan, facts);
  page.player = playerView(player, thumbsBySeq, settings.maxBytes);
  const shellBytes = Buffer.byteLength(
    tpl.render({ ...page, rowsHtml: '', notices: [], tools: [], shownCalls: 0 }),
    'utf8',
  );
  const rowBudget = settings.maxBytes - shellBytes - SHARES.shellMargin;
  const specialCount = measured.entries.filter((e) => e.special).length;
  const skipped = dropOverflow(
    measured.entries,
    measured.bareBytes + thumbBytes + specialCount * special - rowBudget,
    thumbsBySeq,
  );
  const kept = measured.entries.filter((e) => !e.dropped);
  const free = rowBudget - kept.reduce((n, e) => n + e.bytes, 0) - thumbBytes;
  const counts = allotBodies(reader, rows, kept, { free, special, thumbsBySeq }, spool);
  spool?.finish();

  const shortfalls: Shortfalls = {
    limit: decimalSize(settings.maxBytes),
    maxThumbnails: settings.maxThumbnails,
    thumbCandidates: requests.length - plan.failed.size,
    plan,
    clipped: counts.clipped,
    bodiesOmitted: counts.omitted,
    skipped,
  };
  const tools = toolList(measured.tools);
  const shell = renderShell(tpl, { ...page, notices: notices(summary, shortfalls), tools }, kept.length);
  const without = (images: readonly ImageLeftOut[]): PageParts => {
    const leftOut = leftOutKeys(images);
    if (leftOut.size === 0) return { ...shell, rows: () => keptRows(reader, rows, kept, thumbsBySeq, spool) };
    // Rendered only for a bundle that lacks some images (rare): the page around the rows again, the rows
    // that show one again from the log, the rest as they were.
    const thumbsHere = thumbsWithout(thumbsBySeq, leftOut);
    const context = {
      ...pageContext(summary, { ...inputs, leftOut }),
      player: playerView(player, thumbsHere, settings.maxBytes, leftOutNotes(leftOut)),
      notices: notices(summary, { ...shortfalls, leftOut: leftOut.size }),
      tools,
    };
    return {
      ...renderShell(tpl, context, kept.length),
      rows: () => keptRows(reader, rows, kept, thumbsHere, spool, leftOut),
    };
  };
  return { ...shell, rows: () => keptRows(reader, rows, kept, thumbsBySeq, spool), player, without };
}

/** The left-out images by the key the page knows them by (their artifact path, made safe). */
function leftOutKeys(images: readonly ImageLeftOut[]): LeftOutKeys {
  const keys = new Map<string, { why: string; thumbnailStays: boolean }>();
  for (const image of images) {
    const key = safeRelativePath(image.path);
    if (key) keys.set(key, { why: image.why, thumbnailStays: image.thumbnailStays === true });
  }
  return keys;
}

/** What the player's stage shows instead of an image left out with no thumbnail: that, and why. */
function leftOutNotes(leftOut: LeftOutKeys): Map<string, string> {
  const notes = new Map<string, string>();
  for (const [key, out] of leftOut) if (!out.thumbnailStays) notes.set(key, leftOutNote(out.why));
  return notes;
}

/** The rows' thumbnails but those of images left out that keep none. */
function thumbsWithout(
  thumbsBySeq: ReadonlyMap<number, RowThumb[]>,
  leftOut: LeftOutKeys,
): Map<number, RowThumb[]> {
  const out = new Map<number, RowThumb[]>();
  for (const [seq, thumbs] of thumbsBySeq) {
    const kept = thumbs.filter((t) => leftOut.get(t.key)?.thumbnailStays ?? true);
    if (kept.length > 0) out.set(seq, kept);
  }
  return out;
}

/**
 * Each kept row's final HTML (format characters escaped): kept by the plan, copied from the spool when it
 * stayed bare, or rendered again from the log.
 */
function* keptRows(
  reader: SessionReader,
  rows: RowRenderer,
  kept: readonly Entry[],
  thumbsBySeq: ReadonlyMap<number, RowThumb[]>,
  spool: RowSpool | null,
  leftOut: LeftOutKeys = new Map(),
): Generator<string> {
  if (kept.length === 0) return;
  const render = (row: CallRow | undefined, e: Entry): string => {
    if (!row) throw new Error(`report.html: call #${e.seq} is no longer in the log`);
    const counters = { clipped: 0, omitted: 0, bodyChars: 0 };
    const thumbs = thumbsBySeq.get(e.seq) ?? [];
    return escapeFormatChars(rows.render(row, e.line, e.allowance, thumbs, counters, leftOut));
  };
  // A row showing an image left out is rendered again (the same allowance: the same bodies).
  const again = (e: Entry) => rows.showsAny(e.seq, leftOut);
  if (kept[0]!.html !== null) {
    for (const e of kept) yield again(e) ? render(reader.call(e.seq), e) : escapeFormatChars(e.html!);
    return;
  }
  if (spool) {
    const spooled = spool.reader();
    try {
      for (const e of kept) {
        // Bare then and bare now: the same bytes (only rows owning an image depend on the thumbnail plan).
        const bare = e.spooledAt >= 0 && e.allowance === 0 && !e.ownsImage && !thumbsBySeq.has(e.seq);
        if (again(e)) yield render(reader.call(e.seq), e);
        else if (e.final) yield escapeFormatChars(spooled.readAside(e.final.at, e.final.bytes));
        else if (bare) yield escapeFormatChars(spooled.read(e.spooledAt, e.bytes - 1));
        else yield render(reader.call(e.seq), e);
      }
    } finally {
      spooled.close();
    }
    return;
  }
  let i = 0;
  for (const row of callsInSmallPages(reader, kept[0]!.seq)) {
    const e = kept[i];
    if (!e) return;
    if (row.seq < e.seq) continue; // left out of the timeline
    if (row.seq > e.seq) render(undefined, e);
    yield render(row, e);
    i += 1;
  }
  if (i < kept.length) render(undefined, kept[i]!);
}

/** What the page would like thumbnails of: each image once (GIFs aside), the key images first. */
function thumbnailRequests(
  facts: CallFacts,
  summary: SessionSummary,
  where: { dir: string; artifactBase: string },
): ThumbnailRequest[] {
  const priorityKeys = new Set(
    [summary.suspectImage?.artifact, lastGoodImageOf(summary)?.artifact]
      .map((p) => safeRelativePath(p))
      .filter((k): k is string => k !== null),
  );
  const requests: ThumbnailRequest[] = [];
  for (const [key, seq] of facts.firstSeqOfImage) {
    // An SVG or icon kept as it came is linked only: its pixels are never read (src/artifacts, notRaster).
    if (isRecording(key) || !isRasterArtifact(key)) continue;
    const file = facts.refs.get(key)!.file;
    requests.push({
      key,
      file,
      sha256: facts.sha256Of.get(key),
      priority: priorityKeys.has(key),
      order: seq,
    });
  }
  for (const key of priorityKeys) {
    if (facts.firstSeqOfImage.has(key) || isRecording(key) || !isRasterArtifact(key)) continue;
    const ref = imageRef(where.dir, key, where.artifactBase);
    if (ref) requests.push({ key, file: ref.file, priority: true, order: Number.MAX_SAFE_INTEGER });
  }
  return requests;
}

/** Each thumbnail in the row of the call that first showed its image. */
function placeThumbnails(
  plan: ThumbnailPlan,
  facts: CallFacts,
): { thumbsBySeq: Map<number, RowThumb[]>; thumbBytes: number } {
  const thumbsBySeq = new Map<number, RowThumb[]>();
  let thumbBytes = 0;
  for (const [key, seq] of facts.firstSeqOfImage) {
    const t = plan.thumbs.get(key);
    if (!t) continue;
    const ref = facts.refs.get(key)!;
    thumbsBySeq.set(seq, [...(thumbsBySeq.get(seq) ?? []), { ...t, href: ref.href, label: ref.name }]);
    thumbBytes += t.src.length;
  }
  return { thumbsBySeq, thumbBytes };
}

function toolList(tools: Map<string, number>): Array<{ name: string; count: number }> {
  return [...tools.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, MAX_TOOLS_LISTED)
    .map(([name, count]) => ({ name, count }));
}

/**
 * The page around the rows, split where they go. It is rendered around a random marker (no recorded text can
 * imitate it); control and bidi characters in recorded text are shown as \uXXXX before the CSP hashes are taken.
 */
function renderShell(
  tpl: ReportTemplate,
  context: Record<string, unknown>,
  shownCalls: number,
): { head: string; tail: string | null } {
  const rowsMark = `\u0000rows-${randomBytes(8).toString('hex')}\u0000`;
  const shell = applyCsp(
    escapeFormatChars(
      tpl.render({
        ...context,
        rowsHtml: rowsMark,
        shownCalls,
        // Thousands of rows: let the browser skip laying out those off screen (it loads ~4x faster).
        longTimeline: shownCalls > LONG_TIMELINE,
      }),
    ).trimStart(),
  );
  const mark = escapeFormatChars(rowsMark);
  const at = shell.indexOf(mark);
  if (at === -1) return { head: shell, tail: null }; // a custom template without the rows
  return { head: shell.slice(0, at), tail: shell.slice(at + mark.length) };
}

/** The MCEC server's version from the session's environment (how click/drag pixels with a target are read). */
/** "5 MB", "400 KB": the page's cap as people write it (decimal units, like the 5 MB in the docs). */
function decimalSize(bytes: number): string {
  if (bytes >= 1_000_000) return `${Number((bytes / 1_000_000).toFixed(1))} MB`;
  return `${Math.round(bytes / 1000)} KB`;
}
