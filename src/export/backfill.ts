/** Sends recorded sessions to an OTLP collector after the fact; sending one twice sends the same ids. */
import path from 'node:path';
import { oneDirPerSession, type SessionCopies, type SessionDirIdentity } from '../paths/naming.js';
import { SessionReader } from '../store/session-reader.js';
import { createOtlpSink, type ExportCounts, type OtlpOptions } from './otlp-sink.js';
import { planSession } from './session-spans.js';

/** What a backfill did. */
export interface BackfillResult extends ExportCounts {
  url: string;
  sessions: number;
  /** Sessions whose log could not be read, with why. */
  unreadable: Array<{ dir: string; error: string }>;
  /**
   * Sessions more than one of the dirs held (copies: the same log id and start), sent once from the first dir
   * named (the session's own `<stamp>-<id>` dir when there is one); the others were not read.
   */
  copies: SessionCopies[];
}

/**
 * Export each session's spans, then flush and shut the sink; never throws for one bad session. Copies of a
 * session among `dirs` are sent once (`oneDirPerSession`, as triage and the JUnit report count them): they
 * would send the same trace and span ids again, and count twice.
 */
export async function exportSessions(
  dirs: string[],
  options: OtlpOptions & { onProgress?: (done: number, total: number) => void } = {},
): Promise<BackfillResult> {
  const { kept, copies } = oneDirPerSession(dirs, identityOfDir);
  const sink = createOtlpSink(options);
  const unreadable: BackfillResult['unreadable'] = [];
  let sessions = 0;
  for (const [i, dir] of kept.entries()) {
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
    options.onProgress?.(i + 1, kept.length);
  }
  await sink.shutdown();
  return { url: sink.url, sessions, unreadable, copies, ...sink.counts() };
}

/** A dir's log id and start; an unreadable log is known by its dir name only (never a copy). */
function identityOfDir(dir: string): SessionDirIdentity {
  const dirName = path.basename(dir);
  let reader: SessionReader | undefined;
  try {
    reader = SessionReader.open(dir);
    const row = reader.session();
    return { dirName, sessionId: row.session_id, startedAt: row.started_at };
  } catch {
    return { dirName, sessionId: dirName, startedAt: null };
  } finally {
    reader?.close();
  }
}
