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
}

/** One line of untrusted text, at most `max` characters. */
function clipText(text: string, max: number): string {
  const line = text.slice(0, max + 1).replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

export class Preamble {
  private events: PreambleEvent[] = [];
  private dropped = 0;

  /** Keep an event for the first session (or count it past the bound). */
  keep(kind: string, detail: unknown, at: Date): void {
    if (this.events.length < MAX_PREAMBLE_EVENTS) this.events.push({ kind, detail, at });
    else this.dropped += 1;
  }

  /** Write what is kept into `s` (and say how many were not kept); then nothing is kept. */
  writeInto(s: RecordedSession): void {
    if (this.events.length === 0 && this.dropped === 0) return;
    for (const e of this.events) s.addEvent(e.kind, e.detail, null, e.at);
    if (this.dropped > 0) {
      s.addEvent('record-failure', {
        stage: 'event',
        message: `${this.dropped} handshake events before the first call were not kept`,
        lost: 0,
      });
    }
    this.events = [];
    this.dropped = 0;
    s.markDirty();
  }

  /** The stderr line for a handshake no tool call ever followed (undefined when nothing is kept); clears it. */
  unwrittenNotice(): string | undefined {
    const events = this.events;
    if (events.length === 0 && this.dropped === 0) return undefined;
    this.events = [];
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
