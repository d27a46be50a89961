/** Giving a complete temp file its final name without ever replacing a file (so never one that is open). */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

let counter = 0;

/** A fresh temp name in `dir`: `.<prefix>-<pid>-<n>-<random>.partial` (a dot file: never bundled, never an artifact). */
export function tempFileIn(dir: string, prefix: string): string {
  counter += 1;
  return path.join(dir, `.${prefix}-${process.pid}-${counter}-${randomBytes(4).toString('hex')}.partial`);
}

/**
 * Give the complete temp file `tmp` the name `file` without replacing anything: a hard link (the caller removes
 * the temp); where the link fails for any other reason than a taken name, a rename to a name checked to be
 * free (links are refused in many words: EPERM, ENOTSUP, ENOSYS; on Windows EISDIR from FAT and exFAT,
 * EACCES or EINVAL from some shares). 'taken' when `file` exists; any other failure of the rename is returned. Synchronous: a few metadata syscalls cost less than as many
 * round trips through the thread pool.
 */
export function placeNewFile(tmp: string, file: string): 'ok' | 'taken' | unknown {
  try {
    fs.linkSync(tmp, file);
    return 'ok';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return 'taken';
  }
  try {
    fs.lstatSync(file);
    return 'taken';
  } catch {
    // free: rename the temp onto it (nothing is replaced, so no open file is renamed over on Windows)
  }
  try {
    fs.renameSync(tmp, file);
    return 'ok';
  } catch (err) {
    return err;
  }
}
