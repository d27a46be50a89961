/**
 * User fingerprint regexes run on a thread of their own, with a deadline. A rules file may come with the
 * sessions (a CI artifact, a colleague's copy) and hold a regex that backtracks without end on some text
 * (`(a+)+$`, `(.*.*)*x`): run here, it hung triage, and the MCP server with it, for ever. The caller waits
 * for each batch (Atomics.wait on a shared flag, so fingerprints stay synchronous); past the deadline the
 * thread is stopped and the caller gets a `RegexTimeoutError`.
 */
import { Worker } from 'node:worker_threads';

/** How long one regex may take over one batch of values. */
export const REGEX_BUDGET_MS = 5_000;
/** How long all the batches of one thread (one triage) may take together. */
export const REGEX_TOTAL_BUDGET_MS = 30_000;
/** How long the thread may take to start (a loaded machine can take seconds; not the regex's time). */
const START_BUDGET_MS = 60_000;

// Flag at [0]: 0 waiting, 1 done, 2 the regex does not compile; one result byte per value after it.
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const ready = new Int32Array(workerData.ready);
parentPort.on('message', ({ pattern, values, shared }) => {
  const flag = new Int32Array(shared, 0, 1);
  const out = new Uint8Array(shared, 4);
  let re;
  try { re = new RegExp(pattern, 'i'); } catch { Atomics.store(flag, 0, 2); Atomics.notify(flag, 0); return; }
  for (let i = 0; i < values.length; i++) out[i] = re.test(values[i]) ? 1 : 0;
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
Atomics.store(ready, 0, 1);
Atomics.notify(ready, 0);
`;

export class RegexTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexTimeoutError';
  }
}

/**
 * A thread that tests one regex against many values at a time, each batch within `budgetMs` and all of them
 * within `totalBudgetMs` (a thousand rules each just under the batch budget would otherwise take an hour).
 */
export class RegexThread {
  private worker: Worker | null = null;
  private spentMs = 0;

  constructor(
    private readonly budgetMs = REGEX_BUDGET_MS,
    private readonly totalBudgetMs = REGEX_TOTAL_BUDGET_MS,
  ) {}

  /** Whether each value matches `pattern` (case-insensitive); a `RegexTimeoutError` past a budget. */
  testAll(pattern: string, values: readonly string[]): boolean[] {
    if (values.length === 0) return [];
    const worker = this.started();
    const shared = new SharedArrayBuffer(4 + values.length);
    const flag = new Int32Array(shared, 0, 1);
    const wait = Math.max(0, Math.min(this.budgetMs, this.totalBudgetMs - this.spentMs));
    const started = performance.now();
    worker.postMessage({ pattern, values, shared });
    const outcome = Atomics.wait(flag, 0, 0, wait);
    this.spentMs += performance.now() - started;
    if (outcome === 'timed-out') {
      this.close();
      throw new RegexTimeoutError(
        wait < this.budgetMs
          ? `ran past the ${this.totalBudgetMs / 1000} s all user regexes may take together`
          : `ran over ${this.budgetMs / 1000} s on ${values.length} value${values.length === 1 ? '' : 's'}`,
      );
    }
    if (Atomics.load(flag, 0) === 2) throw new Error(`the regex ${JSON.stringify(pattern)} does not compile`);
    return Array.from(new Uint8Array(shared, 4, values.length), (b) => b === 1);
  }

  /** Stop the thread (a later test starts another). */
  close(): void {
    void this.worker?.terminate();
    this.worker = null;
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const ready = new SharedArrayBuffer(4);
    const worker = new Worker(WORKER_CODE, { eval: true, workerData: { ready } });
    worker.unref();
    // An error in the thread (it ran out of memory) leaves the caller's wait to time out.
    worker.on('error', () => {});
    if (Atomics.wait(new Int32Array(ready), 0, 0, START_BUDGET_MS) === 'timed-out') {
      void worker.terminate();
      throw new Error('the thread that runs fingerprint regexes did not start');
    }
    this.worker = worker;
    return worker;
  }
}
