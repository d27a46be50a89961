/**
 * A file time this close to now may share a file-system time tick with a later write (FAT keeps 2 s): the
 * rule of the catalog sidecars and of the catalog's dir times. A module of its own so that the catalog's
 * freshness check (every `list`) does not load the sidecar code (node:crypto) with it.
 */
export const SETTLE_MS = 2000;
