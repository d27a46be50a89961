/** Evidence files the MCEC server wrote on its own host: which were copied into the session, where the rest lie. */
import type { ArtifactRow } from '../store/schema.js';
import { oneLine } from './text.js';
import type { HostFileDigest, HostFilesSummary } from './types.js';

/** Most host files listed by path in a summary (the rest are counted). */
const MAX_LISTED = 20;

/** The role a host file is stored with (`host-capture`, `host-capture-file`, `host-recording`, `host-observation`). */
export function isHostRole(role: string): boolean {
  return role.startsWith('host-');
}

/** A path as the host wrote it, on one line and clipped (it is shown, never opened). */
function shownPath(p: string): string {
  return oneLine(p, 300);
}

/**
 * Host files by distinct host path (a server observation names the same file in every later failure):
 * how many were copied, and the ones that were not with where they lie on the MCEC host and why.
 */
export function hostFilesOf(rows: readonly ArtifactRow[]): HostFilesSummary {
  const byPath = new Map<string, { copied: boolean; first: ArtifactRow }>();
  for (const row of rows) {
    if (typeof row.host_path !== 'string' || row.host_path === '' || row.call_seq == null) continue;
    const seen = byPath.get(row.host_path);
    if (!seen) byPath.set(row.host_path, { copied: row.path != null, first: row });
    else if (row.path != null) seen.copied = true;
  }
  const notCopied: HostFileDigest[] = [];
  let copied = 0;
  for (const [hostPath, { copied: ok, first }] of byPath) {
    if (ok) {
      copied += 1;
      continue;
    }
    notCopied.push({
      seq: first.call_seq!,
      role: oneLine(first.role, 40),
      hostPath: shownPath(hostPath),
      reason: oneLine(first.error ?? 'not copied', 200),
    });
  }
  // Newest first, as far as the list goes.
  notCopied.sort((a, b) => b.seq - a.seq);
  return {
    total: byPath.size,
    copied,
    notCopied: notCopied.slice(0, MAX_LISTED),
    omitted: Math.max(0, notCopied.length - MAX_LISTED),
  };
}

/** Where a call's image lies on the MCEC host when it has a host file that was not copied, else null. */
export function hostPathOfCall(
  rows: readonly ArtifactRow[],
  roles?: (role: string) => boolean,
): string | null {
  const row = rows.find(
    (r) =>
      typeof r.host_path === 'string' && r.host_path !== '' && r.path == null && (!roles || roles(r.role)),
  );
  return row?.host_path ? shownPath(row.host_path) : null;
}
