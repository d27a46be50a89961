/** A tool call on its way through the recorder: what the agent sent, what came back, and where it is filed. */
import type { ToolOutput } from '../contract/types.js';
import type { OutputShape } from './outcome.js';
import type { RecordedSession, SessionVia } from './session.js';
import type { OversizeAnswer, Transport } from './types.js';

/** What a proxy's client saw before the server's answer arrived. */
export interface ClientSaw {
  client: 'proxy-timeout' | 'disconnected';
  reason: string;
}

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

/** A call from its start to its row: what came back, where it is filed, what the queue holds of it. */
export interface RecordedCall extends CallStart {
  /** performance.now() at the start, for the duration. */
  t0: number;
  /** The session the call is filed in now (set when its start is processed; may move once it completes). */
  session?: RecordedSession;
  seq: number;
  argsJson: string | null;
  /** The arguments were over the payload budget: the row has no args (payload_dropped). */
  argsDropped: boolean;
  /** The pending row has been handed to the log (moving the call deletes it there). */
  pendingRowWritten: boolean;
  /** Its completion has been counted (pending -1), so a later failure does not count it again. */
  completionCounted: boolean;
  endedAt?: Date;
  durationMs?: number;
  output?: unknown;
  thrown?: ThrownCall;
  /** Why a proxy's exchange failed at the transport (its target down, a timeout): the row is a fault. */
  transportFailure?: string;
  /** An answer a proxy passed through without recording it (over its cap): the row gets no payload. */
  oversize?: OversizeAnswer;
  /** What the client saw before the answer came (a proxy timeout, a disconnect): a `late-answer` event. */
  clientSaw?: ClientSaw;
  /** The W3C `traceparent` the request carried in `params._meta` (a `trace-parent` event, written once). */
  traceparent?: string;
  /** Set while the caller waits for the value to hand back (failures: it may get a last observation). */
  handBack?: (value: unknown) => void;
  /** Rough bytes this call holds in the queue (its output), for back-pressure. */
  queuedBytes: number;
  /** An observation call's completion queued and not yet processed: it may change a last observation. */
  observationQueued?: boolean;
  /** Its envelope is known to be a failure (ok: false), so it cannot set a last observation. */
  knownFailure?: boolean;
  /** The output as read on the critical path (a failure's fast value), so the queue does not read it again. */
  readEarly?: ToolOutput;
}

/** Bytes the queue counts for a job that carries no output. */
export const SMALL_JOB_BYTES = 256;

/** A call as it starts: filed under `startSessionId` once the queue processes its start. */
export function newCall(init: CallStart): RecordedCall {
  // A literal in one fixed field order: this runs on the agent's critical path.
  return {
    tool: init.tool,
    args: init.args,
    rpcId: init.rpcId,
    method: init.method,
    transport: init.transport,
    startedAt: init.startedAt,
    t0: performance.now(),
    namedSessionId: init.namedSessionId,
    startSessionId: init.startSessionId,
    startVia: init.startVia,
    plainServer: init.plainServer,
    mcpSessionHash: init.mcpSessionHash,
    seq: 0,
    argsJson: null,
    argsDropped: false,
    pendingRowWritten: false,
    completionCounted: false,
    queuedBytes: SMALL_JOB_BYTES,
  };
}

/** Hand the waiting caller its value, once. */
export function handBack(call: RecordedCall, value: unknown): void {
  const give = call.handBack;
  call.handBack = undefined;
  give?.(value);
}
