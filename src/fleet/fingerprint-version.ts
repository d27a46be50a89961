/**
 * Bump when the built-in fingerprint key changes: catalogs built with another version are read again. A module
 * of its own so that the catalog's freshness check (every `list`) does not load fingerprint.ts (node:crypto,
 * node:worker_threads) to compare it.
 */
export const FINGERPRINT_RULES_VERSION = 1;
