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
 * the temp); where links are not supported (FAT, some shares), a rename to a name checked to be free. 'taken'
 * when `file` exists; any other failure is returned. Synchronous: a few metadata syscalls cost less than as many
 * round trips through the thread pool.
 */
export function placeNewFile(tmp: string, file: string): 'ok' | 'taken' | unknown {
  try {
    fs.linkSync(tmp, file);
    return 'ok';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return 'taken';
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') return err;
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
