/** The image files of a session: which exist, which must stay in a bundle, and which to drop for a size cap. */
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR } from '../paths/naming.js';
import type { SessionSummary } from '../report/types.js';
import type { ArtifactRow } from '../store/schema.js';

/** One file of `<session>/artifacts/`. */
export interface ImageFile {
  /** Relative to the session dir (and to the bundle's top folder): `artifacts/<name>`. */
  path: string;
  /** Absolute path on disk. */
  file: string;
  bytes: number;
  /** When the log first saw it (artifact row `created_at`); '' when no row names it. */
  firstSeen: string;
}

/** A file skipped: its name or type is unsafe to put in a zip, or no artifact row names it. */
export interface SkippedFile {
  path: string;
  bytes: number;
  detail: string;
  /** `no-row` for a file the log does not know (an interrupted or unrecorded write); else `unreadable`. */
  reason?: 'no-row';
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const STORED_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp', '.zip', '.gz']);

/** True when a file of this name is already compressed, so it is stored rather than deflated. */
export function isPrecompressed(name: string): boolean {
  return STORED_EXTENSIONS.has(path.extname(name).toLowerCase());
}

/** Regular files of the session's artifacts dir that an artifact row names (the rest skipped), oldest first. */
export function listImageFiles(
  sessionDir: string,
  rows: readonly ArtifactRow[],
): { images: ImageFile[]; skipped: SkippedFile[] } {
  const dir = path.join(sessionDir, ARTIFACTS_DIR);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return { images: [], skipped: [] };
  }
  const firstSeen = new Map<string, string>();
  for (const row of rows) {
    if (!row.path) continue;
    const rel = normalizeArtifactPath(row.path);
    const seen = firstSeen.get(rel);
    if (seen === undefined || row.created_at < seen) firstSeen.set(rel, row.created_at);
  }
  const images: ImageFile[] = [];
  const skipped: SkippedFile[] = [];
  for (const entry of entries) {
    const rel = `${ARTIFACTS_DIR}/${entry.name}`;
    // Writers' temp files (dot files, *.tmp / *.partial) are not artifacts yet.
    if (entry.name.startsWith('.') || /\.(tmp|partial)$/i.test(entry.name)) continue;
    if (!entry.isFile()) {
      skipped.push({ path: rel, bytes: 0, detail: entry.isSymbolicLink() ? 'symbolic link' : 'not a file' });
      continue;
    }
    const file = path.join(dir, entry.name);
    const bytes = fs.lstatSync(file).size;
    if (!SAFE_NAME.test(entry.name)) {
      skipped.push({ path: rel, bytes, detail: 'file name not safe in a zip' });
      continue;
    }
    const seen = firstSeen.get(rel);
    if (seen === undefined) {
      // Not in the log: a write cut short (kill -9) or one whose row was never committed; it proves nothing.
      skipped.push({ path: rel, bytes, detail: 'no artifact row names it', reason: 'no-row' });
      continue;
    }
    images.push({ path: rel, file, bytes, firstSeen: seen });
  }
  images.sort(oldestFirst);
  return { images, skipped };
}

function oldestFirst(a: ImageFile, b: ImageFile): number {
  // Files no row names sort by name (their names carry the UTC time they were written).
  const ka = a.firstSeen || '~';
  const kb = b.firstSeen || '~';
  if (ka !== kb) return ka < kb ? -1 : 1;
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** `artifacts/x.png` from the forms a log may hold (`./artifacts/x.png`, backslashes). */
export function normalizeArtifactPath(p: string): string {
  return p.split('\\').join('/').replace(/^\.\//, '');
}

/** Images a size cap must never drop: the last good observation's, the last seen, the suspect one, the failing call's. */
export function protectedImages(summary: SessionSummary, rows: readonly ArtifactRow[]): Set<string> {
  const keep = new Set<string>();
  for (const digest of [summary.lastGoodObservation?.image, summary.lastImage, summary.suspectImage]) {
    if (digest?.artifact) keep.add(normalizeArtifactPath(digest.artifact));
  }
  const failingSeq = summary.failingCall?.seq;
  if (failingSeq != null) {
    for (const row of rows)
      if (row.call_seq === failingSeq && row.path) keep.add(normalizeArtifactPath(row.path));
  }
  return keep;
}

/** The oldest droppable images whose removal brings `totalBytes` down to `maxBytes` (as far as possible). */
export function chooseImagesToDrop(
  images: readonly ImageFile[],
  keep: ReadonlySet<string>,
  totalBytes: number,
  maxBytes: number,
  entryOverhead: (image: ImageFile) => number,
): ImageFile[] {
  const drop: ImageFile[] = [];
  let total = totalBytes;
  for (const image of images) {
    if (total <= maxBytes) break;
    if (keep.has(image.path)) continue;
    drop.push(image);
    total -= image.bytes + entryOverhead(image);
  }
  return drop;
}
