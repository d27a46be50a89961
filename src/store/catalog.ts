/**
 * The sessions catalog: `catalog.sqlite` at the root of a sessions dir, one row per session (what `list`,
 * `prune`, `triage` and the index page read instead of opening every session's log), with its failures and
 * per-tool call counts. Knows SQLite and rows; the rows themselves are computed by src/fleet/catalog.ts
 * (the verdict rule lives there). Safe with several processes at once: WAL, a busy timeout, short
 * transactions, and a `touched` counter so a row a writer changed while a reader re-indexed it stays stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { idOfDirName } from '../paths/derived-id.js';
import { fileKind } from '../util/file-stat.js';
import { compareSchema, readSchema, type SchemaObject } from './schema-check.js';
import { addonOption } from './sqlite-addon.js';

/** The catalog's file name, at the root of the sessions dir. */
export const CATALOG_FILE = 'catalog.sqlite';
/**
 * Left at the root of the sessions dir by a writer that handed a change to the next reader: that reader
 * stats every session dir (a full sweep), removing it first. Not a session dir name, so no sweep reads it.
 */
export const SWEEP_REQUEST_FILE = `${CATALOG_FILE}-sweep`;

/**
 * A row whose dir name is not its log's `<yyyyMMdd-HHmmss>-<id>` (SQL over `sessions`; NULL for no start): not
 * `isOwnSessionDir` (src/paths/naming.ts), the rule in JS, written here for the partial index.
 */
const ODD_NAME = `dir_name != strftime('%Y%m%d-%H%M%S', started_at) || '-' || session_id`;

/** Each entry migrates the catalog from version `index` to `index + 1`; append, never edit. */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);

  -- One row per session dir. A row with indexed_touched != touched (or status 'open') is re-read from the
  -- session's log by the next reader; dir_mtime is the session dir's mtime when it was read (NULL: check again).
  CREATE TABLE sessions (
    dir_name         TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL,
    scenario         TEXT,
    host             TEXT,
    started_at       TEXT,
    ended_at         TEXT,
    duration_ms      REAL,
    duration         TEXT NOT NULL DEFAULT '',
    last_activity_at TEXT,
    status           TEXT,                  -- open | ended | aborted; NULL until read (or unreadable)
    verdict          TEXT,                  -- PASS | FAIL; NULL until read (or unreadable)
    verdict_reason   TEXT,
    calls            INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,
    recovered        INTEGER NOT NULL DEFAULT 0,
    pending          INTEGER NOT NULL DEFAULT 0,
    warnings         INTEGER NOT NULL DEFAULT 0,
    artifacts        INTEGER NOT NULL DEFAULT 0,
    fingerprints     TEXT NOT NULL DEFAULT '[]', -- JSON: distinct fingerprints of the unrecovered failures
    error            TEXT,                  -- why the log could not be read
    dir_mtime        REAL,
    touched          INTEGER NOT NULL DEFAULT 0,
    indexed_touched  INTEGER NOT NULL DEFAULT -1,
    indexed_at       TEXT
  );
  CREATE INDEX sessions_started ON sessions (started_at);
  -- The rows a reader must read again, found without scanning the table (every list asks).
  CREATE INDEX sessions_dirty ON sessions (dir_name) WHERE status = 'open' OR touched != indexed_touched;
  CREATE INDEX sessions_scenario ON sessions (scenario, started_at);

  -- Failed and faulted calls (the newest ones of each session, up to a cap), with the facts fingerprints use.
  CREATE TABLE failures (
    dir_name    TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    at          TEXT,
    tool        TEXT NOT NULL,
    status      TEXT NOT NULL,            -- failed | fault
    code        TEXT,
    category    TEXT,
    detail      TEXT,                     -- clipped
    target      TEXT NOT NULL DEFAULT '',
    window      TEXT,
    class_name  TEXT,
    process     TEXT,
    recovered   INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,            -- by the built-in rules (user rules apply when triage reads)
    PRIMARY KEY (dir_name, seq)
  ) WITHOUT ROWID;
  CREATE INDEX failures_fingerprint ON failures (fingerprint);

  -- Calls and failures per tool, per session (triage's failure rate per tool).
  CREATE TABLE tool_calls (
    dir_name TEXT NOT NULL,
    tool     TEXT NOT NULL,
    calls    INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    PRIMARY KEY (dir_name, tool)
  ) WITHOUT ROWID;
  `,
  `
  -- The MCP server's name (serverInfo.name: MCEC or another server's); every row is read again to fill it.
  ALTER TABLE sessions ADD COLUMN server TEXT;
  UPDATE sessions SET indexed_touched = -1 WHERE indexed_touched = touched;
  `,
  `
  -- The host where a session reading as aborted is still open (its writer there never closed the log and
  -- cannot be checked from here): such a row is read again by every reader, as an open one is, since that
  -- writer may still be writing. Rows stored open before this are read again anyway.
  ALTER TABLE sessions ADD COLUMN unchecked_host TEXT;
  DROP INDEX sessions_dirty;
  CREATE INDEX sessions_dirty ON sessions (dir_name)
    WHERE status = 'open' OR unchecked_host IS NOT NULL OR touched != indexed_touched;
  `,
  `
  -- The rows whose dir is not named <stamp>-<id> of their log (a copy, a renamed dir): the few where copies
  -- of one session can be, found without scanning the table (every list asks, copies()).
  CREATE INDEX sessions_odd_name ON sessions (session_id, started_at) WHERE ${ODD_NAME};
  `,
  `
  -- A session dir's sidecar checked by its log's sha1 while the log's time was settled (an index): the next
  -- reader trusts a sidecar naming this sha1 on the log's size and mtime alone while they are these. Kept
  -- here, not by writing the sidecar again (three to four times the cost of the hash, per dir).
  CREATE TABLE log_checks (
    dir_name TEXT PRIMARY KEY,
    size     INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    sha1     TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  -- The rows stored without a dir time (read while it was too recent to trust), which every names sweep reads
  -- again, and the rows whose log could not be read, which every list prints: few or none, found without
  -- scanning the table (each scan took 6-11 ms at 10,000 sessions).
  CREATE INDEX sessions_unsettled ON sessions (dir_name) WHERE dir_mtime IS NULL;
  CREATE INDEX sessions_unreadable ON sessions (dir_name) WHERE error IS NOT NULL;
  `,
];

/** The catalog schema version (`PRAGMA user_version`). */
export const CATALOG_SCHEMA_VERSION = MIGRATIONS.length;

/** Default wait for another process's write lock on the catalog (its transactions take milliseconds). */
const BUSY_TIMEOUT_MS = 5000;

/** One session as the catalog holds it. */
export interface CatalogSession {
  dir_name: string;
  session_id: string;
  scenario: string | null;
  /** The MCP server's name from its initialize answer (serverInfo.name), null when the log does not say. */
  server: string | null;
  host: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  duration: string;
  last_activity_at: string | null;
  status: 'open' | 'ended' | 'aborted' | null;
  /**
   * For a session reading as `aborted` while its log is still open on another host: that host (its writer
   * never closed the log and cannot be checked from here); null otherwise.
   */
  unchecked_host: string | null;
  verdict: 'PASS' | 'FAIL' | null;
  verdict_reason: string | null;
  calls: number;
  failures: number;
  recovered: number;
  pending: number;
  warnings: number;
  artifacts: number;
  /** JSON array of fingerprints. */
  fingerprints: string;
  error: string | null;
}

/** One failed or faulted call as the catalog holds it. */
export interface CatalogFailure {
  dir_name: string;
  seq: number;
  at: string | null;
  tool: string;
  status: 'failed' | 'fault';
  code: string | null;
  category: string | null;
  detail: string | null;
  target: string;
  window: string | null;
  class_name: string | null;
  process: string | null;
  recovered: number;
  fingerprint: string;
}

/** Calls and failures of one tool in one session. */
export interface CatalogToolCount {
  dir_name: string;
  tool: string;
  calls: number;
  failures: number;
}

/** Everything the catalog keeps about one session. */
export interface CatalogEntry {
  session: CatalogSession;
  failures: CatalogFailure[];
  tools: CatalogToolCount[];
}

/**
 * A log's sha1 checked against its session dir's sidecar when the log had this size and mtime, that mtime
 * settled then (`log_checks`): while the log still has them, a sidecar naming this sha1 is true to it.
 */
export interface LogCheck {
  size: number;
  mtimeMs: number;
  sha1: string;
}

/** What a reader needs to decide whether a row must be read again. */
export interface CatalogRowState {
  status: string | null;
  uncheckedHost: string | null;
  dirMtime: number | null;
  touched: number;
  indexedTouched: number;
}

const SESSION_COLUMNS = `dir_name, session_id, scenario, server, host, started_at, ended_at, duration_ms, duration,
  last_activity_at, status, unchecked_host, verdict, verdict_reason, calls, failures, recovered, pending, warnings, artifacts,
  fingerprints, error`;

/** The columns of a session's row, of a failure's and of a tool's count, in the order `put` binds them. */
const SESSION_KEYS = SESSION_COLUMNS.split(',').map((c) => c.trim()) as Array<keyof CatalogSession>;
// Records, so that a field added to the type and not here fails to compile.
const FAILURE_KEYS = Object.keys({
  dir_name: 1,
  seq: 1,
  at: 1,
  tool: 1,
  status: 1,
  code: 1,
  category: 1,
  detail: 1,
  target: 1,
  window: 1,
  class_name: 1,
  process: 1,
  recovered: 1,
  fingerprint: 1,
} satisfies Record<keyof CatalogFailure, 1>) as Array<keyof CatalogFailure>;
const TOOL_KEYS = Object.keys({ dir_name: 1, tool: 1, calls: 1, failures: 1 } satisfies Record<
  keyof CatalogToolCount,
  1
>) as Array<keyof CatalogToolCount>;

type Db = Database.Database;

function migrate(db: Db): void {
  let version = db.pragma('user_version', { simple: true }) as number;
  if (version > CATALOG_SCHEMA_VERSION) {
    throw new Error(
      `catalog schema version ${version} is newer than this recorder's (${CATALOG_SCHEMA_VERSION})`,
    );
  }
  while (version < CATALOG_SCHEMA_VERSION) {
    const step = MIGRATIONS[version]!;
    const from = version;
    db.transaction(() => {
      // Another process may have migrated meanwhile: re-check under the write lock.
      if ((db.pragma('user_version', { simple: true }) as number) !== from) return;
      db.exec(step);
      db.pragma(`user_version = ${from + 1}`);
    }).immediate();
    version = db.pragma('user_version', { simple: true }) as number;
  }
}

/** `catalog.sqlite` is damaged or not the catalog this recorder writes: a cache, so it is rebuilt. */
export class CatalogDamagedError extends Error {
  readonly code = 'MCEC_CATALOG_DAMAGED';
}

/** Whether `err` says the catalog's file is damaged or not ours (rather than busy, or unwritable). */
export function isCatalogDamage(err: unknown): boolean {
  if (err instanceof CatalogDamagedError) return true;
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  return (
    code.startsWith('SQLITE_CORRUPT') ||
    code === 'SQLITE_NOTADB' ||
    (code.startsWith('SQLITE_ERROR') && /^no such (table|column|index)|already exists$/.test(message))
  );
}

/**
 * Throw when SQLite opened the catalog read-only without a word, which it does with a file it cannot write:
 * the checks of `fs.access` miss a read-only share on Windows (they read only the read-only attribute) and a
 * `-shm` or `-wal` another user or machine left. Found here, by taking the write lock, and not by the first
 * write, which names no file ("attempt to write a readonly database") and failed the command.
 */
function refuseReadOnly(db: Db, file: string): void {
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    if (!code.startsWith('SQLITE_READONLY')) throw err;
    throw Object.assign(
      new Error(
        `SQLite opens ${path.basename(file)} read-only: a read-only share, or its -wal or -shm file not writable by this user (${(err as Error).message})`,
      ),
      { code },
    );
  }
}

let catalogSchema: SchemaObject[] | null = null;

/** How the file's schema differs from the catalog's (same version, other tables), or null. */
function schemaProblem(db: Db): string | null {
  if (!catalogSchema) {
    const mem = new Database(':memory:', addonOption());
    migrate(mem);
    catalogSchema = readSchema(mem, Number.POSITIVE_INFINITY);
    mem.close();
  }
  return compareSchema(readSchema(db, 200), catalogSchema);
}

/** The statements `Catalog.put` runs for each entry. */
interface PutStatements {
  upsert: Database.Statement;
  delFailures: Database.Statement;
  delTools: Database.Statement;
  addFailure: Database.Statement;
  addTool: Database.Statement;
  putCheck: Database.Statement;
  delCheck: Database.Statement;
}

/**
 * Why the catalog's file, its `-wal` or `-shm` is no file SQLite may open, or null. A sessions dir copied from
 * elsewhere may hold a symlink there (SQLite follows it, creating and writing a database outside the sessions
 * dir), a FIFO (SQLite's first read blocks for ever) or a directory.
 */
function notRegularFile(file: string): string | null {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(f, { throwIfNoEntry: false });
    } catch {
      continue; // not stat-able: SQLite's open says why
    }
    if (st && !st.isFile()) return `${path.basename(f)} is ${fileKind(st)}, not a file SQLite may open`;
  }
  return null;
}

/**
 * The catalog of one sessions dir. `open` for reading never creates anything; for writing it creates and
 * migrates the file. A writer also holds a read-only connection while it closes, so its close does not
 * delete the WAL: the sessions dir's mtime then moves only when sessions come or go, which is what readers
 * check to know a sweep is due.
 */
export class Catalog {
  readonly file: string;
  readonly readonly: boolean;
  private readonly db: Db;
  private touchedStatement: Database.Statement | undefined;
  private checkStatement: Database.Statement | undefined;
  private putStatements: PutStatements | undefined;
  private readonly guard: Db | null;

  private constructor(file: string, db: Db, guard: Db | null, readonly: boolean) {
    this.file = file;
    this.db = db;
    this.guard = guard;
    this.readonly = readonly;
  }

  /**
   * Open the catalog of `sessionsDir`: read-only (null when there is none, it is of another schema version
   * or schema, or not a database) or for writing (created when missing; a `CatalogDamagedError` when it has
   * other tables). Throws on I/O errors.
   */
  static open(sessionsDir: string, options: { readonly: true; busyTimeoutMs?: number }): Catalog | null;
  static open(sessionsDir: string, options?: { readonly?: false; busyTimeoutMs?: number }): Catalog;
  static open(
    sessionsDir: string,
    options: { readonly?: boolean; busyTimeoutMs?: number } = {},
  ): Catalog | null {
    const file = path.join(sessionsDir, CATALOG_FILE);
    const busy = Math.max(0, Math.floor(options.busyTimeoutMs ?? BUSY_TIMEOUT_MS));
    const oddFile = notRegularFile(file);
    if (oddFile) {
      if (options.readonly) return null;
      throw new Error(oddFile);
    }
    if (options.readonly) {
      if (!fs.existsSync(file)) return null;
      let db: Db | null = null;
      try {
        db = new Database(file, { ...addonOption(), readonly: true, fileMustExist: true });
        db.pragma(`busy_timeout = ${busy}`);
        if (
          (db.pragma('user_version', { simple: true }) as number) === CATALOG_SCHEMA_VERSION &&
          schemaProblem(db) === null
        ) {
          return new Catalog(file, db, null, true);
        }
      } catch {
        // not a database (or a damaged one): a writer rebuilds it
      }
      db?.close();
      return null;
    }
    // SQLite opens a file it cannot write read-only without a word and fails at the first write, with a
    // message naming no file: a read-only sessions dir is found here, by its path.
    fs.accessSync(sessionsDir, fs.constants.W_OK);
    if (fs.existsSync(file)) fs.accessSync(file, fs.constants.W_OK);
    let guard: Db | null = null;
    if (fs.existsSync(file)) {
      try {
        guard = new Database(file, { ...addonOption(), readonly: true, fileMustExist: true });
        guard.pragma(`busy_timeout = ${busy}`);
        guard.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get(); // attaches to the WAL index
      } catch {
        guard?.close();
        guard = null; // not a database yet, or mid-creation: the writer below reports real problems
      }
    }
    let db: Db | null = null;
    try {
      db = new Database(file, addonOption());
      db.pragma(`busy_timeout = ${busy}`);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      refuseReadOnly(db, file);
      migrate(db);
      const problem = schemaProblem(db);
      if (problem) {
        throw new CatalogDamagedError(`${file}: not the sessions catalog: ${problem}`);
      }
    } catch (err) {
      db?.close();
      guard?.close();
      throw err;
    }
    return new Catalog(file, db, guard, false);
  }

  /** An empty catalog in memory (triage over a folder of bundles). */
  static memory(): Catalog {
    const db = new Database(':memory:', addonOption());
    migrate(db);
    return new Catalog(':memory:', db, null, false);
  }

  /** A meta value (strings only), or null. */
  meta(key: string): string | null {
    const row = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as
      | { value: string | null }
      | undefined;
    return row?.value ?? null;
  }

  /** Set meta values in one transaction (null removes one). */
  setMeta(values: Record<string, string | null>): void {
    const put = this.db.prepare(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    const del = this.db.prepare('DELETE FROM meta WHERE key = ?');
    this.db
      .transaction(() => {
        for (const [k, v] of Object.entries(values)) {
          if (v === null) del.run(k);
          else put.run(k, v);
        }
      })
      .immediate();
  }

  /**
   * Rows a reader must read again now: open sessions, those still open on another host, and rows a writer
   * touched since they were read.
   */
  dirtyRows(): string[] {
    return (
      this.db
        .prepare(
          `SELECT dir_name FROM sessions
             WHERE status = 'open' OR unchecked_host IS NOT NULL OR touched != indexed_touched`,
        ) // sessions_dirty
        .pluck()
        .all() as string[]
    ).sort();
  }

  /**
   * A names sweep's comparison of the sessions dir's `names` (unique, as a readdir gives them) with the rows:
   * the names no row has, and the rows whose name is not among them, unordered. SQLite looks each name up in
   * the primary key's index: two JS sets of every name cost twice as much at 10,000.
   */
  compareNames(names: readonly string[]): { added: string[]; gone: string[] } {
    const json = JSON.stringify(names);
    const added = this.db
      .prepare('SELECT value FROM json_each(?) WHERE value NOT IN (SELECT dir_name FROM sessions)')
      .pluck()
      .all(json) as string[];
    // Each name found is one row: when they are all the rows, none is gone (no second pass over the names).
    if (names.length - added.length === this.sessionCount()) return { added, gone: [] };
    const gone = this.db
      .prepare('SELECT dir_name FROM sessions WHERE dir_name NOT IN (SELECT value FROM json_each(?))')
      .pluck()
      .all(json) as string[];
    return { added, gone };
  }

  /** Rows stored without a dir time (it was too recent to trust when read): a names sweep reads them again. */
  unsettledRows(): string[] {
    // sessions_unsettled
    return this.db.prepare('SELECT dir_name FROM sessions WHERE dir_mtime IS NULL').pluck().all() as string[];
  }

  /** Every row's state, by dir name (for a full sweep). */
  rowStates(): Map<string, CatalogRowState> {
    const out = new Map<string, CatalogRowState>();
    const rows = this.db
      .prepare('SELECT dir_name, status, unchecked_host, dir_mtime, touched, indexed_touched FROM sessions')
      .raw()
      .all() as Array<[string, string | null, string | null, number | null, number, number]>;
    for (const [name, status, uncheckedHost, dirMtime, touched, indexedTouched] of rows) {
      out.set(name, { status, uncheckedHost, dirMtime, touched, indexedTouched });
    }
    return out;
  }

  /** The `touched` counter of a row (0 when there is none): read before a session is read, stored with it. */
  touchedOf(dirName: string): number {
    // Prepared once: an index asks for every row's.
    this.touchedStatement ??= this.db.prepare('SELECT touched FROM sessions WHERE dir_name = ?');
    const row = this.touchedStatement.get(dirName) as { touched: number } | undefined;
    return row?.touched ?? 0;
  }

  /** The sidecar check kept for a session dir (`LogCheck`), or null. */
  logCheckOf(dirName: string): LogCheck | null {
    // Prepared once: an index asks for every dir's.
    this.checkStatement ??= this.db
      .prepare('SELECT size, mtime_ms, sha1 FROM log_checks WHERE dir_name = ?')
      .raw();
    const row = this.checkStatement.get(dirName) as [number, number, string] | undefined;
    return row ? { size: row[0], mtimeMs: row[1], sha1: row[2] } : null;
  }

  /** Every sidecar check the catalog keeps, by dir name (an index asks for all at once). */
  logChecks(): Map<string, LogCheck> {
    const rows = this.db
      .prepare('SELECT dir_name, size, mtime_ms, sha1 FROM log_checks')
      .raw()
      .all() as Array<[string, number, number, string]>;
    return new Map(rows.map(([name, size, mtimeMs, sha1]) => [name, { size, mtimeMs, sha1 }]));
  }

  /**
   * The file system's clock, as the time it gives the catalog's WAL file written just now, and that file's
   * device; null for a catalog in memory or when it cannot be told. A time the file system gave before a
   * log's hash was taken: whether that log's time was settled by the file system's clock too.
   */
  fileClock(now = new Date()): { ms: number; dev: number } | null {
    if (this.file === ':memory:') return null;
    try {
      this.setMeta({ clock_probe: now.toISOString() });
      const st = fs.statSync(`${this.file}-wal`);
      return { ms: st.mtimeMs, dev: st.dev };
    } catch {
      return null;
    }
  }

  /**
   * Store entries read from their logs, in one short transaction: each replaces its session's row,
   * failures and tool counts, and its sidecar check (`LogCheck`; none when null). `touched` is the row's
   * counter as read before the log was (a writer that touched it since leaves it stale); `dirMtime` the dir's
   * mtime then (null: check again next sweep).
   */
  put(
    items: Array<{ entry: CatalogEntry; touched: number; dirMtime: number | null; check?: LogCheck | null }>,
    at = new Date(),
  ): void {
    if (items.length === 0) return;
    // Prepared once: an index puts thousands of rows, 256 per call.
    this.putStatements ??= this.preparePut();
    const { upsert, delFailures, delTools, addFailure, addTool, putCheck, delCheck } = this.putStatements;
    const indexedAt = at.toISOString();
    this.db
      .transaction(() => {
        for (const { entry, touched, dirMtime, check } of items) {
          const name = entry.session.dir_name;
          const session = entry.session;
          upsert.run(...SESSION_KEYS.map((k) => session[k]), dirMtime, touched, touched, indexedAt);
          delFailures.run(name);
          delTools.run(name);
          for (const f of entry.failures)
            addFailure.run(...FAILURE_KEYS.map((k) => (k === 'dir_name' ? name : f[k])));
          for (const t of entry.tools) addTool.run(...TOOL_KEYS.map((k) => (k === 'dir_name' ? name : t[k])));
          if (check) putCheck.run(name, check.size, check.mtimeMs, check.sha1);
          else delCheck.run(name);
        }
      })
      .immediate();
  }

  /** The statements of `put`: values bound by position (named values cost a fresh object per row). */
  private preparePut(): PutStatements {
    const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
    // Every column of the entry but its key, and the read's own; `touched` stays the writers' counter.
    const updated = [
      ...SESSION_KEYS.filter((k) => k !== 'dir_name'),
      'dir_mtime',
      'indexed_touched',
      'indexed_at',
    ];
    const upsert = this.db.prepare(
      `INSERT INTO sessions (${SESSION_COLUMNS}, dir_mtime, touched, indexed_touched, indexed_at)
       VALUES (${marks(SESSION_KEYS.length + 4)})
       ON CONFLICT (dir_name) DO UPDATE SET ${updated.map((c) => `${c} = excluded.${c}`).join(', ')}`,
    );
    const delFailures = this.db.prepare('DELETE FROM failures WHERE dir_name = ?');
    const delTools = this.db.prepare('DELETE FROM tool_calls WHERE dir_name = ?');
    const addFailure = this.db.prepare(
      `INSERT OR REPLACE INTO failures (${FAILURE_KEYS.join(', ')}) VALUES (${marks(FAILURE_KEYS.length)})`,
    );
    const addTool = this.db.prepare(
      `INSERT OR REPLACE INTO tool_calls (${TOOL_KEYS.join(', ')}) VALUES (${marks(TOOL_KEYS.length)})`,
    );
    const putCheck = this.db.prepare(
      'INSERT OR REPLACE INTO log_checks (dir_name, size, mtime_ms, sha1) VALUES (?, ?, ?, ?)',
    );
    const delCheck = this.db.prepare('DELETE FROM log_checks WHERE dir_name = ?');
    return { upsert, delFailures, delTools, addFailure, addTool, putCheck, delCheck };
  }

  /** Remove the rows of sessions whose dirs are gone; returns how many sessions had a row. */
  remove(dirNames: string[]): number {
    if (dirNames.length === 0) return 0;
    const stmts = ['sessions', 'failures', 'tool_calls', 'log_checks'].map((t) =>
      this.db.prepare(`DELETE FROM ${t} WHERE dir_name = ?`),
    );
    // The session rows deleted: a name given that had none (a dir without a log) is no row removed.
    return this.db
      .transaction(() => {
        let removed = 0;
        for (const name of dirNames)
          for (const [i, s] of stmts.entries()) {
            const { changes } = s.run(name);
            if (i === 0) removed += changes;
          }
        return removed;
      })
      .immediate();
  }

  /** Mark one session as changed (its row is read again by the next reader); inserts a bare row when new. */
  touch(dirName: string, sessionId: string): void {
    this.db
      .prepare(
        `INSERT INTO sessions (dir_name, session_id, touched) VALUES (?, ?, 1)
         ON CONFLICT (dir_name) DO UPDATE SET touched = touched + 1`,
      )
      .run(dirName, sessionId);
  }

  /** Every row's dir name, its log's session id and start, by dir name (what resolving an id looks through). */
  identities(): Array<{ dir_name: string; session_id: string; started_at: string | null }> {
    return this.db
      .prepare('SELECT dir_name, session_id, started_at FROM sessions ORDER BY dir_name')
      .all() as Array<{ dir_name: string; session_id: string; started_at: string | null }>;
  }

  /**
   * Sessions held by more than one dir (copies: the same log id and start), each with its dir names, oldest
   * first; those `list` shows only (a call, or unreadable).
   */
  copies(): Array<{ session_id: string; dir_names: string[] }> {
    // Two dirs of one session cannot both be named <stamp>-<id>: one is an odd name, the other odd too or
    // the standard name (a primary key lookup). So only the odd rows are read, through their partial index.
    const rows = this.db
      .prepare(
        `WITH odd AS MATERIALIZED (SELECT dir_name, session_id, started_at, calls, error FROM sessions
           WHERE ${ODD_NAME}),
         members AS (
           SELECT dir_name, session_id, started_at FROM odd WHERE error IS NULL AND calls > 0
           UNION
           SELECT s.dir_name, s.session_id, s.started_at FROM odd o JOIN sessions s
             ON s.dir_name = strftime('%Y%m%d-%H%M%S', o.started_at) || '-' || o.session_id
             WHERE s.started_at = o.started_at AND s.error IS NULL AND s.calls > 0)
         SELECT session_id, json_group_array(dir_name) AS dirs FROM (SELECT * FROM members ORDER BY dir_name)
         GROUP BY session_id, started_at HAVING count(*) > 1 ORDER BY min(dir_name)`,
      )
      .all() as Array<{ session_id: string; dirs: string }>;
    return rows.map((r) => ({ session_id: r.session_id, dir_names: JSON.parse(r.dirs) as string[] }));
  }

  /** How many sessions the catalog holds (one row each). */
  sessionCount(): number {
    return this.db.prepare('SELECT count(*) FROM sessions').pluck().get() as number;
  }

  /** Sessions, oldest first (by dir name, which starts with the UTC start stamp). */
  sessions(
    filter: { since?: string; until?: string; scenario?: string; verdict?: 'PASS' | 'FAIL' } = {},
  ): CatalogSession[] {
    const { where, params } = sessionFilter(filter);
    return this.db
      .prepare(
        `SELECT ${SESSION_COLUMNS} FROM sessions ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY dir_name`,
      )
      .all(...params) as CatalogSession[];
  }

  /**
   * One page of the sessions `list` shows (those holding a call, or unreadable), newest first, and how many
   * match in all and come before the page: indexed queries however many sessions there are (the MCP tool
   * list_sessions). `after` is the dir name the previous page ended on (a keyset: a session recorded between
   * two pages sorts before it and never shifts the next page). `fingerprint` matches a fingerprint of the
   * session's unrecovered failures exactly.
   */
  page(
    filter: { since?: string; scenario?: string; verdict?: 'PASS' | 'FAIL'; fingerprint?: string },
    after: string | null,
    limit: number,
  ): { total: number; before: number; rows: CatalogSession[] } {
    const { where, params } = sessionFilter(filter);
    where.unshift('(calls > 0 OR error IS NOT NULL)');
    if (filter.fingerprint !== undefined) {
      where.push('EXISTS (SELECT 1 FROM json_each(sessions.fingerprints) WHERE json_each.value = ?)');
      params.push(filter.fingerprint);
    }
    const cond = where.join(' AND ');
    const count = (extra: string, more: unknown[]) =>
      this.db
        .prepare(`SELECT count(*) FROM sessions WHERE ${cond}${extra}`)
        .pluck()
        .get(...params, ...more) as number;
    const total = count('', []);
    const before = after === null ? 0 : count(' AND dir_name >= ?', [after]);
    const rows = this.db
      .prepare(
        `SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${cond}${after === null ? '' : ' AND dir_name < ?'}
           ORDER BY dir_name DESC LIMIT ?`,
      )
      .all(...params, ...(after === null ? [] : [after]), limit) as CatalogSession[];
    return { total, before, rows };
  }

  /**
   * The `list` table's rows as one string, rendered by SQLite: columns ID, START (UTC), DURATION, CALLS,
   * FAILURES, VERDICT, each padded to its widest cell (or its `header`), newest first (as index.html and the
   * MCP list_sessions), '' when none. With `dirNames` (the dirs of sessions more than one dir holds, which
   * share an ID), a last column `dirHeader` names the dir of each such row (quoted as JSON, as the warning
   * names them), empty for the others; without, the table has no such column. Each line a string, not 10,000
   * rows of JS values: those cost `list` more in allocation and GC than the query.
   */
  listTable(
    header: readonly string[],
    options: { failedOnly?: boolean; since?: string; dirNames?: readonly string[]; dirHeader?: string } = {},
  ): string {
    const cell = (i: number) => JSON.stringify(header[i] ?? '').replaceAll('"', "'");
    const width = (i: number, col: string) => `max(length(${cell(i)}), max(length(${col})))`;
    const dirs = options.dirNames?.length ? options.dirNames : null;
    // The verdict is the last column, unpadded, unless the dir follows it.
    const verdictFormat = dirs ? '%!-*s  %s' : '%s';
    const format = `'%!-*s  %!-*s  %!-*s  %!-*s  %!-*s  %!-*s  ${verdictFormat}'`;
    const headDir = dirs
      ? `v, ${cell(6)}, ${JSON.stringify(options.dirHeader ?? 'DIR').replaceAll('"', "'")}`
      : cell(6);
    const rowDir = dirs ? '@v, verdict, dir' : 'verdict';
    const rows = `WITH r AS (
           SELECT dir_name, session_id AS id, coalesce(server, '-') AS server,
             CASE WHEN started_at IS NOT NULL
               THEN substr(started_at, 1, 10) || ' ' || substr(started_at, 12, 8) || 'Z'
               ELSE substr(dir_name, 1, 15) END AS start,
             coalesce(nullif(duration, ''), '-') AS dur, calls, failures,
             CASE WHEN error IS NOT NULL THEN 'UNREADABLE'
               ELSE coalesce(verdict, '-') || CASE
                 -- the words of openElsewhereWords (src/report/verdict.ts)
                 WHEN unchecked_host IS NOT NULL
                   THEN ' (open on ' || unchecked_host || ': its writer cannot be checked from here)'
                 WHEN status = 'open' THEN ' (running)'
                 WHEN status = 'aborted' THEN ' (aborted)' ELSE '' END END AS verdict${
                   dirs
                     ? ",\n             CASE WHEN dir_name IN (SELECT value FROM json_each(@dirs)) THEN json_quote(dir_name) ELSE '' END AS dir"
                     : ''
                 }
           FROM sessions
           WHERE (calls > 0 OR error IS NOT NULL)${options.failedOnly ? " AND verdict = 'FAIL'" : ''}${
             options.since === undefined ? '' : ' AND coalesce(started_at, last_activity_at) >= @since'
           })`;
    const params = {
      ...(dirs ? { dirs: JSON.stringify(dirs) } : {}),
      ...(options.since === undefined ? {} : { since: options.since }),
    };
    // The widths and the header first, then the lines by those widths in the table's key order, in one read
    // transaction (a writer between the two could add a wider cell). One query joining the widths to the rows
    // (group_concat ORDER BY) sorted every line through a temp b-tree: 1.5x the time of these two.
    const read = this.db.transaction((): string => {
      const w = this.db
        .prepare(
          `${rows}
           SELECT printf(${format}, a, ${cell(0)}, s, ${cell(1)}, b, ${cell(2)}, c, ${cell(3)}, d, ${cell(4)},
                    e, ${cell(5)}, ${headDir}) AS head, a, s, b, c, d, e${dirs ? ', v' : ''}
           FROM (SELECT ${width(0, 'id')} AS a, ${width(1, 'server')} AS s, ${width(2, 'start')} AS b,
                   ${width(3, 'dur')} AS c, ${width(4, 'calls')} AS d, ${width(5, 'failures')} AS e${
                     dirs ? `, ${width(6, 'verdict')} AS v` : ''
                   } FROM r)`,
        )
        .get(params) as { head: string | null; a: number | null } & Record<string, number | null>;
      if (w.head === null || w.a === null) return ''; // no row: no widths
      const { head, ...widths } = w;
      const lines = this.db
        .prepare(
          `${rows}
           SELECT ${dirs ? 'rtrim(' : ''}printf(${format}, @a, id, @s, server, @b, start, @c, dur, @d, calls, @e, failures,
                    ${rowDir})${dirs ? ')' : ''}
           FROM r ORDER BY dir_name DESC`,
        )
        .pluck()
        .all({ ...params, ...widths }) as string[];
      return `${head}\n${lines.join('\n')}`;
    });
    return read();
  }

  /** Sessions whose log could not be read, newest first, with why (`list` prints the reasons under its table). */
  unreadable(
    options: { failedOnly?: boolean; since?: string } = {},
  ): Array<{ session_id: string; error: string }> {
    if (options.failedOnly) return []; // an unreadable log has no verdict
    const since = options.since === undefined ? '' : ' AND coalesce(started_at, last_activity_at) >= ?';
    // sessions_unreadable
    return this.db
      .prepare(
        `SELECT session_id, error FROM sessions WHERE error IS NOT NULL${since} ORDER BY dir_name DESC`,
      )
      .all(...(options.since === undefined ? [] : [options.since])) as Array<{
      session_id: string;
      error: string;
    }>;
  }

  /** One session's row, or undefined. */
  session(dirName: string): CatalogSession | undefined {
    return this.db.prepare(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE dir_name = ?`).get(dirName) as
      | CatalogSession
      | undefined;
  }

  /** Failures of the given sessions (all when omitted), in session and seq order. */
  failures(dirNames?: readonly string[]): CatalogFailure[] {
    const cols = `dir_name, seq, at, tool, status, code, category, detail, target, window, class_name, process,
      recovered, fingerprint`;
    if (!dirNames) {
      return this.db.prepare(`SELECT ${cols} FROM failures ORDER BY dir_name, seq`).all() as CatalogFailure[];
    }
    const stmt = this.db.prepare(`SELECT ${cols} FROM failures WHERE dir_name = ? ORDER BY seq`);
    return dirNames.flatMap((name) => stmt.all(name) as CatalogFailure[]);
  }

  /** Tool counts of the given sessions (all when omitted). */
  toolCounts(dirNames?: readonly string[]): CatalogToolCount[] {
    if (!dirNames) {
      return this.db
        .prepare('SELECT dir_name, tool, calls, failures FROM tool_calls ORDER BY dir_name, tool')
        .all() as CatalogToolCount[];
    }
    const stmt = this.db.prepare(
      'SELECT dir_name, tool, calls, failures FROM tool_calls WHERE dir_name = ? ORDER BY tool',
    );
    return dirNames.flatMap((name) => stmt.all(name) as CatalogToolCount[]);
  }

  /** Close both connections (the writer first, so its close leaves the WAL in place). */
  close(): void {
    if (this.db.open) this.db.close();
    if (this.guard?.open) this.guard.close();
  }
}

/** What `touchCatalogSession` did: touched the row (or there is no catalog), found it locked, or failed. */
export type CatalogTouch = 'touched' | 'busy' | 'failed';

/** Whether `err` is SQLite saying another connection holds a lock it needs. */
function isBusy(err: unknown): boolean {
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

/**
 * Tell the catalog of `sessionsDir` that the session in `sessionDir` changed (ended, got a verdict): its
 * row is read again from the log by the next reader. Creates no catalog: without one there is nothing to
 * keep true. Never throws; waits at most `busyTimeoutMs` (default 1 s; 0: not at all) for the catalog's
 * lock, on the calling thread.
 */
export function touchCatalogSession(
  sessionsDir: string,
  sessionDir: string,
  options: { busyTimeoutMs?: number } = {},
): CatalogTouch {
  try {
    const dirName = path.basename(sessionDir);
    if (path.resolve(path.dirname(sessionDir)) !== path.resolve(sessionsDir)) return 'failed';
    // A copy's or a renamed dir's row is keyed by its name too; the id is a stand-in until the row is read.
    const sessionId = idOfDirName(dirName);
    // No catalog yet: nothing to keep true (the first reader creates it and reads every session).
    if (!fs.existsSync(path.join(sessionsDir, CATALOG_FILE))) return 'touched';
    const catalog = Catalog.open(sessionsDir, { busyTimeoutMs: options.busyTimeoutMs ?? 1000 });
    try {
      catalog.touch(dirName, sessionId);
    } finally {
      catalog.close();
    }
    return 'touched';
  } catch (err) {
    return isBusy(err) ? 'busy' : 'failed';
  }
}

/**
 * Leave a session's change to the next reader of the catalog without writing the catalog: the session
 * dir's time moves to now, a sweep request (`SWEEP_REQUEST_FILE`) is left, and the sessions dir's time moves
 * to now, so the reader makes a full sweep and reads the session again (its dir is newer than its row). A
 * names sweep would not see it: the session's name did not come or go. Returns false when this fails.
 */
export function handSessionToNextReader(sessionsDir: string, sessionDir: string): boolean {
  try {
    const now = new Date();
    fs.utimesSync(sessionDir, now, now);
    // After the dir's time: a reader that removes the request before its sweep then sees the new time.
    try {
      // 'wx': one already there is the same request, and a symlink there (a sessions dir copied from
      // elsewhere) is never followed: writing through it would empty a file outside the sessions dir.
      fs.writeFileSync(path.join(sessionsDir, SWEEP_REQUEST_FILE), '', { flag: 'wx' });
    } catch {
      // A request pending delete (EPERM on Windows) or a dir we may not create in: the sessions dir's time
      // alone still makes the next sweep full unless a name comes or goes meanwhile (then the 10-minute one).
    }
    // The request may be there already (no name came): the sessions dir's time must still move.
    fs.utimesSync(sessionsDir, now, now);
    return true;
  } catch {
    return false;
  }
}

/** The WHERE terms and parameters of a sessions filter (a session's time is its start, else its last activity). */
function sessionFilter(filter: {
  since?: string;
  until?: string;
  scenario?: string;
  verdict?: 'PASS' | 'FAIL';
}): {
  where: string[];
  params: unknown[];
} {
  const where: string[] = [];
  const params: unknown[] = [];
  const term = (value: string | undefined, sql: string) => {
    if (value === undefined) return;
    where.push(sql);
    params.push(value);
  };
  term(filter.since, 'coalesce(started_at, last_activity_at) >= ?');
  term(filter.until, 'coalesce(started_at, last_activity_at) < ?');
  term(filter.scenario, 'scenario = ?');
  term(filter.verdict, 'verdict = ?');
  return { where, params };
}
