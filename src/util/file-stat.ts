/**
 * Stats that answer null or false for a missing path instead of throwing: a sweep or an index asks them of
 * thousands of paths, many missing, and an exception built per miss was a tenth of an index's time.
 */
import fs from 'node:fs';

/** A path's mtime, null when it is missing or cannot be stat-ed. */
export function mtimeOf(p: string): number | null {
  return statOf(p)?.mtimeMs ?? null;
}

/** A path's stats (a symlink's target's), undefined when it is missing or cannot be stat-ed. */
export function statOf(p: string): fs.Stats | undefined {
  try {
    return fs.statSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** A path's own stats (a symlink's, not its target's), undefined when it is missing or cannot be stat-ed. */
export function lstatOf(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Whether `p` is a regular file itself (a symlink is not: none leads outside a sessions dir). */
export function isRegularFile(p: string): boolean {
  return lstatOf(p)?.isFile() ?? false;
}
