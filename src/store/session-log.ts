/**
 * The session log's writer: one SQLite file per session, writes queued in memory and applied in one
 * transaction per `commit()` (the recorder calls it once per event-loop turn or every few ms: group commit).
 * Knows SQLite and files, nothing about MCP. Survives a vanished directory and a file that is not a database
 * by recreating the log and saying so in the commit outcome; never loses queued work silently.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { makeDirectory } from '../paths/disk-errors.js';
import { LOG_FILE } from '../paths/naming.js';
import { pidAlive } from '../util/temp-files.js';
import { keepAside } from './keep-aside.js';
import type { LogPool, PooledLog } from './log-pool.js';
import { openLogForWriting, openSessionDb, type SessionDb } from './open.js';
import type { ArtifactRow, CallRow, SessionRow } from './schema.js';
import { StoredSeqs } from './stored-seqs.js';

/**
 * A `calls` row as written (pending or completed). Its `seq` is the writer's own key for the call: the seq
 * stored is allocated at commit, under SQLite's write lock, so writers in other processes never collide.
 */
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
  /** Other processes found writing this log for the first time (each also written as a `concurrent-writer` event). */
  concurrentWriters?: Array<{ pid: number; host: string }>;
}

export interface CommitOptions {
  /**
   * Keep a call's pending row queued (once) when it was queued less than this many ms ago: a call that
   * completes before the next commit is then written as one row instead of an insert and an update.
   */
  holdYoungPendingMs?: number;
}

/** A call's row to write: its first (usually pending) or its completed one. */
interface CallOp {
  kind: 'call';
  row: CallRecord;
  /** The call's first row: nothing of it is in the file yet, so cancelling it needs no delete. */
  firstRow: boolean;
  /** When it was queued (performance.now()): how long a commit may hold a pending row back. */
  queuedAt?: number;
  /** Already held back by one commit: the next one writes it. */
  held?: boolean;
  /** The caller knows the call has already returned: its completed row follows shortly. */
  completing?: boolean;
}

/** Latest-event ops are updated in place while queued: running totals write one row per commit. */
interface LatestEventOp {
  kind: 'latest-event';
  event: EventRecord;
}

/** One queued write, applied in order by the next commit. */
type QueuedOp =
  | CallOp
  | { kind: 'delete-call'; seq: number }
  | { kind: 'warning'; warning: WarningRecord }
  | { kind: 'artifact'; artifact: ArtifactRecord }
  | { kind: 'event'; event: EventRecord }
  | LatestEventOp
  /** A call op taken back by `deleteCall` before it was written: skipped, not counted. */
  | { kind: 'cancelled' };

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
  'host_path',
  'masks',
  'masks_painted',
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

/**
 * How long closing waits for another writer's lock to mark this writer closed (commits wait only
 * `busyTimeoutMs`, as they run on the event loop). Left open, the row is settled only by the pid check.
 */
const RELEASE_AT_CLOSE_BUSY_MS = 1000;

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

/** This machine's name, stored with each writer so a reader can tell whether it can check the pid. */
const HOST = os.hostname();

/** The statements a log's writes use, prepared once per open file. */
interface Statements {
  session: { run(...p: unknown[]): unknown };
  register: { get(...p: unknown[]): unknown };
  unregister: { run(...p: unknown[]): unknown };
  otherWriters: { all(...p: unknown[]): unknown[] };
  dataVersion: { get(...p: unknown[]): unknown };
  nextSeq: { get(...p: unknown[]): unknown };
  setNextSeq: { run(...p: unknown[]): unknown };
  call: { run(...p: unknown[]): unknown };
  deleteCall: { run(...p: unknown[]): unknown };
  warning: { run(...p: unknown[]): unknown };
  artifact: { run(...p: unknown[]): unknown };
  event: { run(...p: unknown[]): unknown };
  latestEvent: { get(...p: unknown[]): unknown };
  updateEvent: { run(...p: unknown[]): unknown };
}

/** What one write transaction did: seqs it allocated, this writer's id in the file, other writers seen. */
interface WriteResult {
  /** Stored seq of each call key given one in this transaction. */
  seqs: Map<number, number>;
  writerId: number;
  /** Tokens of the other writers found (reported once). */
  tokens: string[];
  others: Array<{ pid: number; host: string }>;
  /** The file as this transaction leaves it (see `SessionLog.fileSeen`). */
  fileSeen: FileSeen;
}

/**
 * The file as this writer's last commit left it: the connection's `PRAGMA data_version` (it changes only
 * when another connection commits) and `log_state.next_seq` (null: not read). While the version stays, no
 * other writer wrote, so neither the `writers` table nor the seq counter needs reading again.
 */
interface FileSeen {
  dataVersion: number;
  nextSeq: number | null;
}

/** Another writer's open `writers` row. */
interface OtherWriter {
  token: string;
  id: number;
  pid: number;
  host: string;
  opened_at: string;
}

/** The prepared write transaction: the queued ops, and whether the session row is written too. */
type WriteTransaction = Database.Transaction<(ops: QueuedOp[], writeSession: boolean) => WriteResult>;

/**
 * The writer of one session's log. Enqueue methods never throw; `commit()` applies the queue. The file
 * handle is closed once the session has ended and its queue is written (after a write past its end: once
 * idle), or by the pool; the next commit reopens it (and notices a file that vanished or was replaced).
 */
export class SessionLog implements PooledLog {
  readonly dir: string;
  readonly file: string;
  /** Highest call seq already in the file when it was opened (a reused session dir); new seqs go above it. */
  readonly existingMaxSeq: number;
  private db: SessionDb | null = null;
  private statements: Statements | null = null;
  private writeTransaction: WriteTransaction | null = null;
  private readonly sessionUpdates = new Map<string, Database.Statement>();
  private ops: QueuedOp[] = [];
  private queuedCalls = new Map<number, CallOp>();
  private queuedLatest = new Map<string, LatestEventOp>();
  private sessionRow: SessionRow;
  private sessionDirty = true;
  /** Session fields changed since the row was last written: only these are updated in a shared row. */
  private dirtyFields = new Set<keyof SessionRow>();
  /** The whole session row must be written (a new writer of this file, or a recreated file). */
  private fullRowNeeded = true;
  /** Stored seq of each call key written (or referenced) so far; allocated in the write transaction. */
  private readonly seqOf = new StoredSeqs();
  /** Highest seq this writer was given: a recreated file must not hand it out again. */
  private highestSeq = 0;
  /** Identifies this writer in the `writers` table; its row id there once registered in the open file. */
  private readonly token = randomBytes(8).toString('hex');
  private writerId: number | null = null;
  /** What this writer's last commit through the open handle saw of the file (null: none yet). */
  private fileSeen: FileSeen | null = null;
  /** This writer has a row in the file that it has not marked closed yet (see `release`). */
  private registered = false;
  /** Other writers already reported (their tokens). */
  private readonly seenWriters = new Set<string>();
  /** Pending rows held back by the running commit: they get their seqs in its transaction too. */
  private heldForCommit: QueuedOp[] = [];
  private identity: { dev: number; ino: number } | null = null;
  private committedCalls = 0;
  /** Seqs whose committed row is still pending: a recreated log gets them back when they complete. */
  private pendingOnDisk = new Set<number>();
  /** Replacements of the file not yet reported by a successful commit. */
  private recovery: { reasons: string[]; lostCalls: number } | null = null;
  private readonly options: SessionLogOptions;
  private closed = false;
  /** The pending release of an ended, idle session's writer row (see `releaseWhenIdle`). */
  private idleRelease: NodeJS.Timeout | undefined;
  /** The handle was closed because the session had ended: one open again was reopened by a late write. */
  private closedAtEnd = false;

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

  /**
   * Change session fields; the next commit writes those whose value differs from the row's (the same last
   * observation again, say, writes nothing: each session row write is a WAL page or more).
   */
  setSessionFields(fields: Partial<SessionRow>): void {
    for (const key of Object.keys(fields) as Array<keyof SessionRow>) {
      const value = fields[key];
      if (value === this.sessionRow[key]) continue;
      (this.sessionRow as Record<keyof SessionRow, unknown>)[key] = value;
      this.dirtyFields.add(key);
      this.sessionDirty = true;
    }
  }

  /** The seq a call key was stored under, once committed. */
  storedSeq(key: number): number | undefined {
    return this.seqOf.get(key);
  }

  /**
   * Insert a call's first row (usually pending). `completing`: the call has already returned, so a commit
   * that holds young pending rows keeps this one back (up to a second) for its completed row.
   */
  beginCall(row: CallRecord, completing = false): void {
    const op: CallOp = {
      kind: 'call',
      row,
      firstRow: true,
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
    const op: CallOp = { kind: 'call', row, firstRow: false };
    this.ops.push(op);
    this.queuedCalls.set(row.seq, op);
  }

  /** Remove a call row (a call that turned out to belong to another session). */
  deleteCall(seq: number): void {
    const queued = this.queuedCalls.get(seq);
    if (queued) {
      (queued as QueuedOp).kind = 'cancelled';
      this.queuedCalls.delete(seq);
      if (queued.firstRow) return; // never reached the file: nothing to delete there
    }
    this.ops.push({ kind: 'delete-call', seq });
  }

  /** Add one warning row. */
  addWarning(warning: WarningRecord): void {
    this.ops.push({ kind: 'warning', warning });
  }

  /** Add one artifact row. */
  addArtifact(artifact: ArtifactRecord): void {
    this.ops.push({ kind: 'artifact', artifact });
  }

  /** Add one event row. */
  addEvent(event: EventRecord): void {
    this.ops.push({ kind: 'event', event });
  }

  /** Update the latest event of `event.kind` in place, or add one: for running counts (truncation, limits). */
  setLatestEvent(event: EventRecord): void {
    const queued = this.queuedLatest.get(event.kind);
    if (queued) {
      queued.event = event;
      return;
    }
    const op: LatestEventOp = { kind: 'latest-event', event };
    this.ops.push(op);
    this.queuedLatest.set(event.kind, op);
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
        this.heldForCommit = held;
        const seen = this.applyQueueRecovering();
        outcome.committed = this.afterCommit(seen);
        if (seen.others.length > 0) outcome.concurrentWriters = seen.others;
      }
      if (held.length > 0) {
        this.ops = held;
        for (const op of held) this.queuedCalls.set(op.row.seq, op);
        outcome.held = held.length;
      }
    } catch (err) {
      this.heldForCommit = [];
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
    // An ended session rarely writes again: give its descriptors back now, and its writer row once it stays
    // idle. One written after its end (a server still naming it) keeps its pooled handle from then on until
    // idle: a reopen and close (a WAL checkpoint) per commit cost about 5 ms each.
    if (this.sessionRow.status !== 'open' && this.ops.length === 0 && !this.recovery) {
      if (this.closedAtEnd && this.options.pool && this.db) this.options.pool.used(this);
      else {
        this.closeHandle();
        this.closedAtEnd = true;
      }
      this.releaseWhenIdle();
    } else if (this.db) this.options.pool?.used(this);
    return outcome;
  }

  private get busyTimeoutMs(): number {
    return Math.max(0, Math.floor(this.options.busyTimeoutMs ?? 20));
  }

  /** True while the SQLite handle is open (it closes when the session ended or the pool needs room). */
  get handleOpen(): boolean {
    return this.db !== null;
  }

  /**
   * Close the file handle now; the queue and counts stay, and the next commit reopens the file. The writer
   * stays registered (`closed_at` NULL): this process may still write (an ended session's late calls, a
   * pooled log), so `prune` keeps the session while the process runs. `close()` releases it, and so does
   * an ended session's idleness (`releaseWhenIdle`).
   */
  closeHandle(): void {
    this.closeDb();
  }

  /**
   * An ended session, nothing queued (its handle closed, or kept open while written after its end): if
   * nothing more is written to it within the pool's `releaseIdleMs` (10 min), its writer row is marked closed
   * and its handle closed, so `prune` may remove it although this process (a long-running proxy) goes on. A
   * later write reopens the file and registers the writer again.
   */
  private releaseWhenIdle(): void {
    const ms = this.options.pool?.releaseIdleMs;
    if (ms === undefined || (!this.registered && !this.db)) return;
    clearTimeout(this.idleRelease);
    this.idleRelease = setTimeout(() => {
      this.idleRelease = undefined;
      // A call still pending (a long tool timeout) will be written: the session is not idle until it ends.
      const idle = !this.closed && this.ops.length === 0 && this.pendingOnDisk.size === 0;
      if (idle && this.sessionRow.status !== 'open') {
        this.release();
        this.closeHandle(); // kept open while written after its end: given back with the writer row
      }
    }, ms);
    this.idleRelease.unref();
  }

  /**
   * Mark this writer's row closed (`closed_at`): the log is no longer this process's to write. Uses the open
   * handle, else opens the file for that one update (never creating it), waiting `busyTimeoutMs` for another
   * writer's lock (at close, `RELEASE_AT_CLOSE_BUSY_MS`). A file locked longer, or broken, keeps the row open,
   * and then the writer's pid decides (dead once the process exits).
   */
  private release(busyTimeoutMs = this.busyTimeoutMs): void {
    if (!this.registered) return;
    const at = new Date().toISOString();
    try {
      if (this.db && this.statements) {
        this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
        try {
          this.statements.unregister.run(at, this.token);
        } finally {
          this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
        }
      } else {
        const db = openLogForWriting(this.file, { fileMustExist: true });
        try {
          db.pragma(`busy_timeout = ${busyTimeoutMs}`);
          db.pragma('synchronous = NORMAL');
          db.prepare('UPDATE writers SET closed_at = ? WHERE token = ?').run(at, this.token);
        } finally {
          db.close();
        }
      }
      this.registered = false;
    } catch {
      // the row stays open: the pid check covers it once this process is gone
    }
  }

  /** Take young, never-held pending call rows out of the queue (marked held); returns them. */
  private holdYoungPending(ms: number): Array<CallOp> {
    const now = performance.now();
    const held: Array<CallOp> = [];
    let rest: QueuedOp[] | undefined;
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i]!;
      const age = op.kind === 'call' && op.queuedAt !== undefined ? now - op.queuedAt : Infinity;
      const hold =
        op.kind === 'call' &&
        op.firstRow &&
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
    clearTimeout(this.idleRelease);
    const outcome = this.commit();
    // The last write of this process to the log: worth waiting out another writer's commit for.
    this.release(RELEASE_AT_CLOSE_BUSY_MS);
    this.closeHandle();
    this.closed = true;
    return outcome;
  }

  /** Drop everything queued (the caller gave up on this log); returns how many calls' rows were lost with it. */
  discardQueue(): { ops: number; calls: number } {
    const ops = this.ops.length;
    const calls = this.ops.filter((op) => op.kind === 'call').length;
    this.ops = [];
    this.queuedCalls.clear();
    this.queuedLatest.clear();
    return { ops, calls };
  }

  private noteRecovery(reason: string, lostCalls: number): void {
    this.fullRowNeeded = true; // the fresh file has no session row yet
    this.recovery ??= { reasons: [], lostCalls: 0 };
    this.recovery.reasons.push(reason);
    this.recovery.lostCalls += lostCalls;
  }

  /** Apply the queue; a file found corrupt on the way is moved aside and the queue applied to a fresh one. */
  private applyQueueRecovering(): WriteResult {
    try {
      return this.applyQueue();
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      this.replaceFile(err);
      return this.applyQueue();
    }
  }

  /** Take in what the transaction did (seqs, writer id, writers seen) and empty the queue; returns ops written. */
  private afterCommit(written: WriteResult): number {
    for (const [key, seq] of written.seqs) {
      this.seqOf.set(key, seq);
      if (seq > this.highestSeq) this.highestSeq = seq;
    }
    this.writerId = written.writerId;
    this.fileSeen = written.fileSeen;
    this.registered = true;
    for (const t of written.tokens) this.seenWriters.add(t);
    this.heldForCommit = [];
    this.dirtyFields.clear();
    if (this.sessionDirty) this.fullRowNeeded = false;
    let committed = 0;
    for (const op of this.ops) {
      if (op.kind === 'cancelled') continue;
      committed += 1;
      if (op.kind === 'call') {
        if (op.firstRow) this.committedCalls += 1;
        if (op.row.status === 'pending') this.pendingOnDisk.add(op.row.seq);
        else this.pendingOnDisk.delete(op.row.seq);
      } else if (op.kind === 'delete-call') {
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

  /** Run the write transaction over the queue once. */
  private applyQueue(): WriteResult {
    // IMMEDIATE: the write lock is taken before the seq counter is read, so no other writer can take it.
    return this.writeTransaction!.immediate(this.ops, this.sessionDirty);
  }

  /**
   * Seqs for every call key the queue (and the held rows) refers to that has none yet, from the file's
   * counter, in key order (the order the calls started in this writer), never below the key. Runs inside
   * the write transaction.
   */
  private allocateSeqs(statements: Statements, ops: QueuedOp[], seen: FileSeen): Map<number, number> {
    const newSeqs = new Map<number, number>();
    const keys: number[] = [];
    const needSeq = (key: number | null | undefined) => {
      if (key == null || this.seqOf.has(key) || newSeqs.has(key)) return;
      newSeqs.set(key, 0);
      keys.push(key);
    };
    for (const list of [ops, this.heldForCommit]) {
      for (const op of list) {
        if (op.kind === 'call') needSeq(op.row.seq);
        else if (op.kind === 'warning') needSeq(op.warning.callSeq);
        else if (op.kind === 'artifact') needSeq(op.artifact.call_seq);
        else if (op.kind === 'event' || op.kind === 'latest-event') needSeq(op.event.callSeq);
      }
    }
    if (keys.length === 0) return newSeqs;
    keys.sort((a, b) => a - b);
    if (seen.nextSeq === null) {
      const row = statements.nextSeq.get() as { next_seq: number } | undefined;
      seen.nextSeq = row?.next_seq ?? 1;
    }
    let next = Math.max(seen.nextSeq, this.highestSeq + 1);
    // Never below the key: a single writer's seqs are its keys (gaps left by calls it lost stay visible).
    for (const key of keys) {
      next = Math.max(next, key);
      newSeqs.set(key, next++);
    }
    statements.setNextSeq.run(next);
    seen.nextSeq = next;
    return newSeqs;
  }

  /** The stored seq of a call key inside the running transaction (`newSeqs`: those it allocated). */
  private storedSeqIn(newSeqs: Map<number, number>, key: number | null | undefined): number | null {
    if (key == null) return null;
    return newSeqs.get(key) ?? this.seqOf.get(key) ?? null;
  }

  /**
   * Register this writer in the file (again after a reopen) and find other writers holding it open: none new
   * when no other connection wrote since this writer's last commit (`unchanged`), so the query is skipped.
   */
  private registerWriter(
    statements: Statements,
    unchanged: boolean,
  ): { writerId: number; others: OtherWriter[] } {
    if (unchanged && this.writerId !== null) return { writerId: this.writerId, others: [] };
    const writerId =
      this.writerId ??
      (statements.register.get(this.token, process.pid, HOST, new Date().toISOString()) as { id: number }).id;
    const rows = statements.otherWriters.all(this.token) as OtherWriter[];
    // A row left open by a writer that died (kill -9) on this machine is not another writer.
    const others = rows.filter((w) => !this.seenWriters.has(w.token) && (w.host !== HOST || pidAlive(w.pid)));
    return { writerId, others };
  }

  /**
   * One transaction applying `ops` (and the session row when it changed), prepared once per open file. Its
   * phases: register this writer, note other writers, allocate seqs, write the session row, apply the ops.
   */
  private transactionOf(db: SessionDb, statements: Statements): WriteTransaction {
    return db.transaction((ops: QueuedOp[], writeSession: boolean): WriteResult => {
      const dataVersion = statements.dataVersion.get() as number;
      const unchanged = this.fileSeen?.dataVersion === dataVersion;
      const seen: FileSeen = { dataVersion, nextSeq: unchanged ? this.fileSeen!.nextSeq : null };
      const { writerId, others } = this.registerWriter(statements, unchanged);
      this.writeConcurrentWriterEvents(statements, writerId, others);
      const newSeqs = this.allocateSeqs(statements, ops, seen);
      if (writeSession) this.writeSessionRow(db, statements);
      for (const op of ops) this.applyOp(statements, op, newSeqs, writerId);
      return {
        seqs: newSeqs,
        writerId,
        tokens: others.map((w) => w.token),
        others: others.map((w) => ({ pid: w.pid, host: w.host })),
        fileSeen: seen,
      };
    });
  }

  /** One `concurrent-writer` event per other writer newly found holding the log open. */
  private writeConcurrentWriterEvents(statements: Statements, writerId: number, others: OtherWriter[]): void {
    const at = new Date().toISOString();
    for (const w of others) {
      const detail = {
        writer: writerId,
        pid: process.pid,
        host: HOST,
        other: { writer: w.id, pid: w.pid, host: w.host, since: w.opened_at },
      };
      statements.event.run(at, 'concurrent-writer', null, JSON.stringify(detail), writerId);
    }
  }

  /** The whole session row for a new writer or file; otherwise only the fields this writer changed. */
  private writeSessionRow(db: SessionDb, statements: Statements): void {
    const row = this.sessionRow;
    if (this.fullRowNeeded) statements.session.run(...SESSION_COLUMNS.map((c) => row[c]));
    else if (this.dirtyFields.size > 0) {
      // A row shared with other writers: write only what this writer changed.
      const fields = SESSION_COLUMNS.filter((c) => this.dirtyFields.has(c));
      this.sessionUpdate(db, fields).run(...fields.map((c) => row[c]));
    }
  }

  /** Write one queued op, every call key in it mapped to its stored seq. */
  private applyOp(
    statements: Statements,
    op: QueuedOp,
    newSeqs: Map<number, number>,
    writerId: number,
  ): void {
    switch (op.kind) {
      case 'call': {
        const r = op.row;
        statements.call.run(
          this.storedSeqIn(newSeqs, r.seq),
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
          writerId,
        );
        break;
      }
      case 'delete-call': {
        const seq = this.storedSeqIn(newSeqs, op.seq);
        if (seq !== null) statements.deleteCall.run(seq);
        break;
      }
      case 'warning':
        statements.warning.run(
          this.storedSeqIn(newSeqs, op.warning.callSeq),
          op.warning.code,
          op.warning.detail,
        );
        break;
      case 'artifact': {
        const a = op.artifact;
        statements.artifact.run(
          ...ARTIFACT_COLUMNS.map((c) =>
            c === 'call_seq' ? this.storedSeqIn(newSeqs, a.call_seq) : (a[c] ?? null),
          ),
        );
        break;
      }
      case 'event': {
        const e = op.event;
        statements.event.run(e.at, e.kind, this.storedSeqIn(newSeqs, e.callSeq), e.detail ?? null, writerId);
        break;
      }
      case 'latest-event': {
        // Running totals are this writer's own: another writer keeps its own row of the kind.
        const e = op.event;
        const latest = statements.latestEvent.get(e.kind, writerId) as { id: number } | undefined;
        const seq = this.storedSeqIn(newSeqs, e.callSeq);
        if (latest) statements.updateEvent.run(e.at, seq, e.detail ?? null, latest.id);
        else statements.event.run(e.at, e.kind, seq, e.detail ?? null, writerId);
        break;
      }
      case 'cancelled':
        break;
    }
  }

  /** `UPDATE session SET <fields>`, prepared once per field set and file. */
  private sessionUpdate(db: SessionDb, fields: readonly string[]): Database.Statement {
    const key = fields.join(',');
    let stmt = this.sessionUpdates.get(key);
    if (!stmt) {
      stmt = db.prepare(`UPDATE session SET ${fields.map((f) => `${f} = ?`).join(', ')} WHERE id = 1`);
      this.sessionUpdates.set(key, stmt);
    }
    return stmt;
  }

  /** Drop the oldest queued operations past the bound, counting the calls whose rows go with them. */
  private trimQueue(): { ops: number; calls: number } | undefined {
    const max = this.options.maxQueuedOps ?? 100_000;
    if (this.ops.length <= max) return undefined;
    const excess = this.ops.length - max;
    const dropped = this.ops.splice(0, excess);
    let calls = 0;
    for (const op of dropped) {
      if (op.kind === 'latest-event' && this.queuedLatest.get(op.event.kind) === op)
        this.queuedLatest.delete(op.event.kind);
      if (op.kind !== 'call') continue;
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
    if (!keepAside(this.file, aside)) {
      // Never deleted: the log stays unusable (calls are counted lost) until the file can be moved.
      this.recovery!.reasons.push('could not be moved aside: left in place, nothing written over it');
      throw err;
    }
    this.recovery!.reasons.push(`moved aside to ${path.basename(aside)}`);
    // The WAL goes with it (it may hold the newest rows); left behind, SQLite would replay it into the fresh log.
    if (fs.existsSync(`${this.file}-wal`) && !keepAside(`${this.file}-wal`, `${aside}-wal`)) {
      this.recovery!.reasons.push('its WAL could not be moved aside: nothing written until it can');
      throw err;
    }
    fs.rmSync(`${this.file}-shm`, { force: true });
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
    // Every write to the file starts with an open here (openSessionDb removes the dir's catalog sidecar).
    const db = openSessionDb(this.file);
    try {
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      for (const p of this.options.pragmas ?? []) db.pragma(p);
      this.statements = {
        session: db.prepare(upsertSql('session', SESSION_COLUMNS, 'id', ['id'])),
        register: db.prepare(
          `INSERT INTO writers (token, pid, host, opened_at) VALUES (?, ?, ?, ?)
             ON CONFLICT(token) DO UPDATE SET closed_at = NULL RETURNING id`,
        ),
        unregister: db.prepare('UPDATE writers SET closed_at = ? WHERE token = ?'),
        otherWriters: db.prepare(
          'SELECT token, id, pid, host, opened_at FROM writers WHERE closed_at IS NULL AND token != ?',
        ),
        dataVersion: db.prepare('PRAGMA data_version').pluck(),
        nextSeq: db.prepare('SELECT next_seq FROM log_state WHERE id = 1'),
        setNextSeq: db.prepare(
          'INSERT INTO log_state (id, next_seq) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET next_seq = excluded.next_seq',
        ),
        call: db.prepare(upsertSql('calls', [...CALL_COLUMNS, 'writer'], 'seq')),
        deleteCall: db.prepare('DELETE FROM calls WHERE seq = ?'),
        warning: db.prepare('INSERT INTO warnings (call_seq, code, detail) VALUES (?, ?, ?)'),
        artifact: db.prepare(
          `INSERT INTO artifacts (${ARTIFACT_COLUMNS.join(', ')}) VALUES (${ARTIFACT_COLUMNS.map(() => '?').join(', ')})`,
        ),
        event: db.prepare('INSERT INTO events (at, kind, call_seq, detail, writer) VALUES (?, ?, ?, ?, ?)'),
        latestEvent: db.prepare(
          'SELECT id FROM events WHERE kind = ? AND writer IS ? ORDER BY id DESC LIMIT 1',
        ),
        updateEvent: db.prepare('UPDATE events SET at = ?, call_seq = ?, detail = ? WHERE id = ?'),
      };
      this.writeTransaction = this.transactionOf(db, this.statements);
      const st = fs.statSync(this.file);
      this.identity = { dev: st.dev, ino: st.ino };
    } catch (err) {
      db.close();
      throw err;
    }
    this.db = db;
    this.options.pool?.used(this);
    this.sessionDirty = true; // registers the writer again (and writes the row to a fresh file)
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
    this.statements = null;
    this.writeTransaction = null;
    this.writerId = null;
    this.fileSeen = null;
    this.sessionUpdates.clear();
    if (!db) return;
    this.options.pool?.didClose(this);
    try {
      db.close();
    } catch {
      // closing a connection to a vanished or broken file can fail; nothing more to release
    }
  }
}
