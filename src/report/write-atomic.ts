import fs from 'node:fs';
import path from 'node:path';
import { partialNameFor, removeBestEffort, removeDeadPartials } from '../util/temp-files.js';

/**
 * Write `text` to `file` through a temp file and a rename, so readers never see half a document. The temp
 * files dead writers left beside it (killed, or their removal refused) are removed first.
 */
export function writeFileAtomic(file: string, text: string | Uint8Array): void {
  removeDeadPartials(path.dirname(file));
  const tmp = tempNameFor(file);
  try {
    fs.writeFileSync(tmp, text, { flag: 'wx' });
    moveIntoPlace(tmp, file);
  } catch (err) {
    removeBestEffort(tmp); // never in place of the write's own error
    throw err;
  }
}

/** A temp name beside `file` (`<file>.<pid>.<random>.partial`: never bundled, never taken for the file). */
export function tempNameFor(file: string): string {
  return partialNameFor(file);
}

/**
 * Give the complete temp file `tmp` the name `file`. A rename, unless `file` is open elsewhere on Windows
 * (the rename is refused: EPERM, EACCES or EBUSY): then its bytes are copied over the open file in place and
 * the temp removed, so a viewer holding the old page never makes the write fail.
 */
export function moveIntoPlace(tmp: string, file: string): void {
  try {
    fs.renameSync(tmp, file);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'EACCES' && code !== 'EBUSY') throw err;
    if (!fs.existsSync(file)) throw err; // nothing open in the way: a real permission problem
  }
  fs.copyFileSync(tmp, file);
  removeBestEffort(tmp); // the file is written: a temp left behind is swept later
}
