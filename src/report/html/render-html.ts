/** Render report.html: a self-contained timeline page (inline CSS, script and thumbnails; no network). */
import { randomBytes } from 'node:crypto';
import { safeRelativePath } from '../../paths/naming.js';
import type { ArtifactRow, CallRow } from '../../store/schema.js';
import type { SessionReader } from '../../store/session-reader.js';
import { summarizeCall } from '../summarize-call.js';
import { escapeFormatChars, formatBytes, oneLine } from '../text.js';
import type { SessionSummary } from '../types.js';
import { applyCsp } from './csp.js';
import { type ImageRef, imageRef } from './image-ref.js';
import { lastGoodImageOf, notices, pageContext } from './page-view.js';
import { MIN_BODY_CHARS, type RowCounters, type RowImage, type RowThumb, rowContext } from './row-view.js';
import { loadReportTemplate } from './template.js';
import { planThumbnails, type ThumbnailRequest } from './thumbnails.js';

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
   * each costs a PNG decode (~10 ms of CPU for 800x600), and bundles are built on the clock.
   */
  maxThumbnails?: number;
}

/** Default size cap of report.html: 5 MB. */
export const DEFAULT_REPORT_HTML_MAX_BYTES = 5_000_000;
/** Default number of thumbnails besides the priority ones. */
export const DEFAULT_MAX_THUMBNAILS = 48;

/** Body text (arguments + envelope + response) one call may show at most. */
const MAX_BODY_CHARS = 24_000;
/** The failing call and the last good observation may show this much. */
const SPECIAL_BODY_CHARS = 64_000;
/** When not every call can have its bodies, the newest get at least this much each until the room runs out. */
const TIGHT_BODY_CHARS = 1_200;
/** ... and at most this many of them. */
const TIGHT_ROWS = 300;
/** Rows beyond which the timeline lets the browser skip off-screen rows (a short page screenshots whole). */
const LONG_TIMELINE = 500;
/** Calls read from the log at a time in the first pass. */
const CALL_PAGE = 64;
/** Calls rendered up front to learn what a bare row weighs. */
const ROW_SAMPLE = 50;
/** Rows rendered between two turns of the event loop (so sharp's callbacks run). */
const YIELD_EVERY = 250;
/** The page around the rows before it is measured (CSS, script, header). */
const SHELL_GUESS_BYTES = 60_000;
/** Room kept for what is only known after the rows (notices, the tool list). */
const SHELL_MARGIN_BYTES = 24_000;
/** Share of the page thumbnails may take at most, and at least when the rows would leave less. */
const THUMB_MAX_SHARE = 0.6;
const THUMB_MIN_SHARE = 0.15;
const MAX_TOOLS_LISTED = 200;

/** "5 MB", "400 KB": the page's cap as people write it (decimal units, like the 5 MB in the docs). */
function decimalSize(bytes: number): string {
  if (bytes >= 1_000_000) return `${Number((bytes / 1_000_000).toFixed(1))} MB`;
  return `${Math.round(bytes / 1000)} KB`;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * Every call in seq order, fetched a few dozen at a time: a page of rows is alive while it is rendered, and
 * small pages keep those envelopes from being promoted into (and growing) the old heap.
 */
function* callsInSmallPages(reader: SessionReader): Generator<CallRow> {
  let from = 0;
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

/** A timeline row as first rendered (no bodies, no thumbnails) and what the budget needs to know about it. */
interface Entry {
  seq: number;
  line: string;
  html: string;
  bytes: number;
  hasBodies: boolean;
  /** A success without warnings or images: the first to go when even bare rows do not fit. */
  plain: boolean;
  special: boolean;
  /** The row shows an image first (its thumbnail or image notes depend on the thumbnail plan). */
  ownsImage: boolean;
  dropped: boolean;
}

/** Render report.html for one session: a server-rendered timeline that filters with JavaScript and reads without it. */
export async function renderReportHtml(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions = {},
): Promise<string> {
  return (await renderReportHtmlParts(reader, summary, options)).join('\n');
}

/**
 * renderReportHtml's page as UTF-8 bytes, written part by part into one buffer: the page as one string would be
 * twice its size (any non-Latin-1 character in a recorded value makes it two bytes a character) on top of these.
 */
export async function renderReportHtmlBuffer(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions = {},
): Promise<Buffer> {
  const parts = await renderReportHtmlParts(reader, summary, options);
  let total = Math.max(0, parts.length - 1);
  for (const part of parts) total += byteLength(part);
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  parts.forEach((part, i) => {
    if (i > 0) at += out.write('\n', at, 'utf8');
    at += out.write(part, at, 'utf8');
  });
  return at === total ? out : out.subarray(0, at);
}

/** GIFs (`record` recordings) are linked, not thumbnailed: a still of one frame would pass for a capture. */
function isRecording(key: string): boolean {
  return key.toLowerCase().endsWith('.gif');
}

/** The page in pieces that, joined with line breaks, are report.html. */
async function renderReportHtmlParts(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions,
): Promise<string[]> {
  const maxBytes = Math.max(100_000, Math.floor(options.maxBytes ?? DEFAULT_REPORT_HTML_MAX_BYTES));
  const artifactBase = options.artifactBase ?? 'artifacts/';
  const maxThumbnails = Math.max(0, options.maxThumbnails ?? DEFAULT_MAX_THUMBNAILS);
  const tpl = await loadReportTemplate(options.templatesDir);
  const { hb } = tpl;

  const session = reader.session();
  const failingSeq = summary.failingCall?.seq ?? null;
  const lastGoodSeq =
    summary.lastGoodObservation && summary.lastGoodObservation.tool !== 'lastObservation'
      ? summary.lastGoodObservation.seq
      : null;

  // Warnings and images per call, and which failures were recovered (bounded by the log, not by the page).
  const warningsBySeq = new Map<number, Array<{ code: string; detail: string }>>();
  for (const w of reader.warnings()) {
    const list = warningsBySeq.get(w.call_seq) ?? [];
    if (list.length < 20) list.push({ code: oneLine(w.code, 80), detail: oneLine(w.detail ?? '', 400) });
    warningsBySeq.set(w.call_seq, list);
  }
  const artifactsBySeq = new Map<number, ArtifactRow[]>();
  const firstSeqOfImage = new Map<string, number>();
  const refs = new Map<string, ImageRef>();
  for (const a of reader.artifacts()) {
    if (a.call_seq == null) continue;
    artifactsBySeq.set(a.call_seq, [...(artifactsBySeq.get(a.call_seq) ?? []), a]);
    const ref = imageRef(reader.dir, a.path, artifactBase);
    if (ref && !firstSeqOfImage.has(ref.key)) {
      firstSeqOfImage.set(ref.key, a.call_seq);
      refs.set(ref.key, ref);
    }
  }
  const imageOwners = new Set(firstSeqOfImage.values());
  const recoveredSeqs = new Set(
    reader
      .failures()
      .filter((f) => f.recovered)
      .map((f) => f.seq),
  );

  let thumbsKept = new Set<string>();
  let failedThumbs = new Map<string, string>();
  const imagesOf = (seq: number): RowImage[] => {
    const list: RowImage[] = [];
    const seen = new Set<string>();
    for (const a of artifactsBySeq.get(seq) ?? []) {
      const ref = imageRef(reader.dir, a.path, artifactBase);
      if (!ref) {
        list.push({
          href: null,
          // A file the server wrote on its host and that could not be copied: say where it lies.
          label: a.host_path
            ? `${a.role}: on the MCEC host at ${oneLine(a.host_path, 300)}`
            : `${a.role} image not kept`,
          note: oneLine(a.error ?? 'no file', 200),
        });
        continue;
      }
      if (seen.has(ref.key)) continue;
      seen.add(ref.key);
      const first = firstSeqOfImage.get(ref.key);
      const dims = a.width && a.height ? `${a.width}x${a.height} ` : '';
      const note =
        first !== seq
          ? `same image as call #${first}`
          : isRecording(ref.key)
            ? 'a GIF recording: open it to play'
            : (failedThumbs.get(ref.key) ??
              (thumbsKept.has(ref.key) ? '' : 'no thumbnail (see the note at the top)'));
      list.push({ href: ref.href, label: `${a.role}: ${ref.name} (${dims}${formatBytes(a.bytes)})`, note });
    }
    return list;
  };
  const renderRow = (
    row: CallRow,
    line: string,
    allowance: number,
    thumbs: RowThumb[],
    counters: RowCounters,
  ) =>
    tpl
      .renderRow(
        rowContext(
          hb,
          {
            row,
            line,
            recovered: recoveredSeqs.has(row.seq),
            isFailing: row.seq === failingSeq,
            isLastGood: row.seq === lastGoodSeq,
            warnings: warningsBySeq.get(row.seq) ?? [],
            thumbs,
            images: imagesOf(row.seq),
          },
          allowance,
          counters,
        ),
      )
      .trim();

  // What a bare row weighs, from the first calls: the thumbnails' budget, so they can be made meanwhile.
  const totalCalls = reader.callCount();
  let sampleBytes = 0;
  let sampled = 0;
  for (const row of reader.calls({ limit: ROW_SAMPLE })) {
    sampleBytes +=
      byteLength(renderRow(row, summarizeCall(row), 0, [], { clipped: 0, omitted: 0, bodyChars: 0 })) + 1;
    sampled += 1;
  }
  const bareEstimate = sampled > 0 ? (sampleBytes / sampled) * totalCalls * 1.1 : 0;
  const special = Math.min(SPECIAL_BODY_CHARS, Math.floor(maxBytes / 40));

  // Thumbnails: what the rows leave, but at least a floor share (images beat old successful calls).
  const priorityKeys = new Set(
    [summary.suspectImage?.artifact, lastGoodImageOf(summary)?.artifact]
      .map((p) => safeRelativePath(p))
      .filter((k): k is string => k !== null),
  );
  const requests: ThumbnailRequest[] = [];
  for (const [key, seq] of firstSeqOfImage) {
    if (isRecording(key)) continue;
    requests.push({ key, file: refs.get(key)!.file, priority: priorityKeys.has(key), order: seq });
  }
  for (const key of priorityKeys) {
    const ref = firstSeqOfImage.has(key) || isRecording(key) ? null : imageRef(reader.dir, key, artifactBase);
    if (ref) requests.push({ key, file: ref.file, priority: true, order: Number.MAX_SAFE_INTEGER });
  }
  const room = maxBytes - SHELL_GUESS_BYTES - SHELL_MARGIN_BYTES - bareEstimate - 2 * special;
  const thumbBudget = Math.floor(
    Math.min(maxBytes * THUMB_MAX_SHARE, Math.max(maxBytes * THUMB_MIN_SHARE, room)),
  );
  // sharp decodes on its own threads while the rows render here (the loop yields now and then).
  // One decode at a time: the page's peak memory is lower by ~10-15 MB, and the rows pass keeps the other core.
  const planned = planThumbnails(requests, thumbBudget, { maxCount: maxThumbnails, concurrency: 1 });
  planned.catch(() => undefined); // awaited below; this only keeps an early rejection from being "unhandled"

  // Pass 1: every call as a bare row, streamed; what they weigh decides the room for bodies.
  const entries: Entry[] = [];
  const tools = new Map<string, number>();
  let bareBytes = 0;
  for (const row of callsInSmallPages(reader)) {
    const line = summarizeCall(row);
    const html = renderRow(row, line, 0, [], { clipped: 0, omitted: 0, bodyChars: 0 });
    const bytes = byteLength(html) + 1;
    const isSpecial = row.seq === failingSeq || row.seq === lastGoodSeq;
    const ownsImage = imageOwners.has(row.seq);
    const tool = oneLine(row.tool, 80);
    tools.set(tool, (tools.get(tool) ?? 0) + 1);
    entries.push({
      seq: row.seq,
      line,
      html,
      bytes,
      hasBodies: row.args != null || row.envelope != null || row.response != null,
      plain: !isSpecial && !ownsImage && row.status === 'ok' && !warningsBySeq.has(row.seq),
      special: isSpecial,
      ownsImage,
      dropped: false,
    });
    bareBytes += bytes;
    if (entries.length % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const specials = entries.filter((e) => e.special).length;
  const plan = await planned;
  thumbsKept = new Set(plan.thumbs.keys());
  failedThumbs = plan.failed;

  const page = pageContext(summary, {
    hb,
    dir: reader.dir,
    artifactBase,
    plan,
    totalCalls: entries.length,
    imageCount: refs.size,
    recorderVersion: session.recorder_version,
  });
  const shellBytes = byteLength(tpl.render({ ...page, rowsHtml: '', notices: [], tools: [], shownCalls: 0 }));
  const rowBudget = maxBytes - shellBytes - SHELL_MARGIN_BYTES;

  const thumbsBySeq = new Map<number, RowThumb[]>();
  let thumbBytes = 0;
  for (const [key, seq] of firstSeqOfImage) {
    const t = plan.thumbs.get(key);
    if (!t) continue;
    const ref = refs.get(key)!;
    thumbsBySeq.set(seq, [...(thumbsBySeq.get(seq) ?? []), { ...t, href: ref.href, label: ref.name }]);
    thumbBytes += t.src.length;
  }

  // Even bare rows may not fit (tens of thousands of calls): the oldest plain successes go first.
  const skipped = { count: 0, first: 0, last: 0 };
  let overflow = bareBytes + thumbBytes + specials * special - rowBudget;
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
  const kept = entries.filter((e) => !e.dropped);

  // Pass 2: bodies. The failing call and the last good observation first, then the newest calls first.
  let free = rowBudget - kept.reduce((n, e) => n + e.bytes, 0) - thumbBytes;
  const counts = { clipped: 0, omitted: 0 };
  const order = [...kept.filter((e) => e.special), ...kept.filter((e) => !e.special).reverse()];
  let others = order.length - specials;
  let reserved = specials * special;
  let tightRows = 0;
  for (const e of order) {
    const thumbs = thumbsBySeq.get(e.seq) ?? [];
    const rowThumbBytes = thumbs.reduce((n, t) => n + t.src.length, 0);
    let allowance: number;
    if (e.special) {
      reserved -= special;
      allowance = Math.max(0, Math.min(special, free - reserved));
    } else {
      const share = others > 0 ? (free - reserved) / others : 0;
      others -= 1;
      // Not enough for everyone: the newest few get a useful slice; the rest stay bare (and cost no re-render).
      const tight = share < TIGHT_BODY_CHARS;
      if (tight && tightRows >= TIGHT_ROWS) allowance = 0;
      else {
        allowance = Math.floor(
          Math.min(MAX_BODY_CHARS, Math.max(share, Math.min(TIGHT_BODY_CHARS, free - reserved))),
        );
        if (tight) tightRows += 1;
      }
    }
    if (!e.hasBodies || allowance < MIN_BODY_CHARS) allowance = 0;
    if (allowance === 0 && thumbs.length === 0 && !e.ownsImage) {
      if (e.hasBodies) counts.omitted += 1;
      continue;
    }
    const row = reader.call(e.seq);
    if (!row) continue;
    const local: RowCounters = { clipped: 0, omitted: 0, bodyChars: 0 };
    let html = renderRow(row, e.line, allowance, thumbs, local);
    let grown = byteLength(html) + 1 - e.bytes - rowThumbBytes;
    if (allowance > 0 && grown > free - reserved) {
      // The escaped text came out bigger than its allowance: show this row without bodies.
      Object.assign(local, { clipped: 0, omitted: 0, bodyChars: 0 });
      html = renderRow(row, e.line, 0, thumbs, local);
      grown = byteLength(html) + 1 - e.bytes - rowThumbBytes;
    }
    counts.clipped += local.clipped;
    counts.omitted += local.omitted;
    free -= grown;
    e.html = html;
  }

  const toolList = [...tools.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, MAX_TOOLS_LISTED)
    .map(([name, count]) => ({ name, count }));
  const notes = notices(summary, {
    limit: decimalSize(maxBytes),
    maxThumbnails,
    thumbCandidates: requests.length - plan.failed.size,
    plan,
    clipped: counts.clipped,
    bodiesOmitted: counts.omitted,
    skipped,
  });
  // The page is rendered around a marker and the rows joined into it once: one copy of a 5 MB string, not four.
  // The marker is random so no recorded text can imitate it.
  const rowsMark = `\u0000rows-${randomBytes(8).toString('hex')}\u0000`;
  // Control and bidi characters in recorded text are shown as \uXXXX (before the CSP hashes are taken).
  const shell = applyCsp(
    escapeFormatChars(
      tpl.render({
        ...page,
        rowsHtml: rowsMark,
        notices: notes,
        tools: toolList,
        shownCalls: kept.length,
        // Thousands of rows: let the browser skip laying out those off screen (it loads ~4x faster).
        longTimeline: kept.length > LONG_TIMELINE,
      }),
    ).trimStart(),
  );
  const mark = escapeFormatChars(rowsMark);
  const at = shell.indexOf(mark);
  if (at === -1) return [shell]; // a custom template without the rows
  const parts = [shell.slice(0, at)];
  for (const e of kept) parts.push(escapeFormatChars(e.html));
  parts.push(shell.slice(at + mark.length));
  return parts;
}
