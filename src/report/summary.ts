/** Build the summary model from a session log alone (finished, still running or crashed). */
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import { safeRelativePath } from '../paths/naming.js';
import { withoutUrlCredentials } from '../redact/inline-secrets.js';
import type { ArtifactRow, CallRow, EventRow, SessionRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import { expectInstance, expectNumber, expectOptions } from '../util/expect.js';
import { hostFilesOf, hostPathOfCall } from './host-files.js';
import { maskedImagesOf } from './masked-images.js';
import { categoryLine, recoveryForCall } from './recovery.js';
import { initializeAnswer, readFailures } from './server-kind.js';
import { findCaptureSummary, summarizeCall } from './summarize-call.js';
import { argsLine, describeTarget, type TargetKey, targetKeyOf, targetOf, windowShownBy } from './target.js';
import { asRecord, clip, compactValue, oneLine, parseJson } from './text.js';
import { loadTimeFormat, type TimeFormat } from './time.js';
import type {
  CallDigest,
  ImageDigest,
  ObservationDigest,
  SessionSummary,
  SummaryOptions,
  TimelineLine,
  Verdict,
} from './types.js';
import { decideVerdict, readVerdictFacts, type VerdictFacts } from './verdict.js';

/** Longest error detail kept in the model; renderers clip further when a document gets too long. */
const MAX_DETAIL = 4000;
const MAX_STEPS = 500;
const FAILED_STEP = new Set(['failed', 'fail', 'error', 'aborted']);
/** Roles of an observation's own image (not the server's echo of an earlier one, not a failure's suspect). */
const OWN_IMAGE_ROLES = new Set(['result', 'image-block', 'nested', 'host-capture', 'host-capture-file']);

function imageFromArtifact(row: ArtifactRow | undefined): ImageDigest | null {
  if (!row || row.call_seq == null) return null;
  const artifact = safeRelativePath(row.path);
  if (!artifact) return null;
  return {
    artifact,
    width: row.width ?? 0,
    height: row.height ?? 0,
    format: row.format ?? artifact.split('.').pop() ?? 'png',
    bytes: row.bytes ?? 0,
    seq: row.call_seq,
    sha256: row.sha256,
    role: oneLine(row.role, 40),
    window: null,
    tool: '',
  };
}

function imageFromSummary(value: unknown, seq: number, role: string): ImageDigest | null {
  const s = findCaptureSummary(value);
  const artifact = safeRelativePath(s?.artifact);
  if (!s || !artifact) return null;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    artifact,
    width: n(s.width),
    height: n(s.height),
    format: typeof s.encoding === 'string' ? oneLine(s.encoding, 10) : 'png',
    bytes: n(s.bytes),
    seq,
    sha256: typeof s.sha256 === 'string' ? s.sha256.slice(0, 64) : null,
    role,
    window: null,
    tool: '',
  };
}

/** The image with the window it shows and the tool that made it, from its call's record. */
function titled(reader: SessionReader, image: ImageDigest | null): ImageDigest | null {
  if (!image) return null;
  const row = reader.call(image.seq);
  if (!row) return image;
  const envelope = envelopeOf(row);
  const error = asRecord(envelope?.error);
  const holder =
    image.role === 'partialResult'
      ? error?.partialResult
      : image.role === 'lastObservation'
        ? error?.lastObservation
        : envelope?.result;
  const summary = findCaptureSummary(holder) ?? asRecord(holder);
  const args = asRecord(parseJson(row.args, 1024 * 1024));
  const title =
    asRecord(summary?.window)?.title ??
    (image.role === 'lastObservation' ? undefined : (args?.window ?? args?.title));
  return {
    ...image,
    tool:
      image.role === 'lastObservation'
        ? `${oneLine(row.tool, 60)} (server's lastObservation)`
        : oneLine(row.tool, 60),
    window: typeof title === 'string' && title !== '' ? oneLine(title, 100) : null,
  };
}

function envelopeOf(row: CallRow): Record<string, unknown> | undefined {
  return asRecord(parseJson(row.envelope));
}

function digest(row: CallRow, time: TimeFormat): CallDigest {
  return {
    seq: row.seq,
    tool: oneLine(row.tool, 60),
    status: row.status,
    startedAt: time.iso(row.started_at) ?? row.started_at,
    durationMs: row.duration_ms,
    code: row.error_code ? oneLine(row.error_code, 120) : null,
    category: categoryLine(row),
    detail: row.error_detail ? clip(row.error_detail, MAX_DETAIL) : null,
    recovery: recoveryForCall(row),
    line: summarizeCall(row),
  };
}

function parseDetail(event: EventRow | undefined): Record<string, unknown> {
  return asRecord(parseJson(event?.detail ?? null, 1024 * 1024)) ?? {};
}

function finiteOr0(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** The named numeric fields of several events' JSON details, added up. */
function sumDetails(rows: EventRow[], keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of keys) out[key] = 0;
  for (const row of rows) {
    const d = parseDetail(row);
    for (const key of keys) out[key]! += finiteOr0(d[key]);
  }
  return out;
}

/** The newest successful observation before `failing` that showed its target window, within a bounded walk back. */
function observationOfTarget(
  reader: SessionReader,
  newest: CallRow,
  want: TargetKey,
  tools: readonly string[],
): { row: CallRow; window: Record<string, unknown> } | null {
  let row: CallRow | undefined = newest;
  for (let i = 0; row && i < 200; i++) {
    const window = windowShownBy(row, want);
    if (window) return { row, window };
    row = reader.lastCallWhere({ statuses: ['ok'], tools, beforeSeq: row.seq });
  }
  return null;
}

/** The title of the window an observation's result names (or its arguments'), null when none. */
function observedTitle(row: CallRow): string | null {
  const result = asRecord(envelopeOf(row)?.result);
  const args = asRecord(parseJson(row.args, 1024 * 1024));
  const title = asRecord(result?.window)?.title ?? args?.window;
  return typeof title === 'string' && title !== '' ? oneLine(title, 100) : null;
}

/** The observation tools the recorder used, as saved in the session's environment; else the catalog's. */
function observationToolsOf(session: SessionRow): readonly string[] {
  const saved = asRecord(parseJson(session.environment, 1024 * 1024))?.observationTools;
  return Array.isArray(saved) && saved.every((t) => typeof t === 'string') ? saved : OBSERVATION_TOOLS;
}

/**
 * The observation the agent last saw successfully before the failing call, with its image when it had one.
 * The newest one that showed the failing call's own window (its result's window, or a `windows` list naming
 * it) wins over a newer one of another window; without one, the newest observation. `tools` are the
 * observation tools the recorder used.
 */
function lastGoodObservation(
  reader: SessionReader,
  failing: CallRow | undefined,
  tools: readonly string[],
): ObservationDigest | null {
  const newest = reader.lastCallWhere({
    statuses: ['ok'],
    tools,
    beforeSeq: failing?.seq,
  });
  const want = failing ? targetKeyOf(failing) : null;
  const ofTarget = want && newest ? observationOfTarget(reader, newest, want, tools) : null;
  const row = ofTarget?.row ?? newest;
  if (row) {
    const result = envelopeOf(row)?.result;
    const own = reader.artifactsOfCall(row.seq).filter((a) => OWN_IMAGE_ROLES.has(a.role));
    const image = titled(
      reader,
      imageFromArtifact(own.find((a) => a.path)) ?? imageFromSummary(result, row.seq, 'result'),
    );
    const shownTitle = ofTarget?.window.title;
    return {
      seq: row.seq,
      tool: oneLine(row.tool, 60),
      oneLine: summarizeCall(row),
      image,
      hostPath: image ? null : hostPathOfCall(own),
      value: compactValue(result),
      window:
        typeof shownTitle === 'string' && shownTitle !== '' ? oneLine(shownTitle, 100) : observedTitle(row),
      ofFailingTarget: want ? ofTarget !== null : null,
    };
  }
  return failing ? serverLastObservation(reader, failing, want) : null;
}

/** The recorder may have joined late: what the server said it last observed, in the failing call's error. */
function serverLastObservation(
  reader: SessionReader,
  failing: CallRow,
  want: TargetKey | null,
): ObservationDigest | null {
  const error = asRecord(envelopeOf(failing)?.error);
  const observed = asRecord(error?.lastObservation);
  if (!observed) return null;
  const image = titled(reader, imageFromSummary(observed, failing.seq, 'lastObservation'));
  const kind = typeof observed.kind === 'string' ? observed.kind : 'observation';
  const win = asRecord(observed.window);
  const title = win?.title ?? observed.title;
  const handle = win?.handle;
  return {
    seq: failing.seq,
    tool: 'lastObservation',
    oneLine: `server's lastObservation (${oneLine(kind, 30)})${typeof title === 'string' ? ` of '${oneLine(title, 50)}'` : ''}`,
    image:
      image ??
      imageFromArtifact(
        reader.artifactsOfCall(failing.seq).find((a) => a.path && a.role === 'host-observation'),
      ),
    hostPath: image
      ? null
      : hostPathOfCall(reader.artifactsOfCall(failing.seq), (r) => r === 'host-observation'),
    value: compactValue(observed),
    window: typeof title === 'string' && title !== '' ? oneLine(title, 100) : null,
    ofFailingTarget: want
      ? want.handle !== null
        ? handle === want.handle
        : typeof title === 'string' && title.toLowerCase() === want.title
      : null,
  };
}

/** True when both images are known to show the same window (so they read as a before and after). */
export function sameWindowImages(a: ImageDigest | null, b: ImageDigest | null): boolean {
  return Boolean(a?.window && b?.window && a.window.toLowerCase() === b.window.toLowerCase());
}

/** Distinct image files the log refers to (one file however many rows, roles or calls name it). */
export function distinctImageCount(rows: readonly ArtifactRow[]): number {
  const paths = new Set<string>();
  for (const row of rows) {
    const p = row.path ? safeRelativePath(row.path) : null;
    if (p) paths.add(p);
  }
  return paths.size;
}

/** One line per display of the newest successful `displays` call ("DISPLAY2 (primary): 1920x1080 at x=0 y=0, 96 dpi"). */
function displayLinesOf(reader: SessionReader): string[] {
  const row = reader.lastCallWhere({ statuses: ['ok'], tools: ['displays'] });
  const result = row ? asRecord(envelopeOf(row)?.result) : undefined;
  const list = Array.isArray(result?.displays) ? result.displays : [];
  return list.slice(0, 16).map((item, i) => {
    const d = asRecord(item) ?? {};
    const b = asRecord(d.bounds) ?? {};
    const name = typeof d.deviceName === 'string' ? d.deviceName.replace(/^[\\.]+/, '') : `display ${i}`;
    const dpi = typeof d.dpi === 'number' ? `, ${d.dpi} dpi` : '';
    return oneLine(
      `${name}${d.primary === true ? ' (primary)' : ''}: ${b.width}x${b.height} at x=${b.x} y=${b.y}${dpi}`,
      200,
    );
  });
}

/** Environment from the session row, the initialize exchange and the last successful `displays` call. */
function environmentOf(reader: SessionReader, session: SessionRow): Record<string, unknown> {
  const stored = asRecord(parseJson(session.environment, 1024 * 1024)) ?? {};
  // Templates are strict, so the keys they name always exist (null when unknown).
  const env: Record<string, unknown> = {
    os: null,
    node: null,
    recorder: null,
    server: null,
    display: null,
    dpi: null,
    ...(asRecord(compactValue(stored, { depth: 3, maxString: 200 })) ?? {}),
  };
  // The recorder's observation set picks the last good observation; it is not a fact about the machine.
  delete env.observationTools;
  if (env.recorder == null) env.recorder = session.recorder_version;
  if (!asRecord(env.server)) {
    const answer = initializeAnswer(reader);
    if (answer)
      env.server = compactValue(
        { ...answer.serverInfo, protocolVersion: answer.protocolVersion },
        { maxString: 80 },
      );
  }
  const displays = reader.lastCallWhere({ statuses: ['ok'], tools: ['displays'] });
  const result = displays ? asRecord(envelopeOf(displays)?.result) : undefined;
  const list = Array.isArray(result?.displays) ? result.displays : [];
  const primary = asRecord(list.find((d) => asRecord(d)?.primary === true) ?? list[0]);
  const bounds = asRecord(primary?.bounds);
  if (bounds && typeof bounds.width === 'number' && typeof bounds.height === 'number') {
    env.display = `${bounds.width}x${bounds.height}`;
  }
  if (typeof primary?.dpi === 'number') env.dpi = primary.dpi;
  if (typeof primary?.scale === 'number') env.scale = primary.scale;
  if (list.length > 0) env.displays = list.length;
  return env;
}

/** A call as a timeline line. */
function timelineLine(row: CallRow, time: TimeFormat, sessionId: string): TimelineLine {
  return {
    seq: row.seq,
    at: time.iso(row.started_at) ?? row.started_at,
    tool: oneLine(row.tool, 60),
    status: row.status,
    duration: row.status === 'pending' ? '' : time.duration(row.duration_ms),
    line: summarizeCall(row),
    args: argsLine(row.args, 300, sessionId),
    code: row.error_code ? oneLine(row.error_code, 120) : null,
  };
}

/**
 * The failing call's row: the newest unrecovered failure, fault or pending call on a FAIL (the first of a run
 * of identical ones: an agent retrying the same failing call did not fail anew); none on a PASS.
 */
function failingRowOf(reader: SessionReader, facts: VerdictFacts, verdict: Verdict): CallRow | undefined {
  // None on a PASS, so a page never shows PASS beside a "failing call" (a declared PASS still lists its
  // unrecovered failures).
  const seq =
    verdict === 'FAIL'
      ? Math.max(
          facts.unrecovered.newest?.seq ?? 0,
          facts.faults.newest?.seq ?? 0,
          facts.pending.newest?.seq ?? 0,
        )
      : 0;
  // The full row: list rows leave out a failure's envelope (lastObservation, partialResult live there).
  return seq > 0 ? reader.call(reader.firstOfRepeatedFailure(seq)) : undefined;
}

/** The failing call, the calls that lead to it, and the images around it. */
function failurePart(
  reader: SessionReader,
  failingRow: CallRow | undefined,
  timeline: TimelineLine[],
  time: TimeFormat,
  timelineLength: number,
  calls: number,
  sessionId: string,
): Pick<SessionSummary, 'failingCall' | 'reproduce' | 'suspectImage' | 'lastImage'> {
  const target = failingRow ? targetOf(reader, failingRow) : null;
  const failingCall = failingRow
    ? {
        ...digest(failingRow, time),
        args: argsLine(failingRow.args, 2000, sessionId),
        target,
        targetLine: target ? describeTarget(target) : null,
      }
    : null;
  // To Reproduce: the calls up to the failing one (the tail already is that when the failure is newest).
  const reproduceLines =
    failingRow && !timeline.some((l) => l.seq === failingRow.seq)
      ? [
          ...reader.calls({
            fromSeq: Math.max(0, failingRow.seq - timelineLength + 1),
            limit: timelineLength,
          }),
        ]
          .filter((r) => r.seq <= failingRow.seq)
          .map((r) => timelineLine(r, time, sessionId))
      : timeline.filter((l) => !failingRow || l.seq <= failingRow.seq);
  const reproduceOmitted = (failingRow ? failingRow.seq : calls) - reproduceLines.length;
  const suspectImage = failingRow
    ? titled(
        reader,
        imageFromArtifact(
          reader
            .artifactsOfCall(failingRow.seq)
            .find(
              (a) =>
                a.path &&
                (a.role === 'partialResult' || (a.json_path ?? '').startsWith('/error/partialResult/')),
            ),
        ) ??
          imageFromSummary(
            asRecord(envelopeOf(failingRow)?.error)?.partialResult,
            failingRow.seq,
            'partialResult',
          ),
      )
    : null;
  const lastImage = titled(
    reader,
    imageFromArtifact(
      reader.lastImageArtifact({
        beforeSeq: failingRow?.seq,
        excludeRoles: ['lastObservation', 'host-observation'],
      }),
    ) ?? imageFromArtifact(reader.lastImageArtifact({ beforeSeq: failingRow?.seq })),
  );
  return {
    failingCall,
    reproduce: { omitted: Math.max(0, reproduceOmitted), lines: reproduceLines },
    suspectImage,
    lastImage,
  };
}

/** The runner's declared steps (the newest MAX_STEPS) and the last one that failed. */
function stepsPart(
  reader: SessionReader,
  time: TimeFormat,
): Pick<SessionSummary, 'steps' | 'stepsOmitted' | 'lastFailedStep'> {
  const steps = reader.eventsTail('step', MAX_STEPS).map((event) => {
    const d = parseDetail(event);
    return {
      name: oneLine(d.name ?? '', 200),
      status: oneLine(d.status ?? '', 40),
      detail: d.detail == null ? null : clip(String(d.detail), MAX_DETAIL),
      at: time.iso(event.at) ?? event.at,
    };
  });
  return {
    steps,
    stepsOmitted: reader.eventCount('step') - steps.length,
    lastFailedStep: [...steps].reverse().find((s) => FAILED_STEP.has(s.status.toLowerCase())) ?? null,
  };
}

/**
 * The export's counts. While a writer still runs, its queued spans are on their way ("queued"); once none
 * does, spans still queued in its last counts were never delivered. URLs and errors are shown without
 * credentials (a log written before the recorder stored them so may hold them).
 */
function otlpExportOf(
  rows: EventRow[],
  sums: Record<string, unknown>,
  writing: boolean,
): NonNullable<SessionSummary['events']['otlpExport']> {
  let url = '';
  let lastError: string | null = null;
  for (const row of rows) {
    try {
      const d = JSON.parse(row.detail ?? '{}') as { url?: unknown; lastError?: unknown };
      if (typeof d.url === 'string') url = withoutUrlCredentials(d.url);
      if (typeof d.lastError === 'string') lastError = withoutUrlCredentials(d.lastError);
    } catch {
      // a malformed row adds nothing
    }
  }
  const spans = finiteOr0(sums.spans);
  const exported = finiteOr0(sums.exported);
  const queued = writing ? Math.min(finiteOr0(sums.queued), Math.max(0, spans - exported)) : 0;
  // Its writer stopped (killed, say) before the export said what became of them.
  if (!writing && lastError === null && finiteOr0(sums.queued) > 0)
    lastError = 'still queued when the recorder stopped';
  return {
    url,
    spans,
    exported,
    dropped: Math.max(0, spans - exported - queued),
    queued,
    writing,
    lastError,
  };
}

/** Who wrote the log, and what the recorder had to leave out (payloads, images) or saw (emergency stop). */
function recordingPart(
  reader: SessionReader,
  emergencyStop: boolean,
): Pick<SessionSummary, 'writers' | 'writersNote' | 'events'> {
  // Running totals are kept per writer: add up each writer's latest.
  const truncationRows = reader.latestEventPerWriter('truncation');
  const artifactLimitRows = reader.latestEventPerWriter('artifact-limit');
  const truncationDetail = sumDetails(truncationRows, [
    'omittedCalls',
    'omittedBytes',
    'omittedEvents',
    'omittedEventBytes',
  ]);
  const artifactLimitDetail = sumDetails(artifactLimitRows, ['omittedImages', 'omittedBytes']);
  const otlpRows = reader.latestEventPerWriter('otlp-export');
  const otlpDetail = sumDetails(otlpRows, ['spans', 'exported', 'dropped', 'queued']);
  const writers = reader.writers().map((w) => ({ pid: w.pid, host: w.host, calls: w.calls }));
  const together = reader.eventCount('concurrent-writer') > 0;
  return {
    writers,
    writersNote:
      writers.length > 1
        ? `Written by ${writers.length} processes ${together ? 'at the same time' : 'one after another'}: ` +
          `${writers.map((w) => `pid ${w.pid} (${w.calls} calls)`).join(', ')}; every call of each is kept, ` +
          'numbered in the order written'
        : null,
    events: {
      emergencyStop,
      truncation: truncationRows[0]
        ? {
            omittedCalls: finiteOr0(truncationDetail.omittedCalls),
            omittedBytes: finiteOr0(truncationDetail.omittedBytes),
            omittedEvents: finiteOr0(truncationDetail.omittedEvents),
            omittedEventBytes: finiteOr0(truncationDetail.omittedEventBytes),
          }
        : null,
      artifactLimit: artifactLimitRows[0]
        ? {
            omittedImages: finiteOr0(artifactLimitDetail.omittedImages),
            omittedBytes: finiteOr0(artifactLimitDetail.omittedBytes),
          }
        : null,
      otlpExport: otlpRows[0] ? otlpExportOf(otlpRows, otlpDetail, reader.liveWriters().length > 0) : null,
    },
  };
}

/** Build the summary of one session; reads the log in one snapshot and never loads every call. */
export async function buildSummary(
  reader: SessionReader,
  options: SummaryOptions = {},
): Promise<SessionSummary> {
  expectInstance(reader, 'reader', SessionReader);
  const o = expectOptions(options);
  expectNumber(o.timelineLength, 'options.timelineLength', { min: 0, integer: true });
  expectNumber(o.maxFailures, 'options.maxFailures', { min: 0, integer: true });
  const time = await loadTimeFormat();
  const timelineLength = options.timelineLength ?? 20;
  const maxFailures = options.maxFailures ?? 200;
  return reader.snapshot(() => {
    const session = reader.session();
    const stats = reader.stats();
    const kept = readFailures(reader, session, stats, maxFailures);
    const facts = readVerdictFacts(reader, {
      session,
      stats,
      outcome: kept.outcome,
      plainServer: kept.plainServer,
    });
    const decision = decideVerdict(facts);
    const failingRow = failingRowOf(reader, facts, decision.verdict);
    const failures = kept.failures
      .reverse()
      .map((f) => ({ ...digest(f, time), recovered: f.recovered !== 0 }));
    const timeline = reader
      .tailCalls(timelineLength)
      .map((row) => timelineLine(row, time, session.session_id));
    const durationMs = time.between(session.started_at, session.ended_at ?? stats.lastRunActivityAt);
    const artifacts = reader.artifacts();
    return {
      sessionId: session.session_id,
      originalId: session.original_id ? oneLine(session.original_id, 200) : null,
      scenario: session.scenario == null ? null : clip(session.scenario, MAX_DETAIL),
      dirName: reader.dir.split(/[\\/]/).filter(Boolean).pop() ?? session.session_id,
      status: session.status,
      openElsewhere: facts.openElsewhere ?? null,
      verdict: decision.verdict,
      verdictReason: decision.reason,
      verdictReasons: decision.reasons,
      passedExplicit: facts.declared ? facts.declared.passed : null,
      startedAt: time.iso(session.started_at) ?? session.started_at,
      endedAt: time.iso(session.ended_at),
      durationMs,
      duration: time.duration(durationMs),
      counts: {
        calls: stats.calls,
        failures: facts.failures,
        recovered: facts.recovered,
        pending: stats.pending,
        warnings: stats.warnings,
        violations: stats.violations,
        // One image is one artifact, however many places in an output (result, image block) carried it.
        artifacts: distinctImageCount(artifacts),
        droppedPayloads: stats.droppedPayloads,
        lostCalls: stats.lostCalls,
        recordFailures: stats.recordFailures,
      },
      ...failurePart(reader, failingRow, timeline, time, timelineLength, stats.calls, session.session_id),
      failures,
      failuresOmitted: facts.failures - failures.length,
      warningsByCode: reader.warningsByCode().map((w) => ({
        code: oneLine(w.code, 80),
        count: w.count,
        example: w.example == null ? '' : oneLine(w.example, 300),
      })),
      lastGoodObservation: lastGoodObservation(reader, failingRow, observationToolsOf(session)),
      hostFiles: hostFilesOf(artifacts),
      maskedImages: maskedImagesOf(artifacts),
      timeline: { omitted: stats.calls - timeline.length, lines: timeline },
      ...stepsPart(reader, time),
      environment: environmentOf(reader, session),
      displays: displayLinesOf(reader),
      ...recordingPart(reader, facts.emergencyStop),
    };
  });
}
