/**
 * Source loading: what `mcec-replay` was given (a session id or prefix, a session dir, a bundle zip) as a
 * session dir on disk. A bundle's log and images are extracted into a temp dir, removed by `cleanup()`;
 * only `<top>/session.sqlite` and `<top>/artifacts/<file>` are written, after every name was checked as
 * verify does (`unsafeEntryName`: no `..`, no absolute path, no name Windows would read as another; no symlinks;
 * no two entries that are one file on Windows or macOS) and within size caps, and the log is refused unless
 * its schema is ours (`foreignLogProblem`) before anything queries it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Entry, ZipFile } from 'yauzl';
import {
  entryName,
  openZip,
  twinProblem,
  unixFileType,
  unsafeEntryName,
  ZIP_READ_LIMITS,
  ZipNames,
  zipEntries,
} from '../bundle/zip-read.js';
import { isPortableDirName, LOG_FILE } from '../paths/naming.js';
import { resolveSessionsDir, sessionsDirProblem } from '../paths/sessions-dir.js';
import { foreignLogProblem } from '../store/foreign-log.js';
import { resolveSession } from '../store/session-reader.js';
import { makeTempDir, removeBestEffort } from '../util/temp-files.js';

/** A recording ready to replay. */
export interface ReplaySource {
  kind: 'session-dir' | 'session-id' | 'bundle';
  /** What was given. */
  input: string;
  /** The session dir to read (a temp copy for a bundle). */
  dir: string;
  /** Remove what loading created (a bundle's temp dir); idempotent. */
  cleanup(): void;
}

/**
 * Why a source cannot be loaded: `invalid-id` is bad usage (not an id, a dir or a file); `not-found` and
 * `ambiguous` name no one recording; `unreadable` exists but is no recording (not a zip, not a bundle, no log).
 */
export type SourceProblem = 'invalid-id' | 'not-found' | 'ambiguous' | 'unreadable';

/** A source that cannot be loaded: the message says why and what to give instead. */
export class SourceError extends Error {
  constructor(
    message: string,
    readonly reason: SourceProblem = 'unreadable',
  ) {
    super(message);
  }
}

/** Given as a path (a .zip, or with a separator): a missing one is a missing file, not a bad session id. */
function looksLikePath(input: string): boolean {
  return /[\\/]/.test(input) || /\.zip$/i.test(input) || input.startsWith('.');
}

/**
 * Caps on what is extracted from a bundle: verify's. Typed here so the public declarations do not reach
 * zip-read.ts (whose signatures name yauzl's types, which a consumer need not have).
 */
export const EXTRACT_LIMITS: Readonly<{ maxEntries: number; maxEntryBytes: number; maxTotalBytes: number }> =
  ZIP_READ_LIMITS;

/** Resolve `input` (a bundle .zip, a session dir, or an id / id prefix / dir name under `sessionsDir`). */
export async function openReplaySource(
  input: string,
  options: { sessionsDir?: string } = {},
): Promise<ReplaySource> {
  const none = () => {};
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(input);
  } catch {
    stat = undefined;
  }
  if (stat?.isFile()) {
    if (!input.toLowerCase().endsWith('.zip'))
      throw new SourceError(
        `${input}: a file that is not a bundle (.zip); give a session id, a session dir or a bundle`,
      );
    const tmp = makeTempDir('mcec-replay-bundle');
    const cleanup = () => void removeBestEffort(tmp);
    try {
      const dir = await extractBundle(input, tmp);
      return { kind: 'bundle', input, dir, cleanup };
    } catch (e) {
      cleanup();
      if (e instanceof SourceError) throw e;
      // A truncated or damaged zip fails while its entries are read.
      throw new SourceError(
        `${path.resolve(input)}: not a readable bundle (${(e as Error).message}); give a bundle written by mcec-bundle, and check it with mcec-bundle verify`,
      );
    }
  }
  if (stat?.isDirectory()) {
    if (!fs.existsSync(path.join(input, LOG_FILE)))
      throw new SourceError(
        `${path.resolve(input)}: no ${LOG_FILE} in this directory; give a session dir (sessions/<yyyyMMdd-HHmmss>-<id>), a session id or a bundle .zip`,
      );
    return { kind: 'session-dir', input, dir: path.resolve(input), cleanup: none };
  }
  if (looksLikePath(input))
    throw new SourceError(
      `${path.resolve(input)}: no such file or directory; give a bundle .zip, a session dir or a session id`,
      'not-found',
    );
  const sessionsDir = resolveSessionsDir(options.sessionsDir);
  const problem = sessionsDirProblem(sessionsDir, options.sessionsDir);
  if (problem) throw new SourceError(problem, 'not-found');
  const found = resolveSession(sessionsDir, input);
  if (!found.ok) throw new SourceError(found.message, found.reason);
  return { kind: 'session-id', input, dir: found.session.dir, cleanup: none };
}

/** Extract a bundle's log and images into `into/<top>/`; returns that dir. */
async function extractBundle(zipPath: string, into: string): Promise<string> {
  let zip: ZipFile;
  try {
    zip = await openZip(zipPath);
  } catch (e) {
    throw new SourceError(
      `${path.resolve(zipPath)}: not a readable zip (${(e as Error).message}); give a bundle written by mcec-bundle`,
    );
  }
  try {
    const wanted: Array<{ entry: Entry; rel: string }> = [];
    let top: string | null = null;
    let total = 0;
    let count = 0;
    const names = new ZipNames();
    const shown = (name: string) => JSON.stringify(name.slice(0, 200));
    for await (const entry of zipEntries(zip)) {
      if (++count > EXTRACT_LIMITS.maxEntries)
        throw new SourceError(`${zipPath}: more than ${EXTRACT_LIMITS.maxEntries} entries`);
      const name = entryName(entry);
      const why = unsafeEntryName(entry, name);
      if (why) throw new SourceError(`${zipPath}: refusing entry ${shown(name)}: ${why}`);
      // Every entry, extracted or not: the bundle is refused as verify refuses it, before anything is written.
      const twin = names.twinOf(name);
      if (twin !== null)
        throw new SourceError(`${zipPath}: refusing entry ${shown(name)}: ${twinProblem(name, twin, shown)}`);
      // Any host's: an extraction trusts no mode bits that say symlink.
      if (unixFileType(entry) === 'symlink')
        throw new SourceError(`${zipPath}: refusing symlink entry ${JSON.stringify(name)}`);
      const parts = name.split('/');
      const first = parts[0]!;
      if (top === null) top = first;
      else if (top !== first) throw new SourceError(`${zipPath}: more than one top folder; not a bundle`);
      const rel = parts.slice(1).join('/');
      const isImage =
        parts.length === 3 && parts[1] === 'artifacts' && parts[2] !== '' && !parts[2]!.startsWith('.');
      if (rel !== LOG_FILE && !isImage) continue;
      if (entry.uncompressedSize > EXTRACT_LIMITS.maxEntryBytes)
        throw new SourceError(`${zipPath}: ${name} is larger than ${EXTRACT_LIMITS.maxEntryBytes} bytes`);
      total += entry.uncompressedSize;
      if (total > EXTRACT_LIMITS.maxTotalBytes)
        throw new SourceError(`${zipPath}: more than ${EXTRACT_LIMITS.maxTotalBytes} bytes to extract`);
      wanted.push({ entry, rel });
    }
    if (top === null || !isPortableDirName(top))
      throw new SourceError(
        `${zipPath}: no session folder (<yyyyMMdd-HHmmss>-<id>/, or a copy's name) at the top; not a bundle written by mcec-bundle`,
      );
    if (!wanted.some((w) => w.rel === LOG_FILE))
      throw new SourceError(
        `${zipPath}: the bundle holds no ${LOG_FILE} (built with --no-db?); nothing to replay: bundle the session again without --no-db, or replay its session dir`,
      );
    const dir = path.join(into, top);
    fs.mkdirSync(path.join(dir, 'artifacts'), { recursive: true });
    for (const { entry, rel } of wanted) {
      const stream = await zip.openReadStreamPromise(entry);
      // Exclusive create: a name twice in the zip is refused, never overwritten.
      await pipeline(stream, fs.createWriteStream(path.join(dir, ...rel.split('/')), { flags: 'wx' }));
    }
    // A foreign log is data: checked against our schema before any query runs on it.
    const problem = foreignLogProblem(path.join(dir, LOG_FILE));
    if (problem) throw new SourceError(`${zipPath}: refusing its ${LOG_FILE}: ${problem}`);
    return dir;
  } finally {
    zip.close();
  }
}
