/**
 * Trace and span ids that a session's log decides: the same session exported twice (live, then backfilled,
 * or backfilled twice) carries the same ids, so a backend keeps one copy.
 */
import { createHash } from 'node:crypto';

/** A W3C trace context: the agent's span a call was made under. */
export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** A `traceparent` header value as W3C Trace Context level 1 reads it, or null when it is not one. */
export function parseTraceParent(value: unknown): TraceParent | null {
  if (typeof value !== 'string' || value.length > 512) return null;
  const m = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!m) return null;
  const [, version, traceId, spanId, flags] = m as unknown as [string, string, string, string, string];
  // Version ff is invalid; version 00 allows nothing after the flags.
  if (version === 'ff' || (version === '00' && value.trim().length !== 55)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

function hex(input: string, chars: number): string {
  const digest = createHash('sha256').update(input).digest('hex').slice(0, chars);
  // An all-zero id is invalid; a sha256 prefix of zeros is astronomically unlikely, but stay valid.
  return /^0+$/.test(digest) ? `${digest.slice(0, -1)}1` : digest;
}

/** The trace of a session: one per session id and start time (a reused id is another run). */
export function sessionTraceId(sessionId: string, startedAt: string): string {
  return hex(`mcec-recorder/trace/${sessionId}/${startedAt}`, 32);
}

/** The session's root span. */
export function sessionSpanId(sessionId: string, startedAt: string): string {
  return hex(`mcec-recorder/session/${sessionId}/${startedAt}`, 16);
}

/** The span of call `seq` of a session. */
export function callSpanId(sessionId: string, startedAt: string, seq: number): string {
  return hex(`mcec-recorder/call/${sessionId}/${startedAt}/${seq}`, 16);
}
