/** Helpers for the bundle suites: sessions recorded through the real recorder, zips read back, raw zips. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { Ajv2020 } from 'ajv/dist/2020.js';
import yauzl from 'yauzl';
import { findImageBytes, getAtPointer } from '../../src/contract/image-bytes.js';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator } from '../../src/sim/index.js';

export { tempDir } from '../support/temp.js';

/** sha256 hex. */
export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The secrets the recorded scenario types; none may reach a bundle's non-image file. */
export const SECRETS = ['S3cr3t-P4ssw0rd!', 'tok_9f8e7d6c5b4a3f2e1d0c'];

/** What recordMcecSession recorded. */
export interface RecordedSession {
  sessionsDir: string;
  dir: string;
  dirName: string;
  sessionId: string;
  /** sha256 -> bytes of every image the server sent inline (captures and the suspect partialResult). */
  images: Map<string, Buffer>;
}

/**
 * Record an MCEC-shaped session through the real recorder against the simulator: session-start, displays,
 * a capture, an ambiguous find then a recovered one, calls carrying secrets, a step, extra captures, and
 * last a capture of the all-black window (capture-blank with the suspect PNG): verdict FAIL.
 */
export async function recordMcecSession(
  sessionsDir: string,
  options: { extraCaptures?: number; scenario?: string; end?: boolean } = {},
): Promise<RecordedSession> {
  const sim = createSimulator({ seed: 7, sessionsRoot: path.join(sessionsDir, '..', 'server-artifacts') });
  const recorder = createRecorder({
    sessionsDir,
    scenario: options.scenario ?? 'save a file in Notepad',
    stderr: () => {},
  });
  const images = new Map<string, Buffer>();
  const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
    const out = await sim.callTool(tool, args);
    collectImages(structuredClone(out), images);
    return out;
  });
  const start = (await dispatch('session-start', {})) as { content: Array<{ text?: string }> };
  const sessionId = JSON.parse(start.content.at(-1)!.text!).result.sessionId as string;
  const s = { sessionId };
  await dispatch('displays', s);
  await dispatch('capture', { ...s, window: 'Untitled - Notepad' });
  await dispatch('find', { ...s, window: 'Save As', value: 'Save' });
  await dispatch('find', { ...s, window: 'Save As', by: 'automationid', value: '1' });
  await dispatch('send_command', { ...s, command: 'login', password: SECRETS[0], token: SECRETS[1] });
  recorder.step(sessionId, 'open the Save As dialog', 'passed');
  for (let i = 0; i < (options.extraCaptures ?? 0); i++) {
    // Screen regions of different sizes, so every capture is a distinct PNG.
    await dispatch('capture', { ...s, x: 40 * i, y: 20 * i, width: 320 + 16 * i, height: 240 });
    await dispatch('query', { ...s, window: 'Save As' });
  }
  recorder.step(sessionId, 'capture the player', 'failed', 'the frame came back black');
  await dispatch('capture', { ...s, window: 'Video Player' });
  if (options.end !== false) await recorder.end(sessionId);
  await recorder.close();
  const dirName = fs.readdirSync(sessionsDir).find((d) => d.endsWith(`-${sessionId}`));
  if (!dirName) throw new Error('recorded session dir not found');
  return { sessionsDir, dir: path.join(sessionsDir, dirName), dirName, sessionId, images };
}

function collectImages(value: unknown, into: Map<string, Buffer>): void {
  for (const loc of findImageBytes(value)) {
    const text = getAtPointer(value, loc.path);
    if (typeof text !== 'string') continue;
    const comma = text.startsWith('data:') ? text.indexOf(',') + 1 : 0;
    const bytes = Buffer.from(text.slice(comma), 'base64');
    into.set(sha256(bytes), bytes);
  }
}

/** One entry of a zip as read back by yauzl. */
export interface ZipEntryRead {
  name: string;
  data: Buffer;
  compressionMethod: number;
  externalFileAttributes: number;
  lastModFileTime: number;
  lastModFileDate: number;
}

/** Every entry of a zip, in zip order, read with yauzl. */
export async function readZip(file: string): Promise<ZipEntryRead[]> {
  const zip = await yauzl.openPromise(file, { lazyEntries: true, autoClose: false });
  const out: ZipEntryRead[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      zip.on('entry', (entry: yauzl.Entry) => {
        zip
          .openReadStreamPromise(entry)
          .then(async (stream) => {
            const chunks: Buffer[] = [];
            for await (const c of stream) chunks.push(c as Buffer);
            out.push({
              name: entry.fileName,
              data: Buffer.concat(chunks),
              compressionMethod: entry.compressionMethod,
              externalFileAttributes: entry.externalFileAttributes,
              lastModFileTime: entry.lastModFileTime,
              lastModFileDate: entry.lastModFileDate,
            });
            zip.readEntry();
          })
          .catch(reject);
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return out;
}

/** `unzip -t` on a zip: its output, throwing when it reports an error. */
export function unzipTest(file: string): string {
  return execFileSync('unzip', ['-t', file], { encoding: 'utf8' });
}

/** An entry for rawZip: any name bytes, stored data, unix mode. */
export interface RawEntry {
  name: string | Buffer;
  data: Buffer;
  mode?: number;
  /** Override the CRC-32 written (to make a corrupt entry). */
  crc?: number;
  /** Override the uncompressed size written (to make an entry that lies about its size). */
  size?: number;
  /** false: the name is not marked UTF-8 (general purpose bit 11 clear), as old Windows zippers wrote. */
  utf8?: false;
}

/** What one entry's ZIP headers say: stored (0) or deflated (8), its CRC-32 and sizes. */
export interface ZipHeaderFields {
  name: Buffer;
  method: 0 | 8;
  crc: number;
  compressedSize: number;
  size: number;
}

/**
 * The fields both records carry in the same order from `at` (the central record has one more field before
 * them): flags (UTF-8 names), method, time 0, date 1980-01-01, CRC-32, sizes, the name's length.
 */
function writeSharedFields(buf: Buffer, at: number, f: ZipHeaderFields): void {
  buf.writeUInt16LE(0x800, at);
  buf.writeUInt16LE(f.method, at + 2);
  buf.writeUInt16LE(0x21, at + 6);
  buf.writeUInt32LE(f.crc, at + 8);
  buf.writeUInt32LE(f.compressedSize, at + 12);
  buf.writeUInt32LE(f.size, at + 16);
  buf.writeUInt16LE(f.name.length, at + 20);
}

/** A local file header (30 bytes; the name and the data follow it): UTF-8 name, DOS date 1980-01-01, no extras. */
export function localFileHeader(f: ZipHeaderFields): Buffer {
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  writeSharedFields(local, 6, f);
  return local;
}

/** A central directory record (46 bytes; the name follows it) made on Unix with `mode`, its local header at `offset`. */
export function centralDirectoryRecord(f: ZipHeaderFields, offset: number, mode = 0o100644): Buffer {
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE((3 << 8) | 20, 4);
  central.writeUInt16LE(20, 6);
  writeSharedFields(central, 8, f);
  central.writeUInt32LE((mode << 16) >>> 0, 38);
  central.writeUInt32LE(offset, 42);
  return central;
}

/** The end of central directory record (22 bytes) for `count` records of `size` bytes starting at `offset`. */
export function endOfCentralDirectory(count: number, size: number, offset: number): Buffer {
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(count & 0xffff, 8);
  end.writeUInt16LE(count & 0xffff, 10);
  end.writeUInt32LE(size, 12);
  end.writeUInt32LE(offset, 16);
  return end;
}

/**
 * A minimal stored zip written byte by byte, so tests can make entries that zip writers refuse to make
 * (`..` segments, absolute paths, backslashes, symlinks).
 */
export function rawZip(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name, 'utf8');
    const crc = e.crc ?? zlib.crc32(e.data) >>> 0;
    const fields: ZipHeaderFields = {
      name,
      method: 0,
      crc,
      compressedSize: e.data.length,
      size: e.size ?? e.data.length,
    };
    const local = localFileHeader(fields);
    const central = centralDirectoryRecord(fields, offset, e.mode);
    if (e.utf8 === false) {
      local.writeUInt16LE(0, 6);
      central.writeUInt16LE(0, 8);
    }
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += 30 + name.length + e.data.length;
  }
  const cd = Buffer.concat(centrals);
  return Buffer.concat([...locals, cd, endOfCentralDirectory(entries.length, cd.length, offset)]);
}

const SCHEMA_DIR = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'schema');

/** Validators for the bundle's files, compiled from schema/ with Ajv2020 (strict). */
export function bundleValidators(): Record<
  'session' | 'manifest' | 'line' | 'environment',
  (value: unknown) => string[]
> {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const load = (file: string) => {
    const fn = ajv.compile(JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, file), 'utf8')));
    return (value: unknown) =>
      fn(value) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
  };
  return {
    session: load('session.schema.json'),
    manifest: load('manifest.schema.json'),
    line: load('tool-call-line.schema.json'),
    environment: load('environment.schema.json'),
  };
}

/** Inline images in a parsed value, not counting the `<redacted base64>` marker. */
export function inlineImages(value: unknown): number {
  return findImageBytes(value).filter((l) => getAtPointer(value, l.path) !== '<redacted base64>').length;
}
