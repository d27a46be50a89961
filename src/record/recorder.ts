/**
 * The recorder: wraps a dispatch (or takes JSON-RPC exchanges from a proxy), routes calls to sessions, and
 * records them through one ordered queue that is processed off the agent's critical path: parse, compact
 * images into artifacts, redact, then group-commit into each session's SQLite log. Recording never breaks a
 * call: failures are counted, reported once on stderr and written as `record-failure` events.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ArtifactStore } from '../artifacts/artifact-store.js';
import { type CompactedImage, compactImages } from '../artifacts/compact.js';
import { HostFileCollector, type HostFileRef } from '../artifacts/host-files.js';
import { findImageBytes, setAtPointer } from '../contract/image-bytes.js';
import { readToolOutput } from '../contract/read-tool-output.js';
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import type { Envelope, ToolOutput, Violation } from '../contract/types.js';
import { isSafeSessionId, safeDerivedId, sessionDirName } from '../paths/naming.js';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import { createRedactor, type Redactor } from '../redact/redactor.js';
import { catalogSessionEnded } from '../store/catalog.js';
import { LogPool } from '../store/log-pool.js';
import type { SessionRow } from '../store/schema.js';
import { type CommitOutcome, SessionLog } from '../store/session-log.js';
import { isRecord } from '../util/json.js';
import { agentValue, decidableFailure, unrecordedValue } from './agent-value.js';
import { type ClientSaw, handBack, type LateAnswer, newCall, type RecordedCall } from './call.js';
import { clipForLog } from './clip.js';
import { type Clock, systemClock } from './clock.js';
import { environmentOf, recorderVersion, type ServerInfo } from './environment.js';
import {
  envelopeText,
  isPlainResponse,
  mayHoldImageBytes,
  type OutputShape,
  plainResponseJson,
  quickOutcome,
  responseShape,
  roughSize,
  thrownFailure,
  thrownMessage,
  withAbsoluteArtifacts,
} from './outcome.js';
import { type CommitPass, RecordQueue } from './record-queue.js';
import { answersInDefaultSession, isPreRoutingRefusal, routingArgument } from './routing.js';
import {
  answeredRow,
  artifactRow,
  metadataOnlyRow,
  oversizeDetail,
  oversizeRow,
  pendingRow,
  transportFaultRow,
} from './rows.js';
import { RecordedSession, type SessionVia } from './session.js';
import { inStage, stageOf } from './stages.js';
import { isoTime, saneServerTime } from './time.js';
import type {
  Dispatch,
  ExchangeMeta,
  OversizeAnswer,
  PendingExchange,
  Recorder,
  RecorderOptions,
  RecordStage,
  SessionInfo,
  Transport,
} from './types.js';
import { escapeId, jsonOrNull, validDate } from './values.js';

const MiB = 1024 * 1024;
/** Default stored payload per session. */
export const DEFAULT_MAX_LOG_BYTES = 8 * MiB;
/** Default artifact bytes per session. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 512 * MiB;
/** What the log stores for a dispatch result that throws when read (a getter, a Proxy trap). */
export const UNREADABLE_RESULT = '[result not recorded: reading it threw]';
/** What stands in a stored value for image bytes that could not become an artifact (args, events). */
export const IMAGE_BYTES_OMITTED = '[image bytes omitted]';

/** One line of untrusted text, at most `max` characters. */
function clipText(text: string, max: number): string {
  const line = text.slice(0, max + 1).replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** What a closed recorder hands a proxy: an exchange that records nothing. */
const NOOP_EXCHANGE: PendingExchange = {
  complete() {},
  fail() {},
  timedOut() {},
  clientLeft() {},
  tooLarge() {},
};

/** failureValueNow's answer when the value depends on work still queued. */
const WAIT_FOR_QUEUE: unique symbol = Symbol('wait for the queue');

/** How long a failing log waits before the next commit attempt, and a log that would not open. */
const COMMIT_RETRY_MS = 100;
const OPEN_RETRY_MS = 1000;
/** The stored last good observation is clipped to this (the agent still gets it whole). */
const MAX_OBSERVATION_CHARS = 256 * 1024;
/** A pending row younger than this waits one commit: a call completing by then is written as one row. */
const HOLD_PENDING_MS = 10;
/** How long a commit waits for another writer's lock (commits run on the event loop: keep it short). */
const BUSY_TIMEOUT_MS = 20;
/** Handshake events kept while no session has been seen; past this many the rest are counted. */
const MAX_PREAMBLE_EVENTS = 1000;

/** An event of the connection (handshake, protocol fault) waiting for the first session to land in. */
interface PreambleEvent {
  kind: string;
  detail: unknown;
  at: Date;
}

type Job =
  | { type: 'begin'; call: RecordedCall }
  | { type: 'complete'; call: RecordedCall }
  | { type: 'late'; call: RecordedCall; late: LateAnswer; saw: ClientSaw }
  | { type: 'event'; sessionId: string | undefined; kind: string; detail: unknown; at: Date }
  | { type: 'exchange'; request: unknown; response: unknown; at: Date; failed?: string }
  | { type: 'end'; sessionId: string; verdict: { passed?: boolean; reason?: string }; at: Date };

class RecorderImpl implements Recorder {
  readonly sessionsDir: string;
  readonly defaultSessionId: string;
  private readonly options: RecorderOptions;
  private readonly redactor: Redactor;
  private readonly maxLogBytes: number;
  private readonly maxArtifactBytes: number;
  private readonly fillLastObservation: boolean;
  private readonly observationTools: ReadonlySet<string>;
  private readonly transport: Transport;
  private readonly maxObservationChars: number;
  private readonly stderr: (line: string) => void;
  private readonly hostFiles: HostFileCollector;
  private readonly sessions = new Map<string, RecordedSession>();
  private readonly dirty = new Set<RecordedSession>();
  /** Caps the session logs open at once (file descriptors): idle ones close and reopen on demand. */
  private readonly logPool: LogPool;
  private readonly reportedStages = new Set<string>();
  private server: ServerInfo | undefined;
  /** Reads retry deadlines (tests move it forward instead of sleeping). */
  private readonly clock: Clock;
  private readonly queue: RecordQueue<Job>;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Observation calls completed but not yet processed: while any are, a failure's value waits for the queue. */
  private observationsInFlight = 0;
  /** Some session has held a last good observation (a failure may need one attached). */
  private anyObservation = false;
  /** The server's default session, as it last stamped a call that named no session (mcec-wire §8). */
  private ambientId: string | undefined;
  /** Where the connection's last tool call landed: events without a session go there. */
  private current: RecordedSession | undefined;
  /** Handshake and protocol faults seen before any session: written into the first one a call lands in. */
  private preamble: PreambleEvent[] = [];
  private preambleDropped = 0;

  constructor(options: RecorderOptions, clock: Clock) {
    this.options = options;
    this.sessionsDir = resolveSessionsDir(options.sessionsDir);
    this.defaultSessionId = randomBytes(6).toString('hex');
    this.redactor = createRedactor(options.redact ?? {});
    this.maxLogBytes = options.limits?.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
    this.maxArtifactBytes = options.limits?.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    this.fillLastObservation = options.fillLastObservation !== false;
    this.observationTools = new Set(options.observationTools ?? OBSERVATION_TOOLS);
    this.transport = options.transport ?? 'wrap';
    this.clock = clock;
    this.queue = new RecordQueue<Job>(
      {
        process: (job) => this.processJob(job),
        hasUncommitted: () => this.dirty.size > 0,
        commit: (force) => this.commitAll(force),
        broke: (err) => this.noteFailure(undefined, stageOf(err), thrownMessage(err), 0),
      },
      { clock, limits: { commitIntervalMs: options.commitIntervalMs ?? 4, retryMs: COMMIT_RETRY_MS } },
    );
    this.maxObservationChars = Math.min(MAX_OBSERVATION_CHARS, this.maxLogBytes);
    this.stderr = options.stderr ?? ((line) => process.stderr.write(`${line}\n`));
    this.logPool = new LogPool(options.maxOpenLogs);
    this.hostFiles = new HostFileCollector({
      enabled: options.copyHostFiles !== false,
      pathMap: options.hostPathMap ?? [],
      ...(options.limits?.maxHostFileBytes ? { maxFileBytes: options.limits.maxHostFileBytes } : {}),
    });
    // The envelope schema compiles on first use (~250 ms): pay it now, not inside the first call's recording.
    setTimeout(() => readToolOutput({ ok: true, result: {} }), 0).unref();
  }

  // ---------------------------------------------------------------- the critical path

  wrap<D extends Dispatch>(dispatch: D): D {
    let lastShape: OutputShape | undefined;
    const wrapped = async (tool: string, args: Record<string, unknown>): Promise<unknown> => {
      if (this.closed) return dispatch(tool, args);
      const call = this.startCall(tool, args, null, null, this.transport, new Date());
      let output: unknown;
      try {
        output = await dispatch(tool, args);
      } catch (err) {
        return this.finishThrown(call, err, lastShape ?? this.options.thrownShape ?? 'call-tool-result');
      }
      try {
        const quick = quickOutcome(output);
        if (quick.shape !== 'other') lastShape = quick.shape;
        return this.finishReturned(call, output, quick.ok === true);
      } catch {
        // Reading the result threw (a getter, a Proxy): the agent gets it as returned, the log a stand-in.
        const recorded = this.finishReturned(call, UNREADABLE_RESULT, true);
        return recorded instanceof Promise ? recorded.then(() => output) : output;
      }
    };
    return wrapped as unknown as D;
  }

  private startCall(
    tool: string,
    args: unknown,
    rpcId: string | null,
    method: string | null,
    transport: Transport,
    startedAt: Date,
  ): RecordedCall {
    const name = typeof tool === 'string' ? tool : String(tool);
    const named = routingArgument(name, args);
    const call = newCall({
      tool: name,
      args,
      rpcId,
      method,
      transport,
      startedAt,
      namedSessionId: named,
      startSessionId: named ?? this.ambientId ?? this.defaultSessionId,
      startVia: named !== undefined ? 'argument' : this.ambientId !== undefined ? 'envelope' : 'default',
    });
    this.push({ type: 'begin', call }, 256);
    return call;
  }

  private finishReturned(call: RecordedCall, output: unknown, ok: boolean): unknown {
    call.endedAt = new Date();
    call.durationMs = performance.now() - call.t0;
    call.output = output;
    call.queuedBytes = roughSize(output);
    return this.handOver(call, ok ? output : this.failureValueNow(call, output));
  }

  private finishThrown(call: RecordedCall, err: unknown, shape: OutputShape): Promise<unknown> {
    call.endedAt = new Date();
    call.durationMs = performance.now() - call.t0;
    call.thrown = { message: thrownMessage(err), shape };
    const value = this.lastObservationSettled()
      ? agentValue({
          tool: call.tool,
          output: undefined,
          thrown: call.thrown,
          images: [],
          namedSessionId: call.namedSessionId,
          session: this.knownSession(call.startSessionId),
          fillLastObservation: this.fillLastObservation,
        })
      : WAIT_FOR_QUEUE;
    return Promise.resolve(this.handOver(call, value));
  }

  /**
   * Queue the call's completion and hand the agent its value: at once when it is known (after back-pressure,
   * if the queue is full), else once the queue, processed now, has built it.
   */
  private handOver(call: RecordedCall, value: unknown): unknown {
    if (value !== WAIT_FOR_QUEUE) {
      this.push({ type: 'complete', call }, call.queuedBytes);
      const room = this.queue.room();
      return room ? room.then(() => value) : value;
    }
    return new Promise((resolve) => {
      call.handBack = resolve;
      this.push({ type: 'complete', call }, call.queuedBytes);
      this.queue.runNow();
    });
  }

  /** True when every queued job that could change a session's last observation has been processed. */
  private lastObservationSettled(): boolean {
    return !this.closed && this.observationsInFlight === 0;
  }

  /** An existing session by the id a call names (no session is created on the critical path). */
  private knownSession(raw: string): RecordedSession | undefined {
    const seen = this.sessions.get(raw);
    if (seen) return seen;
    return this.sessions.get(isSafeSessionId(raw) ? raw : safeDerivedId(raw));
  }

  /**
   * A failure's value for the agent, built now when it cannot depend on queued work: no image bytes in its
   * envelope text (nothing to compact into a summary) and no observation call still queued. Otherwise
   * WAIT_FOR_QUEUE. The value is agentValue's, as the queue would build it.
   */
  private failureValueNow(call: RecordedCall, output: unknown): unknown {
    if (!this.lastObservationSettled()) return WAIT_FOR_QUEUE;
    const decidable = decidableFailure(output);
    if (!decidable) return WAIT_FOR_QUEUE;
    call.knownFailure = decidable.knownFailure;
    // No image bytes: only a filled-in last observation could change the value, and none exists yet.
    if (!this.fillLastObservation || !this.anyObservation) return output;
    const read = readToolOutput(output);
    call.readEarly = read;
    const env = read.envelope;
    if (!env || env.ok || read.synthesized) return output;
    const routed =
      typeof env.sessionId === 'string' && env.sessionId !== '' ? env.sessionId : call.startSessionId;
    const s = this.knownSession(routed);
    if (!s) return output;
    return agentValue({
      tool: call.tool,
      output,
      read,
      images: [],
      session: s,
      fillLastObservation: this.fillLastObservation,
    });
  }

  /** Queue a job; an observation call's completion is counted until processed (failures wait for it). */
  private push(job: Job, size: number): void {
    if (
      job.type === 'complete' &&
      !job.call.thrown &&
      !job.call.knownFailure &&
      this.observationTools.has(job.call.tool)
    ) {
      job.call.observationQueued = true;
      this.observationsInFlight += 1;
    }
    this.queue.push(job, size);
  }

  // ---------------------------------------------------------------- the queue, off the critical path

  /** The queue's worker: one job, its failures kept to itself. */
  private processJob(job: Job): Promise<void> | undefined {
    const pending = this.processSafely(job);
    if (job.type !== 'complete' || !job.call.observationQueued) return pending;
    const observed = () => {
      job.call.observationQueued = false;
      this.observationsInFlight -= 1;
    };
    if (!pending) {
      observed();
      return undefined;
    }
    return pending.then(observed);
  }

  private processSafely(job: Job): Promise<void> | undefined {
    try {
      const pending = this.process(job);
      return pending?.catch((err) => this.jobFailed(job, err));
    } catch (err) {
      this.jobFailed(job, err);
      return undefined;
    }
  }

  /** A bug (or injected fault) in a stage: count it, keep what can be kept, and hand the caller its value. */
  private jobFailed(job: Job, err: unknown): void {
    const stage = stageOf(err);
    const message = thrownMessage(err);
    if (job.type === 'complete') {
      const call = job.call;
      this.handBackUnrecorded(call);
      const s = call.session;
      if (s) {
        this.noteFailure(s, stage, message, 0);
        this.writeMetadataOnly(call, s);
      } else this.noteFailure(undefined, stage, message, 1);
    } else if (job.type === 'begin') {
      const s = job.call.session;
      this.noteFailure(s, stage, message, 0);
    } else this.noteFailure(undefined, stage, message, 0);
  }

  /** Hand a waiting caller the value it would have got without recording (the recording failed). */
  private handBackUnrecorded(call: RecordedCall): void {
    if (call.handBack) handBack(call, unrecordedValue(call.tool, call.output, call.thrown));
  }

  private process(job: Job): Promise<void> | undefined {
    switch (job.type) {
      case 'begin':
        this.processBegin(job.call);
        return undefined;
      case 'complete':
        return this.processSettled(job.call);
      case 'late':
        return this.processLate(job.call, job.late, job.saw);
      case 'event':
        this.processEvent(job.sessionId, job.kind, job.detail, job.at);
        return undefined;
      case 'exchange':
        this.processExchange(job.request, job.response, job.at, job.failed);
        return undefined;
      case 'end':
        this.processEnd(job.sessionId, job.verdict, job.at);
        return undefined;
    }
  }

  /** Run one stage (sync or async); a throw is tagged with the stage's name for the record-failure event. */
  private stage<T>(name: RecordStage, fn: () => T): T {
    return inStage(name, this.options.faults?.beforeStage, fn);
  }

  // ---------------------------------------------------------------- sessions

  private sessionFor(raw: string, via: SessionVia, startedAt: Date): RecordedSession {
    const seen = this.sessions.get(raw); // a safe id is its own key: the common case, no regex
    if (seen) return seen;
    const safe = isSafeSessionId(raw);
    const id = safe ? raw : safeDerivedId(raw);
    const known = this.sessions.get(id);
    if (known) return known;
    const s = new RecordedSession({
      id,
      originalId: safe ? null : escapeId(raw),
      via,
      startedAt,
      dir: path.join(this.sessionsDir, sessionDirName(startedAt, id)),
    });
    this.sessions.set(id, s);
    s.addEvent('session-start', { sessionId: id, via }, null, startedAt);
    if (!safe) {
      s.hasContent = true;
      s.addEvent('unsafe-session-id', { originalId: s.originalId, derivedId: id }, null, startedAt);
    }
    // The log (and the dir) is opened by the session's first tool call: a session without one is not written.
    return s;
  }

  /**
   * The session's log, opened on first use by a tool call; null while it cannot be opened (retried every
   * second) and for a session that holds no call (nothing is written for it).
   */
  private ensureLog(s: RecordedSession): SessionLog | null {
    if (s.log) return s.log;
    if (this.closed || s.counts.calls === 0 || this.clock.now() < s.nextOpenAt) return null;
    try {
      this.options.faults?.beforeStage?.('open');
      const row: SessionRow = {
        session_id: s.id,
        original_id: s.originalId,
        scenario: this.options.scenario ?? null,
        started_at: s.startedAt.toISOString(),
        ended_at: null,
        status: s.status,
        passed: null,
        end_reason: null,
        recorder_version: recorderVersion(),
        writer_pid: process.pid,
        environment: JSON.stringify(environmentOf(this.server, this.observationTools)),
        last_observation: null,
        ...s.fields,
      };
      const existed = fs.existsSync(s.dir);
      const log = SessionLog.open({
        dir: s.dir,
        session: row,
        busyTimeoutMs: BUSY_TIMEOUT_MS,
        pragmas: this.options.faults?.sqlitePragmas ?? [],
        pool: this.logPool,
      });
      s.log = log;
      s.createdDir ||= !existed;
      s.artifacts = new ArtifactStore({ sessionDir: s.dir, maxArtifactBytes: this.maxArtifactBytes });
      s.seq = Math.max(s.seq, log.existingMaxSeq);
    } catch (err) {
      s.nextOpenAt = this.clock.now() + OPEN_RETRY_MS;
      if (s.openError === null) {
        s.openError = thrownMessage(err);
        this.noteFailure(s, 'open', s.openError, 0);
      }
      return null;
    }
    const dropped = s.drainBuffered();
    if (s.openError !== null || s.lostWhileClosed > 0 || dropped > 0) {
      s.addEvent('record-failure', {
        stage: 'open',
        message: this.redactor.scrubText(s.openError ?? 'events dropped while the log was closed'),
        lost: s.lostWhileClosed,
      });
      s.openError = null;
      s.lostWhileClosed = 0;
    }
    this.dirty.add(s);
    return s.log;
  }

  /** Count a recording failure, tell stderr once per stage, and write a `record-failure` event when possible. */
  private noteFailure(
    s: RecordedSession | undefined,
    stage: RecordStage,
    message: string,
    lost: number,
  ): void {
    this.reportOnce(stage, s, message);
    if (!s) return; // outside any session (a bug before routing): stderr is all there is
    s.counts.recordFailures += 1;
    s.counts.lostCalls += lost;
    s.hasContent = true;
    if (stage === 'open' && !s.log) {
      s.lostWhileClosed += lost;
      return; // written with the open event once the log opens
    }
    s.addEvent('record-failure', { stage, message: this.redactor.scrubText(message.slice(0, 1000)), lost });
    this.dirty.add(s);
  }

  // ---------------------------------------------------------------- begin and complete

  private processBegin(call: RecordedCall): void {
    if (this.closed) return;
    const s = this.sessionFor(call.startSessionId, call.startVia, call.startedAt);
    call.session = s;
    call.seq = ++s.seq;
    s.counts.calls += 1;
    s.counts.pending += 1;
    s.hasContent = s.hasContent || s.via !== 'default';
    const argsJson = this.stage('redact', () => this.storedArgsJson(call.tool, call.args));
    if (argsJson !== null && s.storedBytes + argsJson.length > this.maxLogBytes) {
      call.argsDropped = true;
      this.countOmitted(s, argsJson.length, true);
    } else if (argsJson !== null) {
      call.argsJson = argsJson;
      s.storedBytes += argsJson.length;
    }
    const log = this.ensureLog(s);
    if (!log) return;
    // A call that has already returned gets its completed row soon (its job is queued): one row, not two.
    this.stage('begin', () => log.beginCall(pendingRow(call), call.endedAt !== undefined));
    call.pendingRowWritten = true;
    this.dirty.add(s);
  }

  /** Redacted arguments as JSON, any image bytes replaced by a marker (args never make artifacts). */
  private storedArgsJson(tool: string, args: unknown): string | null {
    const redacted = this.redactor.redactArgs(tool, args);
    const json = jsonOrNull(redacted);
    // Text without an image hint cannot hold what findImageBytes finds: skip the walk and a second stringify.
    if (json === null || !mayHoldImageBytes(json)) return json;
    return jsonOrNull(this.withoutImageBytes(redacted));
  }

  /** A redacted copy's image bytes replaced in place by a marker. */
  private withoutImageBytes(value: unknown): unknown {
    let out = value;
    for (const loc of findImageBytes(value)) {
      const set = setAtPointer(out, loc.path, IMAGE_BYTES_OMITTED);
      out = set.ok ? set.root : IMAGE_BYTES_OMITTED;
    }
    return out;
  }

  private countOmitted(s: RecordedSession, bytes: number, newCall: boolean): void {
    if (newCall) {
      s.omittedCalls += 1;
      s.counts.droppedPayloads += 1;
    }
    s.omittedBytes += bytes;
    s.hasContent = true;
    // Written once per commit (commitAll), not once per omitted call: past the budget that is every call.
    if (s.log) s.truncationAt = new Date();
  }

  /** The running `truncation` event, as of the last omission, queued before a commit. */
  private queueTruncation(s: RecordedSession, log: SessionLog): void {
    const at = s.truncationAt;
    if (!at) return;
    s.truncationAt = null;
    log.setLatestEvent({
      at: isoTime(at),
      kind: 'truncation',
      callSeq: null,
      detail: JSON.stringify({ omittedCalls: s.omittedCalls, omittedBytes: s.omittedBytes }),
    });
  }

  private processComplete(call: RecordedCall): Promise<void> | undefined {
    const source = call.session;
    if (this.closed || !source) {
      this.handBackUnrecorded(call);
      return undefined;
    }
    if (call.transportFailure !== undefined) {
      this.completeFault(call, this.stage('route', () => this.route(call, source, undefined)).s);
      return undefined;
    }
    if (call.oversize) {
      const { s } = this.stage('route', () => this.route(call, source, undefined));
      this.completeOversize(call, s, call.oversize);
      return undefined;
    }
    const out: ToolOutput | undefined = call.thrown
      ? undefined
      : this.stage('parse', () => call.readEarly ?? readToolOutput(call.output));
    const env: Envelope | undefined = out ? out.envelope : undefined;
    const { s, unsafeFrom } = this.stage('route', () => this.route(call, source, env));
    const violations: Violation[] = out ? [...out.violations] : [];
    if (unsafeFrom !== undefined) {
      violations.push({
        path: env?.sessionId === unsafeFrom ? '/sessionId' : '/arguments/sessionId',
        message: `session id is not path-safe; recorded as ${s.id}`,
      });
    }
    const response = out ? responseShape(call.output, out) : undefined;
    const text = out && !out.synthesized ? envelopeText(call.output, out.kind) : undefined;
    const envLocations = env && (text === undefined || mayHoldImageBytes(text)) ? findImageBytes(env) : [];
    const respLocations =
      response !== undefined && !isPlainResponse(response) ? findImageBytes(response) : [];
    const hostRefs = env ? this.hostFiles.find(env, call.tool) : [];
    const ctx: CompleteContext = { call, s, out, env, response, violations, hostRefs };
    if (envLocations.length === 0 && respLocations.length === 0 && hostRefs.length === 0) {
      this.finishComplete(ctx, undefined, undefined);
      return undefined;
    }
    return this.compactThenFinish(ctx, envLocations, respLocations);
  }

  private async compactThenFinish(
    ctx: CompleteContext,
    envLocations: ReturnType<typeof findImageBytes>,
    respLocations: ReturnType<typeof findImageBytes>,
  ): Promise<void> {
    const { s } = ctx;
    const log = this.ensureLog(s);
    const store = s.artifacts;
    if (!log || !store) {
      // No session dir to hold the images: keep the metadata only (no bytes may reach a log).
      ctx.dropPayload = 'the session log is not open';
      this.finishComplete(ctx, undefined, undefined);
      return;
    }
    if (!fs.existsSync(s.dir)) fs.mkdirSync(s.dir, { recursive: true }); // a vanished dir: artifacts need it
    let [envelopeCompaction, responseCompaction] = await this.stage('compact', () =>
      Promise.all([
        envLocations.length > 0 ? compactImages(ctx.env, envLocations, store) : undefined,
        respLocations.length > 0 ? compactImages(ctx.response, respLocations, store) : undefined,
      ]),
    );
    if (ctx.hostRefs.length > 0) {
      // The agent's value never depends on host files: it goes back before they are read and copied.
      if (ctx.call.handBack && ctx.out) {
        const images = [...(envelopeCompaction?.images ?? []), ...(responseCompaction?.images ?? [])];
        handBack(ctx.call, this.queuedValue(ctx, (envelopeCompaction?.value ?? ctx.env) as Envelope, images));
      }
      envelopeCompaction = await this.hostFiles.addTo(envelopeCompaction, ctx.env, ctx.hostRefs, store);
    }
    // Last check: whatever compaction could not take out is not stored.
    if (
      (envelopeCompaction && findImageBytes(envelopeCompaction.value).length > 0) ||
      (responseCompaction && findImageBytes(responseCompaction.value).length > 0)
    ) {
      ctx.violations.push({ path: '', message: 'image bytes left after compaction: payload not stored' });
      ctx.dropPayload = 'image bytes left after compaction';
    }
    this.finishComplete(ctx, envelopeCompaction, responseCompaction);
  }

  /**
   * The session a completed call belongs to, as MCEC means its ids (mcec-wire §8); moves the call's pending
   * row there when it started elsewhere. `unsafeFrom` is set when the id it came from was not path-safe.
   */
  private route(
    call: RecordedCall,
    source: RecordedSession,
    env: Envelope | undefined,
  ): { s: RecordedSession; unsafeFrom?: string } {
    const routed = this.routeTarget(call, env);
    let target: RecordedSession;
    let unsafeFrom: string | undefined;
    if ('session' in routed) target = routed.session;
    else {
      target = this.sessionFor(routed.raw, routed.via, routed.startedAt);
      if (!isSafeSessionId(routed.raw)) unsafeFrom = routed.raw;
    }
    if (target !== source) this.moveCall(call, source, target);
    return { s: target, unsafeFrom };
  }

  /** Where a completed call goes: a session already known, or the id (and how it was learned) to record it under. */
  private routeTarget(
    call: RecordedCall,
    env: Envelope | undefined,
  ): { session: RecordedSession } | { raw: string; via: SessionVia; startedAt: Date } {
    const envId =
      env && typeof env.sessionId === 'string' && env.sessionId !== '' ? env.sessionId : undefined;
    const code = env && !env.ok ? env.error.code : undefined;
    const result = env?.ok && isRecord(env.result) ? env.result : undefined;
    if (call.tool === 'session-start' && result) {
      const started = typeof result.sessionId === 'string' && result.sessionId ? result.sessionId : envId;
      const startedAt = saneServerTime(result.startedAt, call.startedAt);
      return { raw: started ?? call.startSessionId, via: 'session-start', startedAt };
    }
    // The envelope echoes an id that names no session: the call stays where the connection is.
    if (code === 'unknown-session') return { session: this.connectionSession(call) };
    // The server's default id, learned from calls that run (or are refused) there whatever they named.
    if (
      envId !== undefined &&
      (call.namedSessionId === undefined ||
        answersInDefaultSession(call.tool) ||
        (code !== undefined && isPreRoutingRefusal(call.tool, code))) &&
      call.tool !== 'session-end'
    )
      this.ambientId = envId;
    // A refusal stamped with the default id belongs to the session the call named.
    if (code !== undefined && call.namedSessionId !== undefined && isPreRoutingRefusal(call.tool, code))
      return { raw: call.namedSessionId, via: 'argument', startedAt: call.startedAt };
    if (envId !== undefined) {
      // Ending an id nobody started (ended: false) does not make it a session.
      if (call.tool === 'session-end' && result?.ended === false && !this.holdsOtherCalls(envId, call))
        return { session: this.connectionSession(call) };
      return { raw: envId, via: 'envelope', startedAt: call.startedAt };
    }
    // No envelope says where (a protocol fault, a proxy failure, a throw) and the call named no session:
    // it ran in the server's default session, else it stays where the connection is.
    if (env === undefined && call.namedSessionId === undefined) {
      if (this.ambientId !== undefined)
        return { raw: this.ambientId, via: 'envelope', startedAt: call.startedAt };
      if (this.current) return { session: this.current };
    }
    return { raw: call.startSessionId, via: call.startVia, startedAt: call.startedAt };
  }

  /** True when the session `id` names holds a call besides `call` (its pending row may be the only one). */
  private holdsOtherCalls(id: string, call: RecordedCall): boolean {
    const s = this.knownSession(id);
    return s !== undefined && s.counts.calls > (s === call.session ? 1 : 0);
  }

  /** The connection's current session (where its last call landed), else our default session. */
  private connectionSession(call: RecordedCall): RecordedSession {
    return this.current ?? this.sessionFor(this.defaultSessionId, 'default', call.startedAt);
  }

  /** Move a call (and its pending row) from the session it started in to the one it belongs to. */
  private moveCall(call: RecordedCall, source: RecordedSession, target: RecordedSession): void {
    if (call.pendingRowWritten) source.log?.deleteCall(call.seq);
    source.counts.calls -= 1;
    source.counts.pending -= 1;
    if (call.argsJson) source.storedBytes -= call.argsJson.length;
    this.dirty.add(source);
    call.session = target;
    call.seq = ++target.seq;
    call.pendingRowWritten = false;
    target.counts.calls += 1;
    target.counts.pending += 1;
    target.hasContent = true;
    if (call.argsJson) target.storedBytes += call.argsJson.length;
    this.dropIfEmpty(source);
  }

  /**
   * A session this recorder created that no longer holds any call (its only calls moved out: a placeholder,
   * or an id the server rejected) leaves nothing behind: its log is closed and its dir removed.
   */
  private dropIfEmpty(s: RecordedSession): void {
    if (s.counts.calls !== 0 || s === this.current || this.closed) return;
    this.sessions.delete(s.id);
    this.dirty.delete(s);
    this.noteUnwritten(s);
    const log = s.log;
    s.log = null;
    s.artifacts = null;
    if (!log) return;
    log.discardQueue();
    log.close();
    if (s.createdDir) {
      try {
        fs.rmSync(s.dir, { recursive: true, force: true });
      } catch {
        // left behind (e.g. a reader holds it open on Windows): list hides sessions without calls
      }
    }
  }

  /** Tell stderr about what was declared for a session that is not written (it never held a tool call). */
  private noteUnwritten(s: RecordedSession): void {
    if (s.declared === 0) return;
    try {
      this.stderr(
        `mcec-recorder: session ${s.id} holds no tool call; its ${s.declared} step/verdict/event record(s) ` +
          'were not written',
      );
    } catch {
      // a broken stderr must not break recording
    }
  }

  /**
   * The connection's current session is now `s`: the handshake and faults seen before any session, if any
   * are waiting, are written into it.
   */
  private attach(s: RecordedSession): void {
    this.current = s;
    if (this.preamble.length === 0 && this.preambleDropped === 0) return;
    for (const e of this.preamble) s.addEvent(e.kind, e.detail, null, e.at);
    if (this.preambleDropped > 0) {
      s.addEvent('record-failure', {
        stage: 'event',
        message: `${this.preambleDropped} handshake events before the first call were not kept`,
        lost: 0,
      });
    }
    this.preamble = [];
    this.preambleDropped = 0;
    this.dirty.add(s);
  }

  /** An event of the connection: into its current session, or kept for the first session a call lands in. */
  private connectionEvent(kind: string, detail: unknown, at: Date): void {
    const s = this.current;
    if (s) {
      s.addEvent(kind, detail, null, at);
      s.hasContent = true;
      this.dirty.add(s);
      return;
    }
    if (this.preamble.length < MAX_PREAMBLE_EVENTS) this.preamble.push({ kind, detail, at });
    else this.preambleDropped += 1;
  }

  private finishComplete(
    ctx: CompleteContext,
    envelopeCompaction: Awaited<ReturnType<typeof compactImages>> | undefined,
    responseCompaction: Awaited<ReturnType<typeof compactImages>> | undefined,
  ): void {
    const { call, s, out } = ctx;
    this.attach(s);
    if (envelopeCompaction) ctx.violations.push(...envelopeCompaction.violations);
    if (responseCompaction) ctx.violations.push(...responseCompaction.violations);
    const compactEnv = (envelopeCompaction ? envelopeCompaction.value : ctx.env) as Envelope | undefined;
    const images: CompactedImage[] = [
      ...(envelopeCompaction?.images ?? []),
      ...(responseCompaction?.images ?? []),
    ];

    // What the agent gets (before redaction: it is the agent's own data).
    // Computed before the caller is handed it: if this throws, jobFailed still hands back a value.
    if (call.handBack) handBack(call, this.queuedValue(ctx, compactEnv, images));
    const lo = s.lastObservation ?? undefined;
    const storedEnv = call.thrown
      ? thrownFailure(call.tool, call.thrown.message, call.namedSessionId, lo, call.thrown.shape).envelope
      : compactEnv;

    // The last good observation: only a successful observation call sets it.
    if (
      !call.thrown &&
      out &&
      compactEnv?.ok &&
      this.observationTools.has(call.tool) &&
      isRecord(compactEnv.result)
    ) {
      s.lastObservation = compactEnv.result;
      s.lastObservationDirty = true;
      this.anyObservation = true;
    }

    // What is stored: redacted, no image bytes, within the payload budget.
    const plain = isPlainResponse(ctx.response);
    // The call's own typed text is scrubbed from its output's echoes of it (error details, send_command output).
    const typing = { tool: call.tool, args: call.args };
    const stored = this.stage('redact', () => ({
      env: storedEnv ? (this.redactor.redact(storedEnv, typing) as Envelope) : undefined,
      response: responseCompaction
        ? this.redactor.redact(responseCompaction.value, typing)
        : ctx.response === undefined || plain
          ? undefined
          : this.redactor.redact(ctx.response, typing),
    }));
    let envJson = ctx.dropPayload ? null : jsonOrNull(stored.env);
    let respJson = ctx.dropPayload
      ? null
      : plain
        ? plainResponseJson(ctx.response)
        : jsonOrNull(stored.response);
    let dropped = call.argsDropped;
    const payload = (envJson?.length ?? 0) + (respJson?.length ?? 0);
    if (payload > 0 && s.storedBytes + payload > this.maxLogBytes) {
      this.countOmitted(s, payload, !dropped);
      envJson = null;
      respJson = null;
      dropped = true;
    } else s.storedBytes += payload;
    if (ctx.dropPayload && !dropped) {
      this.countOmitted(s, 0, true);
      dropped = true;
    }

    const env = stored.env;
    const row = answeredRow(call, {
      out,
      env,
      faultDetail:
        out?.kind === 'json-rpc-error' && out.fault
          ? this.redactor.scrubText(out.fault.message, typing)
          : undefined,
      envelopeJson: envJson,
      responseJson: respJson,
      violations: ctx.violations,
      payloadDropped: dropped,
    });
    const status = row.status;

    s.counts.pending -= 1;
    call.completionCounted = true;
    if (status !== 'ok') s.counts.failures += 1;
    s.counts.violations += ctx.violations.length;
    s.hasContent = true;
    const log = this.ensureLog(s);
    if (!log) {
      s.lostWhileClosed += 1;
      s.counts.lostCalls += 1;
      return;
    }
    this.stage('store', () => {
      log.completeCall(row);
      for (const w of env?.warnings ?? []) {
        log.addWarning({ callSeq: call.seq, code: w.code, detail: w.detail ?? null });
        s.counts.warnings += 1;
      }
      const now = images.length > 0 ? isoTime(new Date()) : '';
      for (const img of images) {
        log.addArtifact(artifactRow(call.seq, img, now));
        s.counts.artifacts += 1;
      }
    });
    this.afterCall(call, s, out, env, images);
    this.dirty.add(s);
  }

  /** Events and session changes that follow from a completed call. */
  private afterCall(
    call: RecordedCall,
    s: RecordedSession,
    out: ToolOutput | undefined,
    env: Envelope | undefined,
    images: CompactedImage[],
  ): void {
    if (env && !env.ok && env.error.code === 'emergency-stopped') {
      s.addEvent('emergency-stop', { code: env.error.code, detail: env.error.detail }, call.seq);
    }
    if (out?.kind === 'json-rpc-error' && out.fault) {
      s.addEvent(
        'protocol-fault',
        {
          code: out.fault.code,
          message: this.redactor.scrubText(out.fault.message, { tool: call.tool, args: call.args }),
          id: out.fault.id,
          method: call.method ?? 'tools/call',
        },
        call.seq,
      );
    }
    if (call.tool === 'session-end' && env?.ok && s.status === 'open') {
      this.endSession(s, { via: 'session-end' }, call.endedAt ?? new Date());
    }
    const diskErrors = images.filter(
      (i) => i.error?.startsWith('disk error') || i.error?.startsWith('artifact store'),
    );
    if (diskErrors.length > 0) this.noteFailure(s, 'artifact', diskErrors[0]!.error!, 0);
    const omitted = s.artifacts?.omitted;
    if (omitted && omitted.images !== s.reportedOmittedImages) {
      s.reportedOmittedImages = omitted.images;
      s.log?.setLatestEvent({
        at: new Date().toISOString(),
        kind: 'artifact-limit',
        callSeq: call.seq,
        detail: JSON.stringify({ omittedImages: omitted.images, omittedBytes: omitted.bytes }),
      });
    }
  }

  /** The agent's value as the queue builds it: from the session the call was routed to. */
  private queuedValue(
    ctx: CompleteContext,
    compactEnvelope: Envelope | undefined,
    images: CompactedImage[],
  ): unknown {
    const { call } = ctx;
    return agentValue({
      tool: call.tool,
      output: call.output,
      thrown: call.thrown,
      read: ctx.out,
      compactEnvelope,
      images,
      namedSessionId: call.namedSessionId,
      session: ctx.s,
      fillLastObservation: this.fillLastObservation,
    });
  }

  /** A call whose exchange failed at the transport (a proxy's target down, a client gone). */
  private completeFault(call: RecordedCall, s: RecordedSession): void {
    this.attach(s);
    s.counts.pending -= 1;
    call.completionCounted = true;
    s.counts.failures += 1;
    s.hasContent = true;
    const detail = this.redactor.scrubText(call.transportFailure ?? '', { tool: call.tool, args: call.args });
    const row = transportFaultRow(call, detail);
    const log = this.ensureLog(s);
    if (!log) {
      s.lostWhileClosed += 1;
      s.counts.lostCalls += 1;
      return;
    }
    log.completeCall(row);
    this.dirty.add(s);
  }

  /**
   * A call whose answer a proxy passed through unrecorded (over its cap): status from the answer's `isError`
   * when the proxy could read it, else a fault; no payload; an `oversize-message` event names the size.
   */
  private completeOversize(call: RecordedCall, s: RecordedSession, o: OversizeAnswer): void {
    this.attach(s);
    const row = oversizeRow(call, o);
    s.counts.pending -= 1;
    call.completionCounted = true;
    if (row.status !== 'ok') s.counts.failures += 1;
    s.hasContent = true;
    const log = this.ensureLog(s);
    if (!log) {
      s.lostWhileClosed += 1;
      s.counts.lostCalls += 1;
      return;
    }
    log.completeCall(row);
    s.addEvent('oversize-message', oversizeDetail('answer', o, call.transport), call.seq);
    this.dirty.add(s);
  }

  /** A completed call, then the note of what its client saw meanwhile (if anything). */
  private processSettled(call: RecordedCall): Promise<void> | undefined {
    const done = this.processComplete(call);
    if (!call.clientSaw) return done;
    const note = () => this.noteClientSaw(call);
    if (done) return done.then(note);
    note();
    return undefined;
  }

  /** The server answered after the proxy had answered the client with a timeout: the real outcome replaces it. */
  private processLate(call: RecordedCall, late: LateAnswer, saw: ClientSaw): Promise<void> | undefined {
    const s = call.session;
    if (this.closed || !s) return undefined;
    if (call.completionCounted) {
      // The timeout's fault was counted; the real outcome is counted instead.
      s.counts.pending += 1;
      s.counts.failures -= 1;
      call.completionCounted = false;
    }
    call.transportFailure = undefined;
    call.output = late.output;
    call.oversize = late.oversize;
    call.endedAt = late.endedAt;
    call.durationMs = late.durationMs;
    call.queuedBytes = late.size;
    call.clientSaw = saw;
    return this.processSettled(call);
  }

  /** A `late-answer` event on the call: its client had got a proxy timeout, or had gone, before the answer. */
  private noteClientSaw(call: RecordedCall): void {
    const s = call.session;
    const saw = call.clientSaw;
    if (this.closed || !s || !saw) return;
    s.addEvent(
      'late-answer',
      {
        client: saw.client,
        reason: this.redactor.scrubText(saw.reason),
        answeredAfterMs: Math.max(0, Math.round(call.durationMs ?? 0)),
      },
      call.seq,
    );
    s.hasContent = true;
    this.dirty.add(s);
  }

  /** Metadata only, for a call whose processing failed part-way (a bug in a stage). */
  private writeMetadataOnly(call: RecordedCall, s: RecordedSession): void {
    const log = s.log;
    if (!log) return;
    const q = call.thrown ? { ok: false } : quickOutcome(call.output);
    try {
      const row = metadataOnlyRow(call, q.ok);
      log.completeCall(row);
      if (!call.completionCounted) {
        call.completionCounted = true;
        s.counts.pending -= 1;
        if (q.ok !== true) s.counts.failures += 1;
      }
      s.counts.droppedPayloads += 1;
      this.dirty.add(s);
    } catch {
      // nothing more can be kept
    }
  }

  // ---------------------------------------------------------------- events, exchanges, ends

  /** A declared event: into the session it names, else the connection's current session (or the preamble). */
  private processEvent(sessionId: string | undefined, kind: string, detail: unknown, at: Date): void {
    if (this.closed) return;
    const stored = this.stage('redact', () => this.withoutImageBytes(this.redactor.redact(detail)));
    const id = sessionId?.trim();
    if (!id) {
      this.connectionEvent(kind, stored, at);
      return;
    }
    const s = this.sessionFor(id, 'argument', at);
    s.addEvent(kind, stored, null, at);
    s.hasContent = true;
    s.declared += 1;
    this.dirty.add(s);
  }

  /**
   * A JSON-RPC exchange that is not a tool call (initialize, tools/list, ping, notifications, protocol
   * faults): an event of the connection. `initialize` starts a new connection: what follows it waits for
   * the first session a call lands in.
   */
  private processExchange(request: unknown, response: unknown, at: Date, failed?: string): void {
    if (this.closed) return;
    const req = isRecord(request) ? request : undefined;
    const method = typeof req?.method === 'string' ? req.method : null;
    const res = isRecord(response) ? response : undefined;
    if (method === 'initialize') {
      this.current = undefined;
      if (res && isRecord(res.result)) this.learnServer(res.result);
    }
    if (res && isRecord(res.error)) {
      const e = res.error;
      this.connectionEvent(
        'protocol-fault',
        {
          code: typeof e.code === 'number' ? e.code : null,
          message: typeof e.message === 'string' ? this.redactor.scrubText(e.message) : '',
          id: res.id ?? null,
          method,
        },
        at,
      );
    }
    const stored = this.stage('redact', () => ({
      request: this.withoutImageBytes(this.redactor.redact(request ?? null)),
      response: this.withoutImageBytes(this.redactor.redact(response ?? null)),
    }));
    const detail: Record<string, unknown> = { method, request: stored.request, response: stored.response };
    if (failed !== undefined) detail.error = this.redactor.scrubText(failed);
    this.connectionEvent('exchange', detail, at);
  }

  /**
   * The server's environment from `initialize` (name, version, protocol, MCEC's `commandAccess`, a sha256
   * of its `instructions`) goes into every session's environment.
   */
  private learnServer(result: Record<string, unknown>): void {
    const info = isRecord(result.serverInfo) ? result.serverInfo : {};
    const server: ServerInfo = {
      name: typeof info.name === 'string' ? info.name : '',
      version: typeof info.version === 'string' ? info.version : '',
    };
    if (typeof result.protocolVersion === 'string') server.protocolVersion = result.protocolVersion;
    if (result.commandAccess !== undefined) {
      const access = jsonOrNull(this.redactor.redact(result.commandAccess));
      // A map of tool names: a few hundred bytes on MCEC; anything huge is not kept.
      if (access !== null && access.length <= 64 * 1024) server.commandAccess = JSON.parse(access);
    }
    if (typeof result.instructions === 'string')
      server.instructionsSha256 = createHash('sha256').update(result.instructions, 'utf8').digest('hex');
    this.server = server;
    const environment = JSON.stringify(environmentOf(server, this.observationTools));
    for (const s of this.sessions.values()) {
      if (!s.log) continue;
      s.log.setSessionFields({ environment });
      this.dirty.add(s);
    }
  }

  private processEnd(sessionId: string, verdict: { passed?: boolean; reason?: string }, at: Date): void {
    if (this.closed) return;
    const s = this.sessionFor(sessionId, 'argument', at);
    s.hasContent = true;
    s.declared += 1;
    this.endSession(s, { via: 'end', ...verdict }, at);
  }

  private endSession(
    s: RecordedSession,
    how: { via: 'session-end' | 'end' | 'close'; passed?: boolean; reason?: string },
    at: Date,
  ): void {
    s.status = 'ended';
    const detail: Record<string, unknown> = { via: how.via };
    const fields: Partial<SessionRow> = { status: 'ended', ended_at: at.toISOString() };
    if (how.passed !== undefined) {
      detail.passed = how.passed;
      fields.passed = how.passed ? 1 : 0;
    }
    if (how.reason !== undefined) {
      detail.reason = this.redactor.scrubText(how.reason);
      fields.end_reason = detail.reason as string;
    }
    s.addEvent('session-end', detail, null, at);
    const log = this.ensureLog(s);
    if (log) log.setSessionFields(fields);
    else Object.assign(s.fields, fields);
    this.dirty.add(s);
  }

  // ---------------------------------------------------------------- commits

  /** One transaction per dirty session log. `force` ignores the back-off of a failing log. */
  private commitAll(force: boolean): CommitPass {
    const now = this.clock.now();
    let retry = false;
    let again = false;
    for (const s of [...this.dirty]) {
      if (!s.log && s.counts.calls === 0) {
        this.dirty.delete(s); // holds no tool call: nothing is written for it (its events wait in memory)
        continue;
      }
      const log = s.log ?? this.ensureLog(s);
      if (!log) {
        retry = true;
        continue;
      }
      if (!force && now < s.nextCommitAt) {
        retry = true;
        continue;
      }
      if (s.lastObservationDirty) {
        s.lastObservationDirty = false;
        try {
          const clipped = clipForLog(this.redactor.redact(s.lastObservation), this.maxObservationChars);
          s.storedObservation = clipped.value;
          log.setSessionFields({ last_observation: clipped.json });
        } catch (err) {
          this.noteFailure(s, 'redact', thrownMessage(err), 0);
        }
      }
      this.queueTruncation(s, log);
      const outcome = log.commit(force ? {} : { holdYoungPendingMs: HOLD_PENDING_MS });
      if (!this.handleCommit(s, outcome)) retry = true;
      else if (outcome.held) again = true;
      else {
        this.dirty.delete(s);
        if (s.status !== 'open') catalogSessionEnded(this.sessionsDir, s.dir, s.counts);
      }
    }
    return { retry, again };
  }

  /** Count what a commit lost or recovered from; true when the session has nothing left to write. */
  private handleCommit(s: RecordedSession, outcome: CommitOutcome): boolean {
    if (outcome.dropped) {
      s.counts.lostCalls += outcome.dropped.calls;
      if (s.pendingFailure) s.pendingFailure.lost += outcome.dropped.calls;
    }
    if (outcome.error) {
      s.nextCommitAt = this.clock.now() + COMMIT_RETRY_MS;
      if (!s.pendingFailure) {
        const message = thrownMessage(outcome.error);
        s.pendingFailure = { stage: 'commit', message, lost: outcome.dropped?.calls ?? 0 };
        s.counts.recordFailures += 1;
        this.reportOnce('commit', s, message);
      }
      return false;
    }
    s.nextCommitAt = 0;
    let more = false;
    if (outcome.recovered) {
      const { reason, lostCalls } = outcome.recovered;
      s.counts.recordFailures += 1;
      s.counts.lostCalls += lostCalls;
      this.reportOnce('store', s, reason);
      s.addEvent('record-failure', { stage: 'store', message: reason, lost: lostCalls });
      more = true;
    }
    if (s.pendingFailure) {
      const { stage, message, lost } = s.pendingFailure;
      s.addEvent('record-failure', { stage, message: this.redactor.scrubText(message), lost });
      s.pendingFailure = null;
      more = true;
    }
    if (more) {
      s.hasContent = true;
      return s.log!.commit().error === undefined;
    }
    return true;
  }

  /** One line on stderr per stage for the recorder's life: the first failure says what happened and where. */
  private reportOnce(stage: RecordStage, s: RecordedSession | undefined, message: string): void {
    if (this.reportedStages.has(stage)) return;
    this.reportedStages.add(stage);
    const where = s ? ` in session ${s.id}` : '';
    try {
      this.stderr(
        `mcec-recorder: recording failed (${stage})${where}: ${message.slice(0, 300)}; calls still return, ` +
          'and further failures are counted in the session log',
      );
    } catch {
      // a broken stderr must not break the call either
    }
  }

  // ---------------------------------------------------------------- the rest of the API

  beginExchange(request: unknown, meta: ExchangeMeta = {}): PendingExchange {
    const startedAt = validDate(meta.startedAt) ?? new Date();
    if (this.closed) return NOOP_EXCHANGE;
    const req = isRecord(request) ? request : undefined;
    if (req?.method === 'tools/call') {
      const params = isRecord(req.params) ? req.params : {};
      const tool = typeof params.name === 'string' ? params.name : '(unnamed)';
      const args = isRecord(params.arguments) ? params.arguments : {};
      const rpcId = req.id === undefined ? null : jsonOrNull(req.id);
      const call = this.startCall(
        tool,
        args,
        rpcId,
        'tools/call',
        meta.transport ?? this.transport,
        startedAt,
      );
      // open -> settled, or open -> timed-out (a fault row now) -> settled (the real outcome replaces it)
      let state: 'open' | 'timed-out' | 'settled' = 'open';
      let saw: ClientSaw | undefined;
      const times = (m?: ExchangeMeta) => {
        const endedAt = validDate(m?.endedAt) ?? new Date();
        return { endedAt, durationMs: endedAt.getTime() - (validDate(m?.startedAt) ?? startedAt).getTime() };
      };
      const settle = (answer: { output?: unknown; oversize?: OversizeAnswer }, m?: ExchangeMeta) => {
        const late = state === 'timed-out';
        state = 'settled';
        const size = answer.oversize ? 256 : roughSize(answer.output);
        if (late && saw) {
          this.push({ type: 'late', call, late: { ...answer, ...times(m), size }, saw }, size);
          return;
        }
        Object.assign(call, times(m));
        call.output = answer.output;
        call.oversize = answer.oversize;
        call.clientSaw = saw;
        call.queuedBytes = size;
        this.push({ type: 'complete', call }, size);
      };
      return {
        complete: (response, m) => {
          if (state !== 'settled') settle({ output: response }, m);
        },
        tooLarge: (answer, m) => {
          if (state !== 'settled') settle({ oversize: { ...answer } }, m);
        },
        fail: (reason) => {
          if (state === 'timed-out') state = 'settled'; // the row already names the timeout
          if (state !== 'open') return;
          state = 'settled';
          Object.assign(call, times());
          call.transportFailure = typeof reason === 'string' ? reason : String(reason);
          this.push({ type: 'complete', call }, 256);
        },
        timedOut: (reason) => {
          if (state !== 'open') return;
          state = 'timed-out';
          const text = typeof reason === 'string' ? reason : String(reason);
          saw ??= { client: 'proxy-timeout', reason: text }; // a client already gone saw no 504
          Object.assign(call, times());
          call.transportFailure = text;
          this.push({ type: 'complete', call }, 256);
        },
        clientLeft: (reason) => {
          if (state === 'open' && !saw) saw = { client: 'disconnected', reason: String(reason) };
        },
      };
    }
    let state: 'open' | 'settled' = 'open';
    let saw: ClientSaw | undefined;
    const method = typeof req?.method === 'string' ? req.method : null;
    const noteSaw = () => {
      if (saw) this.event(undefined, 'late-answer', { client: saw.client, reason: saw.reason, method });
    };
    return {
      complete: (response, m) => {
        if (state === 'settled') return;
        state = 'settled';
        this.push(
          { type: 'exchange', request, response, at: validDate(m?.endedAt) ?? new Date() },
          roughSize(response),
        );
        noteSaw();
      },
      tooLarge: (answer) => {
        if (state === 'settled') return;
        state = 'settled';
        const failed = `the answer (${answer.bytes} bytes) was over the recording limit: passed through, not recorded`;
        this.push({ type: 'exchange', request, response: null, at: new Date(), failed }, 256);
        this.event(undefined, 'oversize-message', { ...oversizeDetail('answer', answer, undefined), method });
        noteSaw();
      },
      fail: (reason) => {
        if (state === 'settled') return;
        state = 'settled';
        const failed = typeof reason === 'string' ? reason : String(reason);
        this.push({ type: 'exchange', request, response: null, at: new Date(), failed }, 256);
      },
      // The proxy records its own proxy-error event; the exchange is written when it settles.
      timedOut: (reason) => {
        if (state === 'open' && !saw) saw = { client: 'proxy-timeout', reason: String(reason) };
      },
      clientLeft: (reason) => {
        if (state === 'open' && !saw) saw = { client: 'disconnected', reason: String(reason) };
      },
    };
  }

  recordExchange(request: unknown, response: unknown, meta: ExchangeMeta = {}): void {
    this.beginExchange(request, meta).complete(response, meta);
  }

  step(sessionId: string | undefined, name: string, status: string, detail?: string): void {
    const d: Record<string, unknown> = { name, status };
    if (detail !== undefined) d.detail = detail;
    this.event(sessionId, 'step', d);
  }

  event(sessionId: string | undefined, kind: string, detail: Record<string, unknown>): void {
    if (this.closed) return;
    this.push(
      {
        type: 'event',
        sessionId: typeof sessionId === 'string' && sessionId !== '' ? sessionId : undefined,
        kind,
        detail,
        at: new Date(),
      },
      256,
    );
  }

  rememberSecret(secret: string): void {
    this.redactor.rememberSecret(secret);
  }

  verdict(sessionId: string, verdict: { passed: boolean; reason?: string }): Promise<void> {
    const detail: Record<string, unknown> = { passed: verdict?.passed === true, via: 'recorder' };
    if (typeof verdict?.reason === 'string') detail.reason = verdict.reason;
    this.event(String(sessionId), 'verdict', detail);
    return this.flush();
  }

  async end(sessionId: string, verdict: { passed?: boolean; reason?: string } = {}): Promise<void> {
    if (this.closed) return;
    this.push({ type: 'end', sessionId: String(sessionId), verdict: verdict ?? {}, at: new Date() }, 256);
    await this.flush();
  }

  session(sessionId: string): SessionInfo | undefined {
    const raw = String(sessionId);
    const id = isSafeSessionId(raw) ? raw : safeDerivedId(raw);
    const s = this.sessions.get(id);
    if (!s) return undefined;
    return {
      id: s.id,
      dir: s.dir,
      status: s.status,
      counts: { ...s.counts },
      lastObservation: s.lastObservation ? withAbsoluteArtifacts(s.lastObservation, s.dir) : null,
    };
  }

  flush(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.queue.flush();
  }

  close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    await this.flush();
    const at = new Date();
    for (const s of this.sessions.values()) {
      if (s.status === 'open') this.endSession(s, { via: 'close' }, at);
    }
    this.queue.commitNow(true);
    this.closed = true;
    this.queue.close();
    for (const s of this.sessions.values()) {
      // After close, session() reports the observation as stored: the agent's objects are let go.
      if (s.lastObservation)
        s.lastObservation = (s.storedObservation as Record<string, unknown> | null) ?? null;
      const log = s.log;
      if (!log) continue;
      const outcome = log.close();
      if (outcome.error) {
        const lost = log.discardQueue().calls;
        s.counts.lostCalls += lost;
        this.reportOnce('commit', s, thrownMessage(outcome.error));
      }
      // A session that holds no call (they all moved elsewhere) leaves no dir behind.
      if (s.counts.calls === 0 && s.createdDir) {
        try {
          fs.rmSync(s.dir, { recursive: true, force: true });
        } catch {
          // left behind (a reader holds it open on Windows): list hides sessions without calls
        }
      }
    }
    for (const s of this.sessions.values()) if (s.counts.calls === 0) this.noteUnwritten(s);
    this.notePreamble();
  }

  /** A handshake no tool call ever followed is written to no session: stderr says what it held. */
  private notePreamble(): void {
    const events = this.preamble;
    if (events.length === 0 && this.preambleDropped === 0) return;
    this.preamble = [];
    const methods = new Map<string, number>();
    const faults: string[] = [];
    for (const e of events) {
      const d = isRecord(e.detail) ? e.detail : {};
      if (e.kind === 'exchange') {
        const m = typeof d.method === 'string' ? d.method : '(not a request)';
        methods.set(m, (methods.get(m) ?? 0) + 1);
      } else if (e.kind === 'protocol-fault') {
        faults.push(`${String(d.code)} ${clipText(String(d.message ?? ''), 80)}`);
      } else methods.set(e.kind, (methods.get(e.kind) ?? 0) + 1);
    }
    const seen = [...methods].map(([m, n]) => (n > 1 ? `${m} x${n}` : m)).join(', ');
    const dropped = this.preambleDropped > 0 ? ` (+${this.preambleDropped} not kept)` : '';
    const faultText = faults.length > 0 ? `; protocol faults: ${faults.slice(0, 5).join(' | ')}` : '';
    this.preambleDropped = 0;
    try {
      this.stderr(
        `mcec-recorder: no tool call followed the handshake, so no session was written for it: ${seen || 'nothing'}${dropped}${faultText}`,
      );
    } catch {
      // a broken stderr must not break close
    }
  }
}

interface CompleteContext {
  call: RecordedCall;
  s: RecordedSession;
  out: ToolOutput | undefined;
  env: Envelope | undefined;
  response: unknown;
  violations: Violation[];
  /** Paths of evidence files on the MCEC host that the envelope names (copied while compacting). */
  hostRefs: HostFileRef[];
  /** Why the payload is not stored at all (metadata only). */
  dropPayload?: string;
}

/** Create a recorder (see RecorderOptions for the defaults). */
export function createRecorder(options: RecorderOptions = {}): Recorder {
  return new RecorderImpl(options, systemClock);
}

/**
 * createRecorder on a given scheduling clock: tests move an AdvancingClock past a retry interval instead of
 * sleeping through it. Not part of the package's API (index.ts does not export it).
 */
export function createRecorderOnClock(options: RecorderOptions, clock: Clock): Recorder {
  return new RecorderImpl(options, clock);
}
