/** Where recordings live: one rule for the recorder, the demo and every CLI. */
import fs from 'node:fs';
import path from 'node:path';

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
 * Why the sessions root cannot be read (missing, or a file), naming it, where it came from and what to do;
 * null when it is a directory.
 */
export function sessionsDirProblem(dir: string, explicit?: string | null): string | null {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (stat?.isDirectory()) return null;
  const what = stat ? 'is not a directory' : 'does not exist';
  return (
    `the sessions dir ${dir} (${sessionsDirOrigin(explicit)}) ${what}: ` +
    'give --sessions DIR (the dir the recorder writes sessions into) or set MCEC_SESSIONS_DIR'
  );
}
