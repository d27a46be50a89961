/** Maps what a proxy sees on the wire to recorder calls; every call is guarded so recording never breaks the wire. */

import { MCP_SESSION_DELETE } from '../record/event-recording.js';
import { settleWithHttpAnswer } from '../record/http-answer.js';
import { routingArgument } from '../record/routing.js';
import { excerpt } from '../util/excerpt.js';
import { declarationOf, isRecorderMethod } from './declarations.js';
import { classifyParsed, idKey, type WireMessage } from './jsonrpc.js';
import {
  type ProxyExchangeMeta,
  type ProxyOversizeAnswer,
  type ProxyPendingExchange,
  type ProxyRecorder,
  recordEvent,
} from './recorder-port.js';

const NOOP_PENDING: ProxyPendingExchange = {
  complete() {},
  fail() {},
  timedOut() {},
  clientLeft() {},
  cancelled() {},
  tooLarge() {},
  // An unrecorded call's answer is not read at all.
  answered() {},
  note() {},
};

/** Server requests awaiting the client's reply, at most this many (the oldest is recorded unanswered). */
const MAX_SERVER_REQUESTS = 256;

/** A request of the server (sampling, elicitation, roots, ping) waiting for the client's reply. */
interface ServerRequest {
  method: string;
  id: string | number;
  params: unknown;
  at: Date;
  /** The call whose answer carried it (HTTP) or named by its progress token; else the connection's. */
  call: ProxyPendingExchange | undefined;
  /** The MCP session whose stream carried it (HTTP's Mcp-Session-Id; '' for none). */
  scope: string;
}

/** Records wire traffic of one proxy into a recorder. */
export class WireRecording {
  /** Calls in flight by their progress token (`params._meta.progressToken`), keyed with their scope. */
  private readonly progressTokens = new Map<string, ProxyPendingExchange>();
  /** Requests of the server by scope and id, until the client replies. */
  private readonly serverRequests = new Map<string, ServerRequest>();
  /**
   * The client's requests in flight by scope and id, until they settle: what a client's cancel names. Several
   * under one key (clients of a server without session ids, MCEC's, share the scope ''): a cancel could be
   * any one's, so it marks none.
   */
  private readonly inFlight = new Map<string, ProxyPendingExchange[]>();

  constructor(
    private readonly recorder: ProxyRecorder,
    private readonly transport: 'http' | 'stdio',
  ) {}

  /**
   * A request with an id went to the server: a pending exchange, settled when its response comes. `scope`
   * keeps ids of different MCP sessions apart (HTTP: the Mcp-Session-Id; stdio: one scope).
   */
  begin(message: Record<string, unknown>, startedAt: Date, scope = ''): ProxyPendingExchange {
    let pending: ProxyPendingExchange;
    try {
      const meta = { transport: this.transport, startedAt, ...(scope ? { mcpSessionId: scope } : {}) };
      pending = this.recorder.beginExchange(message, meta);
    } catch {
      return NOOP_PENDING;
    }
    const transport = this.transport;
    const token = progressTokenOf(message);
    const tokenKey = token === undefined ? undefined : `${scope}\n${idKey(token)}`;
    const id = message.id;
    const idKeyed = typeof id === 'string' || typeof id === 'number' ? `${scope}\n${idKey(id)}` : undefined;
    const forget = () => {
      if (tokenKey !== undefined && this.progressTokens.get(tokenKey) === wrapped)
        this.progressTokens.delete(tokenKey);
      const same = idKeyed === undefined ? undefined : this.inFlight.get(idKeyed);
      if (same) {
        const at = same.indexOf(wrapped);
        if (at >= 0) same.splice(at, 1);
        if (same.length === 0) this.inFlight.delete(idKeyed!);
      }
    };
    let settled = false;
    // Every call is guarded: a recorder that throws is counted by itself, if at all; the wire goes on.
    const guard = (fn: () => void) => {
      try {
        fn();
      } catch {
        // recording never breaks the wire
      }
    };
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      forget();
      guard(fn);
    };
    const wrapped: ProxyPendingExchange = {
      complete(response: unknown, meta?: ProxyExchangeMeta) {
        settle(() => pending.complete(response, { transport, startedAt, endedAt: new Date(), ...meta }));
      },
      fail(reason: string) {
        settle(() => pending.fail(reason));
      },
      tooLarge(answer: ProxyOversizeAnswer, meta?: ProxyExchangeMeta) {
        settle(() => pending.tooLarge(answer, { transport, startedAt, endedAt: new Date(), ...meta }));
      },
      answered(status: number, body: Uint8Array, answerMeta?: ProxyExchangeMeta) {
        const meta = { transport, startedAt, endedAt: new Date(), ...answerMeta };
        // A recorder on this thread reads the answer here; the worker's, on its own thread.
        settle(() =>
          pending.answered
            ? pending.answered(status, body, meta)
            : settleWithHttpAnswer(pending, status, body, meta),
        );
      },
      // Not settling: the answer may still come.
      timedOut(reason: string) {
        if (!settled) guard(() => pending.timedOut(reason));
      },
      clientLeft(reason: string) {
        if (!settled) guard(() => pending.clientLeft(reason));
      },
      // Not settling either: an answer already on its way replaces it (the recorder's rule).
      cancelled(reason: string) {
        if (!settled) guard(() => pending.cancelled?.(reason));
      },
      note(kind: string, detail: Record<string, unknown>, at?: Date) {
        guard(() => pending.note(kind, detail, at));
      },
    };
    if (tokenKey !== undefined) this.progressTokens.set(tokenKey, wrapped);
    if (idKeyed !== undefined) {
      const same = this.inFlight.get(idKeyed);
      if (same) same.push(wrapped);
      else this.inFlight.set(idKeyed, [wrapped]);
    }
    return wrapped;
  }

  /**
   * A notification from the client, seen as it goes to the server: `notifications/cancelled` naming a request
   * in flight in the same scope marks that request cancelled by the client (the server owes it no answer, so
   * it would otherwise wait for the proxy or the server to stop and read as their failure).
   */
  clientNotification(message: Record<string, unknown>, scope = ''): void {
    if (message.method !== 'notifications/cancelled') return;
    const params = message.params;
    if (params === null || typeof params !== 'object') return;
    const { requestId, reason } = params as { requestId?: unknown; reason?: unknown };
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const same = this.inFlight.get(`${scope}\n${idKey(requestId)}`);
    if (same?.length !== 1) return;
    const pending = same[0]!;
    const why = typeof reason === 'string' && reason !== '' ? `: ${excerpt(reason, 200)}` : '';
    pending.cancelled?.(`the client cancelled the call (notifications/cancelled)${why}`);
  }

  /**
   * A message the server sent on its own (on a call's event stream, a GET stream, or a stdio line): a
   * notification becomes an event of its call (the stream's call, else the one its progress token names),
   * else of the connection; a request waits for the client's reply. `call` is the call whose answer
   * stream carried it.
   */
  fromServer(message: WireMessage, at: Date, call?: ProxyPendingExchange, scope = ''): void {
    if (message.kind === 'notification') {
      const params = message.message.params;
      const owner = this.byProgressToken(params, scope) ?? call;
      const detail = { method: message.method, params: params ?? null };
      if (owner) owner.note('notification', detail, at);
      else
        recordEvent(
          this.recorder,
          'notification',
          { ...detail, transport: this.transport },
          undefined,
          scope,
        );
      return;
    }
    if (message.kind !== 'request' || message.id === null) return;
    const key = `${scope}\n${idKey(message.id)}`;
    if (this.serverRequests.size >= MAX_SERVER_REQUESTS) {
      const [oldestKey, oldest] = this.serverRequests.entries().next().value as [string, ServerRequest];
      this.serverRequests.delete(oldestKey);
      this.serverRequestEvent(oldest, { unanswered: true });
    }
    const params = message.message.params;
    this.serverRequests.set(key, {
      method: message.method,
      id: message.id,
      params: params ?? null,
      at,
      call: this.byProgressToken(params, scope) ?? call,
      scope,
    });
  }

  /**
   * The client's JSON-RPC response to a request of the server (sampling, elicitation, roots): the pair is
   * an event of the call that was running, or of the connection. Never a protocol fault.
   */
  clientReply(message: Record<string, unknown>, at: Date, scope = ''): void {
    const id = message.id;
    const key = typeof id === 'string' || typeof id === 'number' ? `${scope}\n${idKey(id)}` : undefined;
    const request = key === undefined ? undefined : this.serverRequests.get(key);
    if (key !== undefined && request) {
      this.serverRequests.delete(key);
      this.serverRequestEvent(request, replyOf(message), at);
      return;
    }
    const unpaired = {
      method: null,
      id: id ?? null,
      ...replyOf(message),
      unpaired: true,
      transport: this.transport,
    };
    recordEvent(this.recorder, 'server-request', unpaired, undefined, scope);
  }

  private serverRequestEvent(request: ServerRequest, reply: Record<string, unknown>, at = new Date()): void {
    const detail = {
      method: request.method,
      id: request.id,
      params: request.params,
      ...reply,
      replyMs: Math.max(0, at.getTime() - request.at.getTime()),
    };
    if (request.call) request.call.note('server-request', detail, request.at);
    else {
      const event = { ...detail, transport: this.transport };
      recordEvent(this.recorder, 'server-request', event, undefined, request.scope);
    }
  }

  private byProgressToken(params: unknown, scope: string): ProxyPendingExchange | undefined {
    if (params === null || typeof params !== 'object') return undefined;
    const token = (params as { progressToken?: unknown }).progressToken;
    if (typeof token !== 'string' && typeof token !== 'number') return undefined;
    return this.progressTokens.get(`${scope}\n${idKey(token)}`);
  }

  /**
   * A notification (no id) and whatever answer it got (none on stdio; an empty 202 on HTTP). One addressed
   * to the recorder (a declared step or verdict, see declarations.ts) becomes that event, not an exchange.
   */
  notification(
    message: Record<string, unknown>,
    startedAt: Date,
    response: unknown = null,
    scope = '',
  ): void {
    if (isRecorderMethod(message.method)) {
      const d = declarationOf(message);
      const detail = d.kind === 'protocol-fault' ? { ...d.detail, transport: this.transport } : d.detail;
      // Without a sessionId it is the declaring client's MCP session's (HTTP: `scope`), as its exchanges are.
      recordEvent(this.recorder, d.kind, detail, d.sessionId, scope);
      return;
    }
    this.exchange(message, response, startedAt, scope);
  }

  /**
   * A message that is not a JSON-RPC request, paired with the server's answer when it gave one (usually
   * -32700 or -32600 with id null: the recorder turns that into the protocol-fault event). Without an
   * answer, the proxy records the fault itself. `scope`: the request's MCP session (HTTP's Mcp-Session-Id),
   * only the client's word: the recorder files it there once a call started there, else as the connection's.
   */
  invalid(reason: string, raw: string, parsed: unknown, startedAt: Date, answer: unknown, scope = ''): void {
    const response = classifyParsed(answer);
    if (response.kind === 'response') {
      this.exchange(parsed ?? { unparsed: excerpt(raw, 120) }, response.message, startedAt, scope);
    } else {
      this.fault('request', reason, raw, scope);
    }
  }

  /**
   * A line or body that is not JSON-RPC and got no JSON-RPC answer: a protocol-fault event of our own; `scope`
   * as for `invalid` (HTTP: the request's, or the stream's that carried it).
   */
  fault(direction: 'request' | 'response', reason: string, raw: string, scope = ''): void {
    const detail = {
      code: -32700,
      message: `${direction} ${reason}: ${excerpt(raw, 120)}`,
      id: null,
      method: null,
      transport: this.transport,
    };
    recordEvent(this.recorder, 'protocol-fault', detail, undefined, scope);
  }

  /** A response whose id matches no request in flight; `scope` as for `invalid` (HTTP: its stream's request's). */
  orphanResponse(message: Record<string, unknown>, at: Date, scope = ''): void {
    this.exchange(null, message, at, scope);
  }

  /**
   * A message over the recording limit that could not be tied to a call: passed through, noted here; `scope` as
   * for `invalid` (HTTP: the request whose stream carried it).
   */
  oversize(
    direction: 'request' | 'answer',
    bytes: number,
    limit: number,
    read: { isError?: boolean | undefined; rpcError?: boolean | undefined } = {},
    scope = '',
  ): void {
    const detail: Record<string, unknown> = { direction, bytes, limit, transport: this.transport };
    if (read.isError !== undefined) detail.isError = read.isError;
    if (read.rpcError) detail.rpcError = true;
    recordEvent(this.recorder, 'oversize-message', detail, undefined, scope);
  }

  /**
   * A failure of the proxy itself (target down, too slow, body too large, a gate's refusal), in the call's
   * session if known, else the MCP session of the request (`scope`, HTTP's Mcp-Session-Id) when the recorder
   * has recorded it.
   */
  proxyError(detail: Record<string, unknown>, sessionId?: string, scope = ''): void {
    recordEvent(this.recorder, 'proxy-error', { transport: this.transport, ...detail }, sessionId, scope);
  }

  /** The server took the client's DELETE of MCP session `scope`: its recording ends now. */
  mcpSessionDeleted(status: number, scope: string): void {
    recordEvent(this.recorder, MCP_SESSION_DELETE, { status }, undefined, scope);
  }

  /** An exchange that is not a call; `scope`: the MCP session it ran in (HTTP: its Mcp-Session-Id), if any. */
  private exchange(request: unknown, response: unknown, startedAt: Date, scope = ''): void {
    try {
      const meta: ProxyExchangeMeta = { transport: this.transport, startedAt, endedAt: new Date() };
      if (scope !== '') meta.mcpSessionId = scope;
      this.recorder.recordExchange(request, response, meta);
    } catch {
      // recording never breaks the wire
    }
  }
}

/** A request's `params._meta.progressToken`, when it asks for progress. */
function progressTokenOf(message: Record<string, unknown>): string | number | undefined {
  const params = message.params;
  if (params === null || typeof params !== 'object') return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  if (meta === null || typeof meta !== 'object') return undefined;
  const token = (meta as { progressToken?: unknown }).progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/** What the client replied: its result or its error. */
function replyOf(message: Record<string, unknown>): Record<string, unknown> {
  return 'error' in message ? { error: message.error ?? null } : { result: message.result ?? null };
}

/** The session a tools/call request names, as MCEC reads it (src/record/routing.ts), when it names one. */
export function sessionIdOf(message: Record<string, unknown>): string | undefined {
  const params = message.params;
  if (params === null || typeof params !== 'object') return undefined;
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  return routingArgument(typeof name === 'string' ? name : '', args);
}

export type { WireMessage };
