import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { LOG_COPY_PREFIX, makeTempDir, removeBestEffort } from '../util/temp-files.js';
import { removeEntrySidecar } from './entry-sidecar.js';
import { logSchemaProblem } from './foreign-log.js';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';
import { addonOption } from './sqlite-addon.js';

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
  if (code.startsWith('SQLITE_CORRUPT'))
    next = `the log is damaged (a disk fault, or a copy cut short): copy the session dir again from where it was recorded, or salvage what is left with \`sqlite3 "${file}" .recover > recovered.sql\`; its artifacts/ are still readable`;
  else if (code === 'SQLITE_NOTADB')
    next = 'the file is damaged or is not a log mcec-recorder wrote; its artifacts/ are still readable';
  else if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN'))
    next = `make ${path.dirname(file)} and the files in it writable by this user (SQLite writes -wal and -shm files beside the log)`;
  else if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
    next = 'another process holds the log locked; try again once it is done';
  else return err;
  return Object.assign(new Error(`${file}: ${said} (${code}): ${next}`), { code });
}

/** A log opened for reading; `close()` also removes the private copy it was read from, if any. */
export interface LogForReading {
  db: SessionDb;
  version: number;
  close(): void;
}

/**
 * Open a session log read-only, with its schema version (read once: the first read of a log attaches to
 * its WAL, the costly part of opening one). The busy timeout is set by the driver, not a PRAGMA statement.
 *
 * A read leaves the session dir as it found it: a log with no WAL content (a closed log) is read through a
 * handle that cannot write (`query_only`) but, as the log's last handle, removes the -wal and -shm its open
 * created; a read-only handle cannot, so it is used only while a writer's WAL has content. `tidy` forces
 * either (true: the recorder, right after it closed the log). A dir this user cannot write (a CI artifact,
 * a colleague's share), where SQLite cannot make those files, is read from a private copy of the log.
 */
export function openLogForReading(file: string, options: { tidy?: boolean } = {}): LogForReading {
  const tidy = options.tidy ?? walBytes(file) === 0;
  // A log file this user cannot write opens read-only whatever is asked, and a read-only handle leaves its
  // -wal, -shm behind: it is read from a copy, as in a dir this user cannot write.
  if (tidy && !canWrite(file)) return readFromCopy(file, null);
  let opened: { db: SessionDb; version: number };
  try {
    opened = openInPlace(file, tidy);
  } catch (err) {
    if (!cannotWriteBeside(err)) throw describeLogError(file, err);
    return readFromCopy(file, err);
  }
  return checkedLog(file, opened, null);
}

/** The log read from a private copy (`refused`: SQLite's error in place, said if the log cannot be read). */
function readFromCopy(file: string, refused: unknown): LogForReading {
  const copyDir = copyForReading(file, refused);
  let opened: { db: SessionDb; version: number };
  try {
    opened = openInPlace(path.join(copyDir, path.basename(file)), false);
  } catch (err) {
    removeBestEffort(copyDir);
    throw describeLogError(file, err);
  }
  return checkedLog(file, opened, copyDir);
}

/** The opened log, once its schema is one this recorder reads; closed (and its copy removed) otherwise. */
function checkedLog(
  file: string,
  opened: { db: SessionDb; version: number },
  copyDir: string | null,
): LogForReading {
  const { db, version } = opened;
  const close = () => {
    if (db.open) db.close();
    if (copyDir) removeBestEffort(copyDir);
    copyDir = null;
  };
  try {
    if (version > SCHEMA_VERSION) {
      throw new Error(
        `${file}: log schema version ${version} is newer than this recorder's (${SCHEMA_VERSION}): read it with a newer mcec-recorder`,
      );
    }
    if (version === 0 && !hasTables(db)) {
      close(); // first: the message tells whether a -wal is beside the log, and this handle made one
      throw new Error(emptyLogMessage(file));
    }
    if (version >= 1) expectOurSchema(db, file, version);
  } catch (err) {
    close();
    throw describeLogError(file, err);
  }
  return { db, version, close };
}

/**
 * Throws unless the log's schema is the one our migrations make at `version`. A session dir may come from
 * another machine (a CI artifact, a colleague's copy): a view standing in for a table, or a trigger, would run
 * a query of its author's (one that never ends hung `list`) the moment we read or write it.
 */
export function expectOurSchema(db: SessionDb, file: string, version: number): void {
  const problem = logSchemaProblem(db, version);
  if (problem)
    throw new Error(`${file}: not a session log this recorder wrote, so it is not read: ${problem}`);
}

function canWrite(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function hasTables(db: SessionDb): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get() !== undefined;
}

/**
 * A log with no tables: a recorder writes its tables into the WAL first, so a copy taken while it ran
 * without session.sqlite-wal (or a killed recorder's dir copied so) holds none of its calls.
 */
function emptyLogMessage(file: string): string {
  const wal = `${path.basename(file)}-wal`;
  return fs.existsSync(`${file}-wal`)
    ? `${file}: an empty log: its recorder wrote nothing into it`
    : `${file}: the log holds no tables: what its recorder wrote is in ${wal}, which is not beside it (a copy ` +
        `taken while the recorder ran, or without its ${wal}): copy the session dir again with ${wal}`;
}

/** Bytes in the log's WAL (0 when there is none): what a writer wrote and no checkpoint has moved yet. */
function walBytes(file: string): number {
  try {
    return fs.statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

function openInPlace(file: string, tidy: boolean): { db: SessionDb; version: number } {
  let db: SessionDb | undefined;
  try {
    db = tidy
      ? new Database(file, { ...addonOption(), fileMustExist: true, timeout: 2000 })
      : new Database(file, { ...addonOption(), readonly: true, fileMustExist: true, timeout: 2000 });
    if (tidy) db.exec('PRAGMA query_only = 1');
    // SQLite's own 2 MB page cache, not better-sqlite3's 16 MB: a reader that walks a whole log (a bundle,
    // its VACUUM INTO snapshot) would hold up to 16 MB of it, and VACUUM INTO ran 3x slower with the big one.
    db.exec('PRAGMA cache_size = -2000');
    return { db, version: db.pragma('user_version', { simple: true }) as number };
  } catch (err) {
    db?.close();
    throw err;
  }
}

/** SQLite could not open the log because this user cannot write beside it (its -wal, -shm), or the log itself. */
function cannotWriteBeside(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' && (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN'))
  );
}

/**
 * The log and its WAL copied into a temp dir of this process's own; `refused` (SQLite's error) is what is
 * said when the log cannot even be read.
 */
function copyForReading(file: string, refused: unknown): string {
  const dir = makeTempDir(LOG_COPY_PREFIX);
  const copy = path.join(dir, path.basename(file));
  try {
    // A writer elsewhere may checkpoint between the two copies (a torn pair): copied again while either moved.
    for (let attempt = 1; ; attempt++) {
      const before = filesStamp(file);
      fs.copyFileSync(file, copy);
      if (walBytes(file) > 0) fs.copyFileSync(`${file}-wal`, `${copy}-wal`);
      else fs.rmSync(`${copy}-wal`, { force: true });
      if (filesStamp(file) === before || attempt === COPY_ATTEMPTS) return dir;
    }
  } catch (err) {
    removeBestEffort(dir);
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const sqlite = refused ? `; SQLite: ${(refused as Error).message}` : '';
    throw Object.assign(new Error(`${file}: cannot be read by this user (${why}${sqlite})`), {
      code: (err as NodeJS.ErrnoException).code ?? (refused as { code?: unknown } | null)?.code,
    });
  }
}

/** Tries at a copy of a log whose writer keeps changing it before the last copy is taken as it is. */
const COPY_ATTEMPTS = 3;

/** The log's and its WAL's sizes and times, as one string to compare. */
function filesStamp(file: string): string {
  const of = (f: string) => {
    const st = fs.statSync(f, { throwIfNoEntry: false });
    return st ? `${st.size}:${st.mtimeMs}` : '-';
  };
  return `${of(file)}/${of(`${file}-wal`)}`;
}

/**
 * A log opened to be written. Its dir's catalog sidecar is removed first: it describes the log as it was,
 * and every writer (the recorder, a verdict, a writer's release) opens the log here. With `check` (a log
 * that may not be ours: `appendSessionEvent`'s version and schema check), the handle is checked before the
 * sidecar is removed, and nothing is written: a log it refuses keeps its sidecar.
 */
export function openLogForWriting(
  file: string,
  options?: Database.Options,
  check?: (db: Database.Database) => void,
): Database.Database {
  if (!check) {
    removeEntrySidecar(path.dirname(file));
    return new Database(file, { ...addonOption(), ...options });
  }
  const db = new Database(file, { ...addonOption(), ...options });
  try {
    check(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // Before the first write, as for any writer: a reader that writes the sidecar after this sees the log move.
  removeEntrySidecar(path.dirname(file));
  return db;
}

/** Open a session log to write it (created and migrated when new), with the pragmas the design asks for. */
export function openSessionDb(file: string): SessionDb {
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
