/**
 * A recorder's closed sessions, each one's catalog entry written beside its log (`catalog-entry.json`,
 * src/store/README.md "Catalog sidecars"), so an `index` or a copy of the dir elsewhere need not open the
 * log. The recorder does not know the catalog: whoever creates one hands it this as its closed-sessions
 * handler (src/record/closed-sessions.ts). This module is light; the entry code (verdict rule, fingerprints)
 * loads only when called, at the recorder's close.
 */

/**
 * Write the sidecar of each dir's closed log. Never fails: a missing sidecar means the log is read, so a
 * session whose sidecar was not written gets its catalog entry from the next `mcec-bundle index` or `list`.
 */
export async function writeCatalogSidecars(dirs: string[]): Promise<void> {
  if (dirs.length === 0) return;
  try {
    const { writeSidecarOfClosedLog } = await import('./catalog-entry.js');
    for (const dir of dirs) writeSidecarOfClosedLog(dir);
  } catch {
    // the next reader of the catalog reads these logs and writes their sidecars
  }
}
