/**
 * How a call's HTTP answer settles its exchange, read from its status and whole body (within the recording
 * limit): a 200 whose body is JSON completes it, anything else fails it saying what came. One function for
 * both threads: the HTTP proxy's own (an in-process recorder) and the worker recorder's (which gets the
 * body's bytes unread, so the proxy's thread never parses an answer).
 */

import { excerpt } from '../util/excerpt.js';
import type { ExchangeMeta, PendingExchange } from './types.js';

/** Settle `pending` with the answer `body` the target sent with HTTP `status`. */
export function settleWithHttpAnswer(
  pending: Pick<PendingExchange, 'complete' | 'fail'>,
  status: number,
  body: Uint8Array,
  meta?: ExchangeMeta,
): void {
  const parsed = parseAnswer(body);
  if (status === 200 && parsed !== undefined) pending.complete(parsed, meta);
  else pending.fail(`target answered HTTP ${status}${errorText(parsed, body)}`);
}

/** The answer's JSON, or undefined when it is empty or not JSON. */
export function parseAnswer(body: Uint8Array): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
  } catch {
    return undefined;
  }
}

function errorText(parsed: unknown, raw: Uint8Array): string {
  if (parsed && typeof parsed === 'object' && typeof (parsed as { error?: unknown }).error === 'string') {
    return `: ${excerpt((parsed as { error: string }).error)}`;
  }
  if (parsed === undefined && raw.length > 0) {
    const head = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.length, 200)).toString('utf8');
    return ` (not JSON: ${excerpt(head, 80)})`;
  }
  return '';
}
