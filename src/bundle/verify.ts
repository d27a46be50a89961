/**
 * Checking a bundle without extracting it: entry names, layout, every manifest hash and size, CRCs, and that
 * no JSON or text file carries image bytes.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Entry, ZipFile } from 'yauzl';
import { parseSessionDirName } from '../store/layout.js';
import { Base64RunScanner, leftoverImageBytes } from './scrub.js';

/** What verifyBundle found. */
export interface VerifyResult {
  ok: boolean;
  problems: string[];
  /** Entries in the zip (directories included). */
  entries: number;
}

/** Files every bundle has at the top of its folder. */
export const REQUIRED_FILES = [
  'failure-summary.md',
  'bug-report.md',
  'session.json',
  'tool-calls.jsonl',
  'environment.json',
  'manifest.json',
] as const;

/** In a text file, any base64 run this long is suspect even when it does not start like an image. */
const TEXT_PLAIN_RUN_LIMIT = 100_000;
/** JSON and JSONL files larger than this are scanned for base64 runs but not parsed. */
const MAX_PARSED_BYTES = 64 * 1024 * 1024;
/** Stop listing after this many problems (a hostile zip could have millions of entries). */
const MAX_PROBLEMS = 200;

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

/** Check a bundle zip; never extracts anything and never throws for a bad zip (it becomes a problem). */
export async function verifyBundle(zipPath: string): Promise<VerifyResult> {
  const problems: string[] = [];
  const add = (p: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(p);
    else if (problems.length === MAX_PROBLEMS) problems.push('... more problems not listed');
  };
  const yauzl = await import('yauzl');
  let zip: ZipFile;
  try {
    zip = await yauzl.openPromise(zipPath, {
      lazyEntries: true,
      decodeStrings: false,
      validateEntrySizes: true,
      autoClose: false,
    });
  } catch (err) {
    return { ok: false, problems: [`not a readable zip: ${(err as Error).message}`], entries: 0 };
  }
  let entries = 0;
  const files = new Map<string, FileFacts>();
  const names = new Set<string>();
  const tops = new Set<string>();
  try {
    for await (const entry of iterateEntries(zip)) {
      entries += 1;
      const name = decodeName(entry);
      const nameProblem = unsafeName(name);
      const shown = JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name);
      if (nameProblem) {
        add(`entry ${shown}: ${nameProblem}; refused`);
        continue;
      }
      const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
      const unixHost = entry.versionMadeBy >> 8 === 3 || entry.versionMadeBy >> 8 === 19;
      if (unixHost && mode === S_IFLNK) {
        add(`entry ${shown}: is a symbolic link; refused`);
        continue;
      }
      if (names.has(name)) {
        add(`entry ${shown}: appears more than once`);
        continue;
      }
      names.add(name);
      tops.add(name.split('/')[0]!);
      const isDir = name.endsWith('/') || (unixHost && mode === S_IFDIR);
      if (isDir) {
        if (entry.uncompressedSize !== 0) add(`entry ${shown}: a directory with data`);
        continue;
      }
      if (entry.isEncrypted()) {
        add(`entry ${shown}: encrypted`);
        continue;
      }
      try {
        files.set(name, await readFacts(zip, entry, name));
      } catch (err) {
        add(`entry ${shown}: cannot be read: ${(err as Error).message}`);
      }
    }
  } catch (err) {
    add(`zip structure: ${(err as Error).message}`);
  } finally {
    zip.close();
  }

  checkLayout(tops, files, add);
  const top = tops.size === 1 ? [...tops][0]! : null;
  if (top !== null) checkManifest(top, files, add);
  for (const [name, facts] of files) {
    if (facts.crcMismatch) add(`${name}: CRC-32 does not match the data`);
    for (const p of facts.imageProblems) add(`${name}: ${p}`);
  }
  return { ok: problems.length === 0, problems, entries };
}

interface FileFacts {
  bytes: number;
  sha256: string;
  crcMismatch: boolean;
  /** Parsed content of manifest.json (only that file is kept). */
  json?: unknown;
  imageProblems: string[];
}

async function* iterateEntries(zip: ZipFile): AsyncGenerator<Entry> {
  while (true) {
    const next = await new Promise<Entry | null>((resolve, reject) => {
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
    if (next === null) return;
    yield next;
  }
}

function decodeName(entry: Entry): string {
  const raw = entry.fileName as unknown as Buffer;
  // Bit 11: UTF-8 name. Otherwise CP437, which equals latin1 for the ASCII names a bundle has.
  return (entry.generalPurposeBitFlag & 0x800) !== 0 ? raw.toString('utf8') : raw.toString('latin1');
}

/** Why a name must not be extracted, or null when it is fine. */
export function unsafeName(name: string): string | null {
  if (name.length === 0) return 'empty name';
  if (name.includes('\0')) return 'NUL in the name';
  if (name.includes('\\')) return 'backslash in the name';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'absolute path';
  const parts = name.split('/');
  if (parts.includes('..')) return 'a ".." segment (path traversal)';
  if (parts.slice(0, -1).some((p) => p === '' || p === '.')) return 'an empty or "." segment';
  return null;
}

function kindOf(name: string): 'json' | 'jsonl' | 'text' | 'opaque' | 'binary' {
  const ext = path.extname(name).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.jsonl') return 'jsonl';
  if (ext === '.md' || ext === '.txt' || ext === '.csv' || ext === '.log') return 'text';
  // Images are images; report.html embeds thumbnails as data URIs by design.
  if (['.png', '.jpg', '.jpeg', '.gif', '.bmp', '.webp', '.html'].includes(ext)) return 'opaque';
  return 'binary';
}

async function readFacts(zip: ZipFile, entry: Entry, name: string): Promise<FileFacts> {
  const kind = kindOf(name);
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
  const keep = (kind === 'json' || kind === 'jsonl') && entry.uncompressedSize <= MAX_PARSED_BYTES;
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    hash.update(chunk);
    crc = zlib.crc32(chunk, crc);
    bytes += chunk.length;
    scanner?.feed(chunk);
    if (keep) chunks.push(chunk);
  }
  const facts: FileFacts = {
    bytes,
    sha256: hash.digest('hex'),
    crcMismatch: crc >>> 0 !== entry.crc32 >>> 0,
    imageProblems: [],
  };
  if (keep) {
    const text = Buffer.concat(chunks).toString('utf8');
    if (kind === 'json') {
      try {
        const value = JSON.parse(text);
        const n = leftoverImageBytes(value);
        if (n > 0) facts.imageProblems.push(`holds inline image bytes (${n} place${n === 1 ? '' : 's'})`);
        if (path.basename(name) === 'manifest.json') facts.json = value;
      } catch {
        facts.imageProblems.push('is not valid JSON');
      }
    } else {
      checkJsonLines(text, facts.imageProblems);
    }
  } else if (kind === 'json' || kind === 'jsonl') {
    facts.imageProblems.push('too large to check for image bytes');
  }
  if (scanner?.finding) facts.imageProblems.push(scanner.finding);
  return facts;
}

function checkJsonLines(text: string, problems: string[]): void {
  let start = 0;
  let lineNo = 0;
  let images = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    lineNo += 1;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.trim() === '') continue;
    try {
      const n = leftoverImageBytes(JSON.parse(line));
      if (n > 0 && images++ < 5) problems.push(`line ${lineNo} holds inline image bytes`);
    } catch {
      if (problems.length < 5) problems.push(`line ${lineNo} is not valid JSON`);
    }
  }
}

function checkLayout(tops: Set<string>, files: Map<string, FileFacts>, add: (p: string) => void): void {
  if (tops.size === 0) {
    add('the zip is empty');
    return;
  }
  if (tops.size > 1) {
    add(`expected one top folder, found ${tops.size}: ${[...tops].slice(0, 5).join(', ')}`);
    return;
  }
  const top = [...tops][0]!;
  if (!parseSessionDirName(top)) add(`top folder "${top}" is not named <yyyyMMdd-HHmmss>-<sessionId>`);
  for (const name of files.keys()) {
    if (!name.startsWith(`${top}/`)) add(`"${name}" is not inside the top folder`);
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
    if (!facts) {
      add(`manifest lists ${item.path}, which is not in the zip`);
      continue;
    }
    if (item.bytes !== facts.bytes)
      add(`${item.path}: size ${facts.bytes} but the manifest says ${item.bytes}`);
    if (item.sha256 !== facts.sha256) add(`${item.path}: sha256 does not match the manifest (tampered?)`);
  }
  for (const name of files.keys()) {
    if (name !== manifestName && !seen.has(name)) add(`${name.slice(top.length + 1)} is not in the manifest`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
