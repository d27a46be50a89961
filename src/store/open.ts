import path from 'node:path';
import Database from 'better-sqlite3';
import { removeEntrySidecar } from './entry-sidecar.js';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';

export type SessionDb = Database.Database;

/**
 * SQLite's error about a log, said with the file's path and what to do (SQLite's own message names
 * neither); any other error unchanged. The result keeps the error's `code`.
 */
export function describeLogError(file: string, err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return err;
  const said = (err as Error).message;
  let next: string;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT'))
    next = 'the file is damaged or is not a log mcec-recorder wrote; its artifacts/ are still readable';
  else if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN'))
    next = `make ${path.dirname(file)} and the files in it writable by this user (SQLite writes -wal and -shm files beside the log)`;
  else if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
    next = 'another process holds the log locked; try again once it is done';
  else return err;
  return Object.assign(new Error(`${file}: ${said} (${code}): ${next}`), { code });
}

/**
 * Open a session log read-only, with its schema version (read once: the first read of a log attaches to
 * its WAL, the costly part of opening one). The busy timeout is set by the driver, not a PRAGMA statement.
 */
export function openLogForReading(
  file: string,
  options: { tidy?: boolean } = {},
): { db: SessionDb; version: number } {
  let db: SessionDb | undefined;
  let version: number;
  try {
    // `tidy`: a read-write handle that cannot write (query_only). Closed as the log's last handle it removes
    // the -wal and -shm its open created, leaving the dir as the recorder left it; a read-only one cannot.
    db = options.tidy
      ? new Database(file, { fileMustExist: true, timeout: 2000 })
      : new Database(file, { readonly: true, fileMustExist: true, timeout: 2000 });
    if (options.tidy) db.exec('PRAGMA query_only = 1');
    // SQLite's own 2 MB page cache, not better-sqlite3's 16 MB: a reader that walks a whole log (a bundle,
    // its VACUUM INTO snapshot) would hold up to 16 MB of it, and VACUUM INTO ran 3x slower with the big one.
    db.exec('PRAGMA cache_size = -2000');
    version = db.pragma('user_version', { simple: true }) as number;
  } catch (err) {
    db?.close();
    throw describeLogError(file, err);
  }
  if (version > SCHEMA_VERSION) {
    db.close();
    throw new Error(
      `${file}: log schema version ${version} is newer than this recorder's (${SCHEMA_VERSION}): read it with a newer mcec-recorder`,
    );
  }
  return { db, version };
}

/**
 * A log opened to be written. Its dir's catalog sidecar is removed first: it describes the log as it was,
 * and every writer (the recorder, a verdict, a writer's release) opens the log here.
 */
export function openLogForWriting(file: string, options?: Database.Options): Database.Database {
  removeEntrySidecar(path.dirname(file));
  return new Database(file, options);
}

/** Open (and, for a writer, create and migrate) a session log with the pragmas the design asks for. */
export function openSessionDb(file: string, options: { readonly?: boolean } = {}): SessionDb {
  if (options.readonly) return openLogForReading(file).db;
  // SQLite does not call the busy handler for every lock a new log's setup takes (switching to WAL), so a
  // process creating the log while another does may see SQLITE_BUSY at once: try again for up to 2 s.
  const deadline = Date.now() + 2000;
  for (;;) {
    const db = openLogForWriting(file);
    try {
      db.pragma('busy_timeout = 2000');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      migrate(db);
      return db;
    } catch (err) {
      db.close();
      if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.floor(Math.random() * 20));
    }
  }
}

/**
 * Bring a log up to the current schema version, one transaction per step. Each step reads the version under
 * the write lock (BEGIN IMMEDIATE): two processes creating the same log at once must not both run a step
 * (the second would fail on "table already exists" and its calls wait for a retry, or are lost).
 */
export function migrate(db: SessionDb): void {
  const step = db.transaction((): boolean => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new Error(`log schema version ${version} is newer than this recorder's (${SCHEMA_VERSION})`);
    }
    if (version === SCHEMA_VERSION) return false;
    db.exec(MIGRATIONS[version]!);
    db.pragma(`user_version = ${version + 1}`);
    return true;
  });
  while (step.immediate()) {
    // one step per transaction, until the log is current
  }
}
