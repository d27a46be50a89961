/**
 * A session dir's catalog entry from its sidecar (src/store/entry-sidecar.ts), apart from the code that reads
 * a log (`catalog-entry.ts`): a sweep that finds every new dir's sidecar true loads only this.
 */
import type { CatalogEntry } from '../store/catalog.js';
import { trustedEntry, worthRestamping, writeEntrySidecar } from '../store/entry-sidecar.js';
import { ENTRY_VERSION } from './catalog.js';

/** A session dir's entry, and whether its sidecar was written (the dir's time moved). */
export interface SessionDirEntry {
  entry: CatalogEntry;
  wroteSidecar: boolean;
}

/**
 * The entry the dir's sidecar holds when that describes the log as it is (src/store/entry-sidecar.ts),
 * else null (read the log: `entryFromLog`). With `restamp` (`mcec-bundle index`), a sidecar trusted by its
 * hash (fresh from a session's close, or copied without its times) is written again stamped with the log's
 * time when that is settled, so that the next reader compares times only; a sweep does not (writing it
 * costs two to three times the hash, and a sweep reads a dir again only when it changed).
 */
export function entryFromSidecar(
  dir: string,
  options: { now?: number; restamp?: boolean } = {},
): SessionDirEntry | null {
  const trusted = trustedEntry(dir, ENTRY_VERSION);
  if (!trusted) return null;
  const wroteSidecar =
    options.restamp === true &&
    worthRestamping(trusted, options.now ?? Date.now()) &&
    writeEntrySidecar(dir, ENTRY_VERSION, trusted.entry, trusted.stamp);
  return { entry: trusted.entry, wroteSidecar };
}
