/** Read-only access to one session log; safe to use while the recorder is still writing it (WAL). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { describeFsError } from '../paths/disk-errors.js';
import {
  isPortableDirName,
  isSafeSessionId,
  LOG_FILE,
  parseSessionDirName,
  utcStamp,
} from '../paths/naming.js';
import { expectBoolean, expectNonEmptyString, expectOptions } from '../util/expect.js';
import { pidAlive } from '../util/temp-files.js';
import { describeLogError, type LogForReading, openLogForReading, type SessionDb } from './open.js';
import type {
  ArtifactRow,
  CallCounts,
  CallRow,
  EventRow,
  SessionRow,
  WarningRow,
  WriterRow,
} from './schema.js';

/** Where a session lives on disk. */
export interface SessionLocation {
  dir: string;
  dirName: string;
  sessionId: string;
  /** `yyyyMMdd-HHmmss` (UTC) from the dir name. */
  stamp: string;
}

/** Result of looking a session up by id, id prefix or dir name. */
export type SessionLookup =
  | { ok: true; session: SessionLocation }
  | {
      ok: false;
      reason: 'not-found' | 'ambiguous' | 'invalid-id';
      candidates: SessionLocation[];
      message: string;
    };

/** Aggregates computed in SQL so a summary never loads every call. */
export interface SessionStats extends CallCounts {
  ok: number;
  failed: number;
  fault: number;
  lastCallSeq: number | null;
  /** The newest time of a call or an event: what last touched the log (prune's and --since's measure). */
  lastActivityAt: string | null;
  /**
   * The newest time of a call or an event other than a verdict: where a run without an end ends (its
   * duration). A verdict, declared by `mcec-bundle verdict` minutes or days later, is about the run.
   */
  lastRunActivityAt: string | null;
}

/** A failed or faulted call with its target and whether a later call of the same tool on it succeeded. */
export interface FailureRow extends CallRow {
  /** What the call addressed, e.g. `window=save as`, `handle=131234`, `foreground`; '' for no target. */
  target: string;
  recovered: number;
}

/** A failed or faulted call as a verdict names it. */
export interface FailureFact {
  seq: number;
  tool: string;
  code: string | null;
  /** What the call addressed (see targetSql), '' for none. */
  target: string;
  detail: string | null;
}

/**
 * Recovery over a whole log: how many failures were recovered, and the newest failed call left unrecovered
 * and the newest fault (which is never recovered), each with its tool, code and target.
 */
export interface FailureOutcome {
  recovered: number;
  newestUnrecovered: FailureFact | null;
  newestFault: FailureFact | null;
}

/** The outcome of a log without failed or faulted calls. */
export const NO_FAILURES: FailureOutcome = Object.freeze({
  recovered: 0,
  newestUnrecovered: null,
  newestFault: null,
});

/** The sessions this many most recent are offered as hints when an id is not found. */
const HINT_COUNT = 10;

/**
 * Session dirs under `sessionsDir`, oldest first by name; [] when it is missing. A session dir is a dir
 * holding a session.sqlite: named `<stamp>-<id>` (id and stamp from the name, no log opened), or named
 * otherwise, a copy (`... (2)`) or a renamed dir, whose id and stamp are its log's (its dir name when the
 * log cannot be read). A dir renamed to another `<stamp>-<id>` is known by its name here; the catalog
 * (src/fleet/catalog.ts) knows every dir by its log.
 */
export function listSessions(sessionsDir: string): SessionLocation[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(sessionsDir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: SessionLocation[] = [];
  for (const entry of entries) {
    // Dirent.isDirectory() does not follow symlinks, so a link cannot lead outside the sessions dir.
    if (!entry.isDirectory()) continue;
    const dir = path.join(sessionsDir, entry.name);
    try {
      if (!fs.lstatSync(path.join(dir, LOG_FILE)).isFile()) continue;
    } catch {
      continue;
    }
    const parsed = parseSessionDirName(entry.name) ?? logIdentity(dir, entry.name);
    out.push({ dir, dirName: entry.name, sessionId: parsed.sessionId, stamp: parsed.stamp });
  }
  return out.sort((a, b) => (a.dirName < b.dirName ? -1 : a.dirName > b.dirName ? 1 : 0));
}

/** The id and UTC start stamp a session dir's log names; its dir name (and no stamp) when it cannot be read. */
function logIdentity(dir: string, dirName: string): { sessionId: string; stamp: string } {
  try {
    const reader = SessionReader.open(dir);
    try {
      const row = reader.session();
      const started = new Date(row.started_at);
      return {
        sessionId: row.session_id,
        stamp: Number.isFinite(started.getTime()) ? utcStamp(started) : '',
      };
    } finally {
      reader.close();
    }
  } catch {
    return { sessionId: dirName, stamp: '' };
  }
}

function describeCandidates(list: SessionLocation[]): string {
  return list.map((s) => `  ${s.dirName}`).join('\n');
}

function quoteInput(input: string): string {
  const shown = input.length > 80 ? `${input.slice(0, 80)}...` : input;
  return JSON.stringify(shown);
}

/**
 * Find one session by its full id, a unique prefix of one, or its dir name; never looks outside `sessionsDir`.
 * `sessions`: where to look, by default `listSessions` (dir names); the CLI and the MCP server pass the
 * catalog's, which knows each dir by its log's id (what `list` shows). An id two dirs hold (copies of one
 * session) is ambiguous: the message names both dirs.
 */
export function resolveSession(
  sessionsDir: string,
  idOrPrefix: string,
  sessions?: readonly SessionLocation[],
): SessionLookup {
  const input = typeof idOrPrefix === 'string' ? idOrPrefix : '';
  const invalid: SessionLookup = {
    ok: false,
    reason: 'invalid-id',
    candidates: [],
    message:
      `invalid session id ${quoteInput(input)}: use 1-64 characters of A-Z a-z 0-9 _ - ` +
      `(an id, a prefix of one, or a session dir name in ${sessionsDir})`,
  };
  // A dir name is matched as a whole first (a copy's `... (2)` included): only the names listed, never a path.
  const isDirName = parseSessionDirName(input) !== null || isPortableDirName(input);
  if (!isDirName && !isSafeSessionId(input)) return invalid;
  const all = sessions ?? listSessions(sessionsDir);
  if (isDirName) {
    const hit = all.find((s) => s.dirName === input);
    if (hit) return { ok: true, session: hit };
    if (!isSafeSessionId(input)) return invalid;
  }
  const matches = idMatches(all, input);
  if (matches.length === 1) return { ok: true, session: matches[0]! };
  if (matches.length > 1) {
    const ids = new Set(matches.map((m) => m.sessionId));
    // A short prefix can match thousands: name the most recent few, as for an id that matches none.
    const shown = matches.slice(-HINT_COUNT);
    const which = shown.length === matches.length ? '' : ` (the ${shown.length} most recent)`;
    return {
      ok: false,
      reason: 'ambiguous',
      candidates: shown,
      message:
        ids.size === 1
          ? `session id ${quoteInput(matches[0]!.sessionId)} is in ${matches.length} dirs of ${sessionsDir} ` +
            `(copies of one session): give the session dir's name or path instead${which}:\n${describeCandidates(shown)}`
          : `session id ${quoteInput(input)} is ambiguous in ${sessionsDir}: ${matches.length} sessions match; ` +
            `give more characters${which}:\n${describeCandidates(shown)}`,
    };
  }
  return notFound(sessionsDir, input, all);
}

/**
 * The sessions `input` names as an id: the full id, else a prefix, in exact case; only when neither matches,
 * the same without case (MCEC's ids are lower-case hex: `775B` means `775b...`). An exact-case match wins, so
 * ids that differ only in case are each reached by their own case.
 */
function idMatches(all: readonly SessionLocation[], input: string): SessionLocation[] {
  const exact = all.filter((s) => s.sessionId === input);
  if (exact.length > 0) return exact;
  const prefixed = all.filter((s) => s.sessionId.startsWith(input));
  if (prefixed.length > 0) return prefixed;
  const lower = input.toLowerCase();
  const exactAnyCase = all.filter((s) => s.sessionId.toLowerCase() === lower);
  if (exactAnyCase.length > 0) return exactAnyCase;
  return all.filter((s) => s.sessionId.toLowerCase().startsWith(lower));
}

function notFound(sessionsDir: string, input: string, all: readonly SessionLocation[]): SessionLookup {
  const hints = all.slice(-HINT_COUNT);
  const known =
    all.length === 0
      ? `no sessions are recorded there`
      : all.length === 1
        ? `the one session there:\n${describeCandidates(hints)}`
        : `the ${hints.length === all.length ? '' : `${hints.length} most recent of `}${all.length} sessions there:\n${describeCandidates(hints)}`;
  return {
    ok: false,
    reason: 'not-found',
    candidates: hints,
    message: `no session matching ${quoteInput(input)} in ${sessionsDir}; ${known}`,
  };
}

const CALL_COLUMNS = `seq, tool, args, rpc_id, transport, started_at, ended_at, duration_ms, status, ok, error_code,
  error_category, error_detail, output_kind, envelope, response, violations, payload_dropped`;

/** CALL_COLUMNS' order with only the player's columns read (PlayerCollector.add, and summarizeCall). */
const PLAYER_CALL_COLUMNS = `seq, tool, args, NULL, transport, started_at, NULL, NULL, status, ok, error_code,
  NULL, NULL, NULL, envelope, NULL, NULL, payload_dropped`;

/**
 * A CallRow from a raw row in CALL_COLUMNS order. Built here, all rows share one object shape; rows built by
 * the driver cost about 15% more to read, and reading is most of streaming 10,000 calls.
 */
function callRowOf(v: unknown[]): CallRow {
  return {
    seq: v[0],
    tool: v[1],
    args: v[2],
    rpc_id: v[3],
    transport: v[4],
    started_at: v[5],
    ended_at: v[6],
    duration_ms: v[7],
    status: v[8],
    ok: v[9],
    error_code: v[10],
    error_category: v[11],
    error_detail: v[12],
    output_kind: v[13],
    envelope: v[14],
    response: v[15],
    violations: v[16],
    payload_dropped: v[17],
  } as CallRow;
}

/**
 * Columns for lists (timelines, failure lists): args and detail clipped in SQL, the envelope only for
 * successful calls (the per-tool summarizer needs no more), so long lists never pull megabytes into JS.
 */
function lightColumns(t = ''): string {
  return `${t}seq AS seq, ${t}tool AS tool, substr(${t}args, 1, 65536) AS args, ${t}rpc_id AS rpc_id,
    ${t}transport AS transport, ${t}started_at AS started_at, ${t}ended_at AS ended_at, ${t}duration_ms AS duration_ms,
    ${t}status AS status, ${t}ok AS ok, ${t}error_code AS error_code, ${t}error_category AS error_category,
    substr(${t}error_detail, 1, 8192) AS error_detail, ${t}output_kind AS output_kind,
    CASE WHEN ${t}status = 'ok' THEN ${t}envelope END AS envelope, NULL AS response, ${t}violations AS violations,
    ${t}payload_dropped AS payload_dropped`;
}
const LIGHT_CALL_COLUMNS = lightColumns();

/**
 * The target of a call as MCEC resolves it (WindowResolver: handle > foreground > the title / process /
 * className filters together), as SQL over the stored `args` JSON of table alias `t`. Title and process
 * compare case-insensitively in MCEC, so they are lower-cased; a call with none of these (send_command, a
 * region capture, session-*), or whose args were dropped, has the empty target ''.
 */
function targetSql(t: string): string {
  const a = `${t}.args`;
  const text = (key: string, label: string, lower: boolean) =>
    `coalesce(CASE WHEN json_type(${a}, '$.${key}') = 'text' AND json_extract(${a}, '$.${key}') != ''
      THEN ' ${label}=' || ${lower ? `lower(json_extract(${a}, '$.${key}'))` : `json_extract(${a}, '$.${key}')`} END, '')`;
  return `(CASE WHEN ${a} IS NULL OR NOT json_valid(${a}) THEN ''
    WHEN json_type(${a}, '$.handle') = 'integer' AND json_extract(${a}, '$.handle') > 0
      THEN 'handle=' || json_extract(${a}, '$.handle')
    WHEN json_type(${a}, '$.foreground') = 'true' THEN 'foreground'
    ELSE ltrim(${text('window', 'window', true)} || ${text('process', 'process', true)} || ${text('className', 'class', false)}) END)`;
}

/**
 * The newest successful seq per (tool, target), only for tools that have a failed call: a failed call is
 * recovered when a later call of the same tool on the same target succeeded. Walks those tools' calls on
 * the (tool, seq) index (`+status` keeps SQLite off the status index); materialized so it runs once.
 * `byTarget` false: per tool whatever the target (another MCP server's calls name no window, sameToolRecovers).
 */
function lastOkSql(byTarget: boolean): string {
  return `last_ok AS MATERIALIZED (SELECT c.tool AS tool, ${byTarget ? `${targetSql('c')} AS target, ` : ''}max(c.seq) AS seq
    FROM calls c WHERE c.tool IN (SELECT tool FROM calls WHERE status = 'failed') AND +c.status = 'ok'
    GROUP BY ${byTarget ? '1, 2' : '1'})`;
}

/** Failed and faulted calls with their target; a fault (protocol error, proxy error) is never recovered. */
const FAILS = `fails AS MATERIALIZED (SELECT f.seq AS seq, f.tool AS tool, f.status AS status,
    ${targetSql('f')} AS target FROM calls f WHERE f.status IN ('failed', 'fault'))`;

/**
 * Every failure (`fails`, alias x) with its target and whether it was recovered (`rec`): a later success in
 * `last_ok` (alias l) of the same tool, and the same target when `byTarget`. What the outcome queries judge.
 */
function judgedSql(byTarget: boolean): string {
  return `judged AS MATERIALIZED (SELECT x.seq AS seq, x.status AS status, x.target AS target,
  (x.status = 'failed' AND l.seq IS NOT NULL AND l.seq > x.seq) AS rec
  FROM fails x LEFT JOIN last_ok l ON l.tool = x.tool${byTarget ? ' AND l.target = x.target' : ''})`;
}

/** The recovery CTEs, MCEC's rule (same tool, same target) or another server's (same tool). */
const RECOVERY_BY_TARGET = `${lastOkSql(true)}, ${FAILS}, ${judgedSql(true)}`;
const RECOVERY_BY_TOOL = `${lastOkSql(false)}, ${FAILS}, ${judgedSql(false)}`;

type Statement = Database.Statement<unknown[], unknown>;

/** Read-only view of one session log. */
export class SessionReader {
  readonly dir: string;
  private readonly log: LogForReading;
  private readonly db: SessionDb;
  /** Prepared statements by SQL text: preparing costs more than running most of these queries. */
  private readonly statements = new Map<string, Statement>();

  /** The log's schema version: version 1 logs have no writers table and no writer columns. */
  private readonly version: number;

  private constructor(dir: string, log: LogForReading) {
    this.dir = dir;
    this.log = log;
    this.db = log.db;
    this.version = log.version;
  }

  /** The prepared statement for `sql` (returning arrays when `raw`), prepared once per reader. */
  private stmt(sql: string, raw = false): Statement {
    const key = raw ? `raw:${sql}` : sql;
    let statement = this.statements.get(key);
    if (!statement) {
      statement = this.db.prepare(sql);
      if (raw) statement.raw(true);
      this.statements.set(key, statement);
    }
    return statement;
  }

  /**
   * Open the log in `dir` (a session dir) read-only, leaving the dir as it was found (`openLogForReading`:
   * a dir this user cannot write is read from a private copy). `tidy` picks the handle rather than the
   * log's state: true, one that removes the -wal and -shm it created (the recorder, right after closing the
   * log); false, a read-only one.
   */
  static open(dir: string, options: { tidy?: boolean } = {}): SessionReader {
    expectNonEmptyString(dir, 'dir');
    expectBoolean(expectOptions(options).tidy, 'options.tidy');
    const file = path.join(dir, LOG_FILE);
    let found: fs.Stats | undefined;
    try {
      found = fs.statSync(file, { throwIfNoEntry: false });
    } catch (err) {
      // A dir this user may not search: said as such, not as a dir without a log.
      throw new Error(`${file} cannot be read: ${describeFsError(err)}; make ${dir} readable by this user`);
    }
    if (!found) throw new Error(`${dir}: no ${LOG_FILE} in this directory`);
    return new SessionReader(dir, openLogForReading(file, options));
  }

  /** Run `fn` inside one read transaction so every query sees the same snapshot of a log being written. */
  snapshot<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    try {
      this.db.exec('BEGIN');
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      if (this.db.inTransaction) {
        try {
          this.db.exec('ROLLBACK'); // a read transaction: nothing to keep
        } catch {
          // a damaged log may refuse even this; the error below says why
        }
      }
      // A bad page is met by a query, not at open: said here once with the log's path and what to do, for
      // `show`, `list`'s UNREADABLE line and the MCP tools alike (SQLite's words name neither).
      throw describeLogError(path.join(this.dir, LOG_FILE), err);
    }
  }

  /** The session row's status as stored (no process check), null when there is no row. */
  storedStatus(): SessionRow['status'] | null {
    const row = this.stmt('SELECT status FROM session WHERE id = 1').get() as
      | { status: SessionRow['status'] }
      | undefined;
    return row?.status ?? null;
  }

  /**
   * The session row as stored, except an 'open' session none of whose writers can be running on this machine
   * reads as 'aborted' (it never ended): its writer here is gone, or it is on another host, where its pid
   * cannot be checked (`openElsewhere` names it).
   */
  session(): SessionRow {
    const row = this.stmt(
      `SELECT session_id, original_id, scenario, started_at, ended_at, status, passed, end_reason,
          recorder_version, writer_pid, environment, last_observation FROM session WHERE id = 1`,
    ).get() as SessionRow | undefined;
    if (!row)
      throw new Error(`${this.dir}: the log has no session row (the writer stopped before starting it)`);
    if (row.status === 'open' && !this.writerRunning(row.writer_pid)) return { ...row, status: 'aborted' };
    return row;
  }

  /**
   * Whether a process that wrote this open session may still be running here: any registered writer's pid
   * alive on this machine (a log closed while idle still has its writer); for a version 1 log, `writer_pid`
   * alive or unknown. A writer on another host is not one: it cannot be checked from here (`openElsewhere`).
   */
  private writerRunning(writerPid: number | null): boolean {
    const writers = this.writers();
    if (writers.length === 0) return writerPid == null || pidAlive(writerPid);
    const host = os.hostname();
    return writers.some((w) => w.host === host && pidAlive(w.pid));
  }

  /** Every process that wrote this log, in the order they first wrote, with the calls each recorded. */
  writers(): WriterRow[] {
    if (this.version < 2) return [];
    return this.stmt(
      `SELECT w.id, w.pid, w.host, w.opened_at, w.closed_at,
          (SELECT count(*) FROM calls c WHERE c.writer = w.id) AS calls
         FROM writers w ORDER BY w.id`,
    ).all() as WriterRow[];
  }

  /**
   * Writers running on this machine that may still write the log: registered, not closed (a writer keeps its
   * row open while its recorder holds the session, even with the file handle given back) and alive. One on
   * another host is not here: see `uncheckedWriters`. prune never removes a session with one.
   */
  liveWriters(): WriterRow[] {
    const host = os.hostname();
    return this.writers().filter((w) => w.closed_at === null && w.host === host && pidAlive(w.pid));
  }

  /**
   * Writers on another host that never closed the log: crashed there, or still writing it (a container or
   * another machine sharing the dir); which cannot be told from here. prune keeps such a session only while
   * its files were recently written.
   */
  uncheckedWriters(): WriterRow[] {
    const host = os.hostname();
    return this.writers().filter((w) => w.closed_at === null && w.host !== host);
  }

  /**
   * For a session stored `open` that reads as `aborted` while a writer on another host never closed it: the
   * newest such writer (its host is named wherever the session's status is shown); null otherwise.
   */
  openElsewhere(): WriterRow | null {
    if (this.storedStatus() !== 'open') return null;
    const row = this.stmt('SELECT writer_pid FROM session WHERE id = 1').get() as {
      writer_pid: number | null;
    };
    if (this.writerRunning(row.writer_pid)) return null;
    return this.uncheckedWriters().at(-1) ?? null;
  }

  /** Number of calls recorded (pending ones included). */
  callCount(): number {
    return (this.stmt('SELECT count(*) AS n FROM calls').get() as { n: number }).n;
  }

  /**
   * Calls in seq order from `fromSeq` (default 1), at most `limit`, streamed one row at a time. `columns:
   * 'player'` reads only what the player's model and the summary line take (seq, tool, args, started_at,
   * status, error_code, envelope, payload_dropped; the rest null): run.gif's own pass, which need not pull
   * the responses into JS.
   */
  *calls(
    options: { fromSeq?: number; limit?: number; columns?: 'all' | 'player' } = {},
  ): IterableIterator<CallRow> {
    const from = options.fromSeq ?? 0;
    const limit = options.limit ?? -1;
    // Page through in chunks so the caller may query the reader between rows (an open iterate() locks it).
    const PAGE = 500;
    let next = from;
    let left = limit < 0 ? Number.POSITIVE_INFINITY : limit;
    const columns = options.columns === 'player' ? PLAYER_CALL_COLUMNS : CALL_COLUMNS;
    const stmt = this.stmt(`SELECT ${columns} FROM calls WHERE seq >= ? ORDER BY seq LIMIT ?`, true);
    while (left > 0) {
      const page = stmt.all(next, Math.min(PAGE, left)) as unknown[][];
      if (page.length === 0) return;
      let last = 0;
      for (const values of page) {
        const row = callRowOf(values);
        last = row.seq;
        yield row;
      }
      left -= page.length;
      next = last + 1;
      if (page.length < PAGE) return;
    }
  }

  /** One call by seq. */
  call(seq: number): CallRow | undefined {
    return this.stmt(`SELECT ${CALL_COLUMNS} FROM calls WHERE seq = ?`).get(seq) as CallRow | undefined;
  }

  /** The last `n` calls in seq order (the tail, without reading the rest); light rows (see LIGHT_CALL_COLUMNS). */
  tailCalls(n: number): CallRow[] {
    if (n <= 0) return [];
    const rows = this.stmt(`SELECT ${LIGHT_CALL_COLUMNS} FROM calls ORDER BY seq DESC LIMIT ?`).all(
      n,
    ) as CallRow[];
    return rows.reverse();
  }

  /**
   * The first of a run of identical failures ending at `seq` (same tool, status, code, detail and arguments,
   * no success of that tool between them): where the run first went wrong. `seq` when it stands alone.
   */
  firstOfRepeatedFailure(seq: number): number {
    const row = this.stmt(
      `SELECT tool, status, error_code, error_detail, args FROM calls WHERE seq = ? AND status IN ('failed', 'fault')`,
    ).get(seq) as
      | {
          tool: string;
          status: string;
          error_code: string | null;
          error_detail: string | null;
          args: string | null;
        }
      | undefined;
    if (!row) return seq;
    const lastOk = (
      this.stmt(
        `SELECT coalesce(max(seq), 0) AS s FROM calls WHERE tool = ? AND +status = 'ok' AND seq < ?`,
      ).get(row.tool, seq) as { s: number }
    ).s;
    const first = this.stmt(
      `SELECT min(seq) AS s FROM calls WHERE tool = ? AND seq > ? AND seq <= ? AND +status = ?
         AND error_code IS ? AND error_detail IS ? AND args IS ?`,
    ).get(row.tool, lastOk, seq, row.status, row.error_code, row.error_detail, row.args) as {
      s: number | null;
    };
    return first.s ?? seq;
  }

  /** The highest-seq call matching the filter, with `seq < beforeSeq` when given. */
  lastCallWhere(filter: {
    statuses?: string[];
    tools?: readonly string[];
    beforeSeq?: number;
  }): CallRow | undefined {
    const statuses = filter.statuses?.length ? filter.statuses : null;
    const before = filter.beforeSeq != null ? filter.beforeSeq : null;
    if (!filter.tools?.length) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (statuses) {
        where.push(`status IN (${statuses.map(() => '?').join(',')})`);
        params.push(...statuses);
      }
      if (before !== null) {
        where.push('seq < ?');
        params.push(before);
      }
      const sql = `SELECT ${CALL_COLUMNS} FROM calls ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY seq DESC LIMIT 1`;
      return this.stmt(sql).get(...params) as CallRow | undefined;
    }
    // With tools: walk each tool's calls back on the (tool, seq) index and keep the newest hit. The status
    // index would visit every call of those statuses to find a rare tool's (`+status` keeps SQLite off it).
    const sql = `SELECT seq FROM calls WHERE tool = ?${statuses ? ` AND +status IN (${statuses.map(() => '?').join(',')})` : ''}${before !== null ? ' AND seq < ?' : ''}
      ORDER BY seq DESC LIMIT 1`;
    const stmt = this.stmt(sql);
    let newest: number | undefined;
    for (const tool of new Set(filter.tools)) {
      const hit = stmt.get(tool, ...(statuses ?? []), ...(before !== null ? [before] : [])) as
        | { seq: number }
        | undefined;
      if (hit && (newest === undefined || hit.seq > newest)) newest = hit.seq;
    }
    return newest === undefined ? undefined : this.call(newest);
  }

  /** Counts and sums over the whole log, in SQL. */
  stats(): SessionStats {
    // One scan of the calls (each scan reads every row's pages, payloads included), and the other tables'
    // counts in the same statement: one statement to prepare per log, not five. A proxy's recording gap counts
    // as a record failure, its tool calls as lost.
    const sums = this.stmt(
      `SELECT count(*) AS calls, max(seq) AS lastSeq, coalesce(sum(payload_dropped), 0) AS dropped,
          coalesce(sum(CASE WHEN violations IS NOT NULL AND json_valid(violations)
            AND json_type(violations) = 'array' THEN json_array_length(violations) ELSE 0 END), 0) AS violations,
          max(coalesce(ended_at, started_at)) AS lastCallAt,
          count(*) FILTER (WHERE status = 'ok') AS ok, count(*) FILTER (WHERE status = 'failed') AS failed,
          count(*) FILTER (WHERE status = 'fault') AS fault, count(*) FILTER (WHERE status = 'pending') AS pending,
          (SELECT count(*) FROM warnings) AS warnings, (SELECT count(*) FROM artifacts) AS artifacts,
          (SELECT count(*) FROM events WHERE kind IN ('record-failure', 'recording-gap')) AS recordFailures,
          (SELECT total(CASE WHEN NOT json_valid(detail) THEN 0 WHEN kind = 'record-failure'
            THEN coalesce(json_extract(detail, '$.lost'), 0) ELSE coalesce(json_extract(detail, '$.toolCalls'), 0)
            END) FROM events WHERE kind IN ('record-failure', 'recording-gap')) AS lost,
          (SELECT max(at) FROM events) AS lastEventAt,
          (SELECT max(at) FROM events WHERE kind <> 'verdict') AS lastRunEventAt
         FROM calls`,
    ).get() as {
      calls: number;
      lastSeq: number | null;
      dropped: number;
      violations: number;
      lastCallAt: string | null;
      ok: number;
      failed: number;
      fault: number;
      pending: number;
      warnings: number;
      artifacts: number;
      recordFailures: number;
      lost: number;
      lastEventAt: string | null;
      lastRunEventAt: string | null;
    };
    const { warnings, artifacts, lastEventAt } = sums;
    const rf = { n: sums.recordFailures, lost: sums.lost };
    // ISO UTC strings of equal shape order like the times they name.
    const newest = (times: Array<string | null>) =>
      times
        .filter((t): t is string => t != null)
        .sort()
        .at(-1) ?? null;
    const lastActivityAt = newest([sums.lastCallAt, lastEventAt]);
    const lastRunActivityAt = newest([sums.lastCallAt, sums.lastRunEventAt]);
    return {
      calls: sums.calls,
      ok: sums.ok,
      failed: sums.failed,
      fault: sums.fault,
      pending: sums.pending,
      warnings,
      artifacts,
      violations: sums.violations,
      droppedPayloads: sums.dropped,
      recordFailures: rf.n,
      lostCalls: Number(rf.lost) || 0,
      lastCallSeq: sums.lastSeq,
      lastActivityAt,
      lastRunActivityAt,
    };
  }

  /**
   * The failed and faulted calls, newest first, at most `limit` of them (-1: all), each with its target and
   * marked recovered when it failed (not faulted) and a later call of the same tool on the same target
   * succeeded (light rows, see LIGHT_CALL_COLUMNS); and the outcome over all of them. One statement, the
   * recovery CTEs computed once (preparing and running them twice was half of reading a log for `index`):
   * the window totals run over every failure before the LIMIT; only the rows kept are joined to their calls.
   */
  failuresAndOutcome(
    limit: number,
    options: { sameToolRecovers?: boolean } = {},
  ): { failures: FailureRow[]; outcome: FailureOutcome } {
    const keep = Math.floor(limit);
    // The totals ride on the rows kept: with none asked for, one is read for them and not returned.
    const sqlLimit = keep === 0 ? 1 : keep;
    const any = options.sameToolRecovers === true;
    const rows = this.stmt(
      `WITH ${any ? RECOVERY_BY_TOOL : RECOVERY_BY_TARGET},
        kept AS MATERIALIZED (SELECT seq, target, rec, sum(rec) OVER () AS recovered_total,
            max(CASE WHEN NOT rec AND status = 'failed' THEN seq END) OVER () AS newest_unrecovered,
            max(CASE WHEN status = 'fault' THEN seq END) OVER () AS newest_fault
          FROM judged ORDER BY seq DESC LIMIT ${sqlLimit})
      SELECT ${lightColumns('c.')}, k.target AS target, k.rec AS recovered, k.recovered_total AS recovered_total,
        k.newest_unrecovered AS newest_unrecovered, k.newest_fault AS newest_fault
      FROM kept k JOIN calls c ON c.seq = k.seq ORDER BY k.seq DESC`,
    ).all() as Array<
      FailureRow & { recovered_total: number; newest_unrecovered: number | null; newest_fault: number | null }
    >;
    const first = rows[0];
    const fact = (seq: number | null | undefined): FailureFact | null => {
      if (seq == null) return null;
      const hit = rows.find((r) => r.seq === seq);
      if (hit)
        return { seq, tool: hit.tool, code: hit.error_code, detail: hit.error_detail, target: hit.target };
      return this.failureFact(seq);
    };
    const outcome = {
      recovered: first?.recovered_total ?? 0,
      newestUnrecovered: fact(first?.newest_unrecovered),
      newestFault: fact(first?.newest_fault),
    };
    const failures = (keep === 0 ? [] : rows).map(
      ({ recovered_total: _t, newest_unrecovered: _u, newest_fault: _f, ...row }) => row as FailureRow,
    );
    return { failures, outcome };
  }

  /** A failure as a verdict names it, target included (a call older than the rows a caller kept). */
  private failureFact(seq: number): FailureFact | null {
    const row = this.stmt(
      `SELECT seq, tool, error_code AS code, substr(error_detail, 1, 8192) AS detail, ${targetSql('calls')} AS target
         FROM calls WHERE seq = ?`,
    ).get(seq) as FailureFact | undefined;
    return row ?? null;
  }

  /** Calls and failed or faulted calls per tool, by tool name. */
  toolCounts(): Array<{ tool: string; calls: number; failures: number }> {
    return this.stmt(
      `SELECT tool, count(*) AS calls, sum(status IN ('failed', 'fault')) AS failures
         FROM calls GROUP BY tool ORDER BY tool`,
    ).all() as Array<{ tool: string; calls: number; failures: number }>;
  }

  /** Number of calls that failed with this error code. */
  callCountWithCode(code: string): number {
    return (this.stmt('SELECT count(*) AS n FROM calls WHERE error_code = ?').get(code) as { n: number }).n;
  }

  /** Warnings grouped by code: count and the first detail seen, most frequent first. */
  warningsByCode(): Array<{ code: string; count: number; example: string | null }> {
    return this.stmt(
      `SELECT code, count(*) AS count,
          (SELECT w2.detail FROM warnings w2 WHERE w2.code = w.code ORDER BY w2.id LIMIT 1) AS example
         FROM warnings w GROUP BY code ORDER BY count DESC, code`,
    ).all() as Array<{ code: string; count: number; example: string | null }>;
  }

  /** All warnings in order. */
  warnings(): WarningRow[] {
    return this.stmt('SELECT id, call_seq, code, detail FROM warnings ORDER BY id').all() as WarningRow[];
  }

  /** Warning rows of one call. */
  warningsOfCall(seq: number): WarningRow[] {
    return this.stmt('SELECT id, call_seq, code, detail FROM warnings WHERE call_seq = ? ORDER BY id').all(
      seq,
    ) as WarningRow[];
  }

  /** The newest event of a kind that names call `seq`. */
  eventOfCall(kind: string, seq: number): EventRow | undefined {
    return this.stmt(
      'SELECT id, at, kind, call_seq, detail FROM events WHERE kind = ? AND call_seq = ? ORDER BY id DESC LIMIT 1',
    ).get(kind, seq) as EventRow | undefined;
  }

  /** All artifact rows in order. */
  artifacts(): ArtifactRow[] {
    return this.stmt('SELECT * FROM artifacts ORDER BY id').all() as ArtifactRow[];
  }

  /** Artifact rows of one call. */
  artifactsOfCall(seq: number): ArtifactRow[] {
    return this.stmt('SELECT * FROM artifacts WHERE call_seq = ? ORDER BY id').all(seq) as ArtifactRow[];
  }

  /** The newest artifact with a file, from a call before `beforeSeq` (any call when omitted), optionally excluding roles. */
  lastImageArtifact(options: { beforeSeq?: number; excludeRoles?: string[] } = {}): ArtifactRow | undefined {
    const where = ['path IS NOT NULL', 'call_seq IS NOT NULL'];
    const params: unknown[] = [];
    if (options.beforeSeq != null) {
      where.push('call_seq < ?');
      params.push(options.beforeSeq);
    }
    if (options.excludeRoles?.length) {
      where.push(`role NOT IN (${options.excludeRoles.map(() => '?').join(',')})`);
      params.push(...options.excludeRoles);
    }
    return this.stmt(
      `SELECT * FROM artifacts WHERE ${where.join(' AND ')} ORDER BY call_seq DESC, id DESC LIMIT 1`,
    ).get(...params) as ArtifactRow | undefined;
  }

  /** Events in order, optionally of one kind. */
  events(kind?: string): EventRow[] {
    if (kind === undefined) {
      return this.stmt('SELECT id, at, kind, call_seq, detail FROM events ORDER BY id').all() as EventRow[];
    }
    return this.stmt('SELECT id, at, kind, call_seq, detail FROM events WHERE kind = ? ORDER BY id').all(
      kind,
    ) as EventRow[];
  }

  /** The newest `n` events of a kind, in order. */
  eventsTail(kind: string, n: number): EventRow[] {
    if (n <= 0) return [];
    const rows = this.stmt(
      'SELECT id, at, kind, call_seq, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT ?',
    ).all(kind, n) as EventRow[];
    return rows.reverse();
  }

  /** The newest `exchange` event (a non-tool JSON-RPC message a proxy saw) for one method, e.g. initialize. */
  lastExchange(method: string): EventRow | undefined {
    return this.stmt(
      `SELECT id, at, kind, call_seq, detail FROM events WHERE kind = 'exchange' AND json_valid(detail)
         AND json_extract(detail, '$.method') = ? ORDER BY id DESC LIMIT 1`,
    ).get(method) as EventRow | undefined;
  }

  /** The newest event of a kind from each writer (running totals such as `truncation` are kept per writer). */
  latestEventPerWriter(kind: string): EventRow[] {
    if (this.version < 2) {
      const last = this.lastEvent(kind);
      return last ? [last] : [];
    }
    return this.stmt(
      `SELECT id, at, kind, call_seq, detail FROM events WHERE id IN
         (SELECT max(id) FROM events WHERE kind = ? GROUP BY writer) ORDER BY id`,
    ).all(kind) as EventRow[];
  }

  /** The newest event of a kind. */
  lastEvent(kind: string): EventRow | undefined {
    return this.stmt(
      'SELECT id, at, kind, call_seq, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1',
    ).get(kind) as EventRow | undefined;
  }

  /**
   * The verdict declared last: a `verdict` event (mcec-bundle verdict, recorder.verdict(), a proxy
   * notification) or a `session-end` event that carries `passed` (end()), whichever is newer.
   */
  lastDeclaredVerdict(): { kind: string; at: string; detail: string } | undefined {
    return this.stmt(
      `SELECT kind, at, detail FROM events WHERE kind IN ('verdict', 'session-end') AND json_valid(detail)
         AND json_type(detail, '$.passed') IN ('true', 'false') ORDER BY id DESC LIMIT 1`,
    ).get() as { kind: string; at: string; detail: string } | undefined;
  }

  /** Number of events of a kind. */
  eventCount(kind: string): number {
    return (this.stmt('SELECT count(*) AS n FROM events WHERE kind = ?').get(kind) as { n: number }).n;
  }

  /** Close the connection (and remove the private copy it read, if any). */
  close(): void {
    this.log.close();
  }
}
