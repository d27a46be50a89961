/** Rewrite the details of one kind of event in a copy of a log (a bundle's snapshot, never a live log). */
import Database from 'better-sqlite3';
import { addonOption } from './sqlite-addon.js';

/**
 * Each `kind` event's detail (JSON) passed through `rewrite`; a detail it returns changed is stored back, one
 * transaction for all, and the file rebuilt (`VACUUM`) so no byte of the old details is left in it. Returns
 * how many rows changed. `file` is a copy no other process has open.
 */
export function rewriteEventDetails(
  file: string,
  kind: string,
  rewrite: (detail: Record<string, unknown>) => Record<string, unknown>,
): number {
  const db = new Database(file, { ...addonOption(), fileMustExist: true });
  try {
    // What a rewrite replaces must not stay readable in freed space: zeroed as it goes, and the copy rebuilt.
    db.pragma('secure_delete = ON');
    const rows = db.prepare('SELECT id, detail FROM events WHERE kind = ?').all(kind) as Array<{
      id: number;
      detail: string | null;
    }>;
    const update = db.prepare('UPDATE events SET detail = ? WHERE id = ?');
    let changed = 0;
    db.transaction(() => {
      for (const row of rows) {
        if (row.detail === null) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(row.detail);
        } catch {
          continue; // not JSON: nothing this rewrite could read
        }
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) continue;
        const text = JSON.stringify(rewrite(parsed as Record<string, unknown>));
        if (text === JSON.stringify(parsed)) continue;
        update.run(text, row.id);
        changed += 1;
      }
    })();
    if (changed > 0) db.exec('VACUUM');
    return changed;
  } finally {
    db.close();
  }
}
