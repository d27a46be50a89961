/**
 * Recording what is not a tool call, off the critical path: declared events (steps, verdicts, free-form),
 * a call's events (what the server streamed while it ran), the connection's JSON-RPC exchanges (initialize,
 * tools/list, ping, notifications, protocol faults) and `recorder.end()`.
 */
import type { Redactor } from '../redact/redactor.js';
import { isRecord } from '../util/json.js';
import type { RecordedCall } from './call.js';
import { clipForLog } from './clip.js';
import { RECORDING_GAP } from './recording-gap.js';
import { serverInfoFrom } from './server-info.js';
import type { SessionRegistry } from './session-registry.js';
import type { RecordStage } from './types.js';
import { withoutImageBytes } from './values.js';

/**
 * Events about the whole recorder, not one connection: a recording gap (recording-gap.ts, either recorder) may have cost
 * any open session calls, so it goes into each of them.
 */
export const RECORDER_WIDE_KINDS: ReadonlySet<string> = new Set([RECORDING_GAP]);

/**
 * The events a proxy reports of a request (a refusal or failure, a fault, a message over the limit) whose MCP
 * session is only the client's word (its `Mcp-Session-Id` header, which no server need have checked first):
 * filed in that MCP session only once a call started there (`mcpSessionWhere`).
 */
export const CLIENTS_WORD_KINDS: ReadonlySet<string> = new Set([
  'proxy-error',
  'protocol-fault',
  'oversize-message',
]);

/**
 * Where a record of `mcpSession` goes: that session (kept for it until its first call), or, when the MCP
 * session is only the client's word, that session only if the registry holds it, else the connection's
 * (undefined): a record must not wait for a session that may never come, and a forged id names none.
 */
function mcpSessionWhere(
  registry: SessionRegistry,
  mcpSession: string | undefined,
  clientsWord: boolean | undefined,
): string | undefined {
  if (mcpSession === undefined || !clientsWord) return mcpSession;
  return registry.find(mcpSession) ? mcpSession : undefined;
}

/**
 * Events the proxies write of their own, without a session, whose detail a peer sent or provoked: clipped as
 * a call's event and held to the session's budget for what peers send (`RecordedSession.noteFromWire`).
 */
const PROXY_WIRE_KINDS: ReadonlySet<string> = new Set([
  'notification',
  'server-request',
  'protocol-fault',
  'proxy-error',
  'oversize-message',
]);

/**
 * What the HTTP proxy tells the recorder when the server took a client's `DELETE` of its MCP session (MCP's
 * session end): never stored as an event of its own; that MCP session's recording ends then (`session-end`
 * `via: 'mcp-session-delete'`), not when the proxy stops.
 */
export const MCP_SESSION_DELETE = 'mcp-session-delete';

/** A call's event (a streamed notification, a server request) is clipped to this. */
const MAX_CALL_EVENT_CHARS = 64 * 1024;

/** What the recording of events needs from the recorder. */
export interface EventRecordingDeps {
  registry: SessionRegistry;
  redactor: Redactor;
  /** Run a stage (fault seam, throws tagged with the stage). */
  stage: <T>(name: RecordStage, fn: () => T) => T;
  /** True once the recorder has closed: nothing more is written. */
  closed: () => boolean;
}

export class EventRecording {
  private readonly deps: EventRecordingDeps;

  constructor(deps: EventRecordingDeps) {
    this.deps = deps;
  }

  /**
   * A declared event: into the session it names, else `mcpSession` (the MCP session of a server that is not
   * MCEC whose client declared it or whose stream carried it), else the connection's current session (or the
   * preamble). With `clientsWord` (by default for a `proxy-error`, `protocol-fault` or `oversize-message`,
   * `CLIENTS_WORD_KINDS`; an exchange's own events follow its exchange) it goes to `mcpSession` only once a
   * call started there: the header is the client's word, and such an event must not wait for a session that
   * may never come. A proxy's own event without a session (`PROXY_WIRE_KINDS`: a notification or server
   * request of the connection, a proxy-error, ...) is clipped as a call's event and held to the session's
   * budget for what peers send.
   */
  declared(
    sessionId: string | undefined,
    kind: string,
    detail: unknown,
    at: Date,
    mcpSession?: string,
    clientsWord?: boolean,
  ): void {
    const { registry, redactor, stage } = this.deps;
    if (this.deps.closed()) return;
    const id = sessionId?.trim();
    if (!id && kind === MCP_SESSION_DELETE) {
      // Only a session already written (one with a call): one that never had a call stays unwritten.
      const s = mcpSession === undefined ? undefined : registry.find(mcpSession);
      if (s && s.status === 'open' && s.counts.calls > 0) registry.end(s, { via: MCP_SESSION_DELETE }, at);
      return;
    }
    const stored = stage('redact', () => withoutImageBytes(redactor.redact(detail)));
    if (!id) {
      if (RECORDER_WIDE_KINDS.has(kind) && registry.noteInOpenSessions(kind, stored, at)) return;
      const where = mcpSessionWhere(registry, mcpSession, clientsWord ?? CLIENTS_WORD_KINDS.has(kind));
      if (PROXY_WIRE_KINDS.has(kind))
        registry.connectionEvent(kind, clipForLog(stored, MAX_CALL_EVENT_CHARS).value, at, where, true);
      else registry.connectionEvent(kind, stored, at, where);
      return;
    }
    const s = registry.obtain(id, 'argument', at);
    s.countDeclared();
    s.note(kind, stored, null, at);
  }

  /**
   * An event of a call (what the server streamed while it ran, its requests and the client's replies): in
   * the call's session with its seq, redacted and bounded like a last observation.
   */
  ofCall(call: RecordedCall, kind: string, detail: unknown, at: Date): void {
    const { registry, redactor, stage } = this.deps;
    if (this.deps.closed()) return;
    const redacted = stage('redact', () => withoutImageBytes(redactor.redact(detail)));
    const stored = clipForLog(redacted, MAX_CALL_EVENT_CHARS).value;
    const s = call.session;
    if (s) s.noteFromWire(kind, JSON.stringify(stored) ?? 'null', call.seq, at);
    else registry.connectionEvent(kind, stored, at, undefined, true);
  }

  /**
   * A JSON-RPC exchange that is not a tool call (initialize, tools/list, ping, notifications, protocol
   * faults): an event of the connection, or of `mcpSession` (the MCP session of a server that is not MCEC it
   * ran in; with `clientsWord`, only once a call started there, as for `declared`). `initialize` starts a new
   * connection (and names the server).
   */
  exchange(
    request: unknown,
    response: unknown,
    at: Date,
    failed?: string,
    mcpSession?: string,
    clientsWord?: boolean,
  ): void {
    const { registry, redactor, stage } = this.deps;
    if (this.deps.closed()) return;
    const where = mcpSessionWhere(registry, mcpSession, clientsWord);
    const req = isRecord(request) ? request : undefined;
    const method = typeof req?.method === 'string' ? req.method : null;
    const res = isRecord(response) ? response : undefined;
    if (method === 'initialize') {
      registry.newConnection();
      if (res && isRecord(res.result))
        registry.setServer(serverInfoFrom(res.result, (v) => redactor.redact(v)));
    }
    if (res && isRecord(res.error)) {
      const e = res.error;
      const message = typeof e.message === 'string' ? redactor.scrubText(e.message) : '';
      const fault = { code: typeof e.code === 'number' ? e.code : null, message, id: res.id ?? null, method };
      registry.connectionEvent('protocol-fault', fault, at, where, true);
    }
    const stored = stage('redact', () => ({
      request: withoutImageBytes(redactor.redact(request ?? null)),
      response: withoutImageBytes(redactor.redact(response ?? null)),
    }));
    const detail: Record<string, unknown> = { method, request: stored.request, response: stored.response };
    if (failed !== undefined) detail.error = redactor.scrubText(failed);
    registry.connectionEvent('exchange', detail, at, where, true);
  }

  /** `recorder.end()`: the session ends, with the verdict it declares. */
  end(sessionId: string, verdict: { passed?: boolean; reason?: string }, at: Date): void {
    const { registry } = this.deps;
    if (this.deps.closed()) return;
    const s = registry.obtain(sessionId, 'argument', at);
    s.countDeclared();
    registry.end(s, { via: 'end', ...verdict }, at);
  }
}
