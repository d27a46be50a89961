/** The part of the recorder the proxies use: typed from src/record's Recorder, so the two cannot drift. */
import type { ExchangeMeta, OversizeAnswer, PendingExchange, Recorder } from '../record/types.js';

/** Timing and transport of one exchange, as the recorder takes it. */
export type ProxyExchangeMeta = ExchangeMeta;

/** An answer passed to the client but not recorded (over the proxy's cap); what could be read cheaply. */
export type ProxyOversizeAnswer = OversizeAnswer;

/** A request the recorder has seen; settled with the response, a failure or an oversize answer. */
export type ProxyPendingExchange = PendingExchange;

/** ProxyRecorder's methods, as the proxies check a recorder they are given. */
export const PROXY_RECORDER_METHODS = [
  'beginExchange',
  'recordExchange',
  'event',
  'rememberHeaderSecret',
  'room',
  'close',
] as const satisfies ReadonlyArray<keyof Recorder>;

/**
 * What a proxy needs from a recorder: exchanges, proxy events, the bearer tokens it sees, room to record, and
 * close.
 */
export type ProxyRecorder = Pick<Recorder, (typeof PROXY_RECORDER_METHODS)[number]>;

/**
 * Longest a proxy holds a request back while the recorder has no room: past it the request goes on (recording
 * never stops the wire; an answer past the recorder's byte cap is then recorded without its body).
 */
export const ROOM_WAIT_MS = 1000;

/**
 * The requests held back on each room promise a recorder handed out. A recorder hands all its waiters one
 * promise, and a request that gives up (ROOM_WAIT_MS) leaves this set: a stalled recorder, asked at every
 * request for hours, holds one reaction and the requests still waiting, not a reaction per request ever made.
 */
const heldBack = new WeakMap<Promise<void>, Set<() => void>>();

/**
 * Undefined while the recorder keeps up; else a promise that resolves once it has room, or after ROOM_WAIT_MS:
 * a client faster than the recording is paced by it instead of filling the recorder's memory. Never rejects.
 */
export function recorderRoom(recorder: ProxyRecorder): Promise<void> | undefined {
  let room: Promise<void> | undefined;
  try {
    room = recorder.room();
  } catch {
    return undefined; // Recording never breaks the wire.
  }
  if (!room) return undefined;
  const held = heldBackOn(room);
  return new Promise<void>((resolve) => {
    const goOn = () => {
      clearTimeout(timer);
      held.delete(goOn);
      resolve();
    };
    const timer = setTimeout(goOn, ROOM_WAIT_MS);
    held.add(goOn);
  });
}

function heldBackOn(room: Promise<void>): Set<() => void> {
  let held = heldBack.get(room);
  if (!held) {
    const requests = new Set<() => void>();
    const release = () => {
      heldBack.delete(room); // a recorder that hands this promise out again lets its requests go at once
      for (const goOn of requests) goOn();
    };
    room.then(release, release);
    heldBack.set(room, requests);
    held = requests;
  }
  return held;
}

/** Tell the recorder's redactor about a credential seen on the wire (a bearer token): its own pool. */
export function rememberHeaderSecret(recorder: ProxyRecorder, secret: string): void {
  if (!secret) return;
  try {
    recorder.rememberHeaderSecret(secret);
  } catch {
    // Recording never breaks the wire.
  }
}

/** Record a proxy-level event (e.g. `proxy-error`). */
export function recordEvent(
  recorder: ProxyRecorder,
  kind: string,
  detail: Record<string, unknown>,
  sessionId?: string,
  scope = '',
): void {
  try {
    // `scope`: the MCP session whose stream carried it (HTTP's Mcp-Session-Id), for a server that is not MCEC.
    if (scope === '') recorder.event(sessionId, kind, detail);
    else recorder.event(sessionId, kind, detail, { mcpSessionId: scope });
  } catch {
    // Recording never breaks the wire.
  }
}
