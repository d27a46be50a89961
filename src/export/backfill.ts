/** Sends recorded sessions to an OTLP collector after the fact; sending one twice sends the same ids. */
import { SessionReader } from '../store/session-reader.js';
import { createOtlpSink, type ExportCounts, type OtlpOptions } from './otlp-sink.js';
import { planSession } from './session-spans.js';

/** What a backfill did. */
export interface BackfillResult extends ExportCounts {
  url: string;
  sessions: number;
  /** Sessions whose log could not be read, with why. */
  unreadable: Array<{ dir: string; error: string }>;
}

/** Export each session dir's spans, then flush and shut the sink; never throws for one bad session. */
export async function exportSessions(
  dirs: string[],
  options: OtlpOptions & { onProgress?: (done: number, total: number) => void } = {},
): Promise<BackfillResult> {
  const sink = createOtlpSink(options);
  const unreadable: BackfillResult['unreadable'] = [];
  let sessions = 0;
  for (const [i, dir] of dirs.entries()) {
    let reader: SessionReader | undefined;
    try {
      reader = SessionReader.open(dir);
      for (const plan of planSession(reader, options)) sink.emit(plan);
      sessions += 1;
    } catch (err) {
      unreadable.push({ dir, error: (err as Error).message });
    } finally {
      reader?.close();
    }
    // A big backfill sends as it goes, so the queue never has to hold more than a session or so.
    await sink.flush();
    options.onProgress?.(i + 1, dirs.length);
  }
  await sink.shutdown();
  return { url: sink.url, sessions, unreadable, ...sink.counts() };
}
