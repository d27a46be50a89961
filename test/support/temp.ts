/** Temp dirs for tests: one way to make them and one to remove them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temp dir named `<prefix>XXXXXX` under `parent` (default: the OS temp dir). */
export function tempDir(prefix = 'mcec-', parent = os.tmpdir()): string {
  return fs.mkdtempSync(path.join(parent, prefix));
}

/**
 * A fresh temp dir on tmpfs (/dev/shm) when the machine has one, else in the OS temp dir: for suites that
 * write thousands of logs, where each log's close costs a checkpoint sync on a VM's disk that says nothing
 * about what they test.
 */
export function tmpfsTempDir(prefix = 'mcec-'): string {
  for (const base of ['/dev/shm', os.tmpdir()]) {
    try {
      return tempDir(prefix, base);
    } catch {
      // not writable here: try the next
    }
  }
  throw new Error('no writable temp dir');
}

/** Remove a temp dir and everything in it (no error when it is gone). */
export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Whether file times and this process's clock agree (within an hour): not under CI's faketime, which shifts
 * the clock but not the times the kernel stamps on files. A test comparing one with the other runs only then.
 */
export function fileTimesMatchClock(): boolean {
  const dir = tempDir('mcec-clock-');
  try {
    const file = path.join(dir, 'now');
    fs.writeFileSync(file, '');
    return Math.abs(fs.statSync(file).mtimeMs - Date.now()) < 3_600_000;
  } finally {
    removeDir(dir);
  }
}
