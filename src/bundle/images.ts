/** The image files of a session: which exist, which must stay in a bundle, and which to drop for a size cap. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR, sameFileKey, windowsNameProblem } from '../paths/naming.js';
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
  /** The sha256s the log's rows recorded for it (several rows may name one file); empty when none did. */
  sha256s: readonly string[];
}

/**
 * An image left out: its name or type is unsafe to put in a zip, no artifact row names it, a row names it but
 * the file is not there, or the file is not the one the row recorded.
 */
export interface SkippedFile {
  path: string;
  bytes: number;
  detail: string;
  /**
   * `no-row`: a file the log does not know (an interrupted or unrecorded write); `missing`: a row names it and
   * there is no such file; `mismatch`: its size or sha256 is not what the row recorded; `damaged`: not a whole
   * PNG. Absent: `unreadable`.
   */
  reason?: 'no-row' | 'missing' | 'mismatch' | 'damaged';
}

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');
const PNG_IEND = Buffer.from('0000000049454e44ae426082', 'hex');
/** Bytes of a file's start and end that `pngProblem` needs. */
export const PNG_ENDS = { head: PNG_SIGNATURE.length, tail: PNG_IEND.length } as const;

/**
 * Why a `.png` of `bytes` bytes whose first and last bytes are `head` and `tail` is not a whole PNG (its
 * signature first, its IEND chunk last: what verify holds a `.png` to), or null when it is one.
 */
export function pngProblem(head: Buffer, tail: Buffer, bytes: number): string | null {
  if (head.subarray(0, PNG_ENDS.head).equals(PNG_SIGNATURE) && tail.subarray(-PNG_ENDS.tail).equals(PNG_IEND))
    return null;
  return bytes === 0
    ? 'an empty PNG (0 bytes)'
    : `not a whole PNG (${bytes} bytes; no PNG signature or IEND end)`;
}

/**
 * Why `img`, whose bytes hash to `sha256` and begin and end with `head` and `tail`, is not the image the log
 * recorded: a sha256 none of its rows has (a file replaced by another of the same size, `mismatch`), or a
 * `.png` that is not whole (`damaged`; verify would fail the zip). Null when it is the log's image.
 */
export function imageFault(
  img: ImageFile,
  sha256: string,
  head: Buffer,
  tail: Buffer,
): Required<SkippedFile> | null {
  if (img.sha256s.length > 0 && !img.sha256s.includes(sha256)) {
    return {
      path: img.path,
      bytes: img.bytes,
      reason: 'mismatch',
      detail: `sha256 ${sha256}, but the log recorded ${img.sha256s.join(' or ')}: a replaced copy, not the image the log describes`,
    };
  }
  const problem = img.path.toLowerCase().endsWith('.png') ? pngProblem(head, tail, img.bytes) : null;
  return problem ? { path: img.path, bytes: img.bytes, reason: 'damaged', detail: problem } : null;
}

/**
 * `imageFault` of a file read here (an image the zip writer did not read: left out for size, or with
 * --no-images, and shown by run.gif). A file that cannot be read is a fault too (`missing`).
 */
export async function checkImageFile(img: ImageFile): Promise<Required<SkippedFile> | null> {
  let data: Buffer;
  try {
    data = await fs.promises.readFile(img.file);
  } catch (err) {
    return { path: img.path, bytes: img.bytes, reason: 'missing', detail: `cannot be read: ${String(err)}` };
  }
  const sha256 = createHash('sha256').update(data).digest('hex');
  return imageFault(img, sha256, data.subarray(0, PNG_ENDS.head), data.subarray(-PNG_ENDS.tail));
}

/** What the log's rows recorded of one file. */
interface RowFacts {
  firstSeen: string;
  /** The first call that names it (for a missing file's detail). */
  seq: number | null;
  sizes: Set<number>;
  sha256s: Set<string>;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const STORED_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp', '.zip', '.gz']);

/** True when a file of this name is already compressed, so it is stored rather than deflated. */
export function isPrecompressed(name: string): boolean {
  return STORED_EXTENSIONS.has(path.extname(name).toLowerCase());
}

/**
 * Regular files of the session's artifacts dir that an artifact row names, oldest first. Skipped: files no row
 * names, files whose size is none a row recorded (a truncated copy, a swapped file; the sha256 is compared in
 * the zip writer, which hashes every file anyway), and rows whose file is not there.
 */
export function listImageFiles(
  sessionDir: string,
  rows: readonly ArtifactRow[],
): { images: ImageFile[]; skipped: SkippedFile[] } {
  const dir = path.join(sessionDir, ARTIFACTS_DIR);
  const named = rowFacts(rows);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    entries = []; // no artifacts/ at all (a copy made without it): every file a row names is missing
  }
  const images: ImageFile[] = [];
  const skipped: SkippedFile[] = [];
  const found = new Set<string>();
  for (const entry of entries) {
    const rel = `${ARTIFACTS_DIR}/${entry.name}`;
    // Writers' temp files (dot files, *.tmp / *.partial) are not artifacts yet.
    if (entry.name.startsWith('.') || /\.(tmp|partial)$/i.test(entry.name)) continue;
    found.add(rel); // there, if perhaps not bundled: not missing
    if (!entry.isFile()) {
      skipped.push({ path: rel, bytes: 0, detail: entry.isSymbolicLink() ? 'symbolic link' : 'not a file' });
      continue;
    }
    const file = path.join(dir, entry.name);
    const bytes = fs.lstatSync(file).size;
    const nameProblem = SAFE_NAME.test(entry.name)
      ? windowsNameProblem(entry.name)
      : 'has characters other than letters, digits and ._-';
    if (nameProblem !== null) {
      skipped.push({ path: rel, bytes, detail: `file name not safe in a zip: ${nameProblem}` });
      continue;
    }
    const facts = named.get(rel);
    if (facts === undefined) {
      // Not in the log: a write cut short (kill -9) or one whose row was never committed; it proves nothing.
      skipped.push({ path: rel, bytes, detail: 'no artifact row names it', reason: 'no-row' });
      continue;
    }
    if (facts.sizes.size > 0 && !facts.sizes.has(bytes)) {
      const recorded = [...facts.sizes].join(' or ');
      skipped.push({
        path: rel,
        bytes,
        detail: `${bytes} bytes, but the log recorded ${recorded}: a damaged or replaced copy, not the image the log describes`,
        reason: 'mismatch',
      });
      continue;
    }
    images.push({ path: rel, file, bytes, firstSeen: facts.firstSeen, sha256s: [...facts.sha256s] });
  }
  for (const [rel, facts] of named) {
    // Only names a file of artifacts/ could have (a row's path elsewhere is no image of the bundle's).
    if (
      found.has(rel) ||
      !rel.startsWith(`${ARTIFACTS_DIR}/`) ||
      rel.indexOf('/', ARTIFACTS_DIR.length + 1) >= 0
    )
      continue;
    const recorded = facts.sizes.size > 0 ? Math.max(...facts.sizes) : 0;
    const call = facts.seq === null ? '' : ` (call #${facts.seq})`;
    skipped.push({
      path: rel,
      bytes: recorded,
      detail: `the log names it${call} but the session dir has no such file`,
      reason: 'missing',
    });
  }
  images.sort(oldestFirst);
  return { images: withoutTwins(images, skipped), skipped };
}

/**
 * `images` less the files whose names are one file on Windows and macOS with another's (`A.png`, `a.png`: a
 * Linux session dir can hold both), each added to `skipped`; of such names the first in code-unit order is
 * kept, so the zip verifies and unzips the same everywhere.
 */
function withoutTwins(images: ImageFile[], skipped: SkippedFile[]): ImageFile[] {
  const kept = new Map<string, string>();
  for (const img of [...images].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const key = sameFileKey(img.path);
    const twin = kept.get(key);
    if (twin === undefined) kept.set(key, img.path);
    else
      skipped.push({
        path: img.path,
        bytes: img.bytes,
        detail: `file name not safe in a zip: the same file as ${twin} on Windows and macOS`,
      });
  }
  return images.filter((img) => kept.get(sameFileKey(img.path)) === img.path);
}

/** Per file the rows name: when first seen, by which call, and the sizes and sha256s recorded. */
function rowFacts(rows: readonly ArtifactRow[]): Map<string, RowFacts> {
  const named = new Map<string, RowFacts>();
  for (const row of rows) {
    if (!row.path) continue;
    const rel = normalizeArtifactPath(row.path);
    let facts = named.get(rel);
    if (facts === undefined) {
      facts = { firstSeen: row.created_at, seq: row.call_seq, sizes: new Set(), sha256s: new Set() };
      named.set(rel, facts);
    } else if (row.created_at < facts.firstSeen) {
      facts.firstSeen = row.created_at;
      facts.seq = row.call_seq;
    }
    if (row.bytes !== null && row.bytes !== undefined) facts.sizes.add(row.bytes);
    if (row.sha256) facts.sha256s.add(row.sha256.toLowerCase());
  }
  return named;
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
