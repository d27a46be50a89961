/**
 * User fingerprint regexes run on a thread of their own, with a deadline. A rules file may come with the
 * sessions (a CI artifact, a colleague's copy) and hold a regex that backtracks without end on some text
 * (`(a+)+$`, `(.*.*)*x`): run here, it hung triage, and the MCP server with it, for ever. The caller waits
 * for each batch on a shared flag: `testAll` blocks (Atomics.wait, so the CLI's fingerprints stay
 * synchronous), `testAllAsync` awaits it (Atomics.waitAsync, so the MCP server serves other requests
 * meanwhile); past the deadline the thread is stopped and the caller gets a `RegexTimeoutError`. The
 * thread's code is rule-regex-entry.ts.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** How long one regex may take over one batch of values. */
export const REGEX_BUDGET_MS = 5_000;
/** How long all the batches of one thread (one triage) may take together. */
export const REGEX_TOTAL_BUDGET_MS = 30_000;
/** How long the thread may take to start (a loaded machine can take seconds; not the regex's time). */
const START_BUDGET_MS = 60_000;

/**
 * The built entry, found from dist/fleet/ (this module unbundled) and dist/cli/ (bundled into a chunk of
 * mcec-bundle) alike; under the TypeScript sources there is no .js: tests use dist/fleet/rule-regex.js.
 */
const ENTRY = new URL('../fleet/rule-regex-entry.js', import.meta.url);

/** A batch's flag (its shared buffer's first Int32): 0 while the thread works on it, then one of these. */
export const BATCH_DONE = 1;
export const BATCH_BAD_PATTERN = 2;

/** What the thread is started with: a flag it sets to 1 once it listens. */
export interface RegexWorkerData {
  ready: SharedArrayBuffer;
}
/** One batch posted to the thread: its flag at [0], then one result byte per value (1: matches). */
export interface RegexBatch {
  pattern: string;
  values: readonly string[];
  shared: SharedArrayBuffer;
}

type WaitOutcome = 'ok' | 'not-equal' | 'timed-out';

/** A batch on its way: how long it may take (what is left of the total, at most a batch's) and since when. */
interface PostedBatch extends RegexBatch {
  flag: Int32Array;
  waitMs: number;
  posted: number;
}

export class RegexTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexTimeoutError';
  }
}

/**
 * A thread that tests one regex against many values at a time, each batch within `budgetMs` and all of them
 * within `totalBudgetMs` (a thousand rules each just under the batch budget would otherwise take an hour).
 * One batch at a time: await each `testAllAsync` before the next.
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
    if (!this.worker) {
      const { worker, ready } = spawn();
      this.worker = startedWithin(worker, Atomics.wait(ready, 0, 0, START_BUDGET_MS));
    }
    const batch = this.post(this.worker, pattern, values);
    return this.answer(batch, Atomics.wait(batch.flag, 0, 0, batch.waitMs));
  }

  /** `testAll` without blocking this thread while the regex runs (nor while the thread starts). */
  async testAllAsync(pattern: string, values: readonly string[]): Promise<boolean[]> {
    if (values.length === 0) return [];
    if (!this.worker) {
      const { worker, ready } = spawn();
      this.worker = startedWithin(worker, await waitHeld(worker, ready, START_BUDGET_MS));
    }
    const batch = this.post(this.worker, pattern, values);
    return this.answer(batch, await waitHeld(this.worker, batch.flag, batch.waitMs));
  }

  /** Stop the thread (a later test starts another). */
  close(): void {
    void this.worker?.terminate();
    this.worker = null;
  }

  private post(worker: Worker, pattern: string, values: readonly string[]): PostedBatch {
    const shared = new SharedArrayBuffer(4 + values.length);
    const waitMs = Math.max(0, Math.min(this.budgetMs, this.totalBudgetMs - this.spentMs));
    const posted = performance.now();
    worker.postMessage({ pattern, values, shared } satisfies RegexBatch);
    return { pattern, values, shared, flag: new Int32Array(shared, 0, 1), waitMs, posted };
  }

  private answer(batch: PostedBatch, outcome: WaitOutcome): boolean[] {
    this.spentMs += performance.now() - batch.posted;
    if (outcome === 'timed-out') {
      this.close();
      const n = batch.values.length;
      throw new RegexTimeoutError(
        batch.waitMs < this.budgetMs
          ? `ran past the ${this.totalBudgetMs / 1000} s all user regexes may take together`
          : `ran over ${this.budgetMs / 1000} s on ${n} value${n === 1 ? '' : 's'}`,
      );
    }
    if (Atomics.load(batch.flag, 0) === BATCH_BAD_PATTERN)
      throw new Error(`the regex ${JSON.stringify(batch.pattern)} does not compile`);
    return Array.from(new Uint8Array(batch.shared, 4, batch.values.length), (b) => b === 1);
  }
}

/** A new thread (unref-ed: it never keeps the process alive) and the flag it sets once it listens. */
function spawn(): { worker: Worker; ready: Int32Array } {
  // Under the TypeScript sources there is nothing to start: say so now, not after the start budget.
  const entry = fileURLToPath(ENTRY);
  if (!fs.existsSync(entry))
    throw new Error(
      `the thread that runs fingerprint regexes has no code: ${entry} is not there (not built)`,
    );
  const ready = new SharedArrayBuffer(4);
  const worker = new Worker(ENTRY, { workerData: { ready } satisfies RegexWorkerData });
  worker.unref();
  // An error in the thread (it ran out of memory) leaves the caller's wait to time out.
  worker.on('error', () => {});
  return { worker, ready: new Int32Array(ready) };
}

function startedWithin(worker: Worker, outcome: WaitOutcome): Worker {
  if (outcome !== 'timed-out') return worker;
  void worker.terminate();
  throw new Error('the thread that runs fingerprint regexes did not start');
}

/**
 * Wait for `flag[0]` to leave 0 without blocking this thread. Atomics.waitAsync does not keep the event
 * loop alive, so the thread is ref-ed while it is waited for (else a process with nothing else to do exits
 * in the middle of the wait).
 */
async function waitHeld(worker: Worker, flag: Int32Array, timeoutMs: number): Promise<WaitOutcome> {
  worker.ref();
  try {
    const waited = Atomics.waitAsync(flag, 0, 0, timeoutMs);
    return waited.async ? await waited.value : waited.value;
  } finally {
    worker.unref();
  }
}
