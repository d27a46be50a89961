/**
 * A session dir's catalog entry from its sidecar (src/store/entry-sidecar.ts), apart from the code that reads
 * a log (`catalog-entry.ts`): a sweep that finds every new dir's sidecar true loads only this. The entry
 * version is the caller's (catalog.ts's ENTRY_VERSION), so that `index`'s worker thread
 * (sidecar-worker-entry.ts), which runs `sidecarStep`, loads neither the catalog nor SQLite.
 */
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE } from '../paths/naming.js';
import type { CatalogEntry, LogCheck } from '../store/catalog.js';
import {
  type TrustedEntry,
  trustedEntry,
  worthRestamping,
  writeEntrySidecar,
} from '../store/entry-sidecar.js';

/** A session dir's entry, and whether its sidecar was written (the dir's time moved). */
export interface SessionDirEntry {
  entry: CatalogEntry;
  wroteSidecar: boolean;
}

/** How a sidecar is read: the entry version it must carry, the time now, whether to restamp it. */
export interface SidecarReading {
  entryVersion: string;
  now?: number;
  restamp?: boolean;
}

/**
 * The entry the dir's sidecar holds when that describes the log as it is (src/store/entry-sidecar.ts),
 * else null (read the log: `entryFromLog`). With `restamp` (`entryOfSessionDir`'s default), a sidecar
 * trusted by its hash (fresh from a session's close, or copied without its times) is written again stamped
 * with the log's time when that is settled, so that the next reader compares times only. A catalog refresh
 * never writes one (`sidecarStep`: the write costs three to four times the hash); `index` keeps that check
 * in the catalog instead (`log_checks`, `checkToKeep`).
 */
export function entryFromSidecar(dir: string, reading: SidecarReading): SessionDirEntry | null {
  const trusted = trustedEntry(dir, reading.entryVersion);
  if (!trusted) return null;
  const wroteSidecar =
    reading.restamp === true &&
    worthRestamping(trusted, reading.now ?? Date.now()) &&
    writeEntrySidecar(dir, reading.entryVersion, trusted.entry, trusted.stamp);
  return { entry: trusted.entry, wroteSidecar };
}

/**
 * What a refresh found of one session dir without its catalog: `gone` (no log: not a session, or gone
 * meanwhile), `log` (no sidecar true to the log: read the log), or the sidecar's entry and how it was found
 * true. Nothing is written: a step may run on either thread, twice when a worker stops.
 */
export type SidecarStep =
  | { kind: 'gone' }
  | { kind: 'log' }
  | { kind: 'sidecar'; entry: CatalogEntry; trust: Pick<TrustedEntry, 'stamp' | 'by' | 'dev'> };

/**
 * One session dir's `SidecarStep` for entries of `entryVersion` (`check`: the catalog's): what a refresh does
 * per dir on either thread.
 */
export function sidecarStep(dir: string, entryVersion: string, check: LogCheck | null = null): SidecarStep {
  // A sidecar found true says the log is there, a regular file: no stat of its own for that.
  const trusted = trustedEntry(dir, entryVersion, check);
  if (trusted) {
    const { entry, stamp, by, dev } = trusted;
    return { kind: 'sidecar', entry, trust: { stamp, by, dev } };
  }
  return logMayBeThere(path.join(dir, LOG_FILE)) ? { kind: 'log' } : { kind: 'gone' };
}

/**
 * Whether `log` is a regular file, or cannot be looked at (a dir this user may not search): such a session
 * is read, and listed UNREADABLE with why, instead of vanishing from the catalog as a dir without a log.
 */
function logMayBeThere(log: string): boolean {
  try {
    return fs.lstatSync(log, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}
