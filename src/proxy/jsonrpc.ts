/** Reading JSON-RPC messages seen on the wire, only to decide how to record them (never to re-send). */

/**
 * Methods MCEC answers even without an id (absent or null): with `"id": null`, and an id-less tools/call
 * runs (mcec-wire §8). Any other method without an id is a notification.
 */
export const ANSWERED_WITHOUT_ID: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
]);

/** One wire message, classified for recording. A request's id is null when it had none (or null). */
export type WireMessage =
  | { kind: 'request'; id: string | number | null; method: string; message: Record<string, unknown> }
  | { kind: 'notification'; method: string; message: Record<string, unknown> }
  | { kind: 'response'; id: string | number | null; message: Record<string, unknown> }
  | { kind: 'invalid'; reason: string; message: unknown };

/** Classify the text of one JSON-RPC message (a body or a line); never throws. */
export function classifyMessage(text: string): WireMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: 'invalid', reason: 'not JSON', message: undefined };
  }
  return classifyParsed(parsed);
}

/** Classify an already parsed message. */
export function classifyParsed(parsed: unknown): WireMessage {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return {
      kind: 'invalid',
      reason: Array.isArray(parsed) ? 'batch' : 'not a JSON-RPC object',
      message: parsed,
    };
  }
  const message = parsed as Record<string, unknown>;
  const id = message.id;
  const method = message.method;
  const idOk = typeof id === 'string' || typeof id === 'number';
  if (typeof method === 'string') {
    if (idOk) return { kind: 'request', id, method, message };
    if (id === undefined || id === null) {
      if (ANSWERED_WITHOUT_ID.has(method)) return { kind: 'request', id: null, method, message };
      return { kind: 'notification', method, message };
    }
    return { kind: 'invalid', reason: 'request id is not a string, a number or null', message };
  }
  if ('result' in message || 'error' in message) {
    if (idOk || id === null) return { kind: 'response', id, message };
  }
  return { kind: 'invalid', reason: 'not a JSON-RPC request or response', message };
}

/**
 * Which answered-without-id method a result answers, read from its shape (an id-null answer names no
 * request): content blocks for tools/call, tools for tools/list, protocolVersion for initialize, else ping.
 */
export function methodOfResult(result: unknown): string {
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return 'ping';
  const r = result as Record<string, unknown>;
  if (Array.isArray(r.content)) return 'tools/call';
  if (Array.isArray(r.tools)) return 'tools/list';
  if ('protocolVersion' in r || 'serverInfo' in r) return 'initialize';
  return 'ping';
}

/** Map key for a JSON-RPC id that keeps 1 and "1" apart. */
export function idKey(id: string | number | null): string {
  return typeof id === 'number' ? `n:${id}` : typeof id === 'string' ? `s:${id}` : 'null';
}
