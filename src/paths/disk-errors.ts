/** File-system errors said as what they are: read-only, full, forbidden, not a mistyped path. */
import fs from 'node:fs';
import path from 'node:path';

const CAUSES: Readonly<Record<string, string>> = {
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exceeded',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EMFILE: 'too many open files',
  ENOTDIR: 'a part of the path is a file, not a directory',
};

/** Node's errno message with its cause in words first (`EROFS: ...` reads as "the file system is read-only: ..."). */
export function describeFsError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code && Object.hasOwn(CAUSES, code) ? `${CAUSES[code]}: ${message}` : message;
}

/**
 * `mkdir -p` whose failure names the real cause. Node reports a recursive mkdir under a read-only mount as
 * ENOENT; the nearest existing ancestor is probed so the error says read-only (or permission denied) instead.
 */
export function makeDirectory(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') {
      let parent = path.dirname(path.resolve(dir));
      while (!fs.existsSync(parent) && path.dirname(parent) !== parent) parent = path.dirname(parent);
      try {
        fs.accessSync(parent, fs.constants.W_OK);
      } catch (probe) {
        throw Object.assign(new Error(`cannot create ${dir}: ${describeFsError(probe)}`), {
          code: (probe as NodeJS.ErrnoException).code,
        });
      }
    }
    throw Object.assign(new Error(`cannot create ${dir}: ${describeFsError(err)}`), { code: e.code });
  }
}
