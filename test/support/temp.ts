/** Temp dirs for tests: one way to make them and one to remove them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temp dir named `<prefix>XXXXXX` under `parent` (default: the OS temp dir). */
export function tempDir(prefix = 'mcec-', parent = os.tmpdir()): string {
  return fs.mkdtempSync(path.join(parent, prefix));
}

/** Remove a temp dir and everything in it (no error when it is gone). */
export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
