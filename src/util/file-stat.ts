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

/**
 * Open flags for a file a sessions dir copied from elsewhere names: never follow a final symlink, never block on
 * a FIFO (each 0 where the OS lacks it: Windows has neither, nor FIFOs).
 */
export const NO_FOLLOW_NO_BLOCK =
  fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

/** Why `readRegularFile` read nothing: no file, not a regular file (a symlink, FIFO, device, dir) or too big. */
export class NotARegularFileError extends Error {
  constructor(
    readonly file: string,
    readonly reason: 'missing' | 'not-regular' | 'too-big',
    message: string,
  ) {
    super(message);
    this.name = 'NotARegularFileError';
  }
}

/**
 * The bytes of `file` when it is a regular file itself (no symlink, FIFO, device or dir: a FIFO would block
 * the reader for ever, a symlink lead outside the dir it sits in) of at most `maxBytes`; a
 * `NotARegularFileError` otherwise. The check is made on the open descriptor, so a file swapped meanwhile is
 * caught too; the lstat first covers Windows, which has no O_NOFOLLOW.
 */
export function readRegularFile(file: string, maxBytes: number): Buffer {
  const before = lstatOf(file);
  if (!before) throw new NotARegularFileError(file, 'missing', `${file} does not exist`);
  if (!before.isFile())
    throw new NotARegularFileError(file, 'not-regular', `${file} is ${fileKind(before)}, not a file`);
  let fd: number;
  try {
    fd = fs.openSync(file, NO_FOLLOW_NO_BLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new NotARegularFileError(file, 'missing', `${file} does not exist`);
    if (code === 'ELOOP') throw new NotARegularFileError(file, 'not-regular', `${file} is a symbolic link`);
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile())
      throw new NotARegularFileError(file, 'not-regular', `${file} is ${fileKind(st)}, not a file`);
    if (st.size > maxBytes)
      throw new NotARegularFileError(
        file,
        'too-big',
        `${file} is ${st.size} bytes, over the limit of ${maxBytes}`,
      );
    const buf = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const n = fs.readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    return got === st.size ? buf : buf.subarray(0, got);
  } finally {
    fs.closeSync(fd);
  }
}

/** What a path that is no regular file is, as an error says it ('a symbolic link', 'a FIFO', ...). */
export function fileKind(st: fs.Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'a device';
}
