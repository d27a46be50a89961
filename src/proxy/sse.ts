/**
 * Reading a `text/event-stream` answer on the side, event by event, only to record the JSON-RPC messages it
 * carries (MCP's Streamable HTTP: one message per event's `data`). The bytes reach the client untouched.
 */

import { StringDecoder } from 'node:string_decoder';

/** One event's data (its `data:` lines joined by newlines), or an event too large to keep. */
export type SseEvent = { kind: 'data'; data: string } | { kind: 'oversize'; bytes: number };

/**
 * An incremental event-stream parser (the WHATWG rules: lines end in CRLF, LF or CR; a blank line ends an
 * event; `data:` lines are joined; comments and other fields are skipped). An event's data is held only up
 * to `maxEventChars`; a longer one is reported as oversize and never held whole.
 */
export class SseParser {
  private readonly decoder = new StringDecoder('utf8');
  /** The unfinished last line. */
  private line = '';
  private data: string[] = [];
  private dataChars = 0;
  private hasData = false;
  private oversize = false;
  private oversizeChars = 0;
  /** The previous chunk ended in CR: an LF at the start of the next one belongs to it. */
  private afterCr = false;

  constructor(
    private readonly onEvent: (event: SseEvent) => void,
    private readonly maxEventChars: number,
  ) {}

  push(chunk: Buffer): void {
    this.feed(this.decoder.write(chunk));
  }

  /** The stream ended: an unfinished event is dropped, as the standard says. */
  end(): void {
    this.feed(this.decoder.end());
  }

  private feed(text: string): void {
    let start = 0;
    if (this.afterCr && text.charCodeAt(0) === 10) start = 1;
    this.afterCr = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.takeLine(this.line + text.slice(start, i));
      this.line = '';
      if (c === 13) {
        if (i + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    if (start < text.length) this.appendPartial(text.slice(start));
  }

  /** Keep an unfinished line, bounded: a line past the cap makes its event oversize. */
  private appendPartial(part: string): void {
    if (this.line.length + part.length + this.dataChars > this.maxEventChars) {
      this.oversize = true;
      this.oversizeChars += this.line.length + part.length;
      this.line = this.line.startsWith('data') ? 'data:' : this.line.slice(0, 8);
      return;
    }
    this.line += part;
  }

  private takeLine(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.charCodeAt(0) === 58) return; // a comment (":keep-alive")
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== 'data') return; // event, id, retry: not needed to record the message
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    this.hasData = true;
    if (this.oversize) {
      this.oversizeChars += value.length;
      return;
    }
    this.dataChars += value.length + 1;
    if (this.dataChars > this.maxEventChars) {
      this.oversize = true;
      this.oversizeChars = this.dataChars;
      this.data = [];
      return;
    }
    this.data.push(value);
  }

  private dispatch(): void {
    const event: SseEvent | null = this.oversize
      ? { kind: 'oversize', bytes: this.oversizeChars }
      : this.hasData && this.dataChars > 1
        ? { kind: 'data', data: this.data.join('\n') }
        : null; // no data, or empty data (a priming event, which the standard does not dispatch)
    this.data = [];
    this.dataChars = 0;
    this.hasData = false;
    this.oversize = false;
    this.oversizeChars = 0;
    if (event) this.onEvent(event);
  }
}

/** True when a Content-Type header names an event stream. */
export function isEventStream(contentType: string | string[] | undefined): boolean {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  return typeof value === 'string' && value.trim().toLowerCase().startsWith('text/event-stream');
}
