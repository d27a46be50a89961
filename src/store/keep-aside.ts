/** Evidence kept, never deleted: a file that must make way for a fresh one is moved or copied aside. */
import fs from 'node:fs';

/**
 * Move `file` to `aside`; where a rename is refused (another process holds the file open on Windows, a
 * cross-device link) copy it there and remove the original. False when neither worked: the file is then
 * left where it was, untouched, and the caller must not write a fresh one over it.
 */
export function keepAside(file: string, aside: string): boolean {
  try {
    fs.renameSync(file, aside);
    return true;
  } catch {
    // fall through to a copy
  }
  try {
    fs.copyFileSync(file, aside, fs.constants.COPYFILE_EXCL);
  } catch {
    return false;
  }
  try {
    fs.rmSync(file, { force: true });
    return true;
  } catch {
    // The copy is kept; the original stays too, so nothing may be written over it.
    return false;
  }
}
