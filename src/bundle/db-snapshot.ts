/** A consistent, compact, deterministic copy of a session log, safe to take while the recorder writes. */
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE } from '../store/layout.js';
import { openSessionDb } from '../store/open.js';

/**
 * Copy `<sessionDir>/session.sqlite` to `destFile` with `VACUUM INTO` from a read-only connection: one read
 * transaction, so the copy is a snapshot even while the log is written; rebuilt page by page, so it holds no
 * free pages (no leftovers of deleted rows) and two copies of the same content are byte-identical (unlike the
 * backup API, whose copy keeps the source's physical layout, free pages included).
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
