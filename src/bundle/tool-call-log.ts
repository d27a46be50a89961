/**
 * `tool-calls.jsonl` in the existing evidence bundle's format (mcec-wire §6): one line per JSON-RPC message,
 * `{ts, sessionId, direction, method, payload}`, rebuilt from the call rows and `exchange` events of a log.
 */
import type { CallRow, EventRow } from '../store/schema.js';
import { isRecord } from '../util/json.js';
import { StagedFile } from '../util/staged-file.js';
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

/** One log line; the key order is the existing bundle's. `payload` is JSON text, embedded as is. */
interface Line {
  ts: string;
  direction: 'request' | 'response';
  method: string | null;
  payload: string;
  seq?: number;
  payloadDropped?: boolean;
}

function lineText(line: Line, sessionIdJson: string): string {
  let text =
    `{"ts":${JSON.stringify(line.ts)},"sessionId":${sessionIdJson},"direction":"${line.direction}",` +
    `"method":${JSON.stringify(line.method)},"payload":${line.payload}`;
  if (line.seq !== undefined) text += `,"seq":${line.seq}`;
  if (line.payloadDropped) text += ',"payloadDropped":true';
  return `${text}}`;
}

/** Build tool-calls.jsonl by iterating the call rows once; stops reading at the cap. */
export function buildToolCallLog(
  source: ToolCallLogSource,
  sessionId: string,
  options: ToolCallLogOptions = {},
): ToolCallLog {
  const out = new GrowingBuffer(options.capBytes ?? TOOL_CALL_LOG_CAP);
  const lines = new LogLines(source, sessionId, out, options);
  for (const row of source.calls()) if (!lines.add(row)) break;
  const facts = lines.end(); // writes the last events and the truncation line: before the bytes are taken
  return { data: out.toBuffer(), ...facts };
}

/**
 * tool-calls.jsonl written into `file` (created, never replaced) as the call rows are handed to it, in seq
 * order, a few hundred KiB at a time: the log is never whole in memory, and whoever reads the rows for another
 * purpose (the bundle's report.html) can write the log on the same pass. The bytes are buildToolCallLog's.
 */
export class ToolCallLogFile {
  private readonly out: FileLines;
  private readonly lines: LogLines;

  constructor(
    source: Pick<ToolCallLogSource, 'events'>,
    sessionId: string,
    readonly file: string,
    options: ToolCallLogOptions = {},
  ) {
    this.out = new FileLines(file);
    this.lines = new LogLines(source, sessionId, this.out, options);
  }

  /** The next call row's lines; rows past the cap are left out. */
  add(row: CallRow): void {
    this.lines.add(row);
  }

  /** The events after the last call, the truncation line, the file closed: what buildToolCallLog returns but the bytes, and their size. */
  end(): Omit<ToolCallLog, 'data'> & { size: number } {
    try {
      return { ...this.lines.end(), size: this.out.length };
    } finally {
      this.out.close(); // flushes what is staged: a failed write fails end()
    }
  }

  /** Close the file without finishing the log (the bundle failed; its temp dir goes next). */
  abort(): void {
    this.out.close();
  }
}

/** Where the lines go: bytes that can be cut back to an earlier length. */
interface LineSink {
  length: number;
  /** Append `text` and a newline; returns the bytes appended (its UTF-8 length plus one). */
  writeLine(text: string): number;
  /** Drop everything past `length` bytes. */
  truncate(length: number): void;
}

/** The log's lines into `out`, a call row at a time, within the cap (then the truncation line). */
class LogLines {
  private readonly cap: number;
  private readonly truncationSize = Buffer.byteLength(TRUNCATION_LINE) + 1;
  private readonly sessionIdJson: string;
  // Lines go straight into bytes: holding them as strings would keep every row's text alive until the end.
  private readonly sizes: number[] = [];
  private readonly isCallRequest: boolean[] = [];
  private truncated = false;
  private readonly json = new JsonCleaner();
  /** Exchange events and faults of no call, in time order; `nextEvent` is the first not written yet. */
  private readonly events: EventRow[];
  private nextEvent = 0;

  constructor(
    source: Pick<ToolCallLogSource, 'events'>,
    sessionId: string,
    private readonly out: LineSink,
    private readonly options: ToolCallLogOptions,
  ) {
    this.cap = options.capBytes ?? TOOL_CALL_LOG_CAP;
    this.sessionIdJson = JSON.stringify(sessionId);
    this.events = standaloneEvents(source);
  }

  /** The events before `row`, then its request and response lines; false once the cap is reached. */
  add(row: CallRow): boolean {
    if (this.truncated || !this.flushEventsUntil(row.started_at)) return false;
    const [request, response] = callLines(row, this.json);
    if (!this.push(request)) return false;
    if (response && !this.push(response)) return false;
    this.options.onCall?.();
    return true;
  }

  /** The events after the last call (or the truncation line); what was written. */
  end(): Omit<ToolCallLog, 'data'> {
    if (!this.truncated) this.flushEventsUntil(null);
    const { out, cap, truncationSize } = this;
    if (this.truncated && out.length + truncationSize <= cap) {
      out.writeLine(TRUNCATION_LINE);
      this.sizes.push(truncationSize);
    }
    return {
      lines: this.sizes.length,
      calls: this.isCallRequest.filter(Boolean).length,
      truncated: this.truncated,
      imagesRedacted: this.json.redacted,
    };
  }

  private push(line: Line): boolean {
    const { out, cap, truncationSize, sizes } = this;
    const text = lineText(line, this.sessionIdJson);
    // Written, then taken back when over the cap: its UTF-8 length is learnt by encoding it once.
    const start = out.length;
    const size = out.writeLine(text);
    if (out.length > cap) {
      out.truncate(start);
      // Over the cap: take lines back until the truncation line fits, so the whole file stays within it.
      this.truncated = true;
      while (sizes.length > 0 && out.length + truncationSize > cap) {
        this.isCallRequest.pop();
        out.truncate(out.length - sizes.pop()!);
      }
      return false;
    }
    sizes.push(size);
    this.isCallRequest.push(line.method === 'tools/call' && line.direction === 'request');
    return true;
  }

  private flushEventsUntil(ts: string | null): boolean {
    const { events } = this;
    while (this.nextEvent < events.length && (ts === null || events[this.nextEvent]!.at <= ts)) {
      for (const line of eventLines(events[this.nextEvent]!, this.json)) if (!this.push(line)) return false;
      this.nextEvent += 1;
    }
    return true;
  }
}

/** A byte buffer that doubles up to a limit, for text written line by line. */
class GrowingBuffer implements LineSink {
  private buf: Buffer;
  length = 0;

  constructor(private readonly limit: number) {
    this.buf = Buffer.allocUnsafe(Math.min(limit, 64 * 1024));
  }

  writeLine(text: string): number {
    const size = Buffer.byteLength(text) + 1;
    const need = this.length + size;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, Math.min(this.limit, this.buf.length * 2)));
      this.buf.copy(grown, 0, 0, this.length);
      this.buf = grown;
    }
    this.length += this.buf.write(text, this.length, 'utf8');
    this.buf[this.length] = 10;
    this.length += 1;
    return size;
  }

  /** Drop everything past `length` bytes. */
  truncate(length: number): void {
    this.length = length;
  }

  /** The bytes written (a view: the buffer is at most twice their size). */
  toBuffer(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** Lines into a new file through a staging buffer; cutting back below what was written truncates it. */
class FileLines implements LineSink {
  private readonly out: StagedFile;

  constructor(file: string) {
    this.out = new StagedFile(file);
  }

  get length(): number {
    return this.out.length;
  }

  writeLine(text: string): number {
    return this.out.appendLine(text);
  }

  truncate(length: number): void {
    this.out.truncate(length);
  }

  /** Write what is staged and close the file (idempotent). */
  close(): void {
    this.out.close();
  }
}

/** A run of base64 alphabet this long (or an escaped `+`, `/`, `=`, or a data: URI) sends text to the full check. */
const LONG_RUN = 32;

/**
 * Turns stored JSON text into clean JSON text. Text that cannot hold image bytes (no long base64 run, no
 * escaped base64 chars, no data: URI) is embedded as is, without a parse; anything else is parsed, scrubbed
 * with findImageBytes and re-serialized.
 */
class JsonCleaner {
  redacted = 0;

  /** Clean JSON text, or null when it is not JSON. */
  text(raw: string): string | null {
    if (!mayHoldImageBytes(raw) && looksLikeJson(raw)) return raw;
    const parsed = parseJson(raw);
    if (!parsed.ok) return null;
    return JSON.stringify(this.value(parsed.value));
  }

  /** Clean a parsed value (in place where possible). */
  value(value: unknown): unknown {
    const res = scrubImageBytes(value);
    this.redacted += res.replaced;
    return res.value;
  }

  /** Clean JSON text, or the text as a JSON string (scrubbed too) when it is not JSON. */
  textOrString(raw: string): string {
    return this.text(raw) ?? JSON.stringify(this.value(raw));
  }
}

function mayHoldImageBytes(text: string): boolean {
  return (
    hasBase64Run(text, LONG_RUN) || text.includes('\\u00') || text.includes('\\/') || text.includes('data:')
  );
}

function isBase64Code(c: number): boolean {
  // A-Z, a-z, '/' and 0-9 (47..57), '+'
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 47 && c <= 57) || c === 43;
}

/**
 * True when `text` has `min` consecutive base64 chars. Skip search: check each window from its last char
 * backwards and jump past the first char that is not base64, so typical JSON is read sparsely; chars already
 * known to be base64 are not read twice, so it stays linear.
 */
export function hasBase64Run(text: string, min: number): boolean {
  const n = text.length;
  let start = 0;
  let good = -1; // text[start..good] is known to be base64
  while (start + min <= n) {
    const end = start + min - 1;
    const floor = Math.max(start, good + 1);
    let i = end;
    while (i >= floor && isBase64Code(text.charCodeAt(i))) i -= 1;
    if (i < floor) return true;
    good = end;
    start = i + 1;
  }
  return false;
}

/** A cheap shape check: the recorder stores JSON.stringify output, so objects, arrays and scalars only. */
function looksLikeJson(text: string): boolean {
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(text.length - 1);
  return (
    (first === 123 && last === 125) ||
    (first === 91 && last === 93) ||
    /^(-?\d[\d.eE+-]*|true|false|null)$/.test(text.slice(0, 40))
  );
}

/** Exchange events and protocol faults that belong to no call row, in time order. */
function standaloneEvents(source: Pick<ToolCallLogSource, 'events'>): EventRow[] {
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

function eventLines(ev: EventRow, json: JsonCleaner): Line[] {
  const parsed = parseJson(ev.detail);
  const detail = parsed.ok && isRecord(parsed.value) ? parsed.value : {};
  const method = typeof detail.method === 'string' ? detail.method : null;
  if (ev.kind === 'protocol-fault') {
    const error = { code: detail.code ?? null, message: detail.message ?? '' };
    const payload = json.value({ jsonrpc: '2.0', id: detail.id ?? null, error });
    return [{ ts: ev.at, direction: 'response', method, payload: JSON.stringify(payload) }];
  }
  const out: Line[] = [];
  if (detail.request !== undefined) {
    out.push({
      ts: ev.at,
      direction: 'request',
      method,
      payload: JSON.stringify(json.value(detail.request)),
    });
  }
  if (detail.response !== undefined && detail.response !== null) {
    out.push({
      ts: ev.at,
      direction: 'response',
      method,
      payload: JSON.stringify(json.value(detail.response)),
    });
  }
  return out;
}

function callLines(row: CallRow, json: JsonCleaner): [Line, Line | null] {
  const idText = (row.rpc_id != null ? json.text(row.rpc_id) : null) ?? String(row.seq);
  const dropped = row.payload_dropped === 1;
  let params = `{"name":${JSON.stringify(row.tool)}`;
  if (row.args != null) params += `,"arguments":${json.textOrString(row.args)}`;
  params += '}';
  const request: Line = {
    ts: row.started_at,
    direction: 'request',
    method: 'tools/call',
    payload: `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${params}}`,
    seq: row.seq,
    payloadDropped: dropped && row.args == null,
  };
  if (row.status === 'pending' || cancelledUnanswered(row)) return [request, null];
  return [
    request,
    {
      ts: row.ended_at ?? row.started_at,
      direction: 'response',
      method: 'tools/call',
      payload: responsePayload(row, idText, json),
      seq: row.seq,
      payloadDropped: dropped && row.envelope == null,
    },
  ];
}

/**
 * A call the client cancelled (MCP's notifications/cancelled) that got no answer: the server owes none, so
 * there is no response line to rebuild (its failure is in the row, and the cancel is an exchange line).
 */
function cancelledUnanswered(row: CallRow): boolean {
  return row.status === 'failed' && row.envelope == null && row.response == null && row.payload_dropped !== 1;
}

/** The JSON-RPC response as the server sent it, rebuilt from the stored response shape and envelope. */
function responsePayload(row: CallRow, idText: string, json: JsonCleaner): string {
  const envelope = row.envelope == null ? null : json.text(row.envelope);
  // What stands for the envelope: its JSON, or (dropped / unreadable) a JSON string saying so.
  const envelopeJson =
    envelope ?? JSON.stringify(row.envelope == null ? DROPPED_TEXT : json.value(row.envelope));
  const shape = parseJson(row.response);
  if (shape.ok && isRecord(shape.value)) {
    const value = json.value(shape.value) as Record<string, unknown>;
    const envelopeText = envelope ?? (JSON.parse(envelopeJson) as string);
    if (typeof value.jsonrpc === 'string' && ('result' in value || 'error' in value)) {
      if ('result' in value) value.result = rebuildCallToolResult(value.result, envelopeText);
      return JSON.stringify(value);
    }
    return `{"jsonrpc":"2.0","id":${idText},"result":${JSON.stringify(rebuildCallToolResult(value, envelopeText))}}`;
  }
  if (row.status === 'fault' && envelope == null) {
    const error = { code: row.error_code, message: row.error_detail ?? '' };
    return `{"jsonrpc":"2.0","id":${idText},"error":${JSON.stringify(json.value(error))}}`;
  }
  return `{"jsonrpc":"2.0","id":${idText},"result":${envelopeJson}}`;
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
