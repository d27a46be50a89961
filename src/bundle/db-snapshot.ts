/** A consistent, deterministic copy of a session log for a bundle, safe to take while the recorder writes. */
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE } from '../paths/naming.js';
import { withoutUrlCredentials } from '../redact/inline-secrets.js';
import { describeLogError, openLogForReading } from '../store/open.js';
import { rewriteEventDetails } from '../store/rewrite-events.js';

/** The event a live OTLP export keeps its counts in: its collector URL, and errors that may quote it. */
const OTLP_EXPORT_EVENT = 'otlp-export';

/**
 * Copy `<sessionDir>/session.sqlite` to `destFile` with `VACUUM INTO` from a reading connection: one read
 * transaction, so the copy is a snapshot even while the log is written; rebuilt row by row, so it holds no
 * free pages and two copies of the same content are byte-identical (the backup API copies pages as they lie).
 * The copy is not synced to disk.
 */
export function snapshotSessionDb(sessionDir: string, destFile: string): { bytes: number } {
  const file = path.join(sessionDir, LOG_FILE);
  const log = openLogForReading(file);
  const { db } = log;
  const synchronous = db.pragma('synchronous', { simple: true }) as number;
  let exportEvents = false;
  try {
    // VACUUM INTO syncs the copy per this connection's setting; a copy (for a bundle, a temp file zipped and
    // deleted) needs no sync: same bytes, 57 -> 36 ms for 8.7 MB here, far more on a slow disk.
    db.pragma('synchronous = OFF');
    // VACUUM INTO writes only `destFile`, yet a handle that must not write the log (query_only) refuses it.
    db.pragma('query_only = 0');
    fs.rmSync(destFile, { force: true });
    db.prepare('VACUUM INTO ?').run(destFile);
    exportEvents =
      db.prepare('SELECT 1 FROM events WHERE kind = ? LIMIT 1').get(OTLP_EXPORT_EVENT) !== undefined;
    // As the log's last handle its close may checkpoint a writer's WAL into the log: synced, as any writer's.
    db.pragma(`synchronous = ${synchronous}`);
  } catch (err) {
    const described = describeLogError(file, err);
    // A damaged page the report's queries never read can still stop the copy: the rest can be bundled.
    if (described instanceof Error && described !== err)
      throw Object.assign(
        new Error(`${described.message}; bundle the rest without the log (--no-db, or the option db: false)`),
        {
          code: (err as { code?: unknown }).code,
        },
      );
    throw described;
  } finally {
    log.close();
  }
  // A recorder before 2026-12-06 stored the collector URL as given, credentials and all: the copy never has them.
  if (exportEvents) rewriteEventDetails(destFile, OTLP_EXPORT_EVENT, withoutCredentials);
  return { bytes: fs.statSync(destFile).size };
}

/** Every string of an event's detail with URL credentials replaced (`withoutUrlCredentials`). */
function withoutCredentials(detail: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(detail))
    out[key] = typeof value === 'string' ? withoutUrlCredentials(value) : value;
  return out;
}

/** The log file a bundle carries: always a snapshot in `tmpDir` (a temp file to delete). */
export interface BundleDb {
  file: string;
  bytes: number;
}

/**
 * Always a `VACUUM INTO` snapshot, never the log file as it lies: the file's pages depend on its history
 * (free pages, WAL checkpoints), so streaming it would make a bundle taken after the writer ended differ from
 * one taken while it was alive. The snapshot depends only on the rows, so the same session gives the same zip.
 */
export function bundleDb(sessionDir: string, tmpDir: string): BundleDb {
  const dest = path.join(tmpDir, LOG_FILE);
  return { file: dest, bytes: snapshotSessionDb(sessionDir, dest).bytes };
}
