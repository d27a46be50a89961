import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one fork fewer than the cores: a single fork on a 2-core CI machine. The suites wait
    // on child processes, sockets and the disk more than they compute: a second fork works while one waits.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
