/** The part of the recorder the proxies use: typed from src/record's Recorder, so the two cannot drift. */
import type { ExchangeMeta, OversizeAnswer, PendingExchange, Recorder } from '../record/types.js';

/** Timing and transport of one exchange, as the recorder takes it. */
export type ProxyExchangeMeta = ExchangeMeta;

/** An answer passed to the client but not recorded (over the proxy's cap); what could be read cheaply. */
export type ProxyOversizeAnswer = OversizeAnswer;

/** A request the recorder has seen; settled with the response, a failure or an oversize answer. */
export type ProxyPendingExchange = PendingExchange;

/** What a proxy needs from a recorder: exchanges, proxy events, the bearer tokens it sees, and close. */
export type ProxyRecorder = Pick<
  Recorder,
  'beginExchange' | 'recordExchange' | 'event' | 'rememberHeaderSecret' | 'close'
>;

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
