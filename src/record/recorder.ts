/**
 * The recorder: wraps a dispatch (or takes JSON-RPC exchanges from a proxy) and records every call through
 * one ordered queue processed off the agent's critical path. This file is the coordinator: the critical path
 * (`wrap`, the fast value of a failure) and the public API; the work is done by its parts:
 * RecordQueue (jobs, group commits, back-pressure, retry), SessionRegistry (lookup, routing, logs, ends),
 * RecordedSession (counts that change only through its methods), CallRecording (a call's rows), the pure
 * row builder (rows.ts) and agent value (agent-value.ts), and FailureLedger (counting, report-once, commit
 * outcomes). Recording never breaks a call: failures are counted, reported once on stderr and written as
 * `record-failure` events.
 */

import { createHash, randomBytes } from 'node:crypto';
import { HostFileCollector } from '../artifacts/host-files.js';
import { ThumbnailQueue } from '../artifacts/thumbnail-queue.js';
import { readToolOutput } from '../contract/read-tool-output.js';
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import { isSafeSessionId, safeDerivedId } from '../paths/naming.js';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import { createRedactor, type Redactor } from '../redact/redactor.js';
import { CatalogTouches } from '../store/catalog-touches.js';
import { DEFAULT_MAX_OPEN_LOGS, LogPool, maxOpenLogsFor } from '../store/log-pool.js';
import { processFileLimit } from '../util/file-limit.js';
import { isRecord } from '../util/json.js';
import { agentValue, decidableFailure } from './agent-value.js';
import { newCall, type RecordedCall, SMALL_JOB_BYTES } from './call.js';
import { CallRecording } from './call-recording.js';
import { clipForLog } from './clip.js';
import { type Clock, systemClock } from './clock.js';
import { type ExchangeSink, NOOP_EXCHANGE, otherExchange, toolCallExchange } from './exchange.js';
import { FailureLedger } from './failure-ledger.js';
import type { Job } from './jobs.js';
import { type LiveExportHook, openLiveExport } from './live-export.js';
import { CaptureMasking } from './masking.js';
import {
  type OutputShape,
  quickOutcome,
  roughSize,
  thrownMessage,
  withAbsoluteArtifacts,
} from './outcome.js';
import { type CommitPass, RecordQueue } from './record-queue.js';
import { routingArgument } from './routing.js';
import { serverInfoFrom } from './server-info.js';
import { SessionRegistry } from './session-registry.js';
import { inStage, stageOf } from './stages.js';
import { isoTime } from './time.js';
import type {
  Dispatch,
  ExchangeMeta,
  PendingExchange,
  Recorder,
  RecorderOptions,
  RecordStage,
  SessionInfo,
  Transport,
} from './types.js';
import { jsonOrNull, validDate, withoutImageBytes } from './values.js';

export { IMAGE_BYTES_OMITTED } from './values.js';

const MiB = 1024 * 1024;

/**
 * An MCP session's name in the recording: the first 16 hex digits of the SHA-256 of its `Mcp-Session-Id`.
 * The MCP specification treats that header as a credential-like token (whoever holds it can act in the
 * session), so the value itself never reaches a session id, dir name, log, bundle or span.
 */
export function hashMcpSessionId(mcpSessionId: string): string {
  return createHash('sha256').update(mcpSessionId).digest('hex').slice(0, 16);
}
/** Default stored payload per session. */
export const DEFAULT_MAX_LOG_BYTES = 8 * MiB;
/** Default artifact bytes per session. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 512 * MiB;
/** What the log stores for a dispatch result that throws when read (a getter, a Proxy trap). */
export const UNREADABLE_RESULT = '[result not recorded: reading it threw]';

/** failureValueNow's answer when the value depends on work still queued. */
const WAIT_FOR_QUEUE: unique symbol = Symbol('wait for the queue');
/** A W3C trace context header of version 00, as MCP clients put it in `params._meta.traceparent`. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** How long a failing log waits before the next commit attempt. */
const COMMIT_RETRY_MS = 100;
/** At close, thumbnails still waiting after this long are left for a report to make. */
const THUMBNAIL_CLOSE_MS = 2_000;
/** The stored last good observation is clipped to this (the agent still gets it whole). */
const MAX_OBSERVATION_CHARS = 256 * 1024;
/** A call's event (a streamed notification, a server request) is clipped to this. */
const MAX_CALL_EVENT_CHARS = 64 * 1024;
/** A pending row younger than this waits one commit: a call completing by then is written as one row. */
const HOLD_PENDING_MS = 10;

class RecorderImpl implements Recorder {
  readonly sessionsDir: string;
  readonly defaultSessionId: string;
  private readonly options: RecorderOptions;
  private readonly redactor: Redactor;
  private readonly fillLastObservation: boolean;
  private readonly observationTools: ReadonlySet<string>;
  private readonly transport: Transport;
  private readonly maxObservationChars: number;
  private readonly clock: Clock;
  private readonly ledger: FailureLedger;
  private readonly registry: SessionRegistry;
  private readonly calls: CallRecording;
  private readonly queue: RecordQueue<Job>;
  /** The live OpenTelemetry export, when on: fed after each commit, off the agent's calls. */
  private readonly liveExport: LiveExportHook | null;
  /** Thumbnails of written captures, made apart from the queue (null when `thumbnails: false`). */
  private readonly thumbnails: ThumbnailQueue | null;
  /** Where a proxy's exchanges settle: the queue and the event API. */
  private readonly exchangeSink: ExchangeSink = {
    push: (job, size) => this.push(job, size),
    event: (sessionId, kind, detail) => this.event(sessionId, kind, detail),
    now: () => this.clock.date(),
  };
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Which server the proxy's `initialize` named (unknown until then: read as MCEC). */
  private server: { kind: 'mcec' | 'other' | 'unknown'; slug: string } = { kind: 'unknown', slug: 'mcp' };
  /** Names the MCP session of a server without session ids (stdio: one server process per recorder). */
  private readonly processToken = randomBytes(4).toString('hex');
  /** Observation calls completed but not yet processed: while any are, a failure's value waits for the queue. */
  private observationsInFlight = 0;
  /** Ended sessions' catalog rows, touched without waiting for the catalog's lock. */
  private readonly catalogTouches: CatalogTouches;

  /** The log pool's size from the process's file limit; says so on stderr when the limit shrinks it. */
  private logPoolSize(): number {
    const limit = processFileLimit();
    const size = maxOpenLogsFor(limit);
    if (size < DEFAULT_MAX_OPEN_LOGS) {
      this.ledger.notice(
        `mcec-recorder: this process may open ${limit} files (ulimit -n): keeping at most ${size} session logs open at once (${DEFAULT_MAX_OPEN_LOGS} otherwise)`,
      );
    }
    return size;
  }

  constructor(options: RecorderOptions, clock: Clock) {
    this.options = options;
    this.clock = clock;
    this.sessionsDir = resolveSessionsDir(options.sessionsDir);
    this.defaultSessionId = randomBytes(6).toString('hex');
    this.redactor = createRedactor(options.redact ?? {});
    const maxLogBytes = options.limits?.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
    this.fillLastObservation = options.fillLastObservation !== false;
    this.observationTools = new Set(options.observationTools ?? OBSERVATION_TOOLS);
    this.transport = options.transport ?? 'wrap';
    this.maxObservationChars = Math.min(MAX_OBSERVATION_CHARS, maxLogBytes);
    const scrubText = (text: string) => this.redactor.scrubText(text);
    this.ledger = new FailureLedger({
      stderr: options.stderr ?? ((line) => process.stderr.write(`${line}\n`)),
      scrubText,
      clock,
      commitRetryMs: COMMIT_RETRY_MS,
    });
    this.catalogTouches = new CatalogTouches(this.sessionsDir, (line) => this.ledger.notice(line));
    this.registry = new SessionRegistry({
      sessionsDir: this.sessionsDir,
      defaultSessionId: this.defaultSessionId,
      scenario: options.scenario ?? null,
      maxLogBytes,
      maxArtifactBytes: options.limits?.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES,
      clock,
      logPool: new LogPool(options.maxOpenLogs ?? this.logPoolSize()),
      faults: options.faults,
      ledger: this.ledger,
      scrubText,
      observationTools: this.observationTools,
    });
    this.thumbnails = options.thumbnails === false ? null : new ThumbnailQueue();
    this.calls = new CallRecording({
      registry: this.registry,
      ledger: this.ledger,
      redactor: this.redactor,
      hostFiles: new HostFileCollector({
        enabled: options.copyHostFiles !== false,
        pathMap: options.hostPathMap ?? [],
        ...(options.limits?.maxHostFileBytes ? { maxFileBytes: options.limits.maxHostFileBytes } : {}),
      }),
      clock,
      stage: (name, fn) => this.stage(name, fn),
      closed: () => this.closed,
      fillLastObservation: this.fillLastObservation,
      observationTools: this.observationTools,
      thumbnails: this.thumbnails
        ? { queue: this.thumbnails, underPressure: () => this.queue.underPressure() }
        : null,
      masking:
        options.mask?.enabled === false
          ? null
          : new CaptureMasking(
              { typedText: options.redact?.keepTypedText !== true, ...options.mask },
              options.redact?.keys ?? [],
            ),
    });
    this.liveExport = openLiveExport(options.otlp);
    this.queue = new RecordQueue<Job>(
      {
        process: (job) => this.processJob(job),
        hasUncommitted: () => this.registry.dirty.size > 0,
        commit: (force) => this.commitAll(force),
        broke: (err) => this.ledger.note(undefined, stageOf(err), thrownMessage(err), 0),
      },
      { clock, limits: { commitIntervalMs: options.commitIntervalMs ?? 4, retryMs: COMMIT_RETRY_MS } },
    );
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
    mcpSession?: { id: string; mcpSessionHash: string | undefined },
  ): RecordedCall {
    const name = typeof tool === 'string' ? tool : String(tool);
    if (mcpSession !== undefined) {
      // A server that is not MCEC: its MCP session is the recording's, whatever the arguments say.
      const call = newCall({
        tool: name,
        args,
        rpcId,
        method,
        transport,
        startedAt,
        namedSessionId: undefined,
        startSessionId: mcpSession.id,
        startVia: 'mcp-session',
        plainServer: true,
        mcpSessionHash: mcpSession.mcpSessionHash,
      });
      this.push({ type: 'begin', call }, SMALL_JOB_BYTES);
      return call;
    }
    const named = routingArgument(name, args);
    const start = this.registry.startOf(named);
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
      plainServer: false,
    });
    this.push({ type: 'begin', call }, SMALL_JOB_BYTES);
    return call;
  }

  private finishReturned(call: RecordedCall, output: unknown, ok: boolean): unknown {
    call.endedAt = this.clock.date();
    call.durationMs = performance.now() - call.t0;
    call.output = output;
    call.queuedBytes = roughSize(output);
    return this.handOver(call, ok ? output : this.failureValueNow(call, output));
  }

  private finishThrown(call: RecordedCall, err: unknown, shape: OutputShape): Promise<unknown> {
    call.endedAt = this.clock.date();
    call.durationMs = performance.now() - call.t0;
    call.thrown = { message: thrownMessage(err), shape };
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
      call.handBack = resolve;
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
    call.knownFailure = decidable.knownFailure;
    // No image bytes: only a filled-in last observation could change the value, and none exists yet.
    if (!this.fillLastObservation || !this.registry.anyObservation) return output;
    const read = readToolOutput(output);
    call.readEarly = read;
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
      job.call.observationQueued = true;
      this.observationsInFlight += 1;
    }
    this.queue.push(job, size);
  }

  // ---------------------------------------------------------------- the queue's worker

  /** One job, its failures kept to itself; an observation stops counting once its job is done. */
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
    if (job.type === 'complete' || job.type === 'begin')
      this.calls.failed(job.call, job.type === 'complete', err);
    else this.ledger.note(undefined, stageOf(err), thrownMessage(err), 0);
  }

  private process(job: Job): Promise<void> | undefined {
    switch (job.type) {
      case 'begin':
        this.calls.begin(job.call);
        return undefined;
      case 'complete':
        return this.calls.complete(job.call);
      case 'late':
        return this.calls.late(job.call, job.late, job.saw);
      case 'event':
        this.processEvent(job.sessionId, job.kind, job.detail, job.at);
        return undefined;
      case 'call-event':
        this.processCallEvent(job.call, job.kind, job.detail, job.at);
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

  /** A declared event: into the session it names, else the connection's current session (or the preamble). */
  private processEvent(sessionId: string | undefined, kind: string, detail: unknown, at: Date): void {
    if (this.closed) return;
    const stored = this.stage('redact', () => withoutImageBytes(this.redactor.redact(detail)));
    const id = sessionId?.trim();
    if (!id) {
      this.registry.connectionEvent(kind, stored, at);
      return;
    }
    const s = this.registry.obtain(id, 'argument', at);
    s.declared += 1;
    s.note(kind, stored, null, at);
  }

  /**
   * An event of a call (what the server streamed while it ran, its requests and the client's replies): in
   * the call's session with its seq, redacted and bounded like a last observation.
   */
  private processCallEvent(call: RecordedCall, kind: string, detail: unknown, at: Date): void {
    if (this.closed) return;
    const redacted = this.stage('redact', () => withoutImageBytes(this.redactor.redact(detail)));
    const stored = clipForLog(redacted, MAX_CALL_EVENT_CHARS).value;
    const s = call.session;
    if (s) s.note(kind, stored, call.seq, at);
    else this.registry.connectionEvent(kind, stored, at);
  }

  /**
   * A JSON-RPC exchange that is not a tool call (initialize, tools/list, ping, notifications, protocol
   * faults): an event of the connection. `initialize` starts a new connection (and names the server).
   */
  private processExchange(request: unknown, response: unknown, at: Date, failed?: string): void {
    if (this.closed) return;
    const req = isRecord(request) ? request : undefined;
    const method = typeof req?.method === 'string' ? req.method : null;
    const res = isRecord(response) ? response : undefined;
    if (method === 'initialize') {
      this.registry.newConnection();
      if (res && isRecord(res.result))
        this.registry.setServer(serverInfoFrom(res.result, (v) => this.redactor.redact(v)));
    }
    if (res && isRecord(res.error)) {
      const e = res.error;
      const message = typeof e.message === 'string' ? this.redactor.scrubText(e.message) : '';
      const fault = { code: typeof e.code === 'number' ? e.code : null, message, id: res.id ?? null, method };
      this.registry.connectionEvent('protocol-fault', fault, at);
    }
    const stored = this.stage('redact', () => ({
      request: withoutImageBytes(this.redactor.redact(request ?? null)),
      response: withoutImageBytes(this.redactor.redact(response ?? null)),
    }));
    const detail: Record<string, unknown> = { method, request: stored.request, response: stored.response };
    if (failed !== undefined) detail.error = this.redactor.scrubText(failed);
    this.registry.connectionEvent('exchange', detail, at);
  }

  private processEnd(sessionId: string, verdict: { passed?: boolean; reason?: string }, at: Date): void {
    if (this.closed) return;
    const s = this.registry.obtain(sessionId, 'argument', at);
    s.declared += 1;
    this.registry.end(s, { via: 'end', ...verdict }, at);
  }

  // ---------------------------------------------------------------- commits

  /** One transaction per dirty session log. `force` ignores the back-off of a failing log. */
  private commitAll(force: boolean): CommitPass {
    const now = this.clock.now();
    let retry = false;
    let again = false;
    const { dirty } = this.registry;
    for (const s of [...dirty]) {
      if (!s.log && s.counts.calls === 0) {
        dirty.delete(s); // holds no tool call: nothing is written for it (its events wait in memory)
        continue;
      }
      const log = s.log ?? this.registry.logOf(s);
      if (!log || (!force && now < s.nextCommitAt)) {
        retry = true;
        continue;
      }
      if (s.lastObservationChanged) {
        s.lastObservationChanged = false;
        try {
          const clipped = clipForLog(this.redactor.redact(s.lastObservation), this.maxObservationChars);
          s.storedObservation = clipped.value;
          log.setSessionFields({ last_observation: clipped.json });
        } catch (err) {
          this.ledger.note(s, 'redact', thrownMessage(err), 0);
        }
      }
      const truncation = s.takeTruncation();
      if (truncation) log.setLatestEvent(truncation);
      const exported = this.liveExport?.changedCounts(s.id);
      if (exported) {
        log.setLatestEvent({
          at: isoTime(this.clock.date()),
          kind: 'otlp-export',
          callSeq: null,
          detail: JSON.stringify(exported),
        });
      }
      const outcome = log.commit(force ? {} : { holdYoungPendingMs: HOLD_PENDING_MS });
      if (!this.ledger.commitOutcome(s, outcome)) {
        retry = true;
        continue;
      }
      this.liveExport?.committed(s);
      if (outcome.held) again = true;
      else {
        dirty.delete(s);
        if (s.status !== 'open') this.catalogTouches.sessionChanged(s.dir, s.counts);
      }
    }
    return { retry, again };
  }

  // ---------------------------------------------------------------- the rest of the API

  beginExchange(request: unknown, meta: ExchangeMeta = {}): PendingExchange {
    const startedAt = validDate(meta.startedAt) ?? this.clock.date();
    if (this.closed) return NOOP_EXCHANGE;
    const req = isRecord(request) ? request : undefined;
    if (req?.method === 'initialize') return this.initializeExchange(request);
    if (req?.method !== 'tools/call')
      return otherExchange(this.exchangeSink, request, typeof req?.method === 'string' ? req.method : null);
    const params = isRecord(req.params) ? req.params : {};
    const tool = typeof params.name === 'string' ? params.name : '(unnamed)';
    const args = isRecord(params.arguments) ? params.arguments : {};
    const rpcId = req.id === undefined ? null : jsonOrNull(req.id);
    const mcpSessionHash = meta.mcpSessionId ? hashMcpSessionId(meta.mcpSessionId) : undefined;
    const mcpSession =
      this.server.kind === 'other'
        ? { id: `${this.server.slug}-${mcpSessionHash ?? this.processToken}`, mcpSessionHash }
        : undefined;
    const transport = meta.transport ?? this.transport;
    const call = this.startCall(tool, args, rpcId, 'tools/call', transport, startedAt, mcpSession);
    const traceparent = isRecord(params._meta) ? params._meta.traceparent : undefined;
    if (typeof traceparent === 'string' && TRACEPARENT.test(traceparent)) call.traceparent = traceparent;
    return toolCallExchange(this.exchangeSink, call, startedAt);
  }

  /**
   * `initialize`: its answer says which server this is, at once (the calls that follow are read by it):
   * MCEC (`serverInfo.name` "MCEC") or another MCP server, whose results are plain and whose sessions are
   * its MCP sessions.
   */
  private initializeExchange(request: unknown): PendingExchange {
    const inner = otherExchange(this.exchangeSink, request, 'initialize');
    return {
      ...inner,
      complete: (response, m) => {
        const result = isRecord(response) && isRecord(response.result) ? response.result : undefined;
        const info = result && isRecord(result.serverInfo) ? result.serverInfo : undefined;
        if (info && typeof info.name === 'string') {
          this.server = {
            kind: info.name.trim().toLowerCase() === 'mcec' ? 'mcec' : 'other',
            slug: sessionSlug(info.name),
          };
        }
        inner.complete(response, m);
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
    const id = typeof sessionId === 'string' && sessionId !== '' ? sessionId : undefined;
    this.push({ type: 'event', sessionId: id, kind, detail, at: this.clock.date() }, SMALL_JOB_BYTES);
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
    this.push(
      { type: 'end', sessionId: String(sessionId), verdict: verdict ?? {}, at: this.clock.date() },
      SMALL_JOB_BYTES,
    );
    await this.flush();
  }

  session(sessionId: string): SessionInfo | undefined {
    const raw = String(sessionId);
    const s = this.registry.find(isSafeSessionId(raw) ? raw : safeDerivedId(raw));
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
    this.registry.endAll(this.clock.date());
    this.queue.commitNow(true);
    if (this.liveExport) {
      // Bounded (shutdownTimeoutMs): then each exported session's final counts go in its log.
      await this.liveExport.shutdown();
      for (const s of this.registry.all()) if (s.log) this.registry.dirty.add(s);
      this.queue.commitNow(true);
      const undelivered = this.liveExport.undelivered();
      if (undelivered) this.ledger.notice(`mcec-recorder: ${undelivered}`);
    }
    this.closed = true;
    this.queue.close();
    this.registry.closeAll();
    this.catalogTouches.close();
    // Thumbnails already taken are finished (bounded: what is left after the deadline is made on demand).
    await this.thumbnails?.close(THUMBNAIL_CLOSE_MS);
  }
}

/** A server's name as the start of a path-safe session id: `mcp-servers-everything`; `mcp` when empty. */
function sessionSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 24)
    .replace(/-$/, '');
  return slug === '' ? 'mcp' : slug;
}

/** Create a recorder (see RecorderOptions for the defaults). */
export function createRecorder(options: RecorderOptions = {}): Recorder {
  return new RecorderImpl(options, systemClock);
}

/**
 * createRecorder on given clocks: tests move an AdvancingClock past a retry interval instead of sleeping through
 * it, or start its wall clock on a fixture date. Not part of the package's API (index.ts does not export it).
 */
export function createRecorderOnClock(options: RecorderOptions, clock: Clock): Recorder {
  return new RecorderImpl(options, clock);
}
