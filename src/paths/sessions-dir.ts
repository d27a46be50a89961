/** Where recordings live: one rule for the recorder, the demo and every CLI. */
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
