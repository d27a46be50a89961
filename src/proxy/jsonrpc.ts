/** Reading JSON-RPC messages seen on the wire, only to decide how to record them (never to re-send). */

/** One wire message, classified for recording. */
export type WireMessage =
  | { kind: 'request'; id: string | number; method: string; message: Record<string, unknown> }
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
    if (id === undefined) return { kind: 'notification', method, message };
    if (idOk) return { kind: 'request', id, method, message };
    return { kind: 'invalid', reason: 'request id is not a string or number', message };
  }
  if ('result' in message || 'error' in message) {
    if (idOk || id === null) return { kind: 'response', id, message };
  }
  return { kind: 'invalid', reason: 'not a JSON-RPC request or response', message };
}

/** Map key for a JSON-RPC id that keeps 1 and "1" apart. */
export function idKey(id: string | number | null): string {
  return typeof id === 'number' ? `n:${id}` : typeof id === 'string' ? `s:${id}` : 'null';
}

/** A short, single-line excerpt of untrusted text for an error message (no secrets are expected here). */
export function excerpt(text: string, max = 200): string {
  const head = text.length > max ? `${text.slice(0, max)}...` : text;
  let out = '';
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i);
    out += c < 0x20 || c === 0x7f ? ' ' : head[i];
  }
  return out;
}
