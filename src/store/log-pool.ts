/**
 * A cap on open SQLite handles across many session logs. A WAL connection holds three file descriptors;
 * a recorder that serves an agent for a day sees thousands of sessions, so past the cap the least recently
 * used log's handle is closed (its queue and state stay in memory) and reopened on its next commit.
 */
import { processFileLimit } from '../util/file-limit.js';

/** Default number of session logs a recorder keeps open at once. */
export const DEFAULT_MAX_OPEN_LOGS = 64;
/**
 * How long an ended session's log may stay idle (nothing written after its end was committed) before its
 * writer row is released, so `prune` may remove it while the process runs on (a proxy that runs for weeks).
 * The same as prune's default `--keep-recent`: by default nothing is prunable sooner than before.
 */
export const DEFAULT_RELEASE_IDLE_MS = 10 * 60_000;
/** File descriptors one open log holds (the database, its WAL and its shared memory). */
const FDS_PER_LOG = 3;

/**
 * Logs to keep open under a process limit of `fileLimit` open files (null: none known): at most half the
 * limit goes to logs, the rest stays for sockets (a proxy's clients and its connections to MCEC), image
 * files and the runtime. 42 under `ulimit -n 256`, the default from 384 up.
 */
export function maxOpenLogsFor(fileLimit: number | null): number {
  if (fileLimit === null) return DEFAULT_MAX_OPEN_LOGS;
  return Math.max(1, Math.min(DEFAULT_MAX_OPEN_LOGS, Math.floor(fileLimit / 2 / FDS_PER_LOG)));
}

/** What the pool can close: a log whose handle reopens on demand. */
/** The pool's size from this process's file limit; `notice` says so when the limit shrinks it. */
export function logPoolSizeForProcess(notice: (line: string) => void): number {
  const limit = processFileLimit();
  const size = maxOpenLogsFor(limit);
  if (size < DEFAULT_MAX_OPEN_LOGS) {
    notice(
      `mcec-recorder: this process may open ${limit} files (ulimit -n): keeping at most ${size} session logs open at once (${DEFAULT_MAX_OPEN_LOGS} otherwise)`,
    );
  }
  return size;
}

export interface PooledLog {
  /** Close the file handle now; nothing queued is lost and the next commit reopens it. */
  closeHandle(): void;
}

/** Open handles in least-recently-used order; `willOpen` makes room before a log opens its file. */
export class LogPool {
  readonly maxOpen: number;
  /** Idle time after which an ended session's log releases its writer row (`SessionLog`). */
  readonly releaseIdleMs: number;
  /** Insertion order is use order: the first entry is the least recently used. */
  private readonly open = new Set<PooledLog>();

  constructor(maxOpen = DEFAULT_MAX_OPEN_LOGS, releaseIdleMs = DEFAULT_RELEASE_IDLE_MS) {
    this.maxOpen = Math.max(1, Math.floor(Number.isFinite(maxOpen) ? maxOpen : DEFAULT_MAX_OPEN_LOGS));
    this.releaseIdleMs = Math.max(
      0,
      Number.isFinite(releaseIdleMs) ? releaseIdleMs : DEFAULT_RELEASE_IDLE_MS,
    );
  }

  /** Handles open now. */
  get size(): number {
    return this.open.size;
  }

  /** Close least recently used handles (never `log`'s) until one more fits. */
  willOpen(log: PooledLog): void {
    for (const lru of this.open) {
      if (this.open.size < this.maxOpen) return;
      if (lru === log) continue;
      lru.closeHandle(); // calls didClose, which removes it from the set
      this.open.delete(lru);
    }
  }

  /** `log` opened (or used) its handle: it becomes the most recently used. */
  used(log: PooledLog): void {
    this.open.delete(log);
    this.open.add(log);
  }

  /** `log` closed its handle. */
  didClose(log: PooledLog): void {
    this.open.delete(log);
  }
}
