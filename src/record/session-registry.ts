/**
 * The sessions a recorder knows: lookup by the ids calls name, routing a completed call to the session MCEC
 * means (mcec-wire §8, `routing.ts`), opening a session's log on its first call, ending sessions, and
 * letting go of a session that no longer holds any call. Also the connection's current session (where
 * events without a session id go), with the handshake kept until a first call lands (`Preamble`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ArtifactStore } from '../artifacts/artifact-store.js';
import type { Envelope } from '../contract/types.js';
import { safeDerivedId } from '../paths/derived-id.js';
import { isSafeSessionId, sessionDirName } from '../paths/naming.js';
import type { CatalogTouches } from '../store/catalog-touches.js';
import type { LogPool } from '../store/log-pool.js';
import type { SessionRow } from '../store/schema.js';
import { SessionLog } from '../store/session-log.js';
import { isRecord } from '../util/json.js';
import { removeBestEffort } from '../util/temp-files.js';
import type { RecordedCall } from './call.js';
import { clipForLog } from './clip.js';
import type { Clock } from './clock.js';
import { environmentOf, recorderVersion, type ServerInfo } from './environment.js';
import type { FailureLedger } from './failure-ledger.js';
import type { LiveExportHook } from './live-export.js';
import { thrownMessage } from './outcome.js';
import { Preamble } from './preamble.js';
import type { CommitPass } from './record-queue.js';
import { answersInDefaultSession, isPreRoutingRefusal } from './routing.js';
import { RecordedSession, type SessionVia } from './session.js';
import { isoTime, saneServerTime } from './time.js';
import type { RecorderFaults } from './types.js';
import { escapeId } from './values.js';

/** How long a log that would not open waits before the next attempt. */
export const OPEN_RETRY_MS = 1000;
/** How long a commit waits for another writer's lock (commits run on the event loop: keep it short). */
const BUSY_TIMEOUT_MS = 20;
/** A pending row younger than this waits one commit: a call completing by then is written as one row. */
const HOLD_PENDING_MS = 10;

export interface RegistryOptions {
  sessionsDir: string;
  /** The recorder's own default session (12 hex), for calls no session is known for yet. */
  defaultSessionId: string;
  scenario: string | null;
  /** Per session: stored payload characters and artifact bytes. */
  maxLogBytes: number;
  maxArtifactBytes: number;
  clock: Clock;
  logPool: LogPool;
  /** The test seam (`createRecorderOnClock`); undefined in production. */
  faults: RecorderFaults | undefined;
  ledger: FailureLedger;
  scrubText: (text: string) => string;
  /** The recorder's observation tools, saved in each session's environment (the report reads them). */
  observationTools: ReadonlySet<string>;
  /** Redacts a session's last observation before a commit stores it (clipped to `maxObservationChars`). */
  redact: (value: unknown) => unknown;
  maxObservationChars: number;
  /** The live OpenTelemetry export (null: off): its counts go in with each commit, and it is fed after. */
  liveExport: LiveExportHook | null;
  /** Ended sessions' catalog rows, touched after their commit. */
  catalogTouches: CatalogTouches;
}

/** How a session ends: by a `session-end` call, `recorder.end()`, or `close()`. */
export interface SessionEnding {
  via: 'session-end' | 'end' | 'close' | 'mcp-session-delete';
  passed?: boolean;
  reason?: string;
}

/** Where routing files a completed call: a session already chosen, or an id to record it under. */
type RouteTarget = { session: RecordedSession } | { raw: string; via: SessionVia; startedAt: Date };

export class SessionRegistry {
  /** Sessions with something to commit. */
  private readonly dirty = new Set<RecordedSession>();
  /** Handshake and protocol faults seen before any session: written into the first one a call lands in. */
  readonly preamble: Preamble;
  /** The server's default session, as it last stamped a call that named no session (mcec-wire §8). */
  private serverDefaultId: string | undefined;
  /** Some session has held a last good observation (a failure may need one attached). */
  private observationSeen = false;
  private readonly options: RegistryOptions;
  private readonly sessions = new Map<string, RecordedSession>();
  /** Where the connection's last tool call landed: events without a session go there. */
  private current: RecordedSession | undefined;
  private server: ServerInfo | undefined;
  private closed = false;
  private readonly markDirty = (s: RecordedSession) => {
    this.dirty.add(s);
  };

  constructor(options: RegistryOptions) {
    this.options = options;
    this.preamble = new Preamble(options.maxLogBytes);
  }

  // ---------------------------------------------------------------- lookup

  /** An existing session by the id a call names (never creates one: the critical path uses this). */
  find(raw: string): RecordedSession | undefined {
    const seen = this.sessions.get(raw);
    if (seen) return seen;
    return this.sessions.get(isSafeSessionId(raw) ? raw : safeDerivedId(raw));
  }

  /** The session an id names, created (not yet written: its first call opens the log) when new. */
  obtain(raw: string, via: SessionVia, startedAt: Date): RecordedSession {
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
      dir: path.join(this.options.sessionsDir, sessionDirName(startedAt, id)),
      payloadBudget: this.options.maxLogBytes,
      changed: this.markDirty,
    });
    this.sessions.set(id, s);
    s.addEvent('session-start', { sessionId: id, via }, null, startedAt);
    if (!safe) s.addEvent('unsafe-session-id', { originalId: s.originalId, derivedId: id }, null, startedAt);
    return s;
  }

  /** Every session known. */
  all(): IterableIterator<RecordedSession> {
    return this.sessions.values();
  }

  // ---------------------------------------------------------------- logs

  /**
   * The session's log, opened on first use by a tool call; null while it cannot be opened (retried every
   * OPEN_RETRY_MS) and for a session that holds no call (nothing is written for it).
   */
  logOf(s: RecordedSession): SessionLog | null {
    if (s.log) return s.log;
    if (this.closed || s.counts.calls === 0 || this.options.clock.now() < s.nextOpenAt) return null;
    try {
      this.open(s);
    } catch (err) {
      const message = thrownMessage(err);
      if (s.openFailed(message, this.options.clock.now() + OPEN_RETRY_MS))
        this.options.ledger.note(s, 'open', message, 0);
      return null;
    }
    const missed = s.takeOpenFailure(s.drainBuffered());
    if (missed) {
      s.addEvent('record-failure', {
        stage: 'open',
        message: this.options.scrubText(missed.message ?? 'events dropped while the log was closed'),
        lost: missed.lost,
      });
    }
    s.markDirty();
    return s.log;
  }

  private open(s: RecordedSession): void {
    const { options } = this;
    options.faults?.beforeStage?.('open');
    const row: SessionRow = {
      session_id: s.id,
      original_id: s.originalId,
      scenario: options.scenario,
      started_at: s.startedAt.toISOString(),
      ended_at: null,
      status: s.status,
      passed: null,
      end_reason: null,
      recorder_version: recorderVersion(),
      writer_pid: process.pid,
      environment: JSON.stringify(environmentOf(this.server, this.options.observationTools)),
      last_observation: null,
      ...s.fields,
    };
    const existed = fs.existsSync(s.dir);
    const log = SessionLog.open({
      dir: s.dir,
      session: row,
      busyTimeoutMs: BUSY_TIMEOUT_MS,
      pragmas: options.faults?.sqlitePragmas ?? [],
      pool: options.logPool,
    });
    s.opened(
      log,
      // Artifact names carry the recorder's wall clock, as the calls' stamps do.
      new ArtifactStore({
        sessionDir: s.dir,
        maxArtifactBytes: options.maxArtifactBytes,
        now: () => options.clock.date(),
      }),
      !existed,
    );
  }

  /** The server's environment (from `initialize`) goes into every session's, those already open included. */
  setServer(server: ServerInfo): void {
    this.server = server;
    const environment = JSON.stringify(environmentOf(server, this.options.observationTools));
    for (const s of this.sessions.values()) {
      if (!s.log) continue;
      s.log.setSessionFields({ environment });
      s.markDirty();
    }
  }

  // ---------------------------------------------------------------- commits

  /** Some session has something to commit. */
  hasUncommitted(): boolean {
    return this.dirty.size > 0;
  }

  /** The sessions these ids name get a commit (the live export's counts of them changed). */
  markDirtyByIds(ids: Iterable<string>): void {
    for (const id of ids) this.find(id)?.markDirty();
  }

  /** Every open log gets a commit (at close, for the live export's final counts). */
  markOpenDirty(): void {
    for (const s of this.sessions.values()) if (s.log) this.dirty.add(s);
  }

  /** One transaction per dirty session log. `force` ignores the back-off of a failing log. */
  commit(force: boolean): CommitPass {
    const { clock, ledger, liveExport } = this.options;
    const now = clock.now();
    let retry = false;
    let again = false;
    for (const s of [...this.dirty]) {
      if (!s.log && s.counts.calls === 0) {
        this.dirty.delete(s); // holds no tool call: nothing is written for it (its events wait in memory)
        continue;
      }
      const log = s.log ?? this.logOf(s);
      if (!log || (!force && now < s.nextCommitAt)) {
        retry = true;
        continue;
      }
      this.storeObservation(s, log);
      const truncation = s.takeTruncation();
      if (truncation) log.setLatestEvent(truncation);
      const exported = liveExport?.changedCounts(s.id);
      if (exported) {
        const detail = JSON.stringify(exported);
        log.setLatestEvent({ at: isoTime(clock.date()), kind: 'otlp-export', callSeq: null, detail });
      }
      const outcome = log.commit(force ? {} : { holdYoungPendingMs: HOLD_PENDING_MS });
      if (!ledger.commitOutcome(s, outcome)) {
        retry = true;
        continue;
      }
      liveExport?.committed(s);
      if (outcome.held) again = true;
      else {
        this.dirty.delete(s);
        if (s.status !== 'open') this.options.catalogTouches.sessionChanged(s.dir, s.counts);
      }
    }
    return { retry, again };
  }

  /** A changed last observation goes into the session row: redacted and clipped. */
  private storeObservation(s: RecordedSession, log: SessionLog): void {
    const changed = s.takeChangedObservation();
    if (changed === undefined) return;
    try {
      const clipped = clipForLog(this.options.redact(changed), this.options.maxObservationChars);
      s.observationStored(clipped.value);
      log.setSessionFields({ last_observation: clipped.json });
    } catch (err) {
      this.options.ledger.note(s, 'redact', thrownMessage(err), 0);
    }
  }

  // ---------------------------------------------------------------- observations

  /** A successful observation call's result is `s`'s last good observation now. */
  observed(s: RecordedSession, result: Record<string, unknown>): void {
    s.observed(result);
    this.observationSeen = true;
  }

  /** Some session has held a last good observation (a failure may need one attached). */
  get anyObservation(): boolean {
    return this.observationSeen;
  }

  // ---------------------------------------------------------------- routing

  /** Where a call's pending row goes when it starts: the id it names, else the server's default, else ours. */
  startOf(namedSessionId: string | undefined): { id: string; via: SessionVia } {
    if (namedSessionId !== undefined) return { id: namedSessionId, via: 'argument' };
    if (this.serverDefaultId !== undefined) return { id: this.serverDefaultId, via: 'envelope' };
    return { id: this.options.defaultSessionId, via: 'default' };
  }

  /**
   * The session a completed call belongs to, as MCEC means its ids (mcec-wire §8); the call (and its pending
   * row) moves there when it started elsewhere. `unsafeFrom` is set when the id it came from was not path-safe.
   */
  route(call: RecordedCall, env: Envelope | undefined): { s: RecordedSession; unsafeFrom?: string } {
    const source = call.session!;
    const routed = this.routeTarget(call, env);
    let target: RecordedSession;
    let unsafeFrom: string | undefined;
    if ('session' in routed) target = routed.session;
    else {
      target = this.obtain(routed.raw, routed.via, routed.startedAt);
      if (!isSafeSessionId(routed.raw)) unsafeFrom = routed.raw;
    }
    if (target !== source) {
      source.moveCallTo(call, target);
      this.dropIfEmpty(source);
    }
    return { s: target, unsafeFrom };
  }

  /** Where a completed call goes: a session already known, or the id (and how it was learned) to record it under. */
  private routeTarget(call: RecordedCall, env: Envelope | undefined): RouteTarget {
    // A server that is not MCEC has no session ids in its results: the call stays in its MCP session.
    if (call.plainServer) return { raw: call.startSessionId, via: call.startVia, startedAt: call.startedAt };
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
    const named = call.namedSessionId;
    const preRouting = code !== undefined && isPreRoutingRefusal(call.tool, code);
    // The server's default id, learned from calls that run (or are refused) there whatever they named.
    if (
      envId !== undefined &&
      (named === undefined || answersInDefaultSession(call.tool) || preRouting) &&
      call.tool !== 'session-end'
    )
      this.serverDefaultId = envId;
    // A refusal stamped with the default id belongs to the session the call named.
    if (preRouting && named !== undefined) return { raw: named, via: 'argument', startedAt: call.startedAt };
    if (envId !== undefined) {
      // Ending an id nobody started (ended: false) does not make it a session.
      if (call.tool === 'session-end' && result?.ended === false && !this.holdsOtherCalls(envId, call))
        return { session: this.connectionSession(call) };
      return { raw: envId, via: 'envelope', startedAt: call.startedAt };
    }
    // No envelope says where (a protocol fault, a proxy failure, a throw) and the call named no session:
    // it ran in the server's default session, else it stays where the connection is.
    if (env === undefined && named === undefined) {
      if (this.serverDefaultId !== undefined)
        return { raw: this.serverDefaultId, via: 'envelope', startedAt: call.startedAt };
      if (this.current) return { session: this.current };
    }
    return { raw: call.startSessionId, via: call.startVia, startedAt: call.startedAt };
  }

  /** True when the session `id` names holds a call besides `call` (its pending row may be the only one). */
  private holdsOtherCalls(id: string, call: RecordedCall): boolean {
    const s = this.find(id);
    return s !== undefined && s.counts.calls > (s === call.session ? 1 : 0);
  }

  /** The connection's current session (where its last call landed), else our default session. */
  private connectionSession(call: RecordedCall): RecordedSession {
    return this.current ?? this.obtain(this.options.defaultSessionId, 'default', call.startedAt);
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
    const log = s.releaseLog();
    if (!log) return;
    log.discardQueue();
    log.close();
    if (s.createdDir) removeDir(s.dir);
  }

  /** Tell stderr about what was declared for a session that is not written (it never held a tool call). */
  private noteUnwritten(s: RecordedSession): void {
    if (s.declared === 0) return;
    this.options.ledger.notice(
      `mcec-recorder: session ${s.id} holds no tool call; its ${s.declared} step/verdict/event record(s) ` +
        'were not written',
    );
  }

  // ---------------------------------------------------------------- the connection

  /** A new connection (`initialize`): what follows waits for the next call to land somewhere. */
  newConnection(): void {
    this.current = undefined;
  }

  /** A completed call landed in `s`: the connection's current session now (the preamble goes into it). */
  attach(s: RecordedSession): void {
    this.current = s;
    this.preamble.writeInto(s);
  }

  /**
   * An event about the whole recorder (a proxy's recording gap): into every open session that holds a call
   * (one without is never written); false if there is none.
   */
  noteInOpenSessions(kind: string, detail: unknown, at: Date): boolean {
    let noted = false;
    for (const s of this.sessions.values()) {
      if (s.status !== 'open' || s.counts.calls === 0) continue;
      s.note(kind, detail, null, at);
      noted = true;
    }
    return noted;
  }

  /**
   * An event of the connection: into its current session, or kept for the first session a call lands in. One
   * of an MCP session (`mcpSession`, a server that is not MCEC over HTTP) goes into that session once a call
   * started there, else is kept for it alone: several clients share one proxy, and one's handshake is no
   * part of another's session. `fromWire`: its detail is what a peer sent, held to the session's budget for
   * that (`noteFromWire`).
   */
  connectionEvent(kind: string, detail: unknown, at: Date, mcpSession?: string, fromWire = false): void {
    const s = mcpSession === undefined ? this.current : this.sessions.get(mcpSession);
    if (!s) {
      this.preamble.keep(kind, detail, at, mcpSession);
      return;
    }
    // What its MCP session kept before a call started there goes first.
    if (mcpSession !== undefined) this.preamble.writeInto(s, false);
    if (fromWire) s.noteFromWire(kind, JSON.stringify(detail) ?? 'null', null, at);
    else s.note(kind, detail, null, at);
  }

  // ---------------------------------------------------------------- ends

  /** End a session: a `session-end` event and the session row's end fields (with a declared verdict). */
  end(s: RecordedSession, how: SessionEnding, at: Date): void {
    const detail: Record<string, unknown> = { via: how.via };
    const fields: Partial<SessionRow> = { status: 'ended', ended_at: at.toISOString() };
    if (how.passed !== undefined) {
      detail.passed = how.passed;
      fields.passed = how.passed ? 1 : 0;
    }
    if (how.reason !== undefined) {
      detail.reason = this.options.scrubText(how.reason);
      fields.end_reason = detail.reason as string;
    }
    s.addEvent('session-end', detail, null, at);
    this.logOf(s);
    s.ended(fields);
  }

  /** End every open session (the recorder closes). */
  endAll(at: Date): void {
    for (const s of this.sessions.values()) if (s.status === 'open') this.end(s, { via: 'close' }, at);
  }

  /**
   * Close every log (after the last commit): what a log could not write is counted lost; a session that holds
   * no call leaves no dir. After this no log opens again. Returns the dirs of the sessions whose log closed
   * cleanly (every session is ended by then).
   */
  closeAll(): string[] {
    this.closed = true;
    const closed: string[] = [];
    for (const s of this.sessions.values()) {
      // After close, session() reports the observation as stored: the agent's objects are let go.
      s.letGoOfObservation();
      const log = s.log;
      if (!log) continue;
      const outcome = log.close();
      if (outcome.error) {
        s.callsLost(log.discardQueue().calls);
        this.options.ledger.reportOnce('commit', s, thrownMessage(outcome.error));
      } else if (s.counts.calls > 0 && s.status !== 'open') closed.push(s.dir);
      // A session that holds no call (they all moved elsewhere) leaves no dir behind.
      if (s.counts.calls === 0 && s.createdDir) removeDir(s.dir);
    }
    for (const s of this.sessions.values()) if (s.counts.calls === 0) this.noteUnwritten(s);
    const preamble = this.preamble.unwrittenNotice();
    if (preamble) this.options.ledger.notice(preamble);
    return closed;
  }
}

function removeDir(dir: string): void {
  // Left behind when it cannot be removed (a reader holds it open on Windows): list hides sessions without calls.
  removeBestEffort(dir);
}
