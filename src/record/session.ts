/**
 * One recorded session: its log and artifact store (opened lazily by the registry), and the state behind its
 * counts. Counts change only through its methods (a call starts, completes, moves, is lost; a payload is
 * omitted; a recording failure), so they cannot drift apart; each change that needs a commit marks the
 * session dirty.
 */
import type { ArtifactStore } from '../artifacts/artifact-store.js';
import type { SessionRow } from '../store/schema.js';
import type { EventRecord, SessionLog } from '../store/session-log.js';
import type { RecordedCall } from './call.js';
import { withAbsoluteArtifacts } from './outcome.js';
import { isoTime } from './time.js';
import type { SessionCounts, SessionInfo } from './types.js';

/** How a session came to be recorded (the `via` of its `session-start` event). */
/** How a session became known; `mcp-session`: an MCP session of a server that is not MCEC. */
export type SessionVia = 'session-start' | 'envelope' | 'argument' | 'default' | 'mcp-session';

/** Events kept while a log cannot be opened; past this many the rest are counted, not kept. */
const MAX_BUFFERED_EVENTS = 1000;

/** Counts with every field zero. */
export function zeroCounts(): SessionCounts {
  return {
    calls: 0,
    pending: 0,
    failures: 0,
    warnings: 0,
    artifacts: 0,
    violations: 0,
    droppedPayloads: 0,
    recordFailures: 0,
    lostCalls: 0,
  };
}

/** A failure that could not be written yet (the log was unwritable): written once it is writable again. */
export interface PendingFailure {
  stage: string;
  message: string;
  lost: number;
}

export interface SessionInit {
  id: string;
  /** The id as received when it was not path-safe (escaped, clipped), else null. */
  originalId: string | null;
  via: SessionVia;
  startedAt: Date;
  dir: string;
  /** Payload characters (args, envelopes, responses) the log may store: `limits.maxLogBytes`. */
  payloadBudget: number;
  /** Called when the session has something to commit (the registry's dirty set). */
  changed: (s: RecordedSession) => void;
}

export class RecordedSession {
  readonly id: string;
  readonly originalId: string | null;
  readonly via: SessionVia;
  readonly startedAt: Date;
  readonly dir: string;
  /** The counts, changed only by the methods below (`counts` hands them out read-only). */
  private readonly tally: SessionCounts = zeroCounts();
  private _status: 'open' | 'ended' | 'aborted' = 'open';
  private _log: SessionLog | null = null;
  private _artifacts: ArtifactStore | null = null;
  /** Highest seq handed out. */
  private _seq = 0;
  /** Payload characters stored so far (args, envelopes, responses), against the payload budget. */
  private storedBytes = 0;
  private readonly payloadBudget: number;
  private omittedCalls = 0;
  private omittedBytes = 0;
  /** Characters of event detail a peer sent (exchanges, notifications, server requests) stored so far. */
  private wireEventChars = 0;
  private omittedEvents = 0;
  private omittedEventChars = 0;
  /** When a payload or a peer's event was last omitted, while its `truncation` event is not yet queued. */
  private truncationAt: Date | null = null;
  /** Artifact images omitted for the budget, as last written in an `artifact-limit` event. */
  private reportedOmittedImages = 0;
  /** Compact, unredacted, artifact paths relative to `dir`; the agent gets absolute copies. */
  private _lastObservation: Record<string, unknown> | null = null;
  /** The last observation changed since it was last queued for the log. */
  private lastObservationChanged = false;
  /** The last observation as written to the log: redacted, clipped. */
  private storedObservation: unknown = null;
  /** Why the log could not be opened (null once it is open), and when to try again. */
  private openError: string | null = null;
  private _nextOpenAt = 0;
  /** Calls whose rows could not be written because the log was not open. */
  private lostWhileClosed = 0;
  /** A commit failure not yet written as an event, and when to try committing again. */
  private _pendingFailure: PendingFailure | null = null;
  private _nextCommitAt = 0;
  /** Steps, verdicts and events declared for this session (kept only if it ever holds a tool call). */
  private _declared = 0;
  /** This recorder created the session's dir (so it may remove it again when the session holds no call). */
  private _createdDir = false;
  /** Session fields set before the log was open (an end before any call), applied when it opens. */
  private _fields: Partial<SessionRow> = {};
  private readonly changed: (s: RecordedSession) => void;
  private buffered: EventRecord[] = [];
  private bufferedDropped = 0;

  constructor(init: SessionInit) {
    this.id = init.id;
    this.originalId = init.originalId;
    this.via = init.via;
    this.startedAt = init.startedAt;
    this.dir = init.dir;
    this.payloadBudget = init.payloadBudget;
    this.changed = init.changed;
  }

  /** The session's counts (read-only: changed by the methods below). */
  get counts(): Readonly<SessionCounts> {
    return this.tally;
  }
  get status(): 'open' | 'ended' | 'aborted' {
    return this._status;
  }
  /** The open log (null until the first call opens it, and while it is closed). */
  get log(): SessionLog | null {
    return this._log;
  }
  get artifacts(): ArtifactStore | null {
    return this._artifacts;
  }
  /** Highest seq handed out. */
  get seq(): number {
    return this._seq;
  }
  get lastObservation(): Record<string, unknown> | null {
    return this._lastObservation;
  }
  /** When the log may be tried again after a failed open (clock.now() ms). */
  get nextOpenAt(): number {
    return this._nextOpenAt;
  }
  /** When a failing log may commit again (clock.now() ms; 0: now). */
  get nextCommitAt(): number {
    return this._nextCommitAt;
  }
  /** A commit failure not yet written as an event. */
  get pendingFailure(): Readonly<PendingFailure> | null {
    return this._pendingFailure;
  }
  /** Steps, verdicts and events declared for this session (kept only if it ever holds a tool call). */
  get declared(): number {
    return this._declared;
  }
  /** This recorder created the session's dir (so it may remove it again when the session holds no call). */
  get createdDir(): boolean {
    return this._createdDir;
  }
  /** Session fields set before the log was open (an end before any call), applied when it opens. */
  get fields(): Readonly<Partial<SessionRow>> {
    return this._fields;
  }

  /** What `recorder.session()` tells: a copy of the counts, the last observation with absolute artifact paths. */
  info(): SessionInfo {
    const { id, dir, status } = this;
    const lastObservation = this._lastObservation ? withAbsoluteArtifacts(this._lastObservation, dir) : null;
    return { id, dir, status, counts: { ...this.tally }, lastObservation };
  }

  /** Something here waits for the next commit. */
  markDirty(): void {
    this.changed(this);
  }

  // ---------------------------------------------------------------- calls

  /** The server's own MCP session id was written (`mcp-session` event), once per session. */
  private mcpSessionNoted = false;

  /** The hash of the server's `Mcp-Session-Id` for this session, written once as an `mcp-session` event. */
  noteMcpSession(mcpSessionHash: string, at: Date): void {
    if (this.mcpSessionNoted) return;
    this.mcpSessionNoted = true;
    this.note('mcp-session', { mcpSessionHash }, null, at);
  }

  /** A call is filed here: it takes the next seq, counts as a pending call, and brings its stored args. */
  callStarted(call: RecordedCall): void {
    call.filedIn(this, ++this._seq);
    this.tally.calls += 1;
    this.tally.pending += 1;
    if (call.argsJson) this.storedBytes += call.argsJson.length;
  }

  /** The call belongs elsewhere: its pending row, counts and stored args leave with it for `target`. */
  moveCallTo(call: RecordedCall, target: RecordedSession): void {
    if (call.pendingRowWritten) this.log?.deleteCall(call.seq);
    this.tally.calls -= 1;
    this.tally.pending -= 1;
    if (call.argsJson) this.storedBytes -= call.argsJson.length;
    this.markDirty();
    target.callStarted(call);
  }

  /** The call's outcome is in (once): pending no more, a failure unless `ok`, its contract violations. */
  callCompleted(call: RecordedCall, status: 'ok' | 'failed' | 'fault', violations = 0): void {
    if (!call.countCompletion()) return;
    this.tally.pending -= 1;
    if (status !== 'ok') this.tally.failures += 1;
    this.tally.violations += violations;
  }

  /** A late answer replaces the fault counted for a proxy timeout: the call is pending again. */
  callReopened(call: RecordedCall): void {
    if (!call.uncountCompletion()) return;
    this.tally.pending += 1;
    this.tally.failures -= 1;
  }

  /** The call's completed row could not be written (the log is not open): counted lost. */
  callLost(): void {
    this.lostWhileClosed += 1;
    this.tally.lostCalls += 1;
  }

  /** What the call's row brought besides itself: warnings and artifact rows. */
  callStored(warnings: number, artifacts: number): void {
    this.tally.warnings += warnings;
    this.tally.artifacts += artifacts;
  }

  // ---------------------------------------------------------------- the payload budget

  /** True, and counted as stored, when `chars` more payload fit the budget. */
  admitPayload(chars: number): boolean {
    if (this.storedBytes + chars > this.payloadBudget) return false;
    this.storedBytes += chars;
    return true;
  }

  /** A payload was not stored (`newCall`: the first of this call's): counted, and a `truncation` event due. */
  payloadOmitted(chars: number, newCall: boolean): void {
    if (newCall) {
      this.omittedCalls += 1;
      this.tally.droppedPayloads += 1;
    }
    this.omittedBytes += chars;
    // Written once per commit (takeTruncation), not once per omitted call: past the budget that is every call.
    if (this.log) this.truncationAt = new Date();
  }

  /** A call's payload was dropped by a failure in its recording (metadata-only row). */
  payloadDropped(): void {
    this.tally.droppedPayloads += 1;
  }

  /** The running `truncation` event as of the last omission, once per omission burst (then null). */
  takeTruncation(): EventRecord | null {
    const at = this.truncationAt;
    if (!at) return null;
    this.truncationAt = null;
    const detail: Record<string, number> = {
      omittedCalls: this.omittedCalls,
      omittedBytes: this.omittedBytes,
    };
    if (this.omittedEvents > 0) {
      detail.omittedEvents = this.omittedEvents;
      detail.omittedEventBytes = this.omittedEventChars;
    }
    return { at: isoTime(at), kind: 'truncation', callSeq: null, detail: JSON.stringify(detail) };
  }

  // ---------------------------------------------------------------- observations, failures, events

  /** A successful observation call's compact result is the last good observation now. */
  observed(result: Record<string, unknown>): void {
    this._lastObservation = result;
    this.lastObservationChanged = true;
  }

  /** The last observation when it changed since the last commit took it (once), else undefined. */
  takeChangedObservation(): Record<string, unknown> | null | undefined {
    if (!this.lastObservationChanged) return undefined;
    this.lastObservationChanged = false;
    return this._lastObservation;
  }

  /** The last observation as the log now holds it (redacted, clipped). */
  observationStored(stored: unknown): void {
    this.storedObservation = stored;
  }

  /** The recorder closed: the observation is reported as stored, and the agent's objects are let go. */
  letGoOfObservation(): void {
    if (this._lastObservation)
      this._lastObservation = (this.storedObservation as Record<string, unknown> | null) ?? null;
  }

  /** A step, verdict or event was declared for this session. */
  countDeclared(): void {
    this._declared += 1;
  }

  /** Images the artifact store omitted for its budget, when that changed since the last `artifact-limit`. */
  newlyOmittedImages(): { images: number; bytes: number } | null {
    const omitted = this._artifacts?.omitted;
    if (!omitted || omitted.images === this.reportedOmittedImages) return null;
    this.reportedOmittedImages = omitted.images;
    return { images: omitted.images, bytes: omitted.bytes };
  }

  // ---------------------------------------------------------------- the log's life

  /** The log opened (with its artifact store): seqs continue after the rows it already holds. */
  opened(log: SessionLog, artifacts: ArtifactStore, createdDir: boolean): void {
    this._log = log;
    this._artifacts = artifacts;
    this._createdDir ||= createdDir;
    this._seq = Math.max(this._seq, log.existingMaxSeq);
  }

  /** Opening the log failed: try again at `retryAt`; true when this is the first failure in a row. */
  openFailed(message: string, retryAt: number): boolean {
    this._nextOpenAt = retryAt;
    if (this.openError !== null) return false;
    this.openError = message;
    return true;
  }

  /**
   * What the log missed while it could not be opened (why, and the calls lost), once, now that it is open;
   * null when it missed nothing.
   */
  takeOpenFailure(droppedEvents: number): { message: string | null; lost: number } | null {
    if (this.openError === null && this.lostWhileClosed === 0 && droppedEvents === 0) return null;
    const missed = { message: this.openError, lost: this.lostWhileClosed };
    this.openError = null;
    this.lostWhileClosed = 0;
    return missed;
  }

  /** A failure to open the log lost `lost` calls: written with the open event once the log opens. */
  lostWhileOpening(lost: number): void {
    this.lostWhileClosed += lost;
  }

  /** The log is let go (the session holds no call, or the recorder closes): returns it, for closing. */
  releaseLog(): SessionLog | null {
    const log = this._log;
    this._log = null;
    this._artifacts = null;
    return log;
  }

  /** The session ended: its row's end fields go to the log, or wait for it to open. */
  ended(fields: Partial<SessionRow>): void {
    this._status = 'ended';
    if (this._log) this._log.setSessionFields(fields);
    else Object.assign(this._fields, fields);
    this.markDirty();
  }

  // ---------------------------------------------------------------- commit failures

  /** A commit failed: retry at `retryAt`; true (and the failure kept for its event) when it is a new one. */
  commitFailed(message: string, lost: number, retryAt: number): boolean {
    this._nextCommitAt = retryAt;
    if (this._pendingFailure) return false;
    this._pendingFailure = { stage: 'commit', message, lost };
    return true;
  }

  /** A failing commit's dropped queue lost `lost` more calls (told with its pending failure). */
  lostWithFailingCommit(lost: number): void {
    this.callsLost(lost);
    if (this._pendingFailure) this._pendingFailure.lost += lost;
  }

  /** A commit succeeded: the next may run at once; returns the failure held back until now (once). */
  commitSucceeded(): PendingFailure | null {
    this._nextCommitAt = 0;
    const failure = this._pendingFailure;
    this._pendingFailure = null;
    return failure;
  }

  /** A recording failure here, with the calls it lost. */
  recordFailure(lost: number): void {
    this.tally.recordFailures += 1;
    this.tally.lostCalls += lost;
  }

  /** Calls lost with a log (a commit's dropped queue, a log that could not be closed). */
  callsLost(lost: number): void {
    this.tally.lostCalls += lost;
  }

  /** An event, written with the next commit (kept until the log opens). */
  note(kind: string, detail: unknown, callSeq: number | null = null, at = new Date()): void {
    this.addEvent(kind, detail, callSeq, at);
    this.markDirty();
  }

  /**
   * An event whose detail a peer of the proxy sent (an exchange, a notification, a server request, ...): written
   * while this session's own budget for them (as many characters as the payload budget, counted apart so a
   * chatty server never crowds out the calls) has room, else only counted in the `truncation` event. A server
   * flooding notifications, or answering with 40 MB the client never asked for, grew the log without bound.
   */
  noteFromWire(kind: string, json: string, callSeq: number | null, at: Date): void {
    if (this.wireEventChars + json.length > this.payloadBudget) {
      this.omittedEvents += 1;
      this.omittedEventChars += json.length;
      if (this.log) this.truncationAt = new Date();
      this.markDirty();
      return;
    }
    this.wireEventChars += json.length;
    this.addEventJson(kind, json, callSeq, at);
    this.markDirty();
  }

  /** Add an event to the log, or keep it until the log opens. */
  addEvent(kind: string, detail: unknown, callSeq: number | null = null, at = new Date()): void {
    this.addEventJson(kind, JSON.stringify(detail), callSeq, at);
  }

  private addEventJson(kind: string, json: string | undefined, callSeq: number | null, at: Date): void {
    const e: EventRecord = { at: at.toISOString(), kind, callSeq, detail: json };
    if (this._log) {
      this._log.addEvent(e);
      return;
    }
    if (this.buffered.length < MAX_BUFFERED_EVENTS) this.buffered.push(e);
    else this.bufferedDropped += 1;
  }

  /** Hand events kept while the log was closed to the (now open) log; returns how many were dropped. */
  drainBuffered(): number {
    const log = this._log;
    if (!log) return 0;
    for (const e of this.buffered) log.addEvent(e);
    this.buffered = [];
    const dropped = this.bufferedDropped;
    this.bufferedDropped = 0;
    return dropped;
  }
}
