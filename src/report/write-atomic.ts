import fs from 'node:fs';
import { partialNameFor } from '../util/temp-files.js';

/** Write `text` to `file` through a temp file and a rename, so readers never see half a document. */
export function writeFileAtomic(file: string, text: string | Uint8Array): void {
  const tmp = tempNameFor(file);
  try {
    fs.writeFileSync(tmp, text, { flag: 'wx' });
    moveIntoPlace(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
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
  fs.rmSync(tmp, { force: true });
}
