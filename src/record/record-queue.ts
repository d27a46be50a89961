/**
 * The recorder's one ordered queue, off the agent's critical path (in the spirit of OpenTelemetry's
 * BatchSpanProcessor: one bounded queue, one job at a time, idempotent close). Jobs are processed in order
 * by a worker, in slices that give the event loop a turn; what they change is committed by the worker at
 * most once per commit interval (group commit), at once by `flush()`. Past the high-water mark callers wait
 * for room (`room()`); a commit that must be retried is tried again after `retryMs`.
 */
import { Waiters } from '../util/waiters.js';
import { type Clock, systemClock } from './clock.js';

/** What the queue asks of the recorder. */
export interface QueueWorker<J> {
  /** Process one job; a returned promise is awaited before the next job. Handles its own failures. */
  process(job: J): Promise<void> | undefined;
  /** True while processed work waits to be committed. */
  hasUncommitted(): boolean;
  /** Commit what was processed (`force`: a flush: no back-off, no rows held back). */
  commit(force: boolean): CommitPass;
  /** A bug in the queue machinery or a commit: reported, never an unhandled rejection. */
  broke(err: unknown): void;
}

/** What a commit left to do. */
export interface CommitPass {
  /** Some log could not be committed (locked, full, not open): try again after the retry interval. */
  retry: boolean;
  /** Young pending rows were held back: commit again at the next interval. */
  again: boolean;
}

export interface QueueLimits {
  /** Past this many queued jobs, or `highWaterBytes`, callers wait for room (default 8,192). */
  highWaterJobs: number;
  /** Room again at this many jobs (and half of `highWaterBytes`) (default 4,096). */
  lowWaterJobs: number;
  highWaterBytes: number;
  /**
   * What producers that never wait (the proxies' exchanges) may fill the queue to (default 256 MiB, twice
   * `highWaterBytes`): an answer that would take the queue past it is recorded without its body (`fits`).
   */
  maxQueuedBytes: number;
  /** Longest stretch of processing before the event loop gets a turn and the logs a commit (default 8 ms). */
  sliceMs: number;
  /** At most one commit per this many ms under load (the recorder's `commitIntervalMs`, default 4). */
  commitIntervalMs: number;
  /** How long a commit that failed waits before it is tried again (default 100 ms). */
  retryMs: number;
}

const MiB = 1024 * 1024;
export const DEFAULT_QUEUE_LIMITS: QueueLimits = {
  highWaterJobs: 8192,
  lowWaterJobs: 4096,
  highWaterBytes: 128 * MiB,
  maxQueuedBytes: 256 * MiB,
  sliceMs: 8,
  commitIntervalMs: 4,
  retryMs: 100,
};

/** A flush waiting in line: everything before it is processed, then committed with force. */
class Barrier {
  constructor(readonly done: () => void) {}
}

export class RecordQueue<J> {
  private readonly worker: QueueWorker<J>;
  private readonly clock: Clock;
  private readonly limits: QueueLimits;
  private jobs: Array<J | Barrier | undefined> = [];
  private sizes: number[] = [];
  private head = 0;
  private queuedBytes = 0;
  private running = false;
  private scheduled = false;
  private lastCommitAt = -Infinity;
  private commitAgain = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly roomWaiters = new Waiters();
  private closed = false;

  constructor(worker: QueueWorker<J>, options: { clock?: Clock; limits?: Partial<QueueLimits> } = {}) {
    this.worker = worker;
    this.clock = options.clock ?? systemClock;
    this.limits = { ...DEFAULT_QUEUE_LIMITS, ...options.limits };
  }

  /** Queue a job holding about `bytes` of memory; it is processed at the next tick. */
  push(job: J, bytes: number): void {
    this.jobs.push(job);
    this.sizes.push(bytes);
    this.queuedBytes += bytes;
    this.schedule();
  }

  /** Undefined while there is room; past the high-water mark, a promise that resolves once there is. */
  room(): Promise<void> | undefined {
    if (!this.underPressure()) return undefined;
    return this.roomWaiters.wait();
  }

  /** True while a job of `bytes` keeps the queue within `maxQueuedBytes` (a small job always fits). */
  fits(bytes: number): boolean {
    return this.queuedBytes + bytes <= this.limits.maxQueuedBytes;
  }

  /** The rough bytes of the jobs queued and not yet processed. */
  get bytes(): number {
    return this.queuedBytes;
  }

  /** The byte cap of `fits`. */
  get maxQueuedBytes(): number {
    return this.limits.maxQueuedBytes;
  }

  /** True past the high-water mark (what `room()` would make a caller wait for), without waiting. */
  underPressure(): boolean {
    const { highWaterJobs, highWaterBytes } = this.limits;
    return this.jobs.length - this.head > highWaterJobs || this.queuedBytes > highWaterBytes;
  }

  /** Process the queue now (a caller waits for a job's result); the commit is left to the next tick. */
  runNow(): void {
    if (!this.running) this.run(false).catch(this.runFailed);
  }

  /** Resolves once everything queued so far is processed and committed. */
  flush(): Promise<void> {
    return new Promise((resolve) => {
      this.jobs.push(new Barrier(resolve));
      this.sizes.push(0);
      this.schedule();
    });
  }

  /** Something outside the queue made a log dirty: commit it at the next interval (not after close). */
  wake(): void {
    if (!this.closed) this.schedule();
  }

  /** Commit now, outside the queue's order (the recorder's close, after its last flush). */
  commitNow(force: boolean): void {
    this.commitAgain = false;
    if (!this.worker.hasUncommitted()) return;
    this.lastCommitAt = this.clock.now();
    const pass = this.worker.commit(force);
    this.commitAgain = pass.again;
    if (pass.retry) this.scheduleRetry();
  }

  /** No more retries; callers waiting for room go on. Jobs still pushed are processed. Idempotent. */
  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.releaseRoom(true);
  }

  /** Jobs queued and not yet processed. */
  get length(): number {
    return this.jobs.length - this.head;
  }

  /** Schedule a run: at once when the last commit is old enough, else when the commit interval is up. */
  private schedule(): void {
    if (this.running || this.scheduled) return;
    if (this.head >= this.jobs.length && !this.worker.hasUncommitted()) return;
    this.scheduled = true;
    const wait = this.lastCommitAt + this.limits.commitIntervalMs - this.clock.now();
    if (wait <= 0) setImmediate(this.tick);
    else setTimeout(this.tick, Math.ceil(wait));
  }

  private readonly tick = (): void => {
    this.scheduled = false;
    this.run(true).catch(this.runFailed);
  };

  private readonly runFailed = (err: unknown): void => {
    this.running = false;
    this.worker.broke(err);
    this.releaseRoom(true);
  };

  private async run(commit: boolean): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      let sliceStart = this.clock.now();
      while (this.head < this.jobs.length) {
        const job = this.jobs[this.head]!;
        this.jobs[this.head] = undefined;
        this.queuedBytes -= this.sizes[this.head]!;
        this.head += 1;
        if (job instanceof Barrier) this.pass(job);
        else {
          const pending = this.worker.process(job);
          if (pending) await pending;
        }
        this.releaseRoom();
        if (this.clock.now() - sliceStart > this.limits.sliceMs) {
          this.commitNow(false);
          this.compact();
          await new Promise<void>((resolve) => setImmediate(resolve));
          sliceStart = this.clock.now();
        }
      }
      this.jobs = [];
      this.sizes = [];
      this.head = 0;
      this.queuedBytes = 0;
      this.releaseRoom(true);
      if (commit) this.commitNow(false);
    } finally {
      this.running = false;
    }
    if (this.head < this.jobs.length || !commit || this.commitAgain) this.schedule();
  }

  /** A flush's turn: everything before it is processed; commit it all, whatever happens. */
  private pass(barrier: Barrier): void {
    try {
      this.commitNow(true);
    } catch (err) {
      this.worker.broke(err);
    } finally {
      barrier.done();
    }
  }

  /** A run can last as long as the load does: drop the processed slots so the arrays stay bounded. */
  private compact(): void {
    if (this.head <= 4096) return;
    this.jobs = this.jobs.slice(this.head);
    this.sizes = this.sizes.slice(this.head);
    this.head = 0;
  }

  private releaseRoom(force = false): void {
    if (!this.roomWaiters.waiting) return;
    const { lowWaterJobs, highWaterBytes } = this.limits;
    if (!force && (this.jobs.length - this.head > lowWaterJobs || this.queuedBytes > highWaterBytes / 2))
      return;
    this.roomWaiters.wakeAll();
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.schedule();
    }, this.limits.retryMs);
    this.retryTimer.unref();
  }
}
