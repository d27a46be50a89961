/**
 * Temp files and dirs carry their writer's pid in their names (`<prefix>-<pid>-<random>` dirs under the OS
 * temp dir, `<file>.<pid>.<8 hex>.partial` beside an output, `.capture-<pid>-<n>-<random>.partial` in
 * `artifacts/`), so a later run can tell a dead writer's leftovers (a kill -9 runs no cleanup) from a live
 * one's and remove them. A pid is only judged on this machine: the temp dir and a sessions dir are local.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Whether a process with this pid runs. Only ESRCH says it does not: EPERM (Linux) and EACCES (Windows, an
 * elevated process or another user's, which OpenProcess refuses) say it runs and is not ours to signal.
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** A temp name beside `file` (`<file>.<pid>.<random>.partial`: never bundled, never taken for the file). */
export function partialNameFor(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
}

/** The writer pid in a temp file's name, or null when the name is not one of ours. */
export function partialWriterPid(name: string): number | null {
  const m =
    /\.(\d{1,10})\.[0-9a-f]{8}\.partial$/.exec(name) ?? /^\.capture-(\d{1,10})-.*\.partial$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Remove the temp files in `dir` (not below it) whose writer is dead; the files and bytes removed. */
export function removeDeadPartials(dir: string): { files: number; bytes: number } {
  const out = { files: 0, bytes: 0 };
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const pid = partialWriterPid(name);
    if (pid === null || pidAlive(pid)) continue;
    const file = path.join(dir, name);
    try {
      const st = fs.lstatSync(file);
      if (!st.isFile()) continue;
      fs.rmSync(file, { force: true });
      out.files += 1;
      out.bytes += st.size;
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
  return out;
}

/** Node's retries of a removal Windows refuses for a moment (linear: 50 + 100 + 150 + 200 ms at most). */
const CLEANUP_RETRIES = 4;
const CLEANUP_RETRY_DELAY_MS = 50;

/**
 * Remove a file or dir (and all in it) that only cleanup removes: a temp file or dir of ours once its work is
 * done or has failed. Never throws, so a removal Windows refuses (EBUSY, EPERM: an antivirus scanner or the
 * search indexer holding a file just written, a handle just closed) never turns a command that worked into
 * a failure, nor replaces the error of one that did not. Those refusals are retried first (Node's
 * `maxRetries`, about 0.5 s in all). What is still left carries its writer's pid in its name, so the sweep
 * (`removeDeadTempDirs`, `removeDeadPartials`, prune) removes it once this process is gone. False when left.
 */
export function removeBestEffort(target: string): boolean {
  try {
    fs.rmSync(target, {
      recursive: true,
      force: true,
      maxRetries: CLEANUP_RETRIES,
      retryDelay: CLEANUP_RETRY_DELAY_MS,
    });
    return true;
  } catch {
    return false;
  }
}

/** `<prefix>-<pid>-XXXXXX` dirs under `parent`, made by mkdtemp. */
function tempDirPattern(prefix: string): RegExp {
  return new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d{1,10})-[A-Za-z0-9]{6}$`);
}

/** Remove the `<prefix>-<pid>-*` dirs under `parent` whose process is dead; the dirs removed. */
export function removeDeadTempDirs(prefix: string, parent = os.tmpdir()): number {
  const pattern = tempDirPattern(prefix);
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(parent);
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = pattern.exec(name);
    if (!m || pidAlive(Number(m[1]))) continue;
    try {
      fs.rmSync(path.join(parent, name), { recursive: true, force: true });
      removed += 1;
    } catch {
      // not ours to remove
    }
  }
  return removed;
}

/**
 * A fresh temp dir `<parent>/<prefix>-<pid>-XXXXXX`, after removing the ones dead processes left with the
 * same prefix.
 */
export function makeTempDir(prefix: string, parent = os.tmpdir()): string {
  removeDeadTempDirs(prefix, parent);
  return fs.mkdtempSync(path.join(parent, `${prefix}-${process.pid}-`));
}

/** A session log copied to be read where its own dir cannot be written (store/open.ts). */
export const LOG_COPY_PREFIX = 'mcec-log';

/** The prefixes of the temp dirs this package makes (swept by `prune`). */
export const TEMP_DIR_PREFIXES = [
  LOG_COPY_PREFIX,
  'mcec-demo-sim',
  'mcec-bundle',
  'mcec-bundles',
  'mcec-replay-bundle',
  'mcec-verify',
] as const;
