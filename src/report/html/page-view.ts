/** The page around the timeline: verdict, counts, the failing call, the last good observation, the two images. */

import { isRasterArtifact } from '../../artifacts/image-file.js';
import { isPlainServer } from '../server-kind.js';
import { sameWindowImages } from '../summary.js';
import { targetFacts } from '../target.js';
import { clip, formatBytes, oneLine } from '../text.js';
import { formatDurationMs } from '../time.js';
import type { ImageDigest, SessionSummary } from '../types.js';
import { CSP_SCRIPT_MARK, CSP_STYLE_MARK } from './csp.js';
import { imageRef } from './image-ref.js';
import { prettyJson } from './pretty-json.js';
import { type LeftOutKeys, leftOutNote } from './row-renderer.js';
import { type HandlebarsApi, textHtml } from './template.js';
import type { ThumbnailPlan } from './thumbnails.js';

function stepClass(status: string): string {
  const s = status.toLowerCase();
  if (['passed', 'pass', 'ok', 'done', 'success', 'succeeded'].includes(s)) return 'ok';
  if (['failed', 'fail', 'error', 'aborted'].includes(s)) return 'failed';
  return 'pending';
}

function serverName(value: unknown): string | null {
  if (!value || typeof value !== 'object') return null;
  const server = value as Record<string, unknown>;
  const parts = [server.name, server.version].filter((x): x is string => typeof x === 'string' && x !== '');
  if (typeof server.protocolVersion === 'string') parts.push(`(protocol ${server.protocolVersion})`);
  return parts.join(' ');
}

function environmentEntries(env: Record<string, unknown>): Array<{ key: string; value: string }> {
  return Object.entries(env)
    .filter(([, value]) => value !== null && value !== undefined && value !== '')
    .slice(0, 40)
    .map(([key, value]) => {
      const text =
        (key === 'server' ? serverName(value) : null) ??
        (typeof value === 'string' ? value : JSON.stringify(value));
      return { key: oneLine(key, 60), value: oneLine(text, 300) };
    });
}

/** One line for the header: the server's name and version and the display, when known. */
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

/** The image the last good observation showed (or the last image before the failure). */
export function lastGoodImageOf(summary: SessionSummary): ImageDigest | null {
  return summary.lastGoodObservation?.image ?? summary.lastImage;
}

/** Inputs of the page besides the summary. */
export interface PageInputs {
  hb: HandlebarsApi;
  dir: string;
  artifactBase: string;
  plan: ThumbnailPlan;
  totalCalls: number;
  imageCount: number;
  recorderVersion: string;
  /** Images the page is read without (a bundle's): named with why where each would be, not linked. */
  leftOut?: LeftOutKeys;
}

/** The template context of the page, without the rows and what is only known after them. */
export function pageContext(summary: SessionSummary, inputs: PageInputs): Record<string, unknown> {
  const failures = summary.failures
    .slice(0, 12)
    .map((f) => ({ ...f, detail: f.detail ? clip(f.detail, 200) : '' }));
  const steps = summary.steps.slice(-40).map((s) => ({
    name: oneLine(s.name, 120),
    status: oneLine(s.status, 20),
    detail: s.detail ? oneLine(s.detail, 300) : '',
    cls: stepClass(s.status),
  }));
  const environment = environmentEntries(summary.environment);
  return {
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
    // Another MCP server's run: no windows, observations or envelopes are spoken of.
    plainServer: isPlainServer(summary.environment),
    counts: summary.counts,
    countsList: countsList(summary.counts),
    ...callsView(summary, inputs.hb),
    ...imagesView(summary, inputs),
    failures,
    failuresOmitted: summary.failuresOmitted + (summary.failures.length - failures.length),
    warningsByCode: summary.warningsByCode.slice(0, 60),
    steps,
    environment,
    hasDetails:
      failures.length > 0 || summary.warningsByCode.length > 0 || steps.length > 0 || environment.length > 0,
    totalCalls: inputs.totalCalls,
    imageCount: inputs.imageCount,
    recorderVersion: inputs.recorderVersion,
    cspStyle: CSP_STYLE_MARK,
    cspScript: CSP_SCRIPT_MARK,
  };
}

/** The failing call and the last good observation (its value pretty-printed, clipped). */
function callsView(summary: SessionSummary, hb: HandlebarsApi): { failing: unknown; lastGood: unknown } {
  const failing = summary.failingCall
    ? {
        ...summary.failingCall,
        at: summary.failingCall.startedAt,
        duration: formatDurationMs(summary.failingCall.durationMs),
        // The window facts failure-summary.md lists (title, class, process, rect, display and dpi, elevated).
        facts: summary.failingCall.target ? targetFacts(summary.failingCall.target) : [],
      }
    : null;
  const observed = summary.lastGoodObservation;
  const observedValue =
    observed && observed.value !== undefined && observed.value !== null
      ? prettyJson(JSON.stringify(observed.value), 6000)
      : null;
  const lastGood = observed
    ? {
        seq: observed.seq,
        tool: observed.tool,
        oneLine: observed.oneLine,
        value: observedValue ? textHtml(hb, observedValue.text) : null,
      }
    : null;
  return { failing, lastGood };
}

/** The header's counters: calls, failures, warnings, images, and the troubles that happened. */
function countsList(c: SessionSummary['counts']): Array<{ label: string; value: number; cls: string }> {
  return [
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
}

/** The two images at the top: the last good observation's (or last seen) and the failing call's. */
function imagesView(
  summary: SessionSummary,
  inputs: PageInputs,
): { figures: unknown[]; beforeAfter: boolean; imagesTitle: string } {
  const plain = isPlainServer(summary.environment);
  const figure = (image: ImageDigest | null, title: string, cls: string, missing: string) => {
    const ref = image ? imageRef(inputs.dir, image.artifact, inputs.artifactBase) : null;
    const out = ref ? inputs.leftOut?.get(ref.key) : undefined;
    const thumb = ref && (out?.thumbnailStays ?? true) ? inputs.plan.thumbs.get(ref.key) : undefined;
    // Which window it shows and which call made it, so two images are never taken for one window's.
    const place = image?.window ? `'${image.window}'` : plain ? null : 'window unknown';
    const caption = image
      ? `${place ? `${place} · ` : ''}call #${image.seq} ${image.tool} · ${image.width}x${image.height} ${image.format} · ${formatBytes(image.bytes)}`
      : '';
    if (ref && out !== undefined)
      return {
        title,
        cls,
        href: null,
        thumb: thumb ?? null,
        caption,
        note: `${ref.name}: ${leftOutNote(out.why)}`,
      };
    // A file kept as it came (an SVG, an icon) is named, not linked: see row-renderer's images.
    if (ref && !isRasterArtifact(ref.key))
      return {
        title,
        cls,
        href: null,
        thumb: null,
        caption,
        note: `${ref.name}: kept as it came, not linked`,
      };
    const note = !ref ? missing : (inputs.plan.failed.get(ref.key) ?? `open ${ref.name}`);
    return { title, cls, href: ref?.href ?? null, thumb: thumb ?? null, caption, note };
  };
  const lastGoodImage = lastGoodImageOf(summary);
  const figures: unknown[] = [];
  // A before and after only when both images show the same window; else two titled images side by side.
  const beforeAfter = Boolean(summary.failingCall) && sameWindowImages(lastGoodImage, summary.suspectImage);
  if (lastGoodImage || summary.suspectImage) {
    // The last good observation's own image, or else the last image seen before the failure.
    const title = summary.lastGoodObservation?.image
      ? 'Last good observation'
      : summary.failingCall
        ? 'Last image before the failure'
        : 'Last image';
    if (lastGoodImage) figures.push(figure(lastGoodImage, title, 'good', ''));
    if (summary.failingCall) {
      const missing = 'The failing call returned no image with its error.';
      figures.push(figure(summary.suspectImage, "The failing call's image", 'suspect', missing));
    }
  }
  const twoWindows = Boolean(lastGoodImage?.window && summary.suspectImage?.window && !beforeAfter);
  const imagesTitle = beforeAfter
    ? `Before and after: '${summary.suspectImage?.window ?? ''}'`
    : figures.length > 1
      ? twoWindows
        ? 'Two windows: not a before and after'
        : 'Images'
      : 'Image';
  return { figures, beforeAfter, imagesTitle };
}

/** What the page had to leave out or shorten, for the notices at the top. */
export interface Shortfalls {
  limit: string;
  maxThumbnails: number;
  thumbCandidates: number;
  plan: ThumbnailPlan;
  clipped: number;
  bodiesOmitted: number;
  skipped: { count: number; first: number; last: number };
  /** Images the log names that the bundle holding this page left out (0 for a page beside the session). */
  leftOut?: number;
}

/** Notices at the top of the page: the session's own caveats, then everything the page left out. */
export function notices(summary: SessionSummary, s: Shortfalls): string[] {
  const out: string[] = [];
  const c = summary.counts;
  if (summary.status === 'open') {
    out.push('This session is still being recorded; the page shows it as it was when written.');
  }
  if (summary.openElsewhere) {
    const w = summary.openElsewhere;
    out.push(
      `This session never ended: its log is still open on ${oneLine(w.host, 100)}, where its writer (pid ${w.pid}) cannot be checked from here (it crashed there, or is still writing); it is read as aborted.`,
    );
  } else if (summary.status === 'aborted') {
    out.push('The recorder stopped without ending this session (the process crashed or was killed).');
  }
  if (summary.events.emergencyStop) {
    out.push(
      "An operator's emergency stop was latched during this session: calls after it fail with emergency-stopped.",
    );
  }
  const t = summary.events.truncation;
  if (t && t.omittedCalls > 0) {
    out.push(
      `The recorder dropped the arguments/envelopes of ${t.omittedCalls} calls (${formatBytes(t.omittedBytes)}) past its log size limit.`,
    );
  }
  if (t && t.omittedEvents > 0) {
    out.push(
      `The recorder kept no more of what the server sent on its own past its log size limit: ${t.omittedEvents} events (${formatBytes(t.omittedEventBytes)}) were counted, not kept.`,
    );
  }
  const a = summary.events.artifactLimit;
  if (a) {
    out.push(
      `${a.omittedImages} images (${formatBytes(a.omittedBytes)}) were not kept: over the recorder's artifact budget.`,
    );
  }
  const h = summary.hostFiles;
  if (h.total > h.copied) {
    const first = h.notCopied[0];
    out.push(
      `${h.total - h.copied} of ${h.total} files the server wrote on the MCEC host could not be copied here${first ? ` (the newest is on the MCEC host at ${first.hostPath}: ${first.reason})` : ''}; the timeline says where each lies.`,
    );
  }
  if (c.lostCalls || c.recordFailures) {
    out.push(
      `Recording failed ${c.recordFailures} time(s); ${c.lostCalls} call(s) are missing from the log.`,
    );
  }
  const { plan, limit } = s;
  if (plan.omitted > 0) {
    const why =
      plan.omitted === plan.capped
        ? `only the failing call, the last good observation and the ${s.maxThumbnails} most recent images get one`
        : `to keep this page under ${limit}`;
    out.push(
      `Thumbnails omitted for ${plan.omitted} of ${s.thumbCandidates} images (${why}); every image${s.leftOut ? ' in this bundle' : ''} is still linked to its file in artifacts/.`,
    );
  }
  if (s.leftOut) {
    out.push(
      `${s.leftOut === 1 ? '1 image the log names is' : `${s.leftOut} images the log names are`} not in this bundle: where each would be, this page says why instead of linking it (manifest.json's dropped lists them).`,
    );
  }
  if (plan.thumbs.size > 0 && plan.width < 320) {
    out.push(`Thumbnails are ${plan.width} px wide (instead of 320 px) to keep this page under ${limit}.`);
  }
  if (plan.failed.size > 0) {
    out.push(
      `${plan.failed.size} image file(s) could not be read or decoded; they are marked in the timeline.`,
    );
  }
  if (s.clipped > 0) {
    out.push(
      `The arguments/envelopes of ${s.clipped} call(s) are clipped to keep this page under ${limit}; the full text is in session.sqlite and tool-calls.jsonl.`,
    );
  }
  if (s.bodiesOmitted > 0) {
    out.push(
      `The arguments/envelopes of ${s.bodiesOmitted} call(s) are left out to keep this page under ${limit}.`,
    );
  }
  if (s.skipped.count > 0) {
    out.push(
      `The ${s.skipped.count} oldest successful calls without warnings or images (#${s.skipped.first} to #${s.skipped.last}) are left out of the timeline to keep this page under ${limit}; they are in session.sqlite and tool-calls.jsonl.`,
    );
  }
  return out;
}
