/**
 * The connection's events seen before any tool call has landed in a session (the handshake, protocol
 * faults): kept (bounded) and written into the first session a call lands in; when none ever does, one
 * stderr line at close says what was seen.
 */
import { isRecord } from '../util/json.js';
import type { RecordedSession } from './session.js';

/** Handshake events kept while no session has been seen; past this many the rest are counted. */
export const MAX_PREAMBLE_EVENTS = 1000;

interface PreambleEvent {
  kind: string;
  detail: unknown;
  at: Date;
  /** The session of the MCP session the event is of (a server that is not MCEC); else the connection's. */
  mcpSession: string | undefined;
  /** Its detail's JSON characters, counted against `maxChars` while it is kept. */
  chars: number;
}

/** One line of untrusted text, at most `max` characters. */
function clipText(text: string, max: number): string {
  const line = text.slice(0, max + 1).replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

export class Preamble {
  private events: PreambleEvent[] = [];
  private chars = 0;
  private dropped = 0;

  /**
   * @param maxChars JSON characters kept in all (the recorder's `maxLogBytes`): 12 answers of 40 MB that the
   *   client never asked for, before the first call, were held in memory (2 GB) and then written whole.
   */
  constructor(private readonly maxChars: number) {}

  /**
   * Keep an event for the first session (or count it past the bounds); one of an MCP session (`mcpSession`,
   * its session's id) for that session only.
   */
  keep(kind: string, detail: unknown, at: Date, mcpSession?: string): void {
    const chars = (JSON.stringify(detail) ?? 'null').length;
    if (this.events.length < MAX_PREAMBLE_EVENTS && this.chars + chars <= this.maxChars) {
      this.events.push({ kind, detail, at, mcpSession, chars });
      this.chars += chars;
    } else this.dropped += 1;
  }

  /**
   * Write what is kept for `s` into it: the events of its MCP session, and with `connection` the connection's
   * (saying how many were not kept); those of other MCP sessions stay kept for them. Bounded by its own caps,
   * it is not charged to the session's budget for a peer's events: a call's notifications, which reach the
   * session while the call runs, must not push the handshake (`initialize`, the `tools/list` replay serves)
   * out of the log.
   */
  writeInto(s: RecordedSession, connection = true): void {
    if (this.events.length === 0 && (this.dropped === 0 || !connection)) return;
    const left: PreambleEvent[] = [];
    let wrote = false;
    for (const e of this.events) {
      if (e.mcpSession === undefined ? connection : e.mcpSession === s.id) {
        s.addEvent(e.kind, e.detail, null, e.at);
        this.chars -= e.chars;
        wrote = true;
      } else left.push(e);
    }
    this.events = left;
    if (connection && this.dropped > 0) {
      s.addEvent('record-failure', {
        stage: 'event',
        message: `${this.dropped} handshake events before the first call were not kept`,
        lost: 0,
      });
      this.dropped = 0;
      wrote = true;
    }
    if (wrote) s.markDirty();
  }

  /** The stderr line for a handshake no tool call ever followed (undefined when nothing is kept); clears it. */
  unwrittenNotice(): string | undefined {
    const events = this.events;
    if (events.length === 0 && this.dropped === 0) return undefined;
    this.events = [];
    this.chars = 0;
    const methods = new Map<string, number>();
    const faults: string[] = [];
    for (const e of events) {
      const d = isRecord(e.detail) ? e.detail : {};
      if (e.kind === 'exchange') {
        const m = typeof d.method === 'string' ? d.method : '(not a request)';
        methods.set(m, (methods.get(m) ?? 0) + 1);
      } else if (e.kind === 'protocol-fault') {
        faults.push(`${String(d.code)} ${clipText(String(d.message ?? ''), 80)}`);
      } else methods.set(e.kind, (methods.get(e.kind) ?? 0) + 1);
    }
    const seen = [...methods].map(([m, n]) => (n > 1 ? `${m} x${n}` : m)).join(', ');
    const dropped = this.dropped > 0 ? ` (+${this.dropped} not kept)` : '';
    const faultText = faults.length > 0 ? `; protocol faults: ${faults.slice(0, 5).join(' | ')}` : '';
    this.dropped = 0;
    return `mcec-recorder: no tool call followed the handshake, so no session was written for it: ${seen || 'nothing'}${dropped}${faultText}`;
  }
}
