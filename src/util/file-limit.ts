/**
 * The process's limit on open files (`ulimit -n`, RLIMIT_NOFILE's soft value), which Node does not expose:
 * read from /proc/self/limits on Linux, from the shell elsewhere on Unix; null where there is none to speak
 * of (Windows) or it cannot be read.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

let cached: number | null | undefined;

/** The soft limit on open files, or null when unlimited, unknown, or on Windows. Read once per process. */
export function processFileLimit(): number | null {
  if (cached !== undefined) return cached;
  cached = readLimit();
  return cached;
}

function readLimit(): number | null {
  if (process.platform === 'win32') return null;
  try {
    if (process.platform === 'linux') {
      const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
      return m && m[1] !== 'unlimited' ? Number(m[1]) : null;
    }
    // A child shell inherits our limits: its `ulimit -n` is ours.
    const out = spawnSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 });
    const n = Number(out.stdout.trim());
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
