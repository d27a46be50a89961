/** A tool call on its way through the recorder: what the agent sent, what came back, and where it is filed. */
import type { ToolOutput } from '../contract/types.js';
import { type OutputShape, roughSize, roughValueSize } from './outcome.js';
import type { RecordedSession, SessionVia } from './session.js';
import type { OversizeAnswer, Transport } from './types.js';

/** What a proxy's client saw before the server's answer arrived. */
export interface ClientSaw {
  client: 'proxy-timeout' | 'disconnected' | 'cancelled';
  reason: string;
}

/**
 * A call that got no answer: `proxy-error`, the proxy's failure (a fault); `cancelled`, the client cancelled
 * it (MCP's notifications/cancelled: the server owes no answer), a failed call.
 */
export type TransportFailureCode = 'proxy-error' | 'cancelled';

/** The real answer to a call whose row was already written as a proxy timeout. */
export interface LateAnswer {
  output?: unknown;
  oversize?: OversizeAnswer;
  endedAt: Date;
  durationMs: number;
  size: number;
}

/** What a dispatch's throw becomes: its message, and the transport shape the failure is handed back in. */
export interface ThrownCall {
  message: string;
  shape: OutputShape;
}

/** What a call is known by as it starts (the agent's request and where its pending row goes). */
export interface CallStart {
  tool: string;
  args: unknown;
  rpcId: string | null;
  /** The JSON-RPC method, for protocol-fault events of proxied calls. */
  method: string | null;
  transport: Transport;
  startedAt: Date;
  /** The session the call names by its `sessionId` argument (trimmed; not for provision/end-session). */
  namedSessionId: string | undefined;
  /** Where the pending row goes: `namedSessionId`, else the server's default session, else the recorder's. */
  startSessionId: string;
  /** How `startSessionId` was learned (the `via` of a session it creates). */
  startVia: SessionVia;
  /**
   * The server is not MCEC (its `initialize` said so): a result without an envelope is a plain MCP result,
   * and the call stays in the MCP session it started in.
   */
  plainServer: boolean;
  /** The hash of the request's `Mcp-Session-Id` (`hashMcpSessionId`), kept as the session's `mcp-session` event. */
  mcpSessionHash?: string | undefined;
}

/** What came back for a call, as its exchange or the dispatch settled it. */
export interface CallAnswer {
  output?: unknown;
  /** An answer a proxy passed through without recording it (over its cap): the row gets no payload. */
  oversize?: OversizeAnswer | undefined;
  /** What the client saw before the answer came (a proxy timeout, a disconnect). */
  clientSaw?: ClientSaw | undefined;
  endedAt: Date;
  durationMs: number;
  /** Rough bytes the answer holds in the queue, for back-pressure. */
  size: number;
}

/** Bytes the queue counts for a job that carries no output. */
export const SMALL_JOB_BYTES = 256;

/** Bytes the queue counts for a job that carries `value` (an event's detail, a request): SMALL_JOB_BYTES plus its rough size. */
export function jobBytes(value: unknown): number {
  return SMALL_JOB_BYTES + roughValueSize(value);
}

/**
 * A call from its start to its row: what came back, where it is filed, what the queue holds of it. Its state
 * changes only through the named transitions below (readable from outside, written here alone).
 */
export class RecordedCall implements CallStart {
  readonly tool: string;
  readonly args: unknown;
  readonly rpcId: string | null;
  readonly method: string | null;
  readonly transport: Transport;
  readonly startedAt: Date;
  /** performance.now() at the start, for the duration. */
  readonly t0: number;
  readonly namedSessionId: string | undefined;
  private _startSessionId: string;
  private _startVia: SessionVia;
  readonly plainServer: boolean;
  readonly mcpSessionHash: string | undefined;
  private _session: RecordedSession | undefined = undefined;
  private _seq = 0;
  private _argsJson: string | null = null;
  private _argsDropped = false;
  private _pendingRowWritten = false;
  private _completionCounted = false;
  private _endedAt: Date | undefined = undefined;
  private _durationMs: number | undefined = undefined;
  private _output: unknown = undefined;
  private _thrown: ThrownCall | undefined = undefined;
  private _transportFailure: string | undefined = undefined;
  private _transportFailureCode: TransportFailureCode = 'proxy-error';
  private _oversize: OversizeAnswer | undefined = undefined;
  private _clientSaw: ClientSaw | undefined = undefined;
  private _traceparent: string | undefined = undefined;
  private waiter: ((value: unknown) => void) | undefined = undefined;
  private _queuedBytes = SMALL_JOB_BYTES;
  private _observationQueued = false;
  private _knownFailure = false;
  private _readEarly: ToolOutput | undefined = undefined;

  constructor(init: CallStart) {
    // One fixed field order (every call has the same shape): this runs on the agent's critical path.
    this.tool = init.tool;
    this.args = init.args;
    this.rpcId = init.rpcId;
    this.method = init.method;
    this.transport = init.transport;
    this.startedAt = init.startedAt;
    this.t0 = performance.now();
    this.namedSessionId = init.namedSessionId;
    this._startSessionId = init.startSessionId;
    this._startVia = init.startVia;
    this.plainServer = init.plainServer;
    this.mcpSessionHash = init.mcpSessionHash;
  }

  /** Where its pending row goes: the session it names, else the server's default, else the recorder's. */
  get startSessionId(): string {
    return this._startSessionId;
  }
  /** How `startSessionId` was learned. */
  get startVia(): SessionVia {
    return this._startVia;
  }
  /**
   * The start as the registry knows it when the queue processes it (before the call is filed): a call that
   * started before an earlier answer named the server's default session goes there, not to the recorder's.
   */
  startsIn(start: { id: string; via: SessionVia }): void {
    if (this._session) throw new Error('RecordedCall.startsIn: the call is already filed');
    this._startSessionId = start.id;
    this._startVia = start.via;
  }

  /** The session the call is filed in now (set when its start is processed; may move once it completes). */
  get session(): RecordedSession | undefined {
    return this._session;
  }
  /** Its seq in that session. */
  get seq(): number {
    return this._seq;
  }
  /** The redacted arguments as stored (null when dropped or unserializable). */
  get argsJson(): string | null {
    return this._argsJson;
  }
  /** The arguments were over the payload budget: the row has no args (payload_dropped). */
  get argsDropped(): boolean {
    return this._argsDropped;
  }
  /** The pending row has been handed to the log (moving the call deletes it there). */
  get pendingRowWritten(): boolean {
    return this._pendingRowWritten;
  }
  get endedAt(): Date | undefined {
    return this._endedAt;
  }
  get durationMs(): number | undefined {
    return this._durationMs;
  }
  get output(): unknown {
    return this._output;
  }
  get thrown(): ThrownCall | undefined {
    return this._thrown;
  }
  /** Why a proxy's exchange failed at the transport (its target down, a timeout): the row is a fault. */
  get transportFailure(): string | undefined {
    return this._transportFailure;
  }
  /** Whose doing the transport failure was: the proxy's (a fault) or the client's cancel (a failed call). */
  get transportFailureCode(): TransportFailureCode {
    return this._transportFailureCode;
  }
  /** An answer a proxy passed through without recording it (over its cap): the row gets no payload. */
  get oversize(): OversizeAnswer | undefined {
    return this._oversize;
  }
  /** What the client saw before the answer came (a proxy timeout, a disconnect): a `late-answer` event. */
  get clientSaw(): ClientSaw | undefined {
    return this._clientSaw;
  }
  /** The W3C `traceparent` the request carried in `params._meta` (a `trace-parent` event, written once). */
  get traceparent(): string | undefined {
    return this._traceparent;
  }
  /** Rough bytes this call holds in the queue (its output), for back-pressure. */
  get queuedBytes(): number {
    return this._queuedBytes;
  }
  /** An observation call's completion queued and not yet processed: it may change a last observation. */
  get observationQueued(): boolean {
    return this._observationQueued;
  }
  /** Its envelope is known to be a failure (ok: false), so it cannot set a last observation. */
  get knownFailure(): boolean {
    return this._knownFailure;
  }
  /** The output as read on the critical path (a failure's fast value), so the queue does not read it again. */
  get readEarly(): ToolOutput | undefined {
    return this._readEarly;
  }
  /** The caller waits for the value to hand back (failures: it may get a last observation). */
  get waiting(): boolean {
    return this.waiter !== undefined;
  }

  // ---------------------------------------------------------------- transitions

  /** Filed in `session` under `seq` (its start, or a move): no pending row there yet. */
  filedIn(session: RecordedSession, seq: number): void {
    this._session = session;
    this._seq = seq;
    this._pendingRowWritten = false;
  }

  /** Its redacted arguments as stored; null `argsJson` with `dropped`: over the payload budget. */
  argsRecorded(argsJson: string | null, dropped: boolean): void {
    this._argsJson = dropped ? null : argsJson;
    this._argsDropped = dropped;
  }

  /** The pending row was handed to the log. */
  pendingRowHandedOver(): void {
    this._pendingRowWritten = true;
  }

  /** Its completion is counted now; false when it already was (a failure does not count it again). */
  countCompletion(): boolean {
    if (this._completionCounted) return false;
    this._completionCounted = true;
    return true;
  }

  /** Its counted completion is taken back (a late answer replaces a timeout); false when none was counted. */
  uncountCompletion(): boolean {
    if (!this._completionCounted) return false;
    this._completionCounted = false;
    return true;
  }

  /** The dispatch returned `output` (the duration from the start's clock). */
  returned(output: unknown, endedAt: Date): void {
    this._endedAt = endedAt;
    this._durationMs = performance.now() - this.t0;
    this._output = output;
    this._queuedBytes = roughSize(output);
  }

  /** The dispatch threw: the failure is handed back in `shape`. */
  threw(message: string, shape: OutputShape, endedAt: Date): void {
    this._endedAt = endedAt;
    this._durationMs = performance.now() - this.t0;
    this._thrown = { message, shape };
  }

  /** A proxy's exchange settled with an answer (or one too large to record); a timeout's fault is replaced. */
  answered(answer: CallAnswer): void {
    this._transportFailure = undefined;
    this._output = answer.output;
    this._oversize = answer.oversize;
    this._clientSaw = answer.clientSaw;
    this._endedAt = answer.endedAt;
    this._durationMs = answer.durationMs;
    this._queuedBytes = answer.size;
  }

  /** A proxy's exchange failed at the transport (its target down, a timeout): the row is a fault. */
  failedAtTransport(
    reason: string,
    endedAt: Date,
    durationMs: number,
    code: TransportFailureCode = 'proxy-error',
  ): void {
    this._endedAt = endedAt;
    this._durationMs = durationMs;
    this._transportFailure = reason;
    this._transportFailureCode = code;
  }

  /** The request carried a W3C trace context. */
  carriesTraceparent(traceparent: string): void {
    this._traceparent = traceparent;
  }

  /** The trace context, once (a late answer completes the call again: one event is enough). */
  takeTraceparent(): string | undefined {
    const t = this._traceparent;
    this._traceparent = undefined;
    return t;
  }

  /** Read on the critical path: a known failure (it sets no last observation), maybe already parsed. */
  readOnCriticalPath(knownFailure: boolean, read?: ToolOutput): void {
    this._knownFailure = knownFailure;
    if (read) this._readEarly = read;
  }

  /** Its completion as an observation is queued (true) or processed (false). */
  observationInQueue(queued: boolean): void {
    this._observationQueued = queued;
  }

  /** The caller waits for its value: `give` hands it over. */
  waitFor(give: (value: unknown) => void): void {
    this.waiter = give;
  }

  /** Hand the waiting caller its value, once. */
  handBack(value: unknown): void {
    const give = this.waiter;
    this.waiter = undefined;
    give?.(value);
  }
}

/** A call as it starts: filed under `startSessionId` once the queue processes its start. */
export function newCall(init: CallStart): RecordedCall {
  return new RecordedCall(init);
}
