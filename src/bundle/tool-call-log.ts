/**
 * `tool-calls.jsonl` in the existing evidence bundle's format (mcec-wire §6): one line per JSON-RPC message,
 * `{ts, sessionId, direction, method, payload}`, rebuilt from the call rows and `exchange` events of a log.
 */
import type { CallRow, EventRow } from '../store/schema.js';
import { REDACTED_BASE64, scrubImageBytes } from './scrub.js';

/** The existing bundle's cap on the log: 8 MB, then one truncation line and no more. */
export const TOOL_CALL_LOG_CAP = 8 * 1024 * 1024;
/** The line that ends a capped log, byte for byte as the existing bundle writes it. */
export const TRUNCATION_LINE = '{"truncated":"tool-call log size cap reached"}';

/** What the log is built from: a SessionReader satisfies this. */
export interface ToolCallLogSource {
  calls(): Iterable<CallRow>;
  events(kind?: string): EventRow[];
}

export interface ToolCallLogOptions {
  /** Byte cap including the truncation line (default 8 MiB). */
  capBytes?: number;
  /** Called after each call row is turned into lines. */
  onCall?: () => void;
}

/** The built log. */
export interface ToolCallLog {
  data: Buffer;
  lines: number;
  /** Calls written (request line at least). */
  calls: number;
  truncated: boolean;
  /** Inline images found and replaced on the way (should be 0: the recorder keeps them out). */
  imagesRedacted: number;
}

const DROPPED_TEXT = "[payload dropped by the recorder's log size limit]";

/** One log line; the key order is the existing bundle's. */
interface Line {
  ts: string;
  sessionId: string;
  direction: 'request' | 'response';
  method: string | null;
  payload: unknown;
  seq?: number;
  payloadDropped?: true;
}

/** Build tool-calls.jsonl by iterating the call rows once; stops reading at the cap. */
export function buildToolCallLog(
  source: ToolCallLogSource,
  sessionId: string,
  options: ToolCallLogOptions = {},
): ToolCallLog {
  const cap = options.capBytes ?? TOOL_CALL_LOG_CAP;
  const budget = cap - Buffer.byteLength(TRUNCATION_LINE) - 1;
  const chunks: string[] = [];
  let bytes = 0;
  let lines = 0;
  let calls = 0;
  let truncated = false;
  let imagesRedacted = 0;

  const clean = (value: unknown): unknown => {
    const res = scrubImageBytes(value);
    imagesRedacted += res.replaced;
    return res.value;
  };
  const push = (line: Line): boolean => {
    const text = JSON.stringify(line);
    const size = Buffer.byteLength(text) + 1;
    if (bytes + size > budget) {
      truncated = true;
      return false;
    }
    chunks.push(text);
    bytes += size;
    lines += 1;
    return true;
  };

  const events = standaloneEvents(source);
  let e = 0;
  const flushEventsUntil = (ts: string | null): boolean => {
    while (e < events.length && (ts === null || events[e]!.at <= ts)) {
      for (const line of eventLines(events[e]!, sessionId, clean)) if (!push(line)) return false;
      e += 1;
    }
    return true;
  };

  for (const row of source.calls()) {
    if (!flushEventsUntil(row.started_at)) break;
    const [request, response] = callLines(row, sessionId, clean);
    if (!push(request)) break;
    calls += 1;
    if (response && !push(response)) break;
    options.onCall?.();
  }
  if (!truncated) flushEventsUntil(null);
  if (truncated) chunks.push(TRUNCATION_LINE);
  const text = chunks.length > 0 ? `${chunks.join('\n')}\n` : '';
  return {
    data: Buffer.from(text, 'utf8'),
    lines: lines + (truncated ? 1 : 0),
    calls,
    truncated,
    imagesRedacted,
  };
}

/** Exchange events and protocol faults that belong to no call row, in time order. */
function standaloneEvents(source: ToolCallLogSource): EventRow[] {
  const picked = [
    ...source.events('exchange'),
    ...source.events('protocol-fault').filter((ev) => ev.call_seq == null),
  ];
  return picked.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.id - b.id));
}

function parseJson(text: string | null): { ok: true; value: unknown } | { ok: false } {
  if (text == null) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function eventLines(ev: EventRow, sessionId: string, clean: (v: unknown) => unknown): Line[] {
  const parsed = parseJson(ev.detail);
  const detail = parsed.ok && isRecord(parsed.value) ? parsed.value : {};
  if (ev.kind === 'protocol-fault') {
    const error: Record<string, unknown> = { code: detail.code ?? null, message: detail.message ?? '' };
    return [
      {
        ts: ev.at,
        sessionId,
        direction: 'response',
        method: typeof detail.method === 'string' ? detail.method : null,
        payload: clean({ jsonrpc: '2.0', id: detail.id ?? null, error }),
      },
    ];
  }
  const method = typeof detail.method === 'string' ? detail.method : null;
  const out: Line[] = [];
  if (detail.request !== undefined) {
    out.push({ ts: ev.at, sessionId, direction: 'request', method, payload: clean(detail.request) });
  }
  if (detail.response !== undefined && detail.response !== null) {
    out.push({ ts: ev.at, sessionId, direction: 'response', method, payload: clean(detail.response) });
  }
  return out;
}

function callLines(row: CallRow, sessionId: string, clean: (v: unknown) => unknown): [Line, Line | null] {
  const rpcId = parseJson(row.rpc_id);
  const id = rpcId.ok ? rpcId.value : row.seq;
  const args = parseJson(row.args);
  const dropped = row.payload_dropped === 1;
  const params: Record<string, unknown> = { name: row.tool };
  if (args.ok) params.arguments = clean(args.value);
  else if (row.args != null) params.arguments = row.args; // not JSON: kept as the text the recorder stored
  const request: Line = {
    ts: row.started_at,
    sessionId,
    direction: 'request',
    method: 'tools/call',
    payload: { jsonrpc: '2.0', id, method: 'tools/call', params },
    seq: row.seq,
  };
  if (dropped && row.args == null) request.payloadDropped = true;
  if (row.status === 'pending') return [request, null];

  const response: Line = {
    ts: row.ended_at ?? row.started_at,
    sessionId,
    direction: 'response',
    method: 'tools/call',
    payload: responsePayload(row, id, clean),
    seq: row.seq,
  };
  if (dropped && row.envelope == null) response.payloadDropped = true;
  return [request, response];
}

/** The JSON-RPC response as the server sent it, rebuilt from the stored response shape and envelope. */
function responsePayload(row: CallRow, id: unknown, clean: (v: unknown) => unknown): unknown {
  const env = parseJson(row.envelope);
  const envelope: unknown = env.ok ? clean(env.value) : (row.envelope ?? DROPPED_TEXT);
  const envelopeText = env.ok ? JSON.stringify(envelope) : String(envelope);
  const shape = parseJson(row.response);
  if (shape.ok && isRecord(shape.value)) {
    const value = clean(shape.value) as Record<string, unknown>;
    if (typeof value.jsonrpc === 'string' && ('result' in value || 'error' in value)) {
      if ('result' in value) value.result = rebuildCallToolResult(value.result, envelopeText);
      return value;
    }
    return { jsonrpc: '2.0', id, result: rebuildCallToolResult(value, envelopeText) };
  }
  if (row.status === 'fault' && !env.ok) {
    return { jsonrpc: '2.0', id, error: { code: row.error_code, message: row.error_detail ?? '' } };
  }
  return { jsonrpc: '2.0', id, result: envelope };
}

/** Put the envelope text back into the `[envelope]` block and mark where image bytes were. */
function rebuildCallToolResult(result: unknown, envelopeText: string): unknown {
  if (!isRecord(result) || !Array.isArray(result.content)) return result;
  result.content = result.content.map((block: unknown) => {
    if (!isRecord(block)) return block;
    if (block.type === 'text' && block.text === '[envelope]') return { ...block, text: envelopeText };
    if (block.type === 'image' && block.data === undefined) {
      const { type, ...rest } = block;
      return { type, data: REDACTED_BASE64, ...rest };
    }
    return block;
  });
  return result;
}
