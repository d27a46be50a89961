/**
 * Reading a zip without trusting it: how `verify` and replay's bundle extraction open a zip, walk its central
 * directory one record at a time, decode and judge entry names (no `..`, no absolute path, no symlink, no
 * name Windows would take as another, no two names of one file) and cap the entries and bytes they would inflate. Each caller decides what a finding means (a problem to list,
 * or a refusal).
 */
import type { Entry, ZipFile } from 'yauzl';
import { sameFileKey, windowsNameProblem } from '../paths/naming.js';

/** Caps on what is read from one zip: entries, inflated bytes of one entry and of all of them. */
export interface ZipReadLimits {
  maxEntries: number;
  maxEntryBytes: number;
  maxTotalBytes: number;
}

/** The default caps: 100,000 entries, 1 GiB per entry, 2 GiB in all. */
export const ZIP_READ_LIMITS: Readonly<ZipReadLimits> = Object.freeze({
  maxEntries: 100_000,
  maxEntryBytes: 1024 ** 3,
  maxTotalBytes: 2 * 1024 ** 3,
});

/**
 * Open a zip to read entry by entry: names kept as raw bytes (decoded by `entryName`, judged by
 * `unsafeName`), declared sizes enforced while inflating, closed by the caller.
 */
export async function openZip(zipPath: string): Promise<ZipFile> {
  const { default: yauzl } = await import('yauzl'); // the default: a bundler gives a CommonJS module no named exports
  return yauzl.openPromise(zipPath, {
    lazyEntries: true,
    decodeStrings: false,
    validateEntrySizes: true,
    autoClose: false,
  });
}

/** The zip's central-directory records in order, read one at a time (nothing is inflated). */
export async function* zipEntries(zip: ZipFile): AsyncGenerator<Entry> {
  while (true) {
    const next = await nextEntry(zip);
    if (next === null) return;
    yield next;
  }
}

function nextEntry(zip: ZipFile): Promise<Entry | null> {
  return new Promise((resolve, reject) => {
    const onEntry = (e: Entry) => {
      cleanup();
      resolve(e);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}

/** An entry's name from a zip opened by `openZip`. */
export function entryName(entry: Entry): string {
  const raw = entry.fileName as unknown as Buffer;
  // Bit 11: UTF-8 name. Otherwise CP437, which equals latin1 for the ASCII names a bundle has.
  return namedInUtf8(entry) ? raw.toString('utf8') : raw.toString('latin1');
}

function namedInUtf8(entry: Entry): boolean {
  return (entry.generalPurposeBitFlag & 0x800) !== 0;
}

/**
 * `unsafeName` of an entry's name (from `entryName`), or, for a name not marked UTF-8, a byte over 0x7F:
 * its characters are whatever the unzipping tool's code page makes of them (CP437, CP932, ...), so the
 * name this check reads is not the one Windows writes (nor are its twins). Bundles are written UTF-8.
 */
export function unsafeEntryName(entry: Entry, name: string): string | null {
  const why = unsafeName(name);
  if (why !== null || namedInUtf8(entry) || !/[^\u0000-\u007f]/.test(name)) return why;
  return 'a non-ASCII name not marked UTF-8 (its characters depend on the code page of the tool that unzips it)';
}

/**
 * Why a name must not be extracted, or null when it is fine: no `..`, absolute path, backslash, NUL, empty
 * or `.` folder segment, and every segment a name Windows keeps as it is (`windowsNameProblem`: no `:`,
 * device name, trailing dot or space, `<>"|?*` or control character, 8.3 short-name shape, over 255
 * characters), on every platform: a bundle that passes on Linux must be safe to open on Windows.
 */
export function unsafeName(name: string): string | null {
  if (name.length === 0) return 'empty name';
  if (name.includes('\0')) return 'NUL in the name';
  if (name.includes('\\')) return 'backslash in the name';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'absolute path';
  const parts = name.split('/');
  if (parts.includes('..')) return 'a ".." segment (path traversal)';
  if (parts.slice(0, -1).some((p) => p === '' || p === '.')) return 'an empty or "." segment';
  for (const [i, part] of parts.entries()) {
    if (part === '') continue; // a folder entry's trailing '/'
    const why = windowsNameProblem(part);
    if (why === null) continue;
    const shown = JSON.stringify(part.length > 100 ? `${part.slice(0, 100)}...` : part);
    return `${i < parts.length - 1 || name.endsWith('/') ? 'folder' : 'file'} name ${shown} ${why}`;
  }
  return null;
}

/**
 * The names of one zip seen so far, to find an entry that is the same file as an earlier one where bundles
 * are opened: the same name, or one that differs only in case or Unicode normalization (`sameFileKey`).
 */
export class ZipNames {
  private readonly byKey = new Map<string, string>();

  /** The earlier entry `name` is the same file as (itself when the name appears twice), or null (then it is remembered). */
  twinOf(name: string): string | null {
    const key = sameFileKey(name);
    const twin = this.byKey.get(key);
    if (twin === undefined) this.byKey.set(key, name);
    return twin ?? null;
  }
}

/** Why an entry named `name` is refused as the same file as `twin` (from `ZipNames.twinOf`), quoting with `quote`. */
export function twinProblem(name: string, twin: string, quote: (name: string) => string): string {
  return twin === name
    ? 'appears more than once'
    : `same file as ${quote(twin)} on Windows and macOS (the names differ only in letter case or Unicode normalization)`;
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

/** True when the entry was made on Unix or macOS, so its external attributes hold a Unix mode. */
export function madeOnUnix(entry: Entry): boolean {
  const host = entry.versionMadeBy >> 8;
  return host === 3 || host === 19;
}

/** The file type the Unix mode in an entry's external attributes claims (meaningful when `madeOnUnix`). */
export function unixFileType(entry: Entry): 'symlink' | 'dir' | 'other' {
  const type = (entry.externalFileAttributes >>> 16) & S_IFMT;
  return type === S_IFLNK ? 'symlink' : type === S_IFDIR ? 'dir' : 'other';
}
