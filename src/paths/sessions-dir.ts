/** Where recordings live: one rule for the recorder, the demo and every CLI. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describeFsError, makeDirectory } from './disk-errors.js';
import { LOG_FILE } from './naming.js';

/**
 * The sessions root every program uses: an explicit dir, else `$MCEC_SESSIONS_DIR` when set and not empty,
 * else `./sessions`; absolute.
 */
export function resolveSessionsDir(explicit?: string | null): string {
  const fromEnv = process.env.MCEC_SESSIONS_DIR;
  return path.resolve(explicit || (fromEnv?.trim() ? fromEnv : './sessions'));
}

/** Where the sessions root came from, to name it in an error: `--sessions`, `$MCEC_SESSIONS_DIR` or the default. */
export function sessionsDirOrigin(explicit?: string | null): string {
  if (explicit) return '--sessions';
  return process.env.MCEC_SESSIONS_DIR?.trim() ? '$MCEC_SESSIONS_DIR' : 'the default';
}

/**
 * Why the sessions root cannot be read (missing, a file, or a directory it cannot list), naming it, where it
 * came from and what to do; null when it is a directory it can list.
 */
export function sessionsDirProblem(dir: string, explicit?: string | null): string | null {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (stat?.isDirectory())
    return unreadableDirProblem(dir, explicit) ?? sessionDirAsRootProblem(dir, explicit);
  const what = stat ? 'is not a directory' : 'does not exist';
  return (
    `the sessions dir ${dir} (${sessionsDirOrigin(explicit)}) ${what}: ` +
    'give --sessions DIR (the dir the recorder writes sessions into) or set MCEC_SESSIONS_DIR'
  );
}

/**
 * Why a sessions root that is a directory cannot be listed (its permissions, an ACL): opened, not judged by
 * its mode bits. Every reader would otherwise see no session in it and say "no sessions" (exit 0).
 */
function unreadableDirProblem(dir: string, explicit?: string | null): string | null {
  try {
    fs.opendirSync(dir).closeSync();
    return null;
  } catch (err) {
    return (
      `the sessions dir ${dir} (${sessionsDirOrigin(explicit)}) cannot be read: ${describeFsError(err)}: ` +
      'make it readable by this user, or give --sessions another dir'
    );
  }
}

/**
 * Why the sessions root cannot take new sessions, naming it and where it came from; null when it can. A
 * missing root is created (with its parents); then a file is created in it and removed again, since only
 * that says whether it can be written (permission bits say nothing of a read-only mount or of Windows ACLs).
 * For a writer at startup: a recorder that could not write would serve its clients and record nothing.
 */
export function sessionsDirWriteProblem(dir: string, explicit?: string | null): string | null {
  const named = `the sessions dir ${dir} (${sessionsDirOrigin(explicit)})`;
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch {
    // missing (or a part of its path is a file): creating it says which
  }
  if (stat && !stat.isDirectory())
    return `${named} is a file, not a directory: give --sessions a directory (it is created when missing) or set MCEC_SESSIONS_DIR`;
  if (!stat) {
    try {
      makeDirectory(dir);
    } catch (err) {
      return `${named} cannot be used: ${(err as Error).message}`;
    }
  }
  // Named as the temp files are (`<name>.<pid>.<hex>.partial`), so a leftover is swept once this process is gone.
  const probe = path.join(dir, `.write-check.${process.pid}.${randomBytes(4).toString('hex')}.partial`);
  try {
    fs.writeFileSync(probe, '', { flag: 'wx' });
  } catch (err) {
    return `${named} cannot be written: ${describeFsError(err)}`;
  }
  try {
    // Windows: a scanner may hold the new file a moment (EBUSY, EPERM): Node retries those.
    fs.rmSync(probe, { force: true, maxRetries: 3, retryDelay: 100 });
  } catch {
    // written, so writable; an empty leftover is harmless (readers look at dirs only) and swept later
  }
  return null;
}

/**
 * Why a sessions root that is itself a session dir (it holds the log: the usual slip when handed one dir)
 * cannot be used: a reader would list nothing, and an index, a report or a recorder would write into it.
 * Null otherwise.
 */
export function sessionDirAsRootProblem(dir: string, explicit?: string | null): string | null {
  if (!fs.existsSync(path.join(dir, LOG_FILE))) return null;
  return (
    `the sessions dir ${dir} (${sessionsDirOrigin(explicit)}) is a session dir (it holds ${LOG_FILE}): ` +
    `give its parent, ${path.dirname(dir)}, as --sessions, or this dir's path where a session id goes`
  );
}

/**
 * Why a sessions root given as a Windows path (`C:/x`, `C:\x`, `\\server\share`) cannot be used on this
 * system: `path.resolve` would quietly make it a folder named `C:` under the working directory. Null on
 * Windows and for any other path. `explicit` is --sessions; else $MCEC_SESSIONS_DIR is checked.
 */
export function windowsPathProblem(
  explicit?: string | null,
  platform: string = process.platform,
): string | null {
  if (platform === 'win32') return null;
  const fromEnv = process.env.MCEC_SESSIONS_DIR?.trim() ? process.env.MCEC_SESSIONS_DIR : undefined;
  const value = explicit || fromEnv;
  if (!value || !/^(?:[A-Za-z]:(?:[\\/]|$)|\\\\)/.test(value.trim())) return null;
  return (
    `${sessionsDirOrigin(explicit)} ${JSON.stringify(value)} is a Windows path, but this system is ${platform}: ` +
    `it would become ${path.resolve(value)}; give a path of this system (e.g. /srv/mcec-sessions)`
  );
}

/**
 * A warning when the sessions root is relative (given so, or the default ./sessions): for a program an MCP
 * client starts (mcec-record stdio), the working directory is the client's choice. Null when it is absolute.
 */
export function relativeSessionsWarning(explicit?: string | null): string | null {
  const fromEnv = process.env.MCEC_SESSIONS_DIR?.trim() ? process.env.MCEC_SESSIONS_DIR : undefined;
  const value = explicit || fromEnv || './sessions';
  if (path.isAbsolute(value)) return null;
  return (
    `the sessions dir ${JSON.stringify(value)} (${sessionsDirOrigin(explicit)}) is relative: sessions go to ` +
    `${path.resolve(value)}, under the working directory the MCP client started this server in; give ` +
    '--sessions an absolute path'
  );
}
