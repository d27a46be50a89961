/**
 * Live export: after the recorder commits a session's rows, the spans of its newly settled calls go to the
 * OTLP sink; when the session ends, its root span. Spans are planned from the committed log with the same
 * code as the backfill, so live and backfilled spans are identical, ids included. Runs in the recorder's
 * background queue, never on an agent's call, and never throws: a failure here is a dropped span, counted.
 */

import { SessionReader } from '../store/session-reader.js';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS, type LiveExportOptions } from './live-options.js';
import { createOtlpSink, type ExportCounts, type OtlpSink } from './otlp-sink.js';
import { callLookupByQuery, planRoot, sessionFacts } from './session-spans.js';
import { planCallSpan, type SessionFacts } from './span-plan.js';

/** One session being exported. */
interface Tracked {
  reader: SessionReader;
  facts: SessionFacts;
  /** Every call below this seq has been sent. */
  firstUnsent: number;
  /** Calls at or above firstUnsent already sent (a later call settled before an earlier one). */
  sent: Set<number>;
}

/** Options of the live export (defined beside the `otlp` option's reading, light to import). */
export type { LiveExportOptions };

/** The live OTLP export of a recorder; see the module comment. */
export class LiveTraceExport {
  private readonly sink: OtlpSink;
  private readonly sessions = new Map<string, Tracked>();
  private readonly options: LiveExportOptions;
  /** Errors reading a log (the spans concerned are not sent). */
  readErrors = 0;

  constructor(options: LiveExportOptions, sink?: OtlpSink) {
    this.options = options;
    this.sink = sink ?? createOtlpSink(options);
  }

  /** The collector's traces endpoint. */
  get url(): string {
    return this.sink.url;
  }

  /** Send the spans of the calls of session `dir` that settled since the last time. */
  committed(dir: string): void {
    try {
      const t = this.track(dir);
      t.reader.snapshot(() => this.sendSettled(t, false));
    } catch {
      this.readErrors += 1;
    }
  }

  /** The session ended: send its remaining calls (a pending one as unanswered) and its root span. */
  ended(dir: string): void {
    try {
      const t = this.track(dir);
      t.reader.snapshot(() => {
        t.facts = sessionFacts(t.reader);
        this.sendSettled(t, true);
        this.sink.emit(planRoot(t.reader));
      });
    } catch {
      this.readErrors += 1;
    }
    this.forget(dir);
  }

  /** `listener` hears which sessions' counts changed (a batch of their spans was answered or failed). */
  onCountsChanged(listener: (sessionIds: ReadonlySet<string>) => void): void {
    this.sink.onSettled(listener);
  }

  /** What became of one session's spans so far. */
  counts(sessionId?: string): ExportCounts {
    return this.sink.counts(sessionId);
  }

  /**
   * Flush what is queued, waiting at most `shutdownTimeoutMs`, and not past `deadline` (a `Date.now()` time)
   * when given; idempotent.
   */
  async shutdown(deadline?: number): Promise<void> {
    for (const dir of [...this.sessions.keys()]) this.forget(dir);
    const timeout = this.options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    const limit = deadline === undefined ? timeout : Math.max(0, Math.min(timeout, deadline - Date.now()));
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    await Promise.race([
      this.sink.shutdown(),
      new Promise<void>((resolve) => {
        // Not unref'd: the SDK's own timers are, and a process at its end must live until the spans are out.
        timer = setTimeout(() => {
          late = true;
          resolve();
        }, limit);
      }),
    ]);
    if (timer) clearTimeout(timer);
    // What the collector has not answered by now is dropped: its connections must not hold the exit.
    if (late) this.sink.abandon();
  }

  private track(dir: string): Tracked {
    let t = this.sessions.get(dir);
    if (!t) {
      const reader = SessionReader.open(dir);
      t = { reader, facts: reader.snapshot(() => sessionFacts(reader)), firstUnsent: 1, sent: new Set() };
      this.sessions.set(dir, t);
    }
    return t;
  }

  private forget(dir: string): void {
    const t = this.sessions.get(dir);
    if (!t) return;
    this.sessions.delete(dir);
    try {
      t.reader.close();
    } catch {
      // already closed
    }
  }

  /** Emit each settled call not sent yet (and pending ones when `final`), moving firstUnsent past them. */
  private sendSettled(t: Tracked, final: boolean): void {
    const lookup = callLookupByQuery(t.reader);
    const facts = final ? t.facts : { ...t.facts, endedAt: new Date().toISOString() };
    let contiguous = true;
    for (const row of t.reader.calls({ fromSeq: t.firstUnsent })) {
      if (!t.sent.has(row.seq)) {
        if (row.status === 'pending' && !final) {
          contiguous = false; // this one waits for its answer; later ones may go meanwhile
          continue;
        }
        this.sink.emit(planCallSpan(facts, lookup.facts(row), this.options));
        t.sent.add(row.seq);
      }
      if (contiguous) {
        t.firstUnsent = row.seq + 1;
        t.sent.delete(row.seq);
      }
    }
  }
}
