/** The part of the recorder the proxies use: typed from src/record's Recorder, so the two cannot drift. */
import type { ExchangeMeta, OversizeAnswer, PendingExchange, Recorder } from '../record/types.js';

/** Timing and transport of one exchange, as the recorder takes it. */
export type ProxyExchangeMeta = ExchangeMeta;

/** An answer passed to the client but not recorded (over the proxy's cap); what could be read cheaply. */
export type ProxyOversizeAnswer = OversizeAnswer;

/** A request the recorder has seen; settled with the response, a failure or an oversize answer. */
export type ProxyPendingExchange = PendingExchange;

/**
 * What a proxy needs from a recorder: exchanges, proxy events, the bearer tokens it sees, room to record, and
 * close.
 */
export type ProxyRecorder = Pick<
  Recorder,
  'beginExchange' | 'recordExchange' | 'event' | 'rememberHeaderSecret' | 'room' | 'close'
>;

/**
 * Longest a proxy holds a request back while the recorder has no room: past it the request goes on (recording
 * never stops the wire; an answer past the recorder's byte cap is then recorded without its body).
 */
export const ROOM_WAIT_MS = 1000;

/**
 * One proxy's pacing by its recorder's room: a client faster than the recording is paced by it instead of
 * filling the recorder's memory. A wait that runs out (ROOM_WAIT_MS) means the recorder is stalled (a commit
 * stuck on a locked disk): from then on requests go on at once until that room comes, so a stall costs the
 * wire one ROOM_WAIT_MS, not one per request.
 */
export class RecorderRoom {
  private stalled = false;

  constructor(private readonly recorder: ProxyRecorder) {}

  /** Undefined when the request may go on now; else a promise that resolves when it may. Never rejects. */
  wait(): Promise<void> | undefined {
    if (this.stalled) return undefined;
    let room: Promise<void> | undefined;
    try {
      room = this.recorder.room();
    } catch {
      return undefined; // Recording never breaks the wire.
    }
    if (!room) return undefined;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.stalled = true;
        resolve();
      }, ROOM_WAIT_MS);
      const roomCame = () => {
        clearTimeout(timer);
        this.stalled = false;
        resolve();
      };
      room.then(roomCame, roomCame);
    });
  }
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
): void {
  try {
    recorder.event(sessionId, kind, detail);
  } catch {
    // Recording never breaks the wire.
  }
}
