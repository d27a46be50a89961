/**
 * The session log's writer: one SQLite file per session, writes queued in memory and applied in one
 * transaction per `commit()` (the recorder calls it once per event-loop turn or every few ms: group commit).
 * Knows SQLite and files, nothing about MCP. Survives a vanished directory and a file that is not a database
 * by recreating the log and saying so in the commit outcome; never loses queued work silently.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeDirectory } from '../paths/disk-errors.js';
import { LOG_FILE } from './layout.js';
import type { LogPool, PooledLog } from './log-pool.js';
import { openSessionDb, type SessionDb } from './open.js';
import type { ArtifactRow, CallRow, SessionRow } from './schema.js';

/** A `calls` row as written (pending or completed). */
export type CallRecord = CallRow;
/** An `artifacts` row as written (the id is assigned by SQLite). */
export type ArtifactRecord = Omit<ArtifactRow, 'id'>;

export interface WarningRecord {
  callSeq: number;
  code: string;
  detail: string | null;
}

export interface EventRecord {
  at: string;
  kind: string;
  callSeq?: number | null;
  /** JSON text. */
  detail?: string | null;
}

export interface SessionLogOptions {
  /** The session directory (created when missing); the log is `<dir>/session.sqlite`. */
  dir: string;
  /** The session row; kept in memory and rewritten whenever a field changes. */
  session: SessionRow;
  /** How long a commit waits for another writer's lock; short, because commits run on the event loop. */
  busyTimeoutMs?: number;
  /** Extra pragmas run after opening (a test seam: `max_page_count = 8` makes the disk "full"). */
  pragmas?: string[];
  /** Queued operations kept while the database cannot be written; past it the oldest are dropped, counted. */
  maxQueuedOps?: number;
  /** Caps the handles open across logs: past it the least recently used is closed (reopened on demand). */
  pool?: LogPool;
}

/** What a commit did. `recovered` and `dropped` describe losses the caller must count and report. */
export interface CommitOutcome {
  /** Operations applied. */
  committed: number;
  /** The commit failed; the operations stay queued for the next attempt. */
  error?: Error;
  /** The log file vanished or was not a database, and a fresh log was created in its place. */
  recovered?: { reason: string; lostCalls: number };
  /** Queued operations dropped because the database stayed unwritable. */
  dropped?: { ops: number; calls: number };
  /** Young pending rows kept queued for the next commit (see CommitOptions); the log is still dirty. */
  held?: number;
}

export interface CommitOptions {
  /**
   * Keep a call's pending row queued (once) when it was queued less than this many ms ago: a call that
   * completes before the next commit is then written as one row instead of an insert and an update.
   */
  holdYoungPendingMs?: number;
}

type Op =
  | {
      k: 'call';
      row: CallRecord;
      first: boolean;
      queuedAt?: number;
      held?: boolean;
      /** The caller knows the call has already returned: its completed row follows shortly. */
      completing?: boolean;
    }
  | { k: 'delete'; seq: number }
  | { k: 'warning'; w: WarningRecord }
  | { k: 'artifact'; a: ArtifactRecord }
  | { k: 'event'; e: EventRecord }
  | { k: 'latest-event'; e: EventRecord }
  | { k: 'none' };

const SESSION_COLUMNS = [
  'session_id',
  'original_id',
  'scenario',
  'started_at',
  'ended_at',
  'status',
  'passed',
  'end_reason',
  'recorder_version',
  'writer_pid',
  'environment',
  'last_observation',
] as const;

const CALL_COLUMNS = [
  'seq',
  'tool',
  'args',
  'rpc_id',
  'transport',
  'started_at',
  'ended_at',
  'duration_ms',
  'status',
  'ok',
  'error_code',
  'error_category',
  'error_detail',
  'output_kind',
  'envelope',
  'response',
  'violations',
  'payload_dropped',
] as const;

const ARTIFACT_COLUMNS = [
  'call_seq',
  'role',
  'json_path',
  'path',
  'sha256',
  'bytes',
  'width',
  'height',
  'format',
  'blank_check',
  'error',
  'created_at',
] as const;

function upsertSql(table: string, columns: readonly string[], key: string, extra: string[] = []): string {
  const cols = [...extra, ...columns];
  const values = cols.map((c) => (c === 'id' ? '1' : '?')).join(', ');
  const updates = columns
    .filter((c) => c !== key)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  return `INSERT INTO ${table} (${cols.join(', ')}) VALUES (${values}) ON CONFLICT(${key}) DO UPDATE SET ${updates}`;
}

/** How long a pending row whose call has already returned may wait for its completed row. */
const MAX_COMPLETING_HOLD_MS = 1000;

/** SQLite error codes that mean "this file is not (or no longer) a usable database": replace it. */
const CORRUPT_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function sqliteCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

function isCorrupt(err: unknown): boolean {
  const code = sqliteCode(err);
  return CORRUPT_CODES.has(code) || [...CORRUPT_CODES].some((c) => code.startsWith(`${c}_`));
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

interface Statements {
  session: { run(...p: unknown[]): unknown };
  call: { run(...p: unknown[]): unknown };
  del: { run(...p: unknown[]): unknown };
  warning: { run(...p: unknown[]): unknown };
  artifact: { run(...p: unknown[]): unknown };
  event: { run(...p: unknown[]): unknown };
  latestEvent: { get(...p: unknown[]): unknown };
  updateEvent: { run(...p: unknown[]): unknown };
}

/**
 * The writer of one session's log. Enqueue methods never throw; `commit()` applies the queue. The file
 * handle is closed once the session has ended and its queue is written, or by the pool when idle; the next
 * commit reopens it (and notices a file that vanished or was replaced meanwhile).
 */
export class SessionLog implements PooledLog {
  readonly dir: string;
  readonly file: string;
  /** Highest call seq already in the file when it was opened (a reused session dir); new seqs go above it. */
  readonly existingMaxSeq: number;
  private db: SessionDb | null = null;
  private stmts: Statements | null = null;
  private tx: ((ops: Op[], writeSession: boolean) => void) | null = null;
  private ops: Op[] = [];
  private queuedCalls = new Map<number, Extract<Op, { k: 'call' }>>();
  private queuedLatest = new Map<string, Extract<Op, { k: 'latest-event' }>>();
  private sessionRow: SessionRow;
  private sessionDirty = true;
  private identity: { dev: number; ino: number } | null = null;
  private committedCalls = 0;
  /** Seqs whose committed row is still pending: a recreated log gets them back when they complete. */
  private pendingOnDisk = new Set<number>();
  /** Replacements of the file not yet reported by a successful commit. */
  private recovery: { reasons: string[]; lostCalls: number } | null = null;
  private readonly options: SessionLogOptions;
  private closed = false;

  private constructor(options: SessionLogOptions) {
    this.options = options;
    this.dir = options.dir;
    this.file = path.join(options.dir, LOG_FILE);
    this.sessionRow = { ...options.session };
    this.openFile();
    this.existingMaxSeq = this.readMaxSeq();
    this.committedCalls = this.existingMaxSeq > 0 ? this.countCalls() : 0;
  }

  /** Create the directory and open (or create) its log. Throws when the directory or file cannot be made. */
  static open(options: SessionLogOptions): SessionLog {
    return new SessionLog(options);
  }

  /** The session row as it will be written. */
  get session(): Readonly<SessionRow> {
    return this.sessionRow;
  }

  /** Operations waiting for the next commit. */
  get queued(): number {
    return this.ops.length + (this.sessionDirty ? 1 : 0);
  }

  /** True when the next commit has something to write. */
  get dirty(): boolean {
    return this.ops.length > 0 || this.sessionDirty;
  }

  /** Change session fields; the whole row is rewritten at the next commit. */
  setSessionFields(fields: Partial<SessionRow>): void {
    Object.assign(this.sessionRow, fields);
    this.sessionDirty = true;
  }

  /**
   * Insert a call's first row (usually pending). `completing`: the call has already returned, so a commit
   * that holds young pending rows keeps this one back (up to a second) for its completed row.
   */
  beginCall(row: CallRecord, completing = false): void {
    const op: Extract<Op, { k: 'call' }> = {
      k: 'call',
      row,
      first: true,
      queuedAt: performance.now(),
      completing,
    };
    this.ops.push(op);
    this.queuedCalls.set(row.seq, op);
  }

  /** Write a call's full row (an upsert: it also lands when the pending row was lost). */
  completeCall(row: CallRecord): void {
    const queued = this.queuedCalls.get(row.seq);
    if (queued) {
      queued.row = row; // the pending row never reached disk: write the completed one in its place
      return;
    }
    const op: Extract<Op, { k: 'call' }> = { k: 'call', row, first: false };
    this.ops.push(op);
    this.queuedCalls.set(row.seq, op);
  }

  /** Remove a call row (a call that turned out to belong to another session). */
  deleteCall(seq: number): void {
    const queued = this.queuedCalls.get(seq);
    if (queued) {
      (queued as Op).k = 'none';
      this.queuedCalls.delete(seq);
      if (queued.first) return; // never reached the file: nothing to delete there
    }
    this.ops.push({ k: 'delete', seq });
  }

  /** Add one warning row. */
  addWarning(w: WarningRecord): void {
    this.ops.push({ k: 'warning', w });
  }

  /** Add one artifact row. */
  addArtifact(a: ArtifactRecord): void {
    this.ops.push({ k: 'artifact', a });
  }

  /** Add one event row. */
  addEvent(e: EventRecord): void {
    this.ops.push({ k: 'event', e });
  }

  /** Update the latest event of `e.kind` in place, or add one: for running counts (truncation, limits). */
  setLatestEvent(e: EventRecord): void {
    const queued = this.queuedLatest.get(e.kind);
    if (queued) {
      queued.e = e;
      return;
    }
    const op: Extract<Op, { k: 'latest-event' }> = { k: 'latest-event', e };
    this.ops.push(op);
    this.queuedLatest.set(e.kind, op);
  }

  /** Apply everything queued in one transaction. Never throws: failures are in the outcome. */
  commit(options: CommitOptions = {}): CommitOutcome {
    if (this.closed) return { committed: 0, error: new Error('session log is closed') };
    const outcome: CommitOutcome = { committed: 0 };
    const all = this.ops;
    const held = options.holdYoungPendingMs ? this.holdYoungPending(options.holdYoungPendingMs) : [];
    try {
      if (this.dirty) {
        this.checkIdentity();
        this.applyQueueRecovering();
        outcome.committed = this.afterCommit();
      }
      if (held.length > 0) {
        this.ops = held;
        for (const op of held) this.queuedCalls.set(op.row.seq, op);
        outcome.held = held.length;
      }
    } catch (err) {
      this.ops = all; // nothing was applied: everything stays queued, in order
      outcome.error = asError(err);
      const dropped = this.trimQueue();
      if (dropped) outcome.dropped = dropped;
      return outcome;
    }
    if (this.recovery) {
      outcome.recovered = { reason: this.recovery.reasons.join('; '), lostCalls: this.recovery.lostCalls };
      this.recovery = null;
    }
    // An ended session rarely writes again: give its descriptors back now (a late write reopens the file).
    if (this.sessionRow.status !== 'open' && this.ops.length === 0 && !this.recovery) this.closeHandle();
    else if (this.db) this.options.pool?.used(this);
    return outcome;
  }

  /** True while the SQLite handle is open (it closes when the session ended or the pool needs room). */
  get handleOpen(): boolean {
    return this.db !== null;
  }

  /** Close the file handle now; the queue and counts stay, and the next commit reopens the file. */
  closeHandle(): void {
    this.closeDb();
  }

  /** Take young, never-held pending call rows out of the queue (marked held); returns them. */
  private holdYoungPending(ms: number): Array<Extract<Op, { k: 'call' }>> {
    const now = performance.now();
    const held: Array<Extract<Op, { k: 'call' }>> = [];
    let rest: Op[] | undefined;
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i]!;
      const age = op.k === 'call' && op.queuedAt !== undefined ? now - op.queuedAt : Infinity;
      const hold =
        op.k === 'call' &&
        op.first &&
        op.row.status === 'pending' &&
        ((!op.held && age < ms) || (op.completing === true && age < MAX_COMPLETING_HOLD_MS));
      if (hold) {
        op.held = true;
        held.push(op);
        rest ??= this.ops.slice(0, i);
      } else rest?.push(op);
    }
    if (rest) this.ops = rest;
    return held;
  }

  /** Commit what is queued and close the file. Returns the last commit's outcome. */
  close(): CommitOutcome {
    const outcome = this.commit();
    this.closeDb();
    this.closed = true;
    return outcome;
  }

  /** Drop everything queued (the caller gave up on this log); returns how many calls' rows were lost with it. */
  discardQueue(): { ops: number; calls: number } {
    const ops = this.ops.length;
    const calls = this.ops.filter((op) => op.k === 'call').length;
    this.ops = [];
    this.queuedCalls.clear();
    this.queuedLatest.clear();
    return { ops, calls };
  }

  private noteRecovery(reason: string, lostCalls: number): void {
    this.recovery ??= { reasons: [], lostCalls: 0 };
    this.recovery.reasons.push(reason);
    this.recovery.lostCalls += lostCalls;
  }

  /** Apply the queue; a file found corrupt on the way is moved aside and the queue applied to a fresh one. */
  private applyQueueRecovering(): void {
    try {
      this.applyQueue();
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      this.replaceFile(err);
      this.applyQueue();
    }
  }

  private afterCommit(): number {
    let committed = 0;
    for (const op of this.ops) {
      if (op.k === 'none') continue;
      committed += 1;
      if (op.k === 'call') {
        if (op.first) this.committedCalls += 1;
        if (op.row.status === 'pending') this.pendingOnDisk.add(op.row.seq);
        else this.pendingOnDisk.delete(op.row.seq);
      } else if (op.k === 'delete') {
        this.committedCalls -= 1;
        this.pendingOnDisk.delete(op.seq);
      }
    }
    if (this.sessionDirty) committed += 1;
    this.ops = [];
    this.queuedCalls.clear();
    this.queuedLatest.clear();
    this.sessionDirty = false;
    return committed;
  }

  private applyQueue(): void {
    this.tx!(this.ops, this.sessionDirty);
  }

  /** One transaction applying `ops` (and the session row when it changed), prepared once per open file. */
  private transactionOf(db: SessionDb, s: Statements): (ops: Op[], writeSession: boolean) => void {
    return db.transaction((ops: Op[], writeSession: boolean) => {
      if (writeSession) {
        const row = this.sessionRow;
        s.session.run(...SESSION_COLUMNS.map((c) => row[c]));
      }
      for (const op of ops) {
        switch (op.k) {
          case 'call': {
            const r = op.row;
            s.call.run(
              r.seq,
              r.tool,
              r.args,
              r.rpc_id,
              r.transport,
              r.started_at,
              r.ended_at,
              r.duration_ms,
              r.status,
              r.ok,
              r.error_code,
              r.error_category,
              r.error_detail,
              r.output_kind,
              r.envelope,
              r.response,
              r.violations,
              r.payload_dropped,
            );
            break;
          }
          case 'delete':
            s.del.run(op.seq);
            break;
          case 'warning':
            s.warning.run(op.w.callSeq, op.w.code, op.w.detail);
            break;
          case 'artifact':
            s.artifact.run(...ARTIFACT_COLUMNS.map((c) => op.a[c]));
            break;
          case 'event':
            s.event.run(op.e.at, op.e.kind, op.e.callSeq ?? null, op.e.detail ?? null);
            break;
          case 'latest-event': {
            const latest = s.latestEvent.get(op.e.kind) as { id: number } | undefined;
            if (latest) s.updateEvent.run(op.e.at, op.e.callSeq ?? null, op.e.detail ?? null, latest.id);
            else s.event.run(op.e.at, op.e.kind, op.e.callSeq ?? null, op.e.detail ?? null);
            break;
          }
          case 'none':
            break;
        }
      }
    });
  }

  /** Drop the oldest queued operations past the bound, counting the calls whose rows go with them. */
  private trimQueue(): { ops: number; calls: number } | undefined {
    const max = this.options.maxQueuedOps ?? 100_000;
    if (this.ops.length <= max) return undefined;
    const excess = this.ops.length - max;
    const dropped = this.ops.splice(0, excess);
    let calls = 0;
    for (const op of dropped) {
      if (op.k === 'latest-event' && this.queuedLatest.get(op.e.kind) === op)
        this.queuedLatest.delete(op.e.kind);
      if (op.k !== 'call') continue;
      if (this.queuedCalls.get(op.row.seq) === op) this.queuedCalls.delete(op.row.seq);
      calls += 1;
    }
    return { ops: excess, calls };
  }

  /** Detect a log file that was deleted or replaced under us (its directory removed, say) and recreate it. */
  private checkIdentity(): void {
    // A handle closed on purpose (ended, or the pool's) keeps the identity; one that failed to open has none.
    if (!this.db && !this.identity) {
      this.openFile(); // an earlier attempt failed: try again
      return;
    }
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(this.file);
    } catch {
      st = undefined;
    }
    if (st && this.identity && st.ino === this.identity.ino && st.dev === this.identity.dev) {
      if (!this.db) this.openFile();
      return;
    }
    this.noteRecovery(
      st ? 'the log file was replaced; recreated' : 'the session log vanished; recreated',
      this.lostWithFile(),
    );
    this.identity = null; // noted once: a failed reopen retries without counting the loss again
    this.closeDb();
    this.openFile();
  }

  /** Move an unusable file aside (kept as evidence) and start a fresh log. */
  private replaceFile(err: unknown): void {
    this.noteRecovery(`the log was not a usable database (${sqliteCode(err)})`, this.lostWithFile());
    this.identity = null;
    this.closeDb();
    const aside = `${this.file}.corrupt-${Date.now()}`;
    try {
      fs.renameSync(this.file, aside);
      this.recovery!.reasons.push(`moved aside to ${path.basename(aside)}`);
    } catch {
      fs.rmSync(this.file, { force: true });
    }
    for (const suffix of ['-wal', '-shm']) fs.rmSync(`${this.file}${suffix}`, { force: true });
    this.reopen();
  }

  /**
   * Calls lost with a file that is being replaced: its rows, except pending ones (their completion is an
   * upsert that writes them again). Resets the counts for the fresh file.
   */
  private lostWithFile(): number {
    const lost = Math.max(0, this.committedCalls - this.pendingOnDisk.size);
    this.committedCalls = this.pendingOnDisk.size;
    return lost;
  }

  /** Open the file, replacing it when it is not a database. */
  private openFile(): void {
    try {
      this.reopen();
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      this.replaceFile(err);
    }
  }

  private reopen(): void {
    this.closeDb();
    makeDirectory(this.dir);
    this.options.pool?.willOpen(this);
    const db = openSessionDb(this.file);
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(this.options.busyTimeoutMs ?? 20))}`);
      for (const p of this.options.pragmas ?? []) db.pragma(p);
      this.stmts = {
        session: db.prepare(upsertSql('session', SESSION_COLUMNS, 'id', ['id'])),
        call: db.prepare(upsertSql('calls', CALL_COLUMNS, 'seq')),
        del: db.prepare('DELETE FROM calls WHERE seq = ?'),
        warning: db.prepare('INSERT INTO warnings (call_seq, code, detail) VALUES (?, ?, ?)'),
        artifact: db.prepare(
          `INSERT INTO artifacts (${ARTIFACT_COLUMNS.join(', ')}) VALUES (${ARTIFACT_COLUMNS.map(() => '?').join(', ')})`,
        ),
        event: db.prepare('INSERT INTO events (at, kind, call_seq, detail) VALUES (?, ?, ?, ?)'),
        latestEvent: db.prepare('SELECT id FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1'),
        updateEvent: db.prepare('UPDATE events SET at = ?, call_seq = ?, detail = ? WHERE id = ?'),
      };
      this.tx = this.transactionOf(db, this.stmts);
      const st = fs.statSync(this.file);
      this.identity = { dev: st.dev, ino: st.ino };
    } catch (err) {
      db.close();
      throw err;
    }
    this.db = db;
    this.options.pool?.used(this);
    this.sessionDirty = true; // a fresh file needs its session row
  }

  private readMaxSeq(): number {
    const row = this.db?.prepare('SELECT MAX(seq) AS m FROM calls').get() as { m: number | null } | undefined;
    return row?.m ?? 0;
  }

  private countCalls(): number {
    const row = this.db?.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number } | undefined;
    return row?.n ?? 0;
  }

  private closeDb(): void {
    const db = this.db;
    this.db = null;
    this.stmts = null;
    this.tx = null;
    if (!db) return;
    this.options.pool?.didClose(this);
    try {
      db.close();
    } catch {
      // closing a connection to a vanished or broken file can fail; nothing more to release
    }
  }
}
