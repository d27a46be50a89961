/**
 * Writing a deterministic zip with yazl: fixed mtime and mode on every entry, entries in the order given,
 * file data streamed (never held in memory) and hashed on the way through.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';

/** Where an entry's bytes come from. */
export type ZipSource =
  | { buffer: Buffer }
  | { file: string; size: number }
  /** Made while it is zipped (report.html): a fresh iterable of chunks each time it is asked for. */
  | { stream: () => AsyncIterable<Buffer> | Iterable<Buffer> };

/** One file of the zip. */
export interface ZipEntry {
  /** Path inside the zip (forward slashes). */
  name: string;
  source: ZipSource;
  /** Deflate (text) or store (already-compressed images). */
  compress: boolean;
  /** zlib level when compressed (default 6). */
  level?: number;
}

/** The last entry, built once every other entry's hash is known (the manifest). */
export interface FinalEntry {
  name: string;
  build(hashes: ReadonlyMap<string, { bytes: number; sha256: string }>): Buffer;
}

export interface ZipWriteOptions {
  /** The time written for every entry. */
  mtime: Date;
  /** Called as each entry's data has been read. */
  onEntry?: (name: string) => void;
}

/** Read and write in 1 MiB chunks: fewer round trips to the thread pool than the 64 KiB default. */
const READ_CHUNK = 1024 * 1024;
/**
 * Deflated files are read 128 KiB at a time: deflate is slower than the disk, and each read is a fresh buffer
 * that lives until a GC, so 1 MiB reads piled up 20-30 MB of them (peak memory) for no speed.
 */
const DEFLATE_READ_CHUNK = 128 * 1024;

/** Regular file, rw-r--r--: fixed so the bytes do not depend on the umask or the source files' modes. */
const FILE_MODE = 0o100644;

/** Streams a file through sha256 on its way into the zip. */
class HashingPassThrough extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;
  digest: string | null = null;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.digest = this.hash.digest('hex');
    done();
  }
}

/**
 * The local wall-clock Date whose fields equal `date`'s UTC fields: yazl writes DOS times from local fields,
 * so this makes the bytes the same in every time zone (the Info-ZIP UT field, which is absolute, is off).
 */
export function dosStableDate(date: Date): Date {
  const d = Number.isNaN(date.getTime()) ? new Date(Date.UTC(1980, 0, 1)) : date;
  return new Date(
    d.getUTCFullYear(),
    d.getUTCMonth(),
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
  );
}

type Crc32Module = { unsigned: (data: Buffer | string, previous?: number | Buffer) => number };
let crcPatched = false;

/**
 * yazl computes CRC-32 with buffer-crc32, a byte loop in JS (about a third of a bundle's CPU time); point it at
 * zlib.crc32 (native, Node >= 20.15) when both agree on test vectors. Same results, so the zip is unchanged.
 */
function useNativeCrc32(): void {
  if (crcPatched) return;
  crcPatched = true;
  const native = (zlib as { crc32?: (data: Buffer | string, value?: number) => number }).crc32;
  if (typeof native !== 'function') return;
  try {
    const fromYazl = createRequire(createRequire(import.meta.url).resolve('yazl'));
    const mod = fromYazl('buffer-crc32') as Crc32Module;
    const js = mod.unsigned;
    const sample = Buffer.from('mcec-recorder crc32 check \u00e9\u0000\u00ff', 'utf8');
    const agree = [0, 1, 0xdeadbeef].every((prev) => js(sample, prev) === native(sample, prev) >>> 0);
    if (!agree) return;
    mod.unsigned = (data, previous) => {
      const prev = Buffer.isBuffer(previous) ? previous.readUInt32BE(0) : (previous ?? 0);
      return native(data, prev >>> 0) >>> 0;
    };
  } catch {
    // keep yazl's own CRC-32
  }
}

/** Write `entries` then `final` to `outFile`; resolves with the zip's size and every entry's size and hash. */
export async function writeZip(
  outFile: string,
  entries: readonly ZipEntry[],
  final: FinalEntry,
  options: ZipWriteOptions,
): Promise<{ bytes: number; hashes: Map<string, { bytes: number; sha256: string }> }> {
  useNativeCrc32();
  const { ZipFile } = await import('yazl');
  const zip = new ZipFile();
  const hashes = new Map<string, { bytes: number; sha256: string }>();
  const mtime = dosStableDate(options.mtime);
  const base = { mtime, mode: FILE_MODE, forceDosTimestamp: true };

  const out = fs.createWriteStream(outFile, { flags: 'wx', highWaterMark: READ_CHUNK });
  let fail: (err: Error) => void = () => {};
  const finished = new Promise<void>((resolve, reject) => {
    let settled = false;
    fail = (err: Error) => {
      if (settled) return;
      settled = true;
      // An input that cannot be read stops the zip: yazl would wait for it forever.
      zip.outputStream.unpipe(out);
      out.destroy();
      reject(err);
    };
    out.on('close', () => {
      if (!settled) {
        settled = true;
        resolve();
      }
    });
    out.on('error', fail);
    zip.on('error', fail);
  });
  zip.outputStream.on('error', (err: Error) => fail(err));
  zip.outputStream.pipe(out);

  for (const entry of entries) {
    const opts = entry.compress
      ? { ...base, compress: true, compressionLevel: entry.level ?? 6 }
      : { ...base, compress: false };
    if ('buffer' in entry.source) {
      const data = entry.source.buffer;
      hashes.set(entry.name, { bytes: data.length, sha256: sha256(data) });
      zip.addBuffer(data, entry.name, opts);
      options.onEntry?.(entry.name);
      continue;
    }
    const name = entry.name;
    if ('stream' in entry.source) {
      // Made as yazl asks for it, once the entries before it are written; hashed on the way like a file.
      const chunks = entry.source.stream;
      zip.addReadStreamLazy(name, opts, (cb) => {
        const input = Readable.from(chunks(), { objectMode: false });
        input.on('error', fail);
        cb(null, input.pipe(hashing(name, hashes, fail, options.onEntry)));
      });
      continue;
    }
    const { file, size } = entry.source;
    zip.addReadStreamLazy(name, { ...opts, size }, (cb) => {
      // `end` sizes each read to what is left: a read buffer larger than the rest of the file would be copied.
      const bounds = size > 0 ? { end: size - 1 } : {};
      const highWaterMark = entry.compress ? DEFLATE_READ_CHUNK : READ_CHUNK;
      const input = fs.createReadStream(file, { highWaterMark, ...bounds });
      input.on('error', fail);
      cb(null, input.pipe(hashing(name, hashes, fail, options.onEntry)));
    });
  }
  // yazl asks for this stream only after every earlier entry was fully read, so all hashes are known.
  zip.addReadStreamLazy(final.name, { ...base, compress: true }, (cb) => {
    const missing = entries.filter((e) => !hashes.has(e.name)).map((e) => e.name);
    if (missing.length > 0) {
      cb(new Error(`internal: ${final.name} built before ${missing.join(', ')} was read`), Readable.from([]));
      return;
    }
    cb(null, Readable.from([final.build(hashes)]));
  });
  zip.end();
  await finished;
  return { bytes: fs.statSync(outFile).size, hashes };
}

/** A pass-through that records the entry's size and sha256 in `hashes` once its data has gone through. */
function hashing(
  name: string,
  hashes: Map<string, { bytes: number; sha256: string }>,
  fail: (err: Error) => void,
  onEntry: ((name: string) => void) | undefined,
): HashingPassThrough {
  const hasher = new HashingPassThrough();
  hasher.on('finish', () => onEntry?.(name));
  hasher.on('end', () => {
    if (hasher.digest) hashes.set(name, { bytes: hasher.bytes, sha256: hasher.digest });
  });
  hasher.on('error', fail);
  return hasher;
}

/** Hex sha256 of a buffer. */
export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
