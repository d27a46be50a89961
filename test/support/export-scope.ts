/** What an export suite's tests make, taken down after each test (newest first): temp dirs, OTLP receivers. */
import fs from 'node:fs';
import { afterEach } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from './otlp-receiver.js';
import { tempDir } from './temp.js';

export interface ExportScope {
  /** Run `cleanup` after this test. */
  defer(cleanup: () => Promise<void> | void): void;
  /** A new temp dir (named after `prefix`), removed after the test. */
  tempRoot(): string;
  /** A started OTLP/HTTP receiver, closed after the test. */
  receiver(): Promise<OtlpReceiver>;
}

/** Call once at the top of a suite file: registers the afterEach that takes it all down. */
export function exportScope(prefix: string): ExportScope {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const defer = (cleanup: () => Promise<void> | void) => {
    cleanups.push(cleanup);
  };
  return {
    defer,
    tempRoot() {
      const root = tempDir(prefix);
      defer(() => fs.rmSync(root, { recursive: true, force: true }));
      return root;
    },
    async receiver() {
      const r = await startOtlpReceiver();
      defer(() => r.close());
      return r;
    },
  };
}
