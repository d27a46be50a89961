/**
 * A proxy's pending exchange (`beginExchange`): settles once, by `complete`, `fail` or `tooLarge`; `timedOut`
 * and `clientLeft` may come first (what the client saw meanwhile). A tools/call is a recorded call; any
 * other exchange becomes an event of the connection.
 */

import { isRecord } from '../util/json.js';
import {
  type ClientSaw,
  jobBytes,
  type RecordedCall,
  SMALL_JOB_BYTES,
  type TransportFailureCode,
} from './call.js';
import type { Job } from './jobs.js';
import { roughSize, roughValueSize } from './outcome.js';
import type { NotRecorded } from './recording-gap.js';
import { oversizeDetail } from './rows.js';
import type { ServerIdentity } from './server-identity.js';
import type { ExchangeMeta, OversizeAnswer, PendingExchange } from './types.js';
import { validDate } from './values.js';

/** Where an exchange's settlement goes: the recorder's queue and its events. */
export interface ExchangeSink {
  push(job: Job, size: number): void;
  /** The recorder's wall clock, for stamps the proxy did not give. */
  now(): Date;
  /**
   * Null while an answer of `bytes` fits the record queue; else the queue's byte cap: the proxies never wait
   * for room (bytes pass through first), so past the cap an answer is recorded without its body.
   */
  overQueueCap(bytes: number): number | null;
  /**
   * True at the queue's byte cap (it holds it, or `bytes` more would take it past): `what` is counted into the
   * recording gap (recording-gap.ts) and must not be queued. What settles an exchange already begun is not asked.
   */
  refuses(what: NotRecorded, bytes: number): boolean;
}

/**
 * An answer recorded without its body because the record queue was full, as an oversize answer; its outcome
 * read from the answer at hand (a JSON-RPC error, or a result's `isError`) so the row's status stays true.
 */
export function queueFull(bytes: number, limit: number, output?: unknown): OversizeAnswer {
  const answer: OversizeAnswer = { bytes, limit, reason: 'queue-full' };
  if (!isRecord(output)) return answer;
  if (isRecord(output.error)) answer.rpcError = true;
  const result = isRecord(output.result) ? output.result : output;
  if (typeof result.isError === 'boolean') answer.isError = result.isError;
  return answer;
}

/** What a closed recorder hands a proxy: an exchange that records nothing. */
export const NOOP_EXCHANGE: PendingExchange = {
  complete() {},
  fail() {},
  timedOut() {},
  clientLeft() {},
  cancelled() {},
  tooLarge() {},
  note() {},
};

/**
 * The exchange of a tools/call whose start is queued: open -> settled, or open -> timed-out (a fault row now)
 * -> settled (the real outcome replaces it, with a `late-answer` event).
 */
export function toolCallExchange(sink: ExchangeSink, call: RecordedCall, startedAt: Date): PendingExchange {
  let state: 'open' | 'timed-out' | 'settled' = 'open';
  let saw: ClientSaw | undefined;
  const times = (m?: ExchangeMeta) => {
    const endedAt = validDate(m?.endedAt) ?? sink.now();
    return { endedAt, durationMs: endedAt.getTime() - (validDate(m?.startedAt) ?? startedAt).getTime() };
  };
  const settle = (answer: { output?: unknown; oversize?: OversizeAnswer }, m?: ExchangeMeta) => {
    const late = state === 'timed-out';
    state = 'settled';
    let size = answer.oversize ? SMALL_JOB_BYTES : roughSize(answer.output);
    const cap = answer.oversize ? null : sink.overQueueCap(size);
    if (cap !== null) {
      answer = { oversize: queueFull(size, cap, answer.output) };
      size = SMALL_JOB_BYTES;
    }
    // Named fields, no spreads: `{ ...a, ...b, x }` makes a new hidden class per call in Node 20 (~3 us).
    const { endedAt, durationMs } = times(m);
    const { output, oversize } = answer;
    if (late && saw) {
      sink.push({ type: 'late', call, late: { output, oversize, endedAt, durationMs, size }, saw }, size);
      return;
    }
    call.answered({ output, oversize, endedAt, durationMs, clientSaw: saw, size });
    sink.push({ type: 'complete', call }, size);
  };
  const failAtTransport = (reason: string, code?: TransportFailureCode) => {
    const { endedAt, durationMs } = times();
    call.failedAtTransport(reason, endedAt, durationMs, code);
    sink.push({ type: 'complete', call }, SMALL_JOB_BYTES);
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
      failAtTransport(typeof reason === 'string' ? reason : String(reason));
    },
    timedOut: (reason) => {
      if (state !== 'open') return;
      state = 'timed-out';
      const text = typeof reason === 'string' ? reason : String(reason);
      saw ??= { client: 'proxy-timeout', reason: text }; // a client already gone saw no 504
      failAtTransport(text);
    },
    clientLeft: (reason) => {
      if (state === 'open' && !saw) saw = { client: 'disconnected', reason: String(reason) };
    },
    // As a timeout: the row says so now, and an answer already on its way still replaces it.
    cancelled: (reason) => {
      if (state !== 'open') return;
      state = 'timed-out';
      const text = typeof reason === 'string' ? reason : String(reason);
      saw ??= { client: 'cancelled', reason: text };
      failAtTransport(text, 'cancelled');
    },
    note: (kind, detail, at) => {
      const size = jobBytes(detail);
      if (sink.refuses('other', size)) return;
      sink.push({ type: 'call-event', call, kind, detail, at: validDate(at) ?? new Date() }, size);
    },
  };
}

/** A request's JSON-RPC head (its params left out): what a settling record holds of it at the queue's cap. */
function requestHead(request: unknown): unknown {
  if (!isRecord(request)) return null;
  const head: Record<string, unknown> = {};
  for (const key of ['jsonrpc', 'id', 'method']) if (key in request) head[key] = request[key];
  return head;
}

/**
 * The MCP session an exchange ran in, from its request's `Mcp-Session-Id` or else its answer's (initialize's
 * is given by its answer): the recorder's id of that session when the server is not MCEC, else undefined.
 */
export type ExchangeSession = (answerMeta?: ExchangeMeta) => string | undefined;

/** The `ExchangeSession` of a request with this `Mcp-Session-Id`; asked when it settles (after initialize's answer named the server). */
export function exchangeSession(
  server: ServerIdentity,
  requestSessionId: string | undefined,
): ExchangeSession {
  return (m) => {
    const mcpSessionId = requestSessionId ?? m?.mcpSessionId;
    return mcpSessionId ? server.mcpSessionOf(mcpSessionId)?.id : undefined;
  };
}

/**
 * The exchange of anything but a tools/call: an `exchange` event of the connection (of its MCP session, when
 * `sessionOf` names one) once it settles, its request counted as `requestBytes` (its rough size) in the queue.
 * Its own events (`late-answer`, `oversize-message`, a note) go where it goes. An exchange with no JSON-RPC
 * request (`method` null: an orphan answer, a body that is not JSON-RPC) holds its MCP session only on the
 * client's word: it goes there only once a call started there (`clientsWord`, event-recording.ts).
 */
export function otherExchange(
  sink: ExchangeSink,
  request: unknown,
  method: string | null,
  requestBytes = roughValueSize(request),
  sessionOf?: ExchangeSession,
): PendingExchange {
  let state: 'open' | 'settled' = 'open';
  let saw: ClientSaw | undefined;
  const clientsWord = method === null;
  // What settles this exchange, begun before any cap, is queued whatever the cap (one or two small events).
  const settling = (kind: string, detail: Record<string, unknown>, mcpSession: string | undefined) => {
    const at = sink.now();
    const job: Job = { type: 'event', sessionId: undefined, kind, detail, at, mcpSession, clientsWord };
    sink.push(job, jobBytes(detail));
  };
  const noteSaw = (mcpSession: string | undefined) => {
    if (saw) settling('late-answer', { client: saw.client, reason: saw.reason, method }, mcpSession);
  };
  /** Settled: its record, into the MCP session it ran in (read from the answer's meta for initialize's). */
  const settle = (response: unknown, at: Date, size: number, failed?: string, m?: ExchangeMeta) => {
    state = 'settled';
    // At the cap the record holds the request's head alone: one small record per exchange in flight.
    const whole = sink.overQueueCap(size + requestBytes) === null;
    const held = whole ? request : requestHead(request);
    const mcpSession = sessionOf?.(m);
    sink.push(
      { type: 'exchange', request: held, response, at, failed, mcpSession, clientsWord },
      whole ? size + requestBytes : size,
    );
    return mcpSession;
  };
  const bodiless = (answer: OversizeAnswer, at: Date, m?: ExchangeMeta) => {
    const failed =
      answer.reason === 'queue-full'
        ? `the answer (about ${answer.bytes} bytes) came while the record queue held its ${answer.limit} bytes: passed through, not recorded`
        : `the answer (${answer.bytes} bytes) was over the recording limit: passed through, not recorded`;
    const mcpSession = settle(null, at, SMALL_JOB_BYTES, failed, m);
    settling('oversize-message', { ...oversizeDetail('answer', answer, undefined), method }, mcpSession);
    noteSaw(mcpSession);
  };
  return {
    complete: (response, m) => {
      if (state === 'settled') return;
      const at = validDate(m?.endedAt) ?? sink.now();
      const size = roughSize(response);
      const cap = sink.overQueueCap(size + requestBytes);
      if (cap !== null) return bodiless(queueFull(size, cap), at, m);
      noteSaw(settle(response, at, size, undefined, m));
    },
    tooLarge: (answer, m) => {
      if (state === 'settled') return;
      bodiless(answer, sink.now(), m);
    },
    fail: (reason) => {
      if (state === 'settled') return;
      settle(null, sink.now(), SMALL_JOB_BYTES, typeof reason === 'string' ? reason : String(reason));
    },
    // The proxy records its own proxy-error event; the exchange is written when it settles.
    timedOut: (reason) => {
      if (state === 'open' && !saw) saw = { client: 'proxy-timeout', reason: String(reason) };
    },
    clientLeft: (reason) => {
      if (state === 'open' && !saw) saw = { client: 'disconnected', reason: String(reason) };
    },
    cancelled: (reason) => {
      if (state === 'settled') return;
      settle(null, sink.now(), SMALL_JOB_BYTES, typeof reason === 'string' ? reason : String(reason));
    },
    // Of its MCP session as the request named it (initialize's, named by its answer, is not known yet).
    note: (kind, detail, at) => {
      const event = { ...detail, during: method };
      const size = jobBytes(event);
      if (sink.refuses('other', size)) return;
      const mcpSession = sessionOf?.();
      const when = validDate(at) ?? sink.now();
      sink.push(
        { type: 'event', sessionId: undefined, kind, detail: event, at: when, mcpSession, clientsWord },
        size,
      );
    },
  };
}

/**
 * `initialize`: its answer says which server this is, at once (the calls that follow are read by it): MCEC
 * or another MCP server, whose results are plain and whose sessions are its MCP sessions.
 */
export function initializeExchange(
  sink: ExchangeSink,
  request: unknown,
  server: ServerIdentity,
  requestBytes?: number,
  sessionOf?: ExchangeSession,
): PendingExchange {
  const inner = otherExchange(sink, request, 'initialize', requestBytes, sessionOf);
  return {
    ...inner,
    complete: (response, m) => {
      server.initialized(response);
      inner.complete(response, m);
    },
  };
}
