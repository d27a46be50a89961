/** The part of the recorder the proxies use, plus optional hooks a recorder may offer. */

/** Timing and transport of one exchange, as the recorder takes it. */
export interface ProxyExchangeMeta {
  transport?: 'wrap' | 'http' | 'stdio';
  startedAt?: Date;
  endedAt?: Date;
}

/** An answer passed to the client but not recorded (over the proxy's cap); what could be read cheaply. */
export interface ProxyOversizeAnswer {
  bytes: number;
  limit: number;
  isError?: boolean;
  rpcError?: boolean;
}

/**
 * A request the recorder has seen; completed with the response or failed with a reason. The optional
 * methods (src/record's recorder has them) say what the client saw first; without them a timeout fails the
 * exchange and an oversize answer fails it with a reason.
 */
export interface ProxyPendingExchange {
  complete(response: unknown, meta?: ProxyExchangeMeta): void;
  fail(reason: string): void;
  /** The client got a 504; the answer may still come (and then replaces the failure). */
  timedOut?(reason: string): void;
  /** The client disconnected before the answer. */
  clientLeft?(reason: string): void;
  /** The answer went through unrecorded: over the cap. */
  tooLarge?(answer: ProxyOversizeAnswer, meta?: ProxyExchangeMeta): void;
}

/** What a proxy needs from a recorder (src/record's Recorder satisfies it). */
export interface ProxyRecorder {
  beginExchange(request: unknown, meta?: ProxyExchangeMeta): ProxyPendingExchange;
  recordExchange(request: unknown, response: unknown, meta?: ProxyExchangeMeta): void;
  close(): Promise<void>;
}

/** Optional recorder hooks: a free-form session event, and a secret the redactor must scrub. */
interface RecorderHooks {
  event?: (sessionId: string | undefined, kind: string, detail: Record<string, unknown>) => void;
  rememberSecret?: (secret: string) => void;
  redactor?: { rememberSecret?: (secret: string) => void };
}

/** Tell the recorder's redactor about a secret seen on the wire (a bearer token), when it can take one. */
export function rememberSecret(recorder: ProxyRecorder, secret: string): void {
  if (!secret) return;
  const hooks = recorder as ProxyRecorder & RecorderHooks;
  try {
    if (typeof hooks.rememberSecret === 'function') hooks.rememberSecret(secret);
    else if (typeof hooks.redactor?.rememberSecret === 'function') hooks.redactor.rememberSecret(secret);
  } catch {
    // Recording never breaks the wire.
  }
}

/** Record a proxy-level event (e.g. `proxy-error`) when the recorder offers an event hook. */
export function recordEvent(
  recorder: ProxyRecorder,
  kind: string,
  detail: Record<string, unknown>,
  sessionId?: string,
): void {
  const hooks = recorder as ProxyRecorder & RecorderHooks;
  try {
    if (typeof hooks.event === 'function') hooks.event(sessionId, kind, detail);
  } catch {
    // Recording never breaks the wire.
  }
}
