/** Add one event to an existing session log from outside the recorder (e.g. `mcec-bundle verdict`). */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { LOG_FILE } from '../paths/naming.js';
import { describeLogError, expectOurSchema, openLogForWriting } from './open.js';
import { SCHEMA_VERSION } from './schema.js';

/** How long to wait for the recorder's commit lock; its commits take milliseconds. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Insert one row into the `events` table of the log in `dir`, safely beside a recorder that is still
 * writing it (WAL: one short write transaction, waiting for the writer's lock) or after it is gone.
 * Never creates or migrates a log. Returns the new event's id.
 */
export function appendSessionEvent(
  dir: string,
  kind: string,
  detail: Record<string, unknown>,
  at: Date = new Date(),
): number {
  const file = path.join(dir, LOG_FILE);
  if (!fs.existsSync(file)) throw new Error(`${dir}: no ${LOG_FILE} in this directory`);
  let db: Database.Database;
  try {
    // The version and schema checked before anything is written or removed: a refused log (a copy from
    // elsewhere, a newer recorder's) keeps its catalog sidecar, which still describes it.
    db = openLogForWriting(file, { fileMustExist: true }, (handle) => {
      handle.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      const version = handle.pragma('user_version', { simple: true }) as number;
      if (version < 1 || version > SCHEMA_VERSION) {
        throw new Error(
          `${file}: log schema version ${version} is not one this recorder writes (1-${SCHEMA_VERSION})`,
        );
      }
      expectOurSchema(handle, file, version); // a trigger would run its author's query on our insert
    });
  } catch (err) {
    throw describeLogError(file, err);
  }
  try {
    // WAL without a sync per commit: the lock is held for well under a millisecond, so the recorder's short
    // busy wait is not exceeded; a checkpoint (or the recorder's next commit) makes the row durable.
    db.pragma('synchronous = NORMAL');
    const insert = db.prepare('INSERT INTO events (at, kind, call_seq, detail) VALUES (?, ?, NULL, ?)');
    const hasSession = db.prepare('SELECT 1 FROM session WHERE id = 1');
    return db
      .transaction(() => {
        if (!hasSession.get()) throw new Error(`${dir}: the log has no session row`);
        return Number(insert.run(at.toISOString(), kind, JSON.stringify(detail)).lastInsertRowid);
      })
      .immediate();
  } catch (err) {
    throw describeLogError(file, err);
  } finally {
    db.close();
  }
}
