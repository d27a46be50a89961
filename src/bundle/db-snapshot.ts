/** A consistent, deterministic copy of a session log for a bundle, safe to take while the recorder writes. */
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE } from '../store/layout.js';
import { openSessionDb } from '../store/open.js';
import type { SessionRow } from '../store/schema.js';
import { isProcessAlive } from '../store/session-reader.js';

/**
 * Copy `<sessionDir>/session.sqlite` to `destFile` with `VACUUM INTO` from a read-only connection: one read
 * transaction, so the copy is a snapshot even while the log is written; rebuilt row by row, so it holds no
 * free pages and two copies of the same content are byte-identical (the backup API copies pages as they lie).
 */
export function snapshotSessionDb(sessionDir: string, destFile: string): { bytes: number } {
  const db = openSessionDb(path.join(sessionDir, LOG_FILE), { readonly: true });
  try {
    fs.rmSync(destFile, { force: true });
    db.prepare('VACUUM INTO ?').run(destFile);
  } finally {
    db.close();
  }
  return { bytes: fs.statSync(destFile).size };
}

/** The log file a bundle should carry: the log itself when nothing can change it, else a snapshot. */
export interface BundleDb {
  file: string;
  bytes: number;
  /** True when `file` is a snapshot made for the bundle (a temp file to delete). */
  snapshot: boolean;
}

/**
 * A finished log (not open, its writer gone, its WAL empty or absent) is complete and stable in its main
 * file, so it is streamed as is; anything else is snapshotted into `tmpDir` first.
 */
export function bundleDb(sessionDir: string, session: SessionRow, tmpDir: string): BundleDb {
  const file = path.join(sessionDir, LOG_FILE);
  const writerGone = session.writer_pid == null || !isProcessAlive(session.writer_pid);
  if (session.status !== 'open' && writerGone && walIsEmpty(file)) {
    return { file, bytes: fs.statSync(file).size, snapshot: false };
  }
  const dest = path.join(tmpDir, LOG_FILE);
  return { file: dest, bytes: snapshotSessionDb(sessionDir, dest).bytes, snapshot: true };
}

function walIsEmpty(file: string): boolean {
  try {
    return fs.statSync(`${file}-wal`).size === 0;
  } catch {
    return true;
  }
}
