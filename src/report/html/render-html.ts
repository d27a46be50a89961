/** Render report.html: a self-contained timeline page (inline CSS, script and thumbnails; no network). */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ArtifactRow, CallRow } from '../../store/schema.js';
import type { SessionReader } from '../../store/session-reader.js';
import { PENDING_RECOVERY, recoveryFor } from '../recovery.js';
import { resolveTemplate } from '../render.js';
import { summarizeCall } from '../summarize-call.js';
import { safeRelativePath } from '../summary.js';
import { clip, formatBytes, oneLine } from '../text.js';
import { formatDurationMs } from '../time.js';
import type { ImageDigest, SessionSummary } from '../types.js';
import { escapeTextNode, prettyJson } from './pretty-json.js';
import { planThumbnails, type Thumbnail, type ThumbnailPlan, type ThumbnailRequest } from './thumbnails.js';

type HandlebarsApi = typeof import('handlebars');
type TemplateFn = (context: unknown) => string;

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

/** The template's file name in `templates/`. */
export const REPORT_HTML_TEMPLATE = 'report.html.hbs';
/** Default size cap of report.html: 5 MB. */
export const DEFAULT_REPORT_HTML_MAX_BYTES = 5_000_000;
/** Default number of thumbnails besides the priority ones. */
export const DEFAULT_MAX_THUMBNAILS = 48;

/** Body text (arguments + envelope + response) one call may show at most. */
const MAX_BODY_CHARS = 24_000;
/** The failing call and the last good observation may show this much when the budget allows. */
const SPECIAL_BODY_CHARS = 64_000;
/** Below this allowance a call's bodies are left out rather than clipped to nothing useful. */
const MIN_BODY_CHARS = 240;
/** First guess at a row's size without bodies and thumbnails; replaced by the running average. */
const ROW_GUESS_BYTES = 900;
/** Room kept for what is only known after the rows (notices, the tool list). */
const SHELL_MARGIN_BYTES = 24_000;
/** Share of the page thumbnails may take at most. */
const THUMB_SHARE = 0.6;
const MAX_TOOLS_LISTED = 200;
const CSP_STYLE_MARK = 'MCEC-CSP-STYLE';
const CSP_SCRIPT_MARK = 'MCEC-CSP-SCRIPT';

let instance: Promise<HandlebarsApi> | null = null;

/** A Handlebars instance of our own (HTML escaping on), created on first use. */
function handlebars(): Promise<HandlebarsApi> {
  instance ??= import('handlebars').then((mod) => {
    const api = ((mod as { default?: HandlebarsApi }).default ?? mod) as HandlebarsApi;
    return api.create();
  });
  return instance;
}

async function loadTemplate(templatesDir?: string): Promise<{ file: string; fn: TemplateFn }> {
  const file = resolveTemplate(REPORT_HTML_TEMPLATE, templatesDir);
  const hb = await handlebars();
  const fn = hb.compile(fs.readFileSync(file, 'utf8'), { noEscape: false, strict: false }) as TemplateFn;
  return { file, fn };
}

function run(fn: TemplateFn, file: string, context: unknown): string {
  try {
    return fn(context);
  } catch (err) {
    throw new Error(`template ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** An image as the page refers to it: the key (relative path in the session dir) and the link to the file. */
interface ImageRef {
  key: string;
  href: string;
  file: string;
  name: string;
}

/** `artifacts/<file>` relative to the page, each segment percent-encoded. */
function imageRef(dir: string, relative: unknown, artifactBase: string): ImageRef | null {
  const key = safeRelativePath(relative);
  if (!key) return null;
  const inArtifacts = key.startsWith('artifacts/') ? key.slice('artifacts/'.length) : null;
  const tail = inArtifacts ?? key;
  const href = (inArtifacts !== null ? artifactBase : '') + tail.split('/').map(encodeURIComponent).join('/');
  return { key, href, file: path.join(dir, key), name: tail.split('/').pop() ?? tail };
}

/** "5 MB", "400 KB": the page's cap as people write it (decimal units, like the 5 MB in the docs). */
function decimalSize(bytes: number): string {
  if (bytes >= 1_000_000) return `${Number((bytes / 1_000_000).toFixed(1))} MB`;
  return `${Math.round(bytes / 1000)} KB`;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** A safe string for Handlebars: text we escaped ourselves for a text node. */
function preHtml(hb: HandlebarsApi, text: string): unknown {
  return new hb.SafeString(escapeTextNode(text));
}

function stepClass(status: string): string {
  const s = status.toLowerCase();
  if (['passed', 'pass', 'ok', 'done', 'success', 'succeeded'].includes(s)) return 'ok';
  if (['failed', 'fail', 'error', 'aborted'].includes(s)) return 'failed';
  return 'pending';
}

function environmentEntries(env: Record<string, unknown>): Array<{ key: string; value: string }> {
  return Object.entries(env)
    .filter(([, value]) => value !== null && value !== undefined && value !== '')
    .slice(0, 40)
    .map(([key, value]) => {
      let text: string;
      const server =
        key === 'server' && value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
      if (server) {
        text = [
          server.name,
          server.version,
          server.protocolVersion ? `(protocol ${server.protocolVersion})` : '',
        ]
          .filter((x) => typeof x === 'string' && x !== '')
          .join(' ');
      } else text = typeof value === 'string' ? value : JSON.stringify(value);
      return { key: oneLine(key, 60), value: oneLine(text, 300) };
    });
}

/** One line for the header: the server's name and version, when known. */
function environmentLine(env: Record<string, unknown>): string {
  const server =
    env.server && typeof env.server === 'object' ? (env.server as Record<string, unknown>) : null;
  const parts = [
    server && typeof server.name === 'string'
      ? `${server.name}${typeof server.version === 'string' ? ` ${server.version}` : ''}`
      : '',
    typeof env.display === 'string' ? env.display : '',
  ].filter((x) => x !== '');
  return oneLine(parts.join(' · '), 120);
}

/** What the rows learn while streaming, for the page around them. */
interface RowStats {
  html: string[];
  shown: number;
  tools: Map<string, number>;
  rowsOmitted: number;
}

interface RowInput {
  row: CallRow;
  recovered: boolean;
  isFailing: boolean;
  isLastGood: boolean;
  warnings: Array<{ code: string; detail: string }>;
  artifacts: ArtifactRow[];
}

/** Render one call's row with bodies clipped to `allowance` characters (0: no bodies). */
function rowContext(
  hb: HandlebarsApi,
  input: RowInput,
  allowance: number,
  images: {
    thumbs: Array<Thumbnail & { href: string; label: string }>;
    list: Array<{ href: string | null; label: string; note: string }>;
  },
  counters: { clipped: number; omitted: number; bodyChars: number },
): Record<string, unknown> {
  const { row } = input;
  const blocks: Array<{ title: string; html: unknown; note: string | null }> = [];
  let bodyNote: string | null = null;
  const hasBodies = row.args != null || row.envelope != null || row.response != null;
  if (row.payload_dropped) {
    bodyNote = "The recorder dropped this call's arguments/envelope (past its log size limit).";
  }
  if (hasBodies && allowance < MIN_BODY_CHARS) {
    counters.omitted += 1;
    bodyNote = `${bodyNote ? `${bodyNote} ` : ''}Arguments and envelope left out (page size budget; see session.sqlite).`;
  } else if (hasBodies) {
    let left = allowance;
    let clippedHere = false;
    const add = (title: string, stored: string | null, max: number) => {
      const pretty = prettyJson(stored, Math.max(0, max));
      if (!pretty) return;
      left -= pretty.text.length;
      counters.bodyChars += pretty.text.length;
      let note: string | null = null;
      if (pretty.clipped > 0) {
        clippedHere = true;
        note = `Clipped: ${pretty.clipped.toLocaleString('en-US')} more characters are in session.sqlite and tool-calls.jsonl.`;
      }
      blocks.push({ title, html: preHtml(hb, pretty.text), note });
    };
    add('Arguments', row.args, Math.floor(allowance * 0.3));
    add('Envelope', row.envelope, left);
    if (row.response != null && left >= MIN_BODY_CHARS) add('Response (transport shape)', row.response, left);
    if (row.violations != null && row.violations !== '[]')
      add('Contract violations', row.violations, Math.max(left, 2000));
    if (clippedHere) counters.clipped += 1;
  }
  let violationCount = 0;
  if (row.violations && row.violations.length < 1_000_000) {
    try {
      const parsed = JSON.parse(row.violations) as unknown;
      if (Array.isArray(parsed)) violationCount = parsed.length;
    } catch {
      violationCount = 0;
    }
  }
  const failed = row.status === 'failed' || row.status === 'fault';
  return {
    seq: row.seq,
    tool: oneLine(row.tool, 80),
    status: row.status,
    recovered: input.recovered,
    isFailing: input.isFailing,
    isLastGood: input.isLastGood,
    at: row.started_at,
    time: row.started_at.length >= 23 ? row.started_at.slice(11, 23) : row.started_at,
    duration: formatDurationMs(row.duration_ms),
    line: preHtml(hb, summarizeCall(row)),
    code: row.error_code ? oneLine(row.error_code, 120) : '',
    category: row.error_category ? oneLine(row.error_category, 60) : '',
    detail: row.error_detail ? clip(row.error_detail, 2000) : '',
    recovery:
      row.status === 'pending'
        ? PENDING_RECOVERY
        : failed
          ? recoveryFor(row.error_category, row.error_code)
          : null,
    warnings: input.warnings,
    warnCodes: input.warnings.map((w) => w.code).join(' '),
    violationCount,
    thumbs: images.thumbs,
    images: images.list,
    blocks,
    bodyNote,
    transport: row.transport,
    rpcId: row.rpc_id ? oneLine(row.rpc_id, 60) : '',
    outputKind: row.output_kind && row.output_kind !== 'envelope' ? `output ${row.output_kind}` : '',
  };
}

/** Hash every inline <style>/<script> block and put the hashes into the CSP placeholders in <head>. */
function applyCsp(html: string): string {
  const hashes = (tag: string): string[] => {
    const out: string[] = [];
    const open = `<${tag}`;
    const close = `</${tag}>`;
    let at = 0;
    for (;;) {
      const start = html.indexOf(open, at);
      if (start === -1) break;
      const bodyStart = html.indexOf('>', start);
      const end = bodyStart === -1 ? -1 : html.indexOf(close, bodyStart);
      if (end === -1) break;
      const body = html.slice(bodyStart + 1, end);
      out.push(`'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`);
      at = end + close.length;
    }
    return out;
  };
  const headEnd = html.indexOf('</head>');
  if (headEnd === -1) return html;
  const style = hashes('style');
  const script = hashes('script');
  let head = html.slice(0, headEnd);
  head = head.replace(CSP_STYLE_MARK, () => (style.length ? style.join(' ') : "'none'"));
  head = head.replace(CSP_SCRIPT_MARK, () => (script.length ? script.join(' ') : "'none'"));
  return head + html.slice(headEnd);
}

/** Render report.html for one session: a server-rendered timeline that filters with JavaScript and reads without it. */
export async function renderReportHtml(
  reader: SessionReader,
  summary: SessionSummary,
  options: ReportHtmlOptions = {},
): Promise<string> {
  const maxBytes = Math.max(100_000, Math.floor(options.maxBytes ?? DEFAULT_REPORT_HTML_MAX_BYTES));
  const artifactBase = options.artifactBase ?? 'artifacts/';
  const hb = await handlebars();
  const { file, fn } = await loadTemplate(options.templatesDir);

  const session = reader.session();
  const totalCalls = reader.callCount();
  const failingSeq = summary.failingCall?.seq ?? null;
  const lastGoodSeq =
    summary.lastGoodObservation && summary.lastGoodObservation.tool !== 'lastObservation'
      ? summary.lastGoodObservation.seq
      : null;

  // Warnings and artifacts per call, and which failures were recovered (all bounded by the log, not by the page).
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
    const list = artifactsBySeq.get(a.call_seq) ?? [];
    list.push(a);
    artifactsBySeq.set(a.call_seq, list);
    const ref = imageRef(reader.dir, a.path, artifactBase);
    if (ref && !firstSeqOfImage.has(ref.key)) {
      firstSeqOfImage.set(ref.key, a.call_seq);
      refs.set(ref.key, ref);
    }
  }
  const recoveredSeqs = new Set(
    reader
      .failures()
      .filter((f) => f.recovered)
      .map((f) => f.seq),
  );

  // Thumbnails first: their size decides how much room the envelopes get.
  const lastGoodImage = summary.lastGoodObservation?.image ?? summary.lastImage;
  const priorityKeys = new Set(
    [summary.suspectImage?.artifact, lastGoodImage?.artifact]
      .map((p) => safeRelativePath(p))
      .filter((k): k is string => k !== null),
  );
  const requests: ThumbnailRequest[] = [];
  for (const [key, seq] of firstSeqOfImage) {
    requests.push({ key, file: refs.get(key)!.file, priority: priorityKeys.has(key), order: seq });
  }
  for (const key of priorityKeys) {
    if (firstSeqOfImage.has(key)) continue;
    const ref = imageRef(reader.dir, key, artifactBase);
    if (ref) {
      refs.set(ref.key, ref);
      requests.push({ key, file: ref.file, priority: true, order: Number.MAX_SAFE_INTEGER });
    }
  }
  const rowFloor = totalCalls * ROW_GUESS_BYTES + 2 * SPECIAL_BODY_CHARS + 2 * SHELL_MARGIN_BYTES + 40_000;
  const thumbBudget = Math.max(0, Math.min(maxBytes * THUMB_SHARE, maxBytes - rowFloor));
  const maxThumbnails = Math.max(0, options.maxThumbnails ?? DEFAULT_MAX_THUMBNAILS);
  const plan: ThumbnailPlan = await planThumbnails(requests, thumbBudget, { maxCount: maxThumbnails });

  const figure = (image: ImageDigest | null, title: string, cls: string, missing: string) => {
    const ref = image ? imageRef(reader.dir, image.artifact, artifactBase) : null;
    const thumb = ref ? plan.thumbs.get(ref.key) : undefined;
    const caption = image
      ? `call #${image.seq} · ${image.width}x${image.height} ${image.format} · ${formatBytes(image.bytes)}`
      : '';
    const note = !ref ? missing : (plan.failed.get(ref.key) ?? `open ${ref.name}`);
    return { title, cls, href: ref?.href ?? null, thumb: thumb ?? null, caption, note };
  };
  const figures: unknown[] = [];
  if (lastGoodImage) figures.push(figure(lastGoodImage, 'Last good', 'good', ''));
  if (summary.failingCall) {
    figures.push(
      figure(
        summary.suspectImage,
        'Suspect',
        'suspect',
        'The failing call kept no image (no partialResult capture).',
      ),
    );
  }
  if (!lastGoodImage && !summary.suspectImage) figures.length = 0;

  const failing = summary.failingCall
    ? {
        ...summary.failingCall,
        at: summary.failingCall.startedAt,
        duration: formatDurationMs(summary.failingCall.durationMs),
      }
    : null;
  const lastGood = summary.lastGoodObservation
    ? (() => {
        const o = summary.lastGoodObservation;
        const pretty =
          o.value === undefined || o.value === null ? null : prettyJson(JSON.stringify(o.value), 6000);
        return {
          seq: o.seq,
          tool: o.tool,
          oneLine: o.oneLine,
          value: pretty ? preHtml(hb, pretty.text) : null,
        };
      })()
    : null;
  const c = summary.counts;
  const countsList = [
    { label: 'calls', value: c.calls, cls: '' },
    {
      label: c.recovered ? `failures (${c.recovered} recovered)` : 'failures',
      value: c.failures,
      cls: c.failures - c.recovered > 0 ? 'bad' : '',
    },
    { label: 'warnings', value: c.warnings, cls: c.warnings ? 'warn' : '' },
    { label: 'images', value: c.artifacts, cls: '' },
    ...(c.pending ? [{ label: 'pending', value: c.pending, cls: 'bad' }] : []),
    ...(c.violations ? [{ label: 'contract violations', value: c.violations, cls: 'warn' }] : []),
    ...(c.droppedPayloads ? [{ label: 'payloads dropped', value: c.droppedPayloads, cls: 'warn' }] : []),
    ...(c.lostCalls ? [{ label: 'calls lost', value: c.lostCalls, cls: 'bad' }] : []),
    ...(c.recordFailures ? [{ label: 'record failures', value: c.recordFailures, cls: 'bad' }] : []),
  ];
  const failuresShown = summary.failures
    .slice(0, 12)
    .map((f) => ({ ...f, detail: f.detail ? clip(f.detail, 200) : '' }));
  const steps = summary.steps.slice(-40).map((s) => ({
    name: oneLine(s.name, 120),
    status: oneLine(s.status, 20),
    detail: s.detail ? oneLine(s.detail, 300) : '',
    cls: stepClass(s.status),
  }));
  const environment = environmentEntries(summary.environment);
  const page = (rowsHtml: string, extra: { notices: string[]; tools: unknown[]; shownCalls: number }) =>
    run(fn, file, {
      rowOnly: false,
      title: oneLine(summary.scenario ?? `session ${summary.sessionId}`, 200),
      sessionId: summary.sessionId,
      originalId: summary.originalId,
      dirName: summary.dirName,
      status: summary.status,
      verdict: summary.verdict,
      verdictClass: summary.verdict === 'PASS' ? 'pass' : 'fail',
      verdictReason: oneLine(summary.verdictReason, 600),
      startedAt: summary.startedAt,
      endedAt: summary.endedAt,
      duration: summary.duration,
      environmentLine: environmentLine(summary.environment),
      counts: c,
      countsList,
      failing,
      lastGood,
      figures,
      failures: failuresShown,
      failuresOmitted: summary.failuresOmitted + (summary.failures.length - failuresShown.length),
      warningsByCode: summary.warningsByCode.slice(0, 60),
      steps,
      environment,
      hasDetails:
        failuresShown.length > 0 ||
        summary.warningsByCode.length > 0 ||
        steps.length > 0 ||
        environment.length > 0,
      totalCalls,
      imageCount: refs.size,
      recorderVersion: session.recorder_version,
      cspStyle: CSP_STYLE_MARK,
      cspScript: CSP_SCRIPT_MARK,
      rowsHtml: new hb.SafeString(rowsHtml),
      ...extra,
    });

  // The page without rows tells how much room the rows have.
  const shellBytes = byteLength(page('', { notices: [], tools: [], shownCalls: 0 }));
  const rowBudget = maxBytes - shellBytes - SHELL_MARGIN_BYTES;

  const thumbOwner = new Map<number, Array<Thumbnail & { href: string; label: string }>>();
  let thumbBytesAhead = 0;
  for (const [key, seq] of firstSeqOfImage) {
    const t = plan.thumbs.get(key);
    if (!t) continue;
    const ref = refs.get(key)!;
    thumbOwner.set(seq, [...(thumbOwner.get(seq) ?? []), { ...t, href: ref.href, label: ref.name }]);
    thumbBytesAhead += t.src.length;
  }
  const special = Math.min(SPECIAL_BODY_CHARS, Math.max(0, Math.floor(rowBudget / 8)));
  let reserved = (failingSeq != null ? special : 0) + (lastGoodSeq != null ? special : 0);
  let remaining = rowBudget;
  let processed = 0;
  let baseSum = 0;
  let baseCount = 0;
  const stats: RowStats = { html: [], shown: 0, tools: new Map(), rowsOmitted: 0 };
  const counters = { clipped: 0, omitted: 0 };

  for (const row of reader.calls()) {
    processed += 1;
    const left = Math.max(1, totalCalls - processed + 1);
    const tool = oneLine(row.tool, 80);
    stats.tools.set(tool, (stats.tools.get(tool) ?? 0) + 1);
    const thumbs = thumbOwner.get(row.seq) ?? [];
    const thumbBytes = thumbs.reduce((n, t) => n + t.src.length, 0);
    thumbBytesAhead -= thumbBytes;
    const isFailing = row.seq === failingSeq;
    const isLastGood = row.seq === lastGoodSeq;
    const isSpecial = isFailing || isLastGood;
    if (isSpecial) reserved -= special;
    const avgBase = baseCount > 0 ? baseSum / baseCount : ROW_GUESS_BYTES;
    const free = remaining - thumbBytesAhead - reserved - thumbBytes - left * avgBase;
    const share = Math.max(0, Math.floor(free / left));
    const allowance = isSpecial
      ? Math.max(special, Math.min(MAX_BODY_CHARS, share))
      : Math.min(MAX_BODY_CHARS, share);

    const list: Array<{ href: string | null; label: string; note: string }> = [];
    const seen = new Set<string>();
    for (const a of artifactsBySeq.get(row.seq) ?? []) {
      const ref = imageRef(reader.dir, a.path, artifactBase);
      if (!ref) {
        list.push({
          href: null,
          label: `${a.role} image not kept`,
          note: oneLine(a.error ?? 'no file', 200),
        });
        continue;
      }
      if (seen.has(ref.key)) continue;
      seen.add(ref.key);
      const first = firstSeqOfImage.get(ref.key);
      const dims = a.width && a.height ? `${a.width}x${a.height} ` : '';
      const note =
        first !== row.seq
          ? `same image as call #${first}`
          : (plan.failed.get(ref.key) ??
            (plan.thumbs.has(ref.key) ? '' : 'no thumbnail (see the note at the top)'));
      list.push({ href: ref.href, label: `${a.role}: ${ref.name} (${dims}${formatBytes(a.bytes)})`, note });
    }
    const input: RowInput = {
      row,
      recovered: recoveredSeqs.has(row.seq),
      isFailing,
      isLastGood,
      warnings: warningsBySeq.get(row.seq) ?? [],
      artifacts: artifactsBySeq.get(row.seq) ?? [],
    };
    const local = { clipped: 0, omitted: 0, bodyChars: 0 };
    let html = run(fn, file, {
      rowOnly: true,
      row: rowContext(hb, input, allowance, { thumbs, list }, local),
    }).trim();
    let size = byteLength(html);
    const room = remaining - thumbBytesAhead - reserved;
    if (size > room && !isSpecial) {
      // Over budget: the row without bodies, then (for plain successes) no row at all.
      local.clipped = 0;
      local.omitted = 0;
      local.bodyChars = 0;
      html = run(fn, file, { rowOnly: true, row: rowContext(hb, input, 0, { thumbs, list }, local) }).trim();
      size = byteLength(html);
      if (size > room && row.status === 'ok' && input.warnings.length === 0) {
        stats.rowsOmitted += 1;
        continue;
      }
    }
    counters.clipped += local.clipped;
    counters.omitted += local.omitted;
    stats.html.push(html);
    stats.shown += 1;
    remaining -= size;
    baseSum += Math.max(0, size - thumbBytes - local.bodyChars);
    baseCount += 1;
  }

  const limit = decimalSize(maxBytes);
  const notices: string[] = [];
  if (summary.status === 'open')
    notices.push('This session is still being recorded; the page shows it as it was when written.');
  if (summary.status === 'aborted')
    notices.push('The recorder stopped without ending this session (the process crashed or was killed).');
  if (summary.events.emergencyStop)
    notices.push(
      "An operator's emergency stop was latched during this session: calls after it fail with emergency-stopped.",
    );
  if (summary.events.truncation) {
    const t = summary.events.truncation;
    notices.push(
      `The recorder dropped the arguments/envelopes of ${t.omittedCalls} calls (${formatBytes(t.omittedBytes)}) past its log size limit.`,
    );
  }
  if (summary.events.artifactLimit) {
    const a = summary.events.artifactLimit;
    notices.push(
      `${a.omittedImages} images (${formatBytes(a.omittedBytes)}) were not kept: over the recorder's artifact budget.`,
    );
  }
  if (c.lostCalls || c.recordFailures) {
    notices.push(
      `Recording failed ${c.recordFailures} time(s); ${c.lostCalls} call(s) are missing from the log.`,
    );
  }
  const thumbCandidates = requests.length - plan.failed.size;
  if (plan.omitted > 0) {
    const why =
      plan.omitted === plan.capped
        ? `only the failing call, the last good observation and the ${maxThumbnails} most recent images get one`
        : `to keep this page under ${limit}`;
    notices.push(
      `Thumbnails omitted for ${plan.omitted} of ${thumbCandidates} images (${why}); every image is still linked to its file in artifacts/.`,
    );
  }
  if (plan.thumbs.size > 0 && plan.width < 320) {
    notices.push(
      `Thumbnails are ${plan.width} px wide (instead of 320 px) to keep this page under ${limit}.`,
    );
  }
  if (plan.failed.size > 0) {
    notices.push(
      `${plan.failed.size} image file(s) could not be read or decoded; they are marked in the timeline.`,
    );
  }
  if (counters.clipped > 0) {
    notices.push(
      `The arguments/envelopes of ${counters.clipped} call(s) are clipped to keep this page under ${limit}; the full text is in session.sqlite and tool-calls.jsonl.`,
    );
  }
  if (counters.omitted > 0) {
    notices.push(
      `The arguments/envelopes of ${counters.omitted} call(s) are left out to keep this page under ${limit}.`,
    );
  }
  if (stats.rowsOmitted > 0) {
    notices.push(
      `${stats.rowsOmitted} successful calls without warnings are left out of the timeline to keep this page under ${limit}.`,
    );
  }
  const tools = [...stats.tools.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, MAX_TOOLS_LISTED)
    .map(([name, count]) => ({ name, count }));
  return applyCsp(page(stats.html.join('\n'), { notices, tools, shownCalls: stats.shown }).trimStart());
}
