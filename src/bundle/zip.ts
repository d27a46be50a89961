/**
 * Writing a deterministic zip: fixed time and mode on every entry, entries in the order given, file data read
 * into a reused buffer (never held whole, no garbage per chunk), hashed on the way through. Each local header is completed
 * in place once its entry's CRC-32 and sizes are known, so the zip has no data descriptors; zip64 records are
 * added when offsets or the entry count outgrow the classic ones.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { openFd, readAt } from '../util/fd-io.js';

/** Where an entry's bytes come from. */
export type ZipSource =
  | { buffer: Buffer }
  | { file: string; size: number }
  /** Made while it is zipped (report.html): a fresh iterable of chunks each time it is asked for. */
  | { stream: () => AsyncIterable<Buffer> | Iterable<Buffer> }
  /** Nothing after all (an entry that could not be made, such as run.gif): no entry is written. */
  | { none: true };

/** One file of the zip. */
export interface ZipEntry {
  /** Path inside the zip (forward slashes). */
  name: string;
  /** Known now, or later (awaited at the entry's turn; a file is deflated ahead once it is known). */
  source: ZipSource | Promise<ZipSource>;
  /** Deflate (text) or store (already-compressed images). */
  compress: boolean;
  /** zlib level when compressed (default 6). */
  level?: number;
  /**
   * Keep this many of the entry's first and last bytes (an image's signature and end), returned by writeZip
   * in `ends`: what the caller checks the file by, read on the way like its sha256.
   */
  keepEnds?: { head: number; tail: number };
}

/** An entry's first and last bytes, as `keepEnds` asked. */
export interface EntryEnds {
  head: Buffer;
  tail: Buffer;
}

/** The last entry, built once every other entry's hash is known (the manifest). */
export interface FinalEntry {
  name: string;
  build(hashes: ReadonlyMap<string, { bytes: number; sha256: string }>): Buffer | Promise<Buffer>;
}

export interface ZipWriteOptions {
  /** The time written for every entry. */
  mtime: Date;
  /** Called as each entry is in the zip. */
  onEntry?: (name: string) => void;
}

/** An entry's size and sha256, for the manifest. */
export interface EntryHash {
  bytes: number;
  sha256: string;
}

/** Size of the read buffer, reused for every file read. */
const CHUNK = 1024 * 1024;
/** Bytes a deflater takes in before the next chunk waits for it (a page part is about 64 KiB). */
const DEFLATE_AHEAD = 256 * 1024;
/** Writes up to this size (headers, small entries, deflate output) are gathered into one buffer of STAGE. */
const SMALL = 64 * 1024;
const STAGE = 1024 * 1024;
/** Regular file, rw-r--r--: fixed so the bytes do not depend on the umask or the source files' modes. */
const FILE_MODE = 0o100644;
/** Made by UNIX (3), spec version 4.5 (zip64); needed to extract: 2.0, or 4.5 when an entry uses zip64. */
const MADE_BY = (3 << 8) | 45;
const NEEDED = 20;
const NEEDED_ZIP64 = 45;
/** General purpose flag: names are UTF-8. */
const UTF8_NAMES = 0x0800;
const MAX_32 = 0xffffffff;
const MAX_16 = 0xffff;

/** One entry as the central directory lists it. */
interface Written {
  name: Buffer;
  method: number;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

/** Write `entries` then `final` to `outFile` (created, never replaced); resolves with its size and hashes. */
export async function writeZip(
  outFile: string,
  entries: readonly ZipEntry[],
  final: FinalEntry,
  options: ZipWriteOptions,
): Promise<{ bytes: number; hashes: Map<string, EntryHash>; ends: Map<string, EntryEnds> }> {
  const out = await ZipOutput.create(outFile, options);
  const early = deflateEarly(entries);
  try {
    for (const entry of entries) {
      const made = early.get(entry);
      await out.entry(entry, made ? await made : null);
    }
    const hashes = out.hashes();
    const manifest = await final.build(hashes);
    await out.entry({ name: final.name, source: { buffer: manifest }, compress: true }, null);
    const bytes = await out.finish();
    return { bytes, hashes, ends: out.ends };
  } finally {
    // Deflations still running read files their owner removes next: let them end first.
    await Promise.allSettled(early.values());
    await out.close();
  }
}

/** A file deflated ahead of its turn: its compressed bytes and what its headers and the manifest need. */
interface Deflated {
  crc: number;
  size: number;
  sha256: string;
  chunks: Buffer[];
  compressed: number;
}

/** Deflated files read ahead, at most this much of them in all (their compressed bytes wait in memory). */
const EARLY_DEFLATE_BYTES = 64 * 1024 * 1024;

/**
 * Start deflating the larger compressed files (the log snapshot, tool-calls.jsonl) at once: zlib works on
 * them in the thread pool while the entries before them (the images) are written, instead of the zip
 * waiting on zlib when their turn comes.
 */
function deflateEarly(entries: readonly ZipEntry[]): Map<ZipEntry, Promise<Deflated | null>> {
  const early = new Map<ZipEntry, Promise<Deflated | null>>();
  let budget = EARLY_DEFLATE_BYTES;
  for (const entry of entries) {
    if (!entry.compress) continue;
    const made = Promise.resolve(entry.source).then((source) => {
      if (!('file' in source)) return null;
      const { file, size } = source;
      if (size < SMALL || size > budget) return null;
      budget -= size;
      return deflateFile(file, size, entry.level ?? 6);
    });
    made.catch(() => undefined); // awaited at its turn, or settled in writeZip's finally
    early.set(entry, made);
  }
  return early;
}

/** Deflate `size` bytes of `file` into memory, with their CRC-32 and sha256; a file of another size fails. */
async function deflateFile(file: string, size: number, level: number): Promise<Deflated> {
  const chunks: Buffer[] = [];
  const hash = createHash('sha256');
  const data = new DataSink({ write: async (chunk) => void chunks.push(chunk) }, hash, level);
  await readFileChunks(file, size, Buffer.allocUnsafeSlow(Math.min(CHUNK, size + 1)), data);
  return { ...(await data.end()), sha256: hash.digest('hex'), chunks };
}

/**
 * Feed `size` bytes of `file` to `data` through `buffer` (each chunk taken in before the next read); a file
 * of another size fails with its name. A read that comes back short has met the file's end, so a file read
 * whole in one read (an image) needs no second read to see it did not grow; the file is closed without a wait
 * (a plain close of a file only read). Each wait is a turn of the event loop, which the zip gets only between
 * the page's rows.
 */
async function readFileChunks(file: string, size: number, buffer: Buffer, data: DataSink): Promise<void> {
  const fd = await openFd(file, 'r');
  try {
    let at = 0;
    for (;;) {
      // One byte past what is left: a file that grew is caught without reading all of it.
      const wanted = Math.min(buffer.length, size - at + 1);
      const bytesRead = await readAt(fd, buffer, wanted, at);
      if (bytesRead === 0) break;
      at += bytesRead;
      if (at > size) break;
      await data.add(buffer.subarray(0, bytesRead), true);
      if (bytesRead < wanted && at === size) break;
    }
    if (at !== size)
      throw new Error(`${file} changed while it was zipped: ${size} bytes expected, ${at} read`);
  } finally {
    fs.closeSync(fd);
  }
}

/** The zip file being written: a position, the stage, the entries so far and their sums. */
class ZipOutput implements ByteSink {
  private position = 0;
  private readonly written: Written[] = [];
  /** Each entry's size and sha256, in zip order. */
  private readonly sums = new Map<string, EntryHash>();
  /** The first and last bytes of the entries that asked for them (`keepEnds`). */
  readonly ends = new Map<string, EntryEnds>();
  /** The read buffer, reused for every file. */
  private readonly buffer = Buffer.allocUnsafeSlow(CHUNK);
  /** Small writes not yet in the file: bytes `stageStart ..` of the zip. */
  private readonly stage = Buffer.allocUnsafeSlow(STAGE);
  private stageStart = 0;
  private stageLength = 0;
  /**
   * The last flush of the stage, still being written: a flush is a copy at its own offset, so the zip goes on
   * without waiting for it (a turn of the event loop saved per image, whose header is flushed before its data).
   */
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly handle: fs.promises.FileHandle,
    private readonly time: { date: number; time: number },
    private readonly onEntry: ((name: string) => void) | undefined,
  ) {}

  static async create(file: string, options: ZipWriteOptions): Promise<ZipOutput> {
    const handle = await fs.promises.open(file, 'wx');
    return new ZipOutput(handle, dosDateTime(options.mtime), options.onEntry);
  }

  /** Write one entry: header, data (or its data deflated ahead), header completed. */
  async entry(entry: ZipEntry, made: Deflated | null): Promise<void> {
    const name = Buffer.from(entry.name, 'utf8');
    if (name.length > MAX_16) throw new Error(`zip entry name too long: ${entry.name.slice(0, 80)}...`);
    const method = entry.compress ? 8 : 0;
    const source = await entry.source;
    if ('none' in source) return;
    const offset = this.position;
    await this.write(this.localHeader(name, method));
    const hash = createHash('sha256');
    let sums: { crc: number; size: number; compressed: number };
    if (made) {
      for (const chunk of made.chunks) await this.write(chunk);
      sums = made;
    } else {
      const ends = entry.keepEnds ? new EndsKept(entry.keepEnds.head, entry.keepEnds.tail) : null;
      const data = new DataSink(this, hash, entry.compress ? (entry.level ?? 6) : null, ends);
      if ('buffer' in source) await data.add(source.buffer);
      else if ('stream' in source) for await (const chunk of source.stream()) await data.add(chunk);
      else await readFileChunks(source.file, source.size, this.buffer, data);
      sums = await data.end();
      if (ends) this.ends.set(entry.name, { head: ends.head, tail: ends.tail });
    }
    const { crc, size, compressed } = sums;
    refuseHuge(entry.name, Math.max(size, compressed));
    const sizes = Buffer.alloc(12);
    sizes.writeUInt32LE(crc, 0);
    sizes.writeUInt32LE(compressed, 4);
    sizes.writeUInt32LE(size, 8);
    await this.patch(sizes, offset + 14);
    this.written.push({ name, method, crc, compressed, size, offset });
    this.sums.set(entry.name, { bytes: size, sha256: made ? made.sha256 : hash.digest('hex') });
    this.onEntry?.(entry.name);
  }

  /** Every entry's size and sha256 so far, in zip order. */
  hashes(): Map<string, EntryHash> {
    return new Map(this.sums);
  }

  /** Append bytes at the end; small ones are copied into the stage (resolved once the caller may reuse them). */
  write(data: Buffer): Promise<void> {
    const at = this.position;
    this.position += data.length;
    if (data.length <= SMALL) {
      // The stage holds one contiguous run: bytes after a large write or a copied file start a new one.
      const contiguous = this.stageStart + this.stageLength === at;
      const full = this.stageLength + data.length > STAGE;
      // The flush before this one is waited for: one copy of the stage in flight at most.
      const before = !contiguous || full ? this.flushStage() : Promise.resolve();
      if (this.stageLength === 0) this.stageStart = at;
      data.copy(this.stage, this.stageLength);
      this.stageLength += data.length;
      return before;
    }
    return writeAll(this.handle, data, at);
  }

  /** Overwrite bytes written earlier at `at` (a header completed): in the stage while they are there. */
  private async patch(data: Buffer, at: number): Promise<void> {
    const from = at - this.stageStart;
    if (this.stageLength > 0 && from >= 0 && from + data.length <= this.stageLength) {
      data.copy(this.stage, from);
      return;
    }
    await this.flushing; // those bytes may be in the flush still being written: patch them after it
    await writeAll(this.handle, data, at);
  }

  /**
   * Start writing the stage's bytes out (a copy: the stage is refilled at once) and empty it; resolves when
   * the flush before it is written.
   */
  private flushStage(): Promise<void> {
    if (this.stageLength === 0) return Promise.resolve();
    const bytes = Buffer.from(this.stage.subarray(0, this.stageLength));
    const at = this.stageStart;
    this.stageLength = 0;
    const before = this.flushing;
    this.flushing = writeAll(this.handle, bytes, at);
    this.flushing.catch(() => undefined); // awaited by the next flush, a patch, finish() or close()
    return before;
  }

  /** The central directory and end records, once every entry is in; returns the zip's size. */
  async finish(): Promise<number> {
    await this.flushStage();
    const start = this.position;
    for (const w of this.written) await this.write(this.centralRecord(w));
    const size = this.position - start;
    const count = this.written.length;
    if (count >= MAX_16 || start >= MAX_32 || size >= MAX_32)
      await this.write(zip64End(count, size, start, this.position));
    await this.write(classicEnd(count, size, start));
    await this.flushStage();
    await this.flushing;
    return this.position;
  }

  /** Close the file. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.flushing.catch(() => undefined); // a failed zip: its error is the one reported
    await this.handle.close();
  }

  private localHeader(name: Buffer, method: number): Buffer {
    const h = Buffer.alloc(30 + name.length);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(NEEDED, 4);
    h.writeUInt16LE(UTF8_NAMES, 6);
    h.writeUInt16LE(method, 8);
    h.writeUInt16LE(this.time.time, 10);
    h.writeUInt16LE(this.time.date, 12);
    // CRC-32 and sizes (14..25) are written in place once known; no extra field.
    h.writeUInt16LE(name.length, 26);
    name.copy(h, 30);
    return h;
  }

  private centralRecord(w: Written): Buffer {
    const zip64 = w.offset >= MAX_32;
    const extra = zip64 ? 12 : 0;
    const r = Buffer.alloc(46 + w.name.length + extra);
    r.writeUInt32LE(0x02014b50, 0);
    r.writeUInt16LE(MADE_BY, 4);
    r.writeUInt16LE(zip64 ? NEEDED_ZIP64 : NEEDED, 6);
    r.writeUInt16LE(UTF8_NAMES, 8);
    r.writeUInt16LE(w.method, 10);
    r.writeUInt16LE(this.time.time, 12);
    r.writeUInt16LE(this.time.date, 14);
    r.writeUInt32LE(w.crc, 16);
    r.writeUInt32LE(w.compressed, 20);
    r.writeUInt32LE(w.size, 24);
    r.writeUInt16LE(w.name.length, 28);
    r.writeUInt16LE(extra, 30);
    // comment length, disk number, internal attributes: 0
    r.writeUInt32LE((FILE_MODE << 16) >>> 0, 38);
    r.writeUInt32LE(zip64 ? MAX_32 : w.offset, 42);
    w.name.copy(r, 46);
    if (zip64) {
      const at = 46 + w.name.length;
      r.writeUInt16LE(0x0001, at);
      r.writeUInt16LE(8, at + 2);
      r.writeBigUInt64LE(BigInt(w.offset), at + 4);
    }
    return r;
  }
}

/** Where an entry's (deflated or stored) bytes go: the zip, or memory for a file deflated ahead. */
interface ByteSink {
  /** Append bytes; resolved once the caller may reuse them. */
  write(data: Buffer): Promise<void>;
}

/** An entry's data on its way into the zip: CRC-32 and sha256 of the bytes, deflated or stored. */
class DataSink {
  private crc = 0;
  private size = 0;
  private compressed = 0;
  private readonly deflate: zlib.DeflateRaw | null;
  /** Output of the deflater written so far (in order, one after another). */
  private flushed: Promise<void> = Promise.resolve();
  private failure: Error | null = null;

  constructor(
    private readonly out: ByteSink,
    private readonly hash: Hash,
    level: number | null,
    private readonly ends: EndsKept | null = null,
  ) {
    // Room for page parts ahead of zlib, so the next part is made while zlib works on this one (zlib streams
    // take the stream options too; their type does not list them).
    const options = { level, writableHighWaterMark: DEFLATE_AHEAD } as zlib.ZlibOptions;
    this.deflate = level === null ? null : zlib.createDeflateRaw(options);
    this.deflate?.on('data', (chunk: Buffer) => {
      this.compressed += chunk.length;
      this.flushed = this.flushed.then(() => this.out.write(chunk));
      this.flushed.catch(() => undefined); // awaited by end()
    });
    this.deflate?.on('error', (err: Error) => {
      this.failure = err;
    });
  }

  /** Take `chunk` in; `reused`: it lies in a read buffer, so resolve only once it has been consumed. */
  async add(chunk: Buffer, reused = false): Promise<void> {
    if (chunk.length === 0) return;
    this.crc = zlib.crc32(chunk, this.crc);
    this.hash.update(chunk);
    this.ends?.add(chunk);
    this.size += chunk.length;
    if (!this.deflate) {
      this.compressed += chunk.length;
      await this.out.write(chunk);
      return;
    }
    const deflate = this.deflate;
    if (reused) {
      // Resolved once zlib has consumed the chunk, so its buffer may be read into again.
      await new Promise<void>((resolve, reject) =>
        deflate.write(chunk, (err) => (err ? reject(err) : resolve())),
      );
    } else if (!deflate.write(chunk)) {
      // A chunk of its own (a rendered page part): zlib works on it while the next one is made, up to its buffer.
      await new Promise<void>((resolve) => deflate.once('drain', resolve));
    }
    if (this.failure) throw this.failure;
  }

  async end(): Promise<{ crc: number; size: number; compressed: number }> {
    if (this.deflate) {
      const deflate = this.deflate;
      await new Promise<void>((resolve, reject) => {
        deflate.once('end', resolve);
        deflate.once('error', reject);
        deflate.end();
        deflate.resume();
      });
      await this.flushed;
    }
    if (this.failure) throw this.failure;
    return { crc: this.crc >>> 0, size: this.size, compressed: this.compressed };
  }
}

/** The first `headBytes` and last `tailBytes` bytes of a stream, copied (its chunks lie in a reused buffer). */
class EndsKept {
  head = Buffer.alloc(0);
  tail = Buffer.alloc(0);

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  add(chunk: Buffer): void {
    if (this.head.length < this.headBytes)
      this.head = Buffer.concat([this.head, chunk.subarray(0, this.headBytes - this.head.length)]);
    if (chunk.length >= this.tailBytes)
      this.tail = Buffer.from(chunk.subarray(chunk.length - this.tailBytes));
    else this.tail = Buffer.concat([this.tail, chunk]).subarray(-this.tailBytes);
  }
}

/** A zip entry of 4 GiB or more needs zip64 sizes, which this writer does not write: refuse it by name. */
function refuseHuge(name: string, bytes: number): void {
  if (bytes >= MAX_32) throw new Error(`${name} is ${bytes} bytes: files of 4 GiB or more cannot be bundled`);
}

async function writeAll(handle: fs.promises.FileHandle, data: Buffer, at: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, at + done);
    done += bytesWritten;
  }
}

/** The end of central directory record (its counts and offsets at their 16/32-bit maximum when zip64). */
function classicEnd(count: number, size: number, start: number): Buffer {
  const e = Buffer.alloc(22);
  e.writeUInt32LE(0x06054b50, 0);
  e.writeUInt16LE(Math.min(count, MAX_16), 8);
  e.writeUInt16LE(Math.min(count, MAX_16), 10);
  e.writeUInt32LE(Math.min(size, MAX_32), 12);
  e.writeUInt32LE(Math.min(start, MAX_32), 16);
  return e;
}

/** The zip64 end of central directory record at `at`, and its locator. */
function zip64End(count: number, size: number, start: number, at: number): Buffer {
  const e = Buffer.alloc(56 + 20);
  e.writeUInt32LE(0x06064b50, 0);
  e.writeBigUInt64LE(44n, 4);
  e.writeUInt16LE(MADE_BY, 12);
  e.writeUInt16LE(NEEDED_ZIP64, 14);
  e.writeBigUInt64LE(BigInt(count), 24);
  e.writeBigUInt64LE(BigInt(count), 32);
  e.writeBigUInt64LE(BigInt(size), 40);
  e.writeBigUInt64LE(BigInt(start), 48);
  e.writeUInt32LE(0x07064b50, 56);
  e.writeBigUInt64LE(BigInt(at), 64);
  e.writeUInt32LE(1, 72);
  return e;
}

/**
 * DOS date and time fields holding `date`'s UTC wall-clock time, so the bytes are the same in every time zone
 * (no extended timestamp field is written). Dates DOS cannot hold become 1980-01-01 00:00.
 */
export function dosDateTime(date: Date): { date: number; time: number } {
  const y = date.getUTCFullYear();
  if (Number.isNaN(y) || y < 1980 || y > 2107) return { date: (1 << 5) | 1, time: 0 };
  return {
    date: ((y - 1980) << 9) | ((date.getUTCMonth() + 1) << 5) | date.getUTCDate(),
    time: (date.getUTCHours() << 11) | (date.getUTCMinutes() << 5) | (date.getUTCSeconds() >> 1),
  };
}

/** Hex sha256 of a buffer. */
export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
