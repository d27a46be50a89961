/**
 * The recorder: wraps a dispatch (or takes JSON-RPC exchanges from a proxy) and records every call through
 * one ordered queue processed off the agent's critical path. This file is the coordinator: the critical path
 * (`wrap`, the fast value of a failure) and the public API; the work is done by its parts: RecordQueue (jobs,
 * group commits, back-pressure, retry), SessionRegistry (lookup, routing, logs, ends, the commit pass),
 * RecordedSession and RecordedCall (state that changes only through their transitions), CallRecording (a
 * call's rows), EventRecording (events and exchanges), the pure row builder (rows.ts), the agent's value
 * (agent-value.ts) and FailureLedger (counting, report-once, commit outcomes), built from the options by
 * recorder-parts.ts. Recording never breaks a call: failures are counted, reported once on stderr and written
 * as `record-failure` events.
 */

import { randomBytes } from 'node:crypto';
import type { ThumbnailQueue } from '../artifacts/thumbnail-queue.js';
import { readToolOutput } from '../contract/read-tool-output.js';
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import type { Redactor } from '../redact/redactor.js';
import type { CatalogTouches } from '../store/catalog-touches.js';
import { isRecord } from '../util/json.js';
import { agentValue, decidableFailure } from './agent-value.js';
import { jobBytes, newCall, type RecordedCall, SMALL_JOB_BYTES } from './call.js';
import type { CallRecording } from './call-recording.js';
import { type Clock, systemClock } from './clock.js';
import { type ClosedSessionsHandler, handClosedSessions } from './closed-sessions.js';
import { type EventRecording, RECORDER_WIDE_KINDS } from './event-recording.js';
import {
  type ExchangeSink,
  exchangeSession,
  initializeExchange,
  NOOP_EXCHANGE,
  otherExchange,
  toolCallExchange,
} from './exchange.js';
import type { FailureLedger } from './failure-ledger.js';
import { type Job, runJobSafely } from './jobs.js';
import type { LiveExportHook } from './live-export.js';
import { checkRecorderOptions } from './options.js';
import { type OutputShape, quickOutcome, roughValueSize, thrownMessage } from './outcome.js';
import { RecordQueue } from './record-queue.js';
import { buildRecorderParts, COMMIT_RETRY_MS } from './recorder-parts.js';
import { notRecordedAs, queueGaps, type RecordingGaps } from './recording-gap.js';
import { routingArgument } from './routing.js';
import { type McpSession, ServerIdentity } from './server-identity.js';
import type { SessionRegistry } from './session-registry.js';
import { inStage, stageOf } from './stages.js';
import type {
  CloseOptions,
  Dispatch,
  ExchangeMeta,
  PendingExchange,
  Recorder,
  RecorderFaults,
  RecorderOptions,
  RecordStage,
  SessionInfo,
  Transport,
} from './types.js';
import { jsonOrNull, validDate } from './values.js';

export { DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_MAX_LOG_BYTES } from './recorder-parts.js';
export { IMAGE_BYTES_OMITTED } from './values.js';

/** What the log stores for a dispatch result that throws when read (a getter, a Proxy trap). */
export const UNREADABLE_RESULT = '[result not recorded: reading it threw]';

/** failureValueNow's answer when the value depends on work still queued. */
const WAIT_FOR_QUEUE: unique symbol = Symbol('wait for the queue');
/** A W3C trace context header of version 00, as MCP clients put it in `params._meta.traceparent`. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** At close, thumbnails still waiting after this long are left for a report to make. */
const THUMBNAIL_CLOSE_MS = 2_000;

class RecorderImpl implements Recorder {
  readonly sessionsDir: string;
  readonly defaultSessionId: string;
  private readonly options: RecorderOptions;
  private readonly redactor: Redactor;
  private readonly fillLastObservation: boolean;
  private readonly observationTools: ReadonlySet<string>;
  private readonly transport: Transport;
  private readonly clock: Clock;
  private readonly ledger: FailureLedger;
  private readonly registry: SessionRegistry;
  private readonly calls: CallRecording;
  private readonly events: EventRecording;
  private readonly queue: RecordQueue<Job>;
  /** The live OpenTelemetry export, when on: fed after each commit, off the agent's calls. */
  private readonly liveExport: LiveExportHook | null;
  /** Thumbnails of written captures, made apart from the queue (null when `thumbnails: false`). */
  private readonly thumbnails: ThumbnailQueue | null;
  /** Where a proxy's exchanges settle: the queue and the event API. */
  private readonly exchangeSink: ExchangeSink = {
    push: (job, size) => this.push(job, size),
    now: () => this.clock.date(),
    overQueueCap: (bytes) => (this.queue.fits(bytes) ? null : this.queue.maxQueuedBytes),
    refuses: (what, bytes) => this.gaps.refuses(what, bytes),
  };
  /** What the proxies' producers did not queue at its byte cap: one `recording-gap` event once it has room. */
  private readonly gaps: RecordingGaps;
  private closed = false;
  /** True from close's last flush on: nothing new is taken (it would be neither recorded nor counted). */
  private sealed = false;
  private closing: Promise<void> | undefined;
  /** Which server the proxy's `initialize` named (unknown until then: read as MCEC). */
  private readonly server = new ServerIdentity();
  /** Observation calls completed but not yet processed: while any are, a failure's value waits for the queue. */
  private observationsInFlight = 0;
  /** Ended sessions' catalog rows, touched without waiting for the catalog's lock. */
  private readonly catalogTouches: CatalogTouches;

  constructor(
    options: RecorderOptions,
    clock: Clock,
    private readonly faults: RecorderFaults | undefined,
    /** What becomes of the sessions closed at close() (closed-sessions.ts): none when not given. */
    private readonly closedSessions: ClosedSessionsHandler | undefined,
  ) {
    this.options = options;
    this.clock = clock;
    this.sessionsDir = resolveSessionsDir(options.sessionsDir);
    this.defaultSessionId = randomBytes(6).toString('hex');
    this.fillLastObservation = options.fillLastObservation !== false;
    this.observationTools = new Set(options.observationTools ?? OBSERVATION_TOOLS);
    this.transport = options.transport ?? 'wrap';
    const parts = buildRecorderParts(
      options,
      {
        sessionsDir: this.sessionsDir,
        defaultSessionId: this.defaultSessionId,
        clock,
        faults,
        fillLastObservation: this.fillLastObservation,
        observationTools: this.observationTools,
      },
      {
        stage: (name, fn) => this.stage(name, fn),
        closed: () => this.closed,
        underPressure: () => this.queue.underPressure(),
        wakeQueue: () => this.queue.wake(),
      },
    );
    this.redactor = parts.redactor;
    this.ledger = parts.ledger;
    this.catalogTouches = parts.catalogTouches;
    this.liveExport = parts.liveExport;
    this.registry = parts.registry;
    this.thumbnails = parts.thumbnails;
    this.calls = parts.calls;
    this.events = parts.events;
    this.queue = new RecordQueue<Job>(
      {
        process: (job) => this.processJob(job),
        hasUncommitted: () => this.registry.hasUncommitted(),
        commit: (force) => this.registry.commit(force),
        broke: (err) => this.ledger.note(undefined, stageOf(err), thrownMessage(err), 0),
      },
      {
        clock,
        limits: {
          commitIntervalMs: options.commitIntervalMs ?? 4,
          retryMs: COMMIT_RETRY_MS,
          ...(faults?.maxQueuedBytes ? { maxQueuedBytes: faults.maxQueuedBytes } : {}),
        },
      },
    );
    this.gaps = queueGaps(this.queue, clock, this.ledger, (job, bytes) => this.push(job, bytes));
    // The envelope schema compiles on first use (~250 ms): pay it now, not inside the first call's recording.
    setTimeout(() => readToolOutput({ ok: true, result: {} }), 0).unref();
  }

  // ---------------------------------------------------------------- the critical path

  wrap<D extends Dispatch>(dispatch: D): D {
    let lastShape: OutputShape | undefined;
    const wrapped = async (tool: string, args: Record<string, unknown>): Promise<unknown> => {
      if (this.closed) return dispatch(tool, args);
      const call = this.startCall(tool, args, null, null, this.transport, this.clock.date());
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
    mcpSession?: McpSession,
    beginBytes = SMALL_JOB_BYTES,
  ): RecordedCall {
    const name = typeof tool === 'string' ? tool : String(tool);
    // A server that is not MCEC: its MCP session is the recording's, whatever the arguments say.
    const named = mcpSession ? undefined : routingArgument(name, args);
    const start = mcpSession
      ? { id: mcpSession.id, via: 'mcp-session' as const }
      : this.registry.startOf(named);
    const call = newCall({
      tool: name,
      args,
      rpcId,
      method,
      transport,
      startedAt,
      namedSessionId: named,
      startSessionId: start.id,
      startVia: start.via,
      plainServer: mcpSession !== undefined,
      mcpSessionHash: mcpSession?.mcpSessionHash,
    });
    this.push({ type: 'begin', call }, beginBytes);
    return call;
  }

  private finishReturned(call: RecordedCall, output: unknown, ok: boolean): unknown {
    call.returned(output, this.clock.date());
    return this.handOver(call, ok ? output : this.failureValueNow(call, output));
  }

  private finishThrown(call: RecordedCall, err: unknown, shape: OutputShape): Promise<unknown> {
    call.threw(thrownMessage(err), shape, this.clock.date());
    const value = this.lastObservationSettled()
      ? agentValue({
          tool: call.tool,
          output: undefined,
          thrown: call.thrown,
          images: [],
          namedSessionId: call.namedSessionId,
          session: this.registry.find(call.startSessionId),
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
      call.waitFor(resolve);
      this.push({ type: 'complete', call }, call.queuedBytes);
      this.queue.runNow();
    });
  }

  /** True when every queued job that could change a session's last observation has been processed. */
  private lastObservationSettled(): boolean {
    return !this.closed && this.observationsInFlight === 0;
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
    // No image bytes: only a filled-in last observation could change the value, and none exists yet.
    if (!this.fillLastObservation || !this.registry.anyObservation) {
      call.readOnCriticalPath(decidable.knownFailure);
      return output;
    }
    const read = readToolOutput(output);
    call.readOnCriticalPath(decidable.knownFailure, read);
    const env = read.envelope;
    if (!env || env.ok || read.synthesized) return output;
    const routed =
      typeof env.sessionId === 'string' && env.sessionId !== '' ? env.sessionId : call.startSessionId;
    const s = this.registry.find(routed);
    if (!s) return output;
    return agentValue({ tool: call.tool, output, read, images: [], session: s, fillLastObservation: true });
  }

  /** Queue a job; an observation call's completion is counted until processed (failures wait for it). */
  private push(job: Job, size: number): void {
    if (
      job.type === 'complete' &&
      !job.call.thrown &&
      !job.call.knownFailure &&
      this.observationTools.has(job.call.tool)
    ) {
      job.call.observationInQueue(true);
      this.observationsInFlight += 1;
    }
    this.queue.push(job, size);
    this.faults?.queued?.(this.queue.bytes);
  }

  // ---------------------------------------------------------------- the queue's worker

  /** One job, its failures kept to itself; an observation stops counting once its job is done. */
  private processJob(job: Job): Promise<void> | undefined {
    this.gaps.closeIfRoom(false);
    const hold = this.faults?.holdOnEventKind;
    if (hold && job.type === 'event' && job.kind === hold.kind) return hold.until;
    const pending = runJobSafely(job, this.calls, this.events, this.ledger);
    if (job.type !== 'complete' || !job.call.observationQueued) return pending;
    const observed = () => {
      job.call.observationInQueue(false);
      this.observationsInFlight -= 1;
    };
    if (!pending) {
      observed();
      return undefined;
    }
    return pending.then(observed);
  }

  /** Run one stage (sync or async); a throw is tagged with the stage's name for the record-failure event. */
  private stage<T>(name: RecordStage, fn: () => T): T {
    return inStage(name, this.faults?.beforeStage, fn);
  }

  // ---------------------------------------------------------------- the rest of the API

  beginExchange(request: unknown, meta: ExchangeMeta = {}): PendingExchange {
    return this.openExchange(request, meta, false);
  }

  /** An exchange begun, or at the queue's cap counted (one check, at its real size; a notification as other). */
  private openExchange(request: unknown, meta: ExchangeMeta, notification: boolean): PendingExchange {
    const startedAt = validDate(meta.startedAt) ?? this.clock.date();
    if (this.sealed) return NOOP_EXCHANGE;
    // Mcp-Session-Id is a credential-like token (MCP spec): a plain server echoing it in a body gets it redacted.
    if (meta.mcpSessionId && this.server.plain) this.redactor.rememberTransportSecret(meta.mcpSessionId);
    // The proxies never wait for room: at the queue's byte cap a request is counted (recording-gap.ts).
    const size = roughValueSize(request);
    const bytes = SMALL_JOB_BYTES + size;
    const what = notification ? 'other' : notRecordedAs(request);
    if (this.gaps.refuses(what, bytes)) return NOOP_EXCHANGE;
    const req = isRecord(request) ? request : undefined;
    if (req?.method !== 'tools/call') {
      const sessionOf = exchangeSession(this.server, meta.mcpSessionId);
      if (req?.method === 'initialize')
        return initializeExchange(this.exchangeSink, request, this.server, size, sessionOf);
      const method = typeof req?.method === 'string' ? req.method : null;
      return otherExchange(this.exchangeSink, request, method, size, sessionOf);
    }
    const params = isRecord(req.params) ? req.params : {};
    const tool = typeof params.name === 'string' ? params.name : '(unnamed)';
    const args = isRecord(params.arguments) ? params.arguments : {};
    const rpcId = req.id === undefined ? null : jsonOrNull(req.id);
    const mcpSession = this.server.mcpSessionOf(meta.mcpSessionId);
    const transport = meta.transport ?? this.transport;
    const call = this.startCall(tool, args, rpcId, 'tools/call', transport, startedAt, mcpSession, bytes);
    const traceparent = isRecord(params._meta) ? params._meta.traceparent : undefined;
    if (typeof traceparent === 'string' && TRACEPARENT.test(traceparent))
      call.carriesTraceparent(traceparent);
    return toolCallExchange(this.exchangeSink, call, startedAt);
  }

  recordExchange(request: unknown, response: unknown, meta: ExchangeMeta = {}): void {
    this.openExchange(request, meta, true).complete(response, meta);
  }

  step(sessionId: string | undefined, name: string, status: string, detail?: string): void {
    const d: Record<string, unknown> = { name, status };
    if (detail !== undefined) d.detail = detail;
    this.event(sessionId, 'step', d);
  }

  event(
    sessionId: string | undefined,
    kind: string,
    detail: Record<string, unknown>,
    meta?: ExchangeMeta,
  ): void {
    if (this.sealed) return;
    // At the byte cap an event is counted, not queued; declared steps and verdicts up to GAP_DECLARED a gap; a
    // recording gap (the worker recorder's, posted here) always: it is what says what was lost.
    const bytes = jobBytes(detail);
    if (this.gaps.refusesEvent(kind, bytes, RECORDER_WIDE_KINDS.has(kind))) return;
    const id = typeof sessionId === 'string' && sessionId !== '' ? sessionId : undefined;
    const mcpSession = exchangeSession(this.server, meta?.mcpSessionId)();
    this.push({ type: 'event', sessionId: id, kind, detail, at: this.clock.date(), mcpSession }, bytes);
  }

  rememberSecret(secret: string): void {
    this.redactor.rememberSecret(secret);
  }

  rememberHeaderSecret(secret: string): void {
    this.redactor.rememberHeaderSecret(secret);
  }

  room(): Promise<void> | undefined {
    return this.queue.room();
  }

  verdict(sessionId: string, verdict: { passed: boolean; reason?: string }): Promise<void> {
    const detail: Record<string, unknown> = { passed: verdict?.passed === true, via: 'recorder' };
    if (typeof verdict?.reason === 'string') detail.reason = verdict.reason;
    this.event(String(sessionId), 'verdict', detail);
    return this.flush();
  }

  async end(sessionId: string, verdict: { passed?: boolean; reason?: string } = {}): Promise<void> {
    if (this.sealed) return;
    this.push(
      { type: 'end', sessionId: String(sessionId), verdict: verdict ?? {}, at: this.clock.date() },
      SMALL_JOB_BYTES,
    );
    await this.flush();
  }

  session(sessionId: string): SessionInfo | undefined {
    return this.registry.find(String(sessionId))?.info();
  }

  flush(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.queue.flush();
  }

  close(options: CloseOptions = {}): Promise<void> {
    if (!this.closed) this.gaps.closeIfRoom(true);
    this.closing ??= this.closeNow(options.exportDeadline);
    return this.closing;
  }

  private async closeNow(exportDeadline: number | undefined): Promise<void> {
    await this.flush();
    // What came during that flush is recorded behind one more, with a gap that opened meanwhile; nothing
    // after it is taken (it would be neither recorded nor counted in a recorded gap).
    this.sealed = true;
    this.gaps.closeIfRoom(true);
    await this.flush();
    this.registry.endAll(this.clock.date());
    this.queue.commitNow(true);
    if (this.liveExport) {
      // Bounded (shutdownTimeoutMs, exportDeadline): then each exported session's final counts go in its log.
      await this.liveExport.shutdown(exportDeadline);
      this.registry.markOpenDirty();
      this.queue.commitNow(true);
      const undelivered = this.liveExport.undelivered();
      if (undelivered) this.ledger.notice(`mcec-recorder: ${undelivered}`);
    }
    this.closed = true;
    this.queue.close();
    const closedDirs = this.registry.closeAll();
    this.catalogTouches.close();
    await handClosedSessions(this.closedSessions, closedDirs, (line) => this.ledger.notice(line));
    // Thumbnails already taken are finished (bounded: what is left after the deadline is made on demand).
    await this.thumbnails?.close(THUMBNAIL_CLOSE_MS);
  }
}

/**
 * Create a recorder (see RecorderOptions for the defaults). Bad options throw at once: a TypeError for a
 * wrong type, a RangeError for a value out of range, naming the option (`checkRecorderOptions`). At close it
 * hands the dirs of the sessions it closed to `closedSessions` (who gives one: src/record/README.md "Closed
 * sessions").
 */
export function createRecorder(
  options: RecorderOptions = {},
  closedSessions?: ClosedSessionsHandler,
): Recorder {
  return new RecorderImpl(checkRecorderOptions(options), systemClock, undefined, closedSessions);
}

/**
 * createRecorder on given clocks and faults (test seams): tests move an AdvancingClock past a retry interval
 * instead of sleeping through it, or start its wall clock on a fixture date, and inject faults into stages.
 * Not part of the package's API (index.ts does not export it).
 */
export function createRecorderOnClock(
  options: RecorderOptions,
  clock: Clock = systemClock,
  faults?: RecorderFaults,
  closedSessions?: ClosedSessionsHandler,
): Recorder {
  return new RecorderImpl(checkRecorderOptions(options), clock, faults, closedSessions);
}
