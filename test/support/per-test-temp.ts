/**
 * A fresh temp dir for every test of a file, and what each test leaves running. Kept apart from temp.ts
 * because it registers vitest hooks (temp.ts is also loaded by child processes that have no vitest).
 */
import { afterEach, beforeEach } from 'vitest';
import { removeDir, tempDir } from './temp.js';

/** The running test's temp dir and the closes it deferred. */
export interface PerTestTemp {
  /** The running test's temp dir (a new one for each test). */
  readonly dir: string;
  /** Run `close` after the running test, before its dir is removed; closes run newest first. */
  defer(close: () => unknown): void;
}

/**
 * Call once at the top of a test file. After each test its deferred closes run newest first, a failing one
 * ignored (the test has already passed or failed on its own assertions, and the others must still run), then
 * the dir is removed.
 */
export function tempDirPerTest(prefix = 'mcec-'): PerTestTemp {
  let dir = '';
  const closes: Array<() => unknown> = [];
  beforeEach(() => {
    dir = tempDir(prefix);
  });
  afterEach(async () => {
    for (let close = closes.pop(); close; close = closes.pop()) {
      await Promise.resolve()
        .then(close)
        .catch(() => {});
    }
    removeDir(dir);
  });
  return {
    get dir() {
      return dir;
    },
    defer(close) {
      closes.push(close);
    },
  };
}
