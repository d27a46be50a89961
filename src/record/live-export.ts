/**
 * The recorder's side of the live OpenTelemetry export. The export reads committed logs (src/export/live.ts);
 * it is imported only when turned on, so a recorder without it never loads the OpenTelemetry SDK. Work is
 * chained in commit order and runs after a commit pass, never inside an agent's call; nothing here throws.
 */

import type { LiveTraceExport } from '../export/live.js';
import {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type LiveExportOptions,
  liveExportOptions,
  type OtlpOption,
  STDIO_SHUTDOWN_TIMEOUT_MS,
  tracesEndpointProblem,
} from '../export/live-options.js';
import type { ExportCounts } from '../export/otlp-sink.js';
import { withoutUrlCredentials } from '../redact/inline-secrets.js';

/** What the hook needs of a session. */
export interface ExportedSession {
  id: string;
  dir: string;
  status: 'open' | 'ended' | 'aborted';
}

/** The detail of an `otlp-export` event: the export's counts for one session. */
export type OtlpExportDetail = ExportCounts & { url: string };

/**
 * Live export for a recorder, or null when it is off (see liveExportOptions). An endpoint that is not an
 * http(s) URL is a RangeError, at once: an export that turned itself off would lose every span in silence.
 * Its close waits `shutdownTimeoutMs`, by default 1 s for a stdio proxy's recorder (`transport`), else 5 s.
 * `notice` hears why an export that was on could not start.
 */
export function openLiveExport(
  option: OtlpOption,
  transport: string | undefined,
  notice: (line: string) => void,
  countsChanged: (sessionIds: ReadonlySet<string>) => void,
): LiveExportHook | null {
  const options = liveExportOptions(option);
  if (!options) return null;
  const problem = tracesEndpointProblem(options.url, 'options.otlp.url');
  if (problem) throw new RangeError(problem);
  const shutdownTimeoutMs =
    options.shutdownTimeoutMs ??
    (transport === 'stdio' ? STDIO_SHUTDOWN_TIMEOUT_MS : DEFAULT_SHUTDOWN_TIMEOUT_MS);
  return new LiveExportHook({ ...options, shutdownTimeoutMs }, notice, countsChanged);
}

/** Feeds committed sessions to the export and reports its counts per session. */
export class LiveExportHook {
  private chain: Promise<LiveTraceExport | null>;
  private exporter: LiveTraceExport | null = null;
  private readonly endedDirs = new Set<string>();
  private readonly written = new Map<string, string>();

  /**
   * `countsChanged` hears the sessions whose counts changed after their commit (a batch answered): their
   * `otlp-export` event is rewritten at the next commit, so a log read mid-run is not stale for long.
   */
  constructor(
    options: LiveExportOptions,
    notice: (line: string) => void,
    countsChanged: (sessionIds: ReadonlySet<string>) => void,
  ) {
    this.chain = import('../export/live.js')
      .then((m) => {
        this.exporter = new m.LiveTraceExport(options);
        this.exporter.onCountsChanged(countsChanged);
        return this.exporter;
      })
      .catch((err: Error) => {
        notice(
          `mcec-recorder: the OpenTelemetry export could not start, no span is sent: ${withoutUrlCredentials(err.message)}`,
        );
        return null;
      });
  }

  /** The session's rows are committed: send its newly settled calls (and its root once it has ended). */
  committed(s: ExportedSession): void {
    const { dir } = s;
    const ended = s.status !== 'open';
    if (ended && this.endedDirs.has(dir)) return;
    if (ended) this.endedDirs.add(dir);
    this.chain = this.chain.then((e) => {
      if (ended) e?.ended(dir);
      else e?.committed(dir);
      return e;
    });
  }

  /** The session's counts when they changed since last asked (for its `otlp-export` event), else null. */
  changedCounts(sessionId: string): OtlpExportDetail | null {
    const e = this.exporter;
    if (!e) return null;
    const counts = e.counts(sessionId);
    if (counts.spans === 0) return null;
    const detail = { url: e.url, ...counts };
    const json = JSON.stringify(detail);
    if (this.written.get(sessionId) === json) return null;
    this.written.set(sessionId, json);
    return detail;
  }

  /**
   * After shutdown: one line saying what the collector did not get (with the last error), or null when every
   * span was delivered. A short run must not end with spans lost in silence.
   */
  undelivered(): string | null {
    const e = this.exporter;
    if (!e) return null;
    const c = e.counts();
    if (c.spans === 0 || c.exported === c.spans) return null;
    const why = c.lastError ? `: ${c.lastError}` : '';
    return `OpenTelemetry export to ${e.url}: ${c.exported} of ${c.spans} spans delivered, ${c.dropped} dropped${why}`;
  }

  /** Wait for the chained work, then flush the export (bounded by its shutdownTimeoutMs and `deadline`). */
  async shutdown(deadline?: number): Promise<void> {
    const e = await this.chain;
    await e?.shutdown(deadline);
  }
}
