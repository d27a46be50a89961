/**
 * Checking a bundle without extracting it: entry names, layout, every manifest hash and size, CRCs, that no
 * JSON or text file carries image bytes, that report.html runs only its own scripts and that the log is one
 * this recorder wrote (copied to a temp file and checked by `foreignLogProblem`, never queried). Bounded in
 * time and memory whatever the zip (see VerifyOptions).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Entry, ZipFile } from 'yauzl';
import { BUNDLE_FILES, type BundleFileName } from '../contract/bundle-files.js';
import { isPortableDirName, LOG_FILE } from '../paths/naming.js';
import { escapeFormatChars } from '../report/text.js';
import { foreignLogProblem } from '../store/foreign-log.js';
import { expectNonEmptyString, expectNumber, expectOptions } from '../util/expect.js';
import { isRecord } from '../util/json.js';
import { makeTempDir, removeBestEffort } from '../util/temp-files.js';
import { PNG_ENDS, pngProblem } from './images.js';
import { Base64RunScanner } from './scrub.js';
import { checkReportHtml } from './verify-html.js';
import { checkJsonFile, checkJsonLines } from './verify-json.js';
import {
  entryName,
  madeOnUnix,
  openZip,
  twinProblem,
  unixFileType,
  unsafeEntryName,
  ZIP_READ_LIMITS,
  ZipNames,
  zipEntries,
} from './zip-read.js';

/** What verifyBundle found. */
export interface VerifyResult {
  ok: boolean;
  problems: string[];
  /** Entries in the zip (directories included). */
  entries: number;
}

/** Bounds on the work verifyBundle does: whatever the zip, it reads and parses no more than these. */
export interface VerifyOptions {
  /** Most entries read from the central directory (default 100,000). */
  maxEntries?: number;
  /** Most inflated bytes of one entry (default 1 GiB). */
  maxEntryBytes?: number;
  /** Most inflated bytes of all entries together (default 2 GiB). */
  maxTotalBytes?: number;
  /** Largest `.json` / `.jsonl` file parsed to look for image bytes (default 16 MiB); larger ones fail. */
  maxJsonBytes?: number;
  /** Deepest JSON nesting parsed (default 10,000; see verify-json.ts). */
  maxJsonDepth?: number;
  /** Most objects and arrays in one `.json` file or `.jsonl` line (default 500,000). */
  maxJsonContainers?: number;
  /** Largest `.html` page checked (default 64 MiB); larger ones fail. */
  maxHtmlBytes?: number;
  /** A templates dir the bundle was built with: its report.html's own scripts are allowed too. */
  templatesDir?: string;
}

const MiB = 1024 * 1024;
/** The defaults of VerifyOptions. */
export const VERIFY_DEFAULTS: Readonly<Required<Omit<VerifyOptions, 'templatesDir'>>> = Object.freeze({
  ...ZIP_READ_LIMITS,
  maxJsonBytes: 16 * MiB,
  maxJsonDepth: 10_000,
  maxJsonContainers: 500_000,
  maxHtmlBytes: 64 * MiB,
});

/** Files every bundle has at the top of its folder: the `required` ones of `BUNDLE_FILES`. */
export const REQUIRED_FILES: readonly BundleFileName[] = BUNDLE_FILES.filter((f) => f.required).map(
  (f) => f.name,
);

/** In a text file, any base64 run this long is suspect even when it does not start like an image. */
const TEXT_PLAIN_RUN_LIMIT = 100_000;
/** Stop listing after this many problems (a hostile zip could have millions of entries). */
const MAX_PROBLEMS = 200;
/** Overlapping entries named one by one before the rest are only counted. */
const MAX_OVERLAPS_LISTED = 5;

/** One central-directory record, as read before any data is touched. */
interface Listed {
  entry: Entry;
  name: string;
  isDir: boolean;
  /** Bytes of the zip it occupies: its local header through the end of its compressed data. */
  start: number;
  end: number;
}

/**
 * Check a bundle zip; never extracts anything and never throws for a bad zip (it becomes a problem). Bounded:
 * the central directory is read first and a zip with overlapping or duplicate entries, too many entries or
 * too many inflated bytes is refused before anything is inflated; JSON is parsed within size, depth and
 * count caps.
 */
export async function verifyBundle(zipPath: string, options: VerifyOptions = {}): Promise<VerifyResult> {
  expectNonEmptyString(zipPath, 'zipPath');
  const o = expectOptions(options);
  for (const key of Object.keys(VERIFY_DEFAULTS)) expectNumber(o[key], `options.${key}`, { min: 0 });
  const caps = { ...VERIFY_DEFAULTS, ...definedOnly(options) };
  const problems: string[] = [];
  const add = (p: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(p);
    else if (problems.length === MAX_PROBLEMS) problems.push('... more problems not listed');
  };
  let zip: ZipFile;
  try {
    zip = await openZip(zipPath);
  } catch (err) {
    return { ok: false, problems: [`not a readable zip: ${quoteText((err as Error).message)}`], entries: 0 };
  }
  let entries = 0;
  const files = new Map<string, FileFacts>();
  const tops = new Set<string>();
  const scratch = new Scratch();
  try {
    const listing = await listEntries(zip, caps, add);
    entries = listing.entries;
    // A refused zip is not read at all: its layout and manifest are not worth a word.
    if (listing.refused) return { ok: false, problems, entries };
    for (const l of listing.listed) tops.add(l.name.split('/')[0]!);
    const ownScripts = await ownScriptSources(options.templatesDir);
    for (const l of listing.listed) {
      if (l.isDir) continue;
      try {
        files.set(l.name, await readFacts(zip, l.entry, l.name, caps, ownScripts, scratch));
      } catch (err) {
        add(`entry ${shownName(l.name)}: cannot be read: ${quoteText((err as Error).message)}`);
      }
    }
  } catch (err) {
    add(`zip structure: ${quoteText((err as Error).message)}`);
    // Its listing stopped there: what was not listed cannot be said missing (nor the zip empty).
    if (tops.size === 0) return { ok: false, problems, entries };
  } finally {
    zip.close();
    scratch.remove();
  }
  checkLayout(tops, files, add, entries);
  const top = tops.size === 1 ? [...tops][0]! : null;
  if (top !== null) checkManifest(top, files, add);
  for (const [name, facts] of files) {
    if (facts.crcMismatch) add(`${printable(name)}: CRC-32 does not match the data`);
    for (const p of facts.imageProblems) add(`${printable(name)}: ${p}`);
  }
  return { ok: problems.length === 0, problems, entries };
}

function definedOnly(options: VerifyOptions): Partial<typeof VERIFY_DEFAULTS> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(VERIFY_DEFAULTS) as Array<keyof typeof VERIFY_DEFAULTS>) {
    const v = options[key];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[key] = v;
  }
  return out;
}

/**
 * Read the central directory and each local header (never any file data): names, kinds, declared sizes
 * against the caps, and where each entry lies in the zip. `refused` means nothing may be inflated.
 */
async function listEntries(
  zip: ZipFile,
  caps: typeof VERIFY_DEFAULTS,
  add: (p: string) => void,
): Promise<{ listed: Listed[]; entries: number; refused: boolean }> {
  const listed: Listed[] = [];
  const names = new ZipNames();
  let entries = 0;
  let refused = false;
  let total = 0;
  for await (const entry of zipEntries(zip)) {
    entries += 1;
    if (entries > caps.maxEntries) {
      add(
        `more than ${caps.maxEntries} entries (a bundle has one per file; maxEntries raises the cap); refused`,
      );
      refused = true;
      break;
    }
    const name = entryName(entry);
    const check = checkRecord(entry, name, names, caps, add);
    if (check.refuse) refused = true;
    if (check.skip) continue;
    total += entry.uncompressedSize;
    const located = await locateEntry(zip, entry, name, check.isDir, add);
    if (located) listed.push(located);
    else refused = true;
  }
  if (findOverlaps(listed, add) > 0) refused = true;
  if (total > caps.maxTotalBytes) {
    add(
      `${total} bytes once inflated, over the cap of ${caps.maxTotalBytes} for the whole zip (--max-total-bytes); refused`,
    );
    refused = true;
  }
  return { listed, entries, refused };
}

/** What one central-directory record's checks decided. */
interface RecordCheck {
  /** Not listed: its data is never located or read. */
  skip: boolean;
  /** The whole zip is refused (nothing is inflated). */
  refuse: boolean;
  isDir: boolean;
}

/** A record's checks before its data is located: name, kind, encryption, compression, declared size. */
function checkRecord(
  entry: Entry,
  name: string,
  names: ZipNames,
  caps: typeof VERIFY_DEFAULTS,
  add: (p: string) => void,
): RecordCheck {
  const shown = shownName(name);
  const skipped: RecordCheck = { skip: true, refuse: false, isDir: false };
  const nameProblem = unsafeEntryName(entry, name);
  if (nameProblem) {
    add(`entry ${shown}: ${escapeFormatChars(nameProblem)}; refused`);
    return skipped;
  }
  const unixHost = madeOnUnix(entry);
  if (unixHost && unixFileType(entry) === 'symlink') {
    add(`entry ${shown}: is a symbolic link; refused`);
    return skipped;
  }
  const twin = names.twinOf(name);
  if (twin !== null) {
    add(`entry ${shown}: ${twinProblem(name, twin, shownName)}; refused`);
    return { ...skipped, refuse: true };
  }
  const isDir = name.endsWith('/') || (unixHost && unixFileType(entry) === 'dir');
  if (isDir && entry.uncompressedSize !== 0) add(`entry ${shown}: a directory with data`);
  if (!isDir && entry.isEncrypted()) {
    add(`entry ${shown}: encrypted`);
    return skipped;
  }
  if (!isDir && entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
    add(`entry ${shown}: unsupported compression method ${entry.compressionMethod}`);
    return skipped;
  }
  if (entry.uncompressedSize > caps.maxEntryBytes) {
    add(
      `entry ${shown}: ${entry.uncompressedSize} bytes once inflated, over the cap of ${caps.maxEntryBytes} per entry (--max-entry-bytes); refused`,
    );
    return { skip: false, refuse: true, isDir };
  }
  return { skip: false, refuse: false, isDir };
}

/** Where an entry's bytes lie in the zip, from its local header; null (a problem added) when unreadable. */
async function locateEntry(
  zip: ZipFile,
  entry: Entry,
  name: string,
  isDir: boolean,
  add: (p: string) => void,
): Promise<Listed | null> {
  let dataStart: number;
  try {
    dataStart = (await zip.readLocalFileHeaderPromise(entry, { minimal: true })).fileDataStart;
  } catch (err) {
    add(`entry ${shownName(name)}: bad local header: ${quoteText((err as Error).message)}; refused`);
    return null;
  }
  const start = entry.relativeOffsetOfLocalHeader;
  return { entry, name, isDir, start, end: dataStart + entry.compressedSize };
}

/** Entries whose bytes overlap (one compressed stream read as many files: a zip bomb); returns how many. */
function findOverlaps(listed: readonly Listed[], add: (p: string) => void): number {
  const byStart = [...listed].sort((a, b) => a.start - b.start || a.end - b.end);
  let overlaps = 0;
  let reach: Listed | null = null;
  for (const l of byStart) {
    if (reach && l.start < reach.end) {
      overlaps += 1;
      if (overlaps <= MAX_OVERLAPS_LISTED) {
        add(
          `entries ${shownName(reach.name)} and ${shownName(l.name)} overlap in the zip (the same bytes read as two files); refused`,
        );
      }
    }
    if (!reach || l.end > reach.end) reach = l;
  }
  if (overlaps > MAX_OVERLAPS_LISTED) add(`... ${overlaps - MAX_OVERLAPS_LISTED} more overlapping entries`);
  return overlaps;
}

/** The CSP sources of report.html's own scripts: the built-in template's, and the override's when given. */
async function ownScriptSources(templatesDir?: string): Promise<Set<string>> {
  const { BUILTIN_TEMPLATES_DIR, readTemplateSource } = await import('../report/render.js');
  const { templateScriptHashes } = await import('../report/html/csp.js');
  const { REPORT_HTML_TEMPLATE } = await import('../report/html/template.js');
  const out = new Set<string>();
  const dirs = templatesDir === undefined ? [BUILTIN_TEMPLATES_DIR] : [BUILTIN_TEMPLATES_DIR, templatesDir];
  for (const dir of dirs) {
    try {
      const source = readTemplateSource(path.join(dir, REPORT_HTML_TEMPLATE));
      for (const h of templateScriptHashes(source)) out.add(h);
    } catch {
      // no report.html template there: nothing more is allowed
    }
  }
  return out;
}

interface FileFacts {
  bytes: number;
  sha256: string;
  crcMismatch: boolean;
  /** Parsed content of manifest.json (only that file is kept). */
  json?: unknown;
  imageProblems: string[];
}

/** A name from the zip as it may be printed: quoted, clipped, every control and bidi character escaped. */
function shownName(name: string): string {
  return quoteText(name.length > 200 ? `${name.slice(0, 200)}...` : name);
}

/** A value from the zip in a message, unquoted: clipped, control and bidi characters escaped. */
function printable(value: unknown): string {
  const text = typeof value === 'string' ? value : String(JSON.stringify(value));
  return escapeFormatChars(text.length > 200 ? `${text.slice(0, 200)}...` : text);
}

/** Text from the zip, quoted for a terminal: JSON escapes plus C1 controls and bidi overrides as \u escapes. */
function quoteText(text: string): string {
  return escapeFormatChars(JSON.stringify(text));
}

/**
 * Extensions the recorder writes images in no format it reads as (`notRasterExtension` of src/artifacts): an
 * icon may hold a PNG, an SVG any text; in `artifacts/` they are images as they came, not files to scan.
 */
const NOT_RASTER_ARTIFACT = new Set(['.svg', '.ico', '.avif', '.tif', '.bin']);

function kindOf(name: string): 'json' | 'jsonl' | 'text' | 'html' | 'png' | 'opaque' | 'binary' {
  const ext = path.extname(name).toLowerCase();
  const parts = name.split('/');
  if (parts.length === 3 && parts[1] === 'artifacts' && NOT_RASTER_ARTIFACT.has(ext)) return 'opaque';
  if (ext === '.json') return 'json';
  if (ext === '.jsonl') return 'jsonl';
  if (ext === '.md' || ext === '.txt' || ext === '.csv' || ext === '.log') return 'text';
  // report.html embeds WebP thumbnails as data URIs by design: checked as a page (verify-html.ts).
  if (ext === '.html') return 'html';
  if (ext === '.png') return 'png';
  if (['.jpg', '.jpeg', '.gif', '.bmp', '.webp'].includes(ext)) return 'opaque';
  return 'binary';
}

/** A temp dir for the log's copy, made on first use and removed (a killed run's by the next run). */
class Scratch {
  private dir: string | null = null;

  file(name: string): string {
    this.dir ??= makeTempDir('mcec-verify');
    return path.join(this.dir, name);
  }

  remove(): void {
    if (this.dir) removeBestEffort(this.dir);
    this.dir = null;
  }
}

/** `<top>/session.sqlite`: the one entry verify copies out, to check it as a foreign log. */
function isBundleLog(name: string): boolean {
  const parts = name.split('/');
  return parts.length === 2 && parts[1] === LOG_FILE;
}

async function readFacts(
  zip: ZipFile,
  entry: Entry,
  name: string,
  caps: typeof VERIFY_DEFAULTS,
  ownScripts: ReadonlySet<string>,
  scratch: Scratch,
): Promise<FileFacts> {
  const kind = kindOf(name);
  const logCopy = isBundleLog(name) ? scratch.file(LOG_FILE) : null;
  const logFd = logCopy ? fs.openSync(logCopy, 'wx') : null;
  const stream = await zip.openReadStreamPromise(entry);
  const hash = createHash('sha256');
  let crc = 0;
  let bytes = 0;
  // JSON is checked by parsing it (precise); other files by a byte scan for image signatures.
  const scanner =
    kind === 'text'
      ? new Base64RunScanner({ text: true, maxPlainRun: TEXT_PLAIN_RUN_LIMIT })
      : kind === 'binary'
        ? new Base64RunScanner()
        : null;
  const parsed = kind === 'json' || kind === 'jsonl';
  const limit = parsed ? caps.maxJsonBytes : kind === 'html' ? caps.maxHtmlBytes : 0;
  // yauzl ends the stream with an error past the declared size, so the declared size bounds what is kept.
  const keep = limit > 0 && entry.uncompressedSize <= limit;
  const chunks: Buffer[] = [];
  let head = Buffer.alloc(0);
  let tail = Buffer.alloc(0);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (logFd !== null) fs.writeSync(logFd, chunk);
      hash.update(chunk);
      crc = zlib.crc32(chunk, crc);
      bytes += chunk.length;
      scanner?.feed(chunk);
      if (keep) chunks.push(chunk);
      if (kind === 'png') {
        if (head.length < PNG_ENDS.head) head = Buffer.concat([head, chunk]).subarray(0, PNG_ENDS.head);
        tail = Buffer.concat([tail, chunk]).subarray(-PNG_ENDS.tail);
      }
    }
  } finally {
    if (logFd !== null) fs.closeSync(logFd);
  }
  const facts: FileFacts = {
    bytes,
    sha256: hash.digest('hex'),
    crcMismatch: crc >>> 0 !== entry.crc32 >>> 0,
    imageProblems: [],
  };
  const jsonCaps = { maxDepth: caps.maxJsonDepth, maxContainers: caps.maxJsonContainers };
  if (keep) {
    const data = Buffer.concat(chunks);
    chunks.length = 0;
    if (kind === 'json') {
      const res = checkJsonFile(data, jsonCaps, facts.imageProblems);
      if (path.basename(name) === 'manifest.json' && res.value !== undefined) facts.json = res.value;
    } else if (kind === 'jsonl') {
      checkJsonLines(data, jsonCaps, facts.imageProblems);
    } else {
      facts.imageProblems.push(...checkReportHtml(data, ownScripts));
    }
  } else if (limit > 0) {
    const option = parsed ? 'maxJsonBytes' : 'maxHtmlBytes';
    facts.imageProblems.push(
      `too large to check for image bytes (${entry.uncompressedSize} bytes, over the cap of ${limit}: ${option})`,
    );
  }
  const notWhole = kind === 'png' ? pngProblem(head, tail, bytes) : null;
  if (notWhole) facts.imageProblems.push(notWhole);
  if (scanner?.finding) facts.imageProblems.push(scanner.finding);
  if (logCopy) {
    const problem = foreignLogProblem(logCopy);
    if (problem) facts.imageProblems.push(problem);
    removeBestEffort(logCopy);
  }
  return facts;
}

function checkLayout(
  tops: Set<string>,
  files: Map<string, FileFacts>,
  add: (p: string) => void,
  entries: number,
): void {
  if (tops.size === 0) {
    // Entries refused one by one (unsafe names, links, encryption) leave nothing to lay out: not "empty".
    add(
      entries === 0
        ? 'the zip is empty'
        : `no entry left to check: all ${entries} ${entries === 1 ? 'entry was' : 'entries were'} refused (above)`,
    );
    return;
  }
  if (tops.size > 1) {
    add(`expected one top folder, found ${tops.size}: ${[...tops].slice(0, 5).map(shownName).join(', ')}`);
    return;
  }
  const top = [...tops][0]!;
  // A session dir's own name (`<yyyyMMdd-HHmmss>-<sessionId>`, or a copy's such as `... (2)`).
  if (!isPortableDirName(top))
    add(
      `top folder ${shownName(top)} is not a session dir's name (<yyyyMMdd-HHmmss>-<sessionId>, or a copy's)`,
    );
  for (const name of files.keys()) {
    if (!name.startsWith(`${top}/`)) add(`${shownName(name)} is not inside the top folder`);
  }
  for (const req of REQUIRED_FILES) {
    if (!files.has(`${top}/${req}`)) add(`missing ${req}`);
  }
}

function checkManifest(top: string, files: Map<string, FileFacts>, add: (p: string) => void): void {
  const manifestName = `${top}/manifest.json`;
  const manifest = files.get(manifestName)?.json;
  if (manifest === undefined) return; // reported as missing or invalid already
  const listed = isRecord(manifest) && Array.isArray(manifest.files) ? manifest.files : null;
  if (!listed) {
    add('manifest.json has no files list');
    return;
  }
  const seen = new Set<string>();
  for (const item of listed) {
    if (!isRecord(item) || typeof item.path !== 'string') {
      add('manifest.json lists a file without a path');
      continue;
    }
    const full = `${top}/${item.path}`;
    seen.add(full);
    const facts = files.get(full);
    const shown = printable(item.path);
    if (!facts) {
      add(`manifest lists ${shown}, which is not in the zip`);
      continue;
    }
    if (item.bytes !== facts.bytes)
      add(`${shown}: size ${facts.bytes} but the manifest says ${printable(item.bytes)}`);
    if (item.sha256 !== facts.sha256) add(`${shown}: sha256 does not match the manifest (tampered?)`);
  }
  for (const name of files.keys()) {
    if (name !== manifestName && !seen.has(name))
      add(`${printable(name.slice(top.length + 1))} is not in the manifest`);
  }
}
