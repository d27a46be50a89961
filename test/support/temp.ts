/** Temp dirs for tests: one way to make them and one to remove them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temp dir under the OS temp dir, named `<prefix>XXXXXX`. */
export function tempDir(prefix = 'mcec-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Remove a temp dir and everything in it (no error when it is gone). */
export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
