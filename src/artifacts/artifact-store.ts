import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type ImageFormat, sniffImageFormat } from '../contract/image-bytes.js';
import type { BlankCheck } from '../contract/types.js';
import { ARTIFACTS_DIR, artifactFileName } from '../paths/naming.js';
import { closeFd, writeAt } from '../util/fd-io.js';
import { loadSharp, type Sharp } from '../util/sharp.js';
import { computeBlankCheck } from './blank-check.js';
import {
  bareMimeType,
  decodeBase64Fast,
  EXTENSION,
  headerDimensions,
  notRasterExtension,
  readBmpHeader,
  truncationOf,
} from './image-file.js';
import { placeNewFile, tempFileIn } from './place-file.js';

/** What became of one image's bytes. */
export interface SavedImage {
  /** sha256 (hex) of the decoded bytes; '' when they could not be decoded. */
  sha256: string;
  /** Decoded length in bytes (0 when not decoded). */
  bytes: number;
  format?: ImageFormat;
  /**
   * Bytes in no format sniffed, whose declared MIME type names another (an SVG, an icon): written as they came,
   * under an extension from that type, with no width, height, thumbnail or blankCheck.
   */
  notRaster?: true;
  /** The declared MIME type of `notRaster` bytes. */
  mimeType?: string;
  width?: number;
  height?: number;
  /** Relative to the session dir: `artifacts/capture-<UTC yyyyMMdd-HHmmssfff>-<n>.<ext>` (`recording-` for GIFs of `record`). */
  path?: string;
  /** Why no file was written: bad base64, not an image, truncated, too many pixels, over budget, disk error. */
  error?: string;
  /** What kind of failure `error` is, for code that acts on it (the message is for people and may change). */
  failure?: SaveFailure;
  blankCheck?: BlankCheck;
  /** True when these bytes had been seen before in this session (no new file). */
  deduplicated: boolean;
}

/**
 * Why an image has no file: `invalid` bytes (not an image, truncated, a pixel bomb: no decode is worth trying),
 * `refused` by a rule (a host file's path or kind, a capture that could not be masked), over the session's
 * `budget`, a `disk` fault (may be transient: a later copy retries), or an unexpected `store` fault.
 */
export type SaveFailure = 'invalid' | 'refused' | 'budget' | 'disk' | 'store';

/** Whether a failure is the recorder's own (disk, store), worth a ledger note, rather than the image's. */
export function isStoreFault(failure: SaveFailure | undefined): boolean {
  return failure === 'disk' || failure === 'store';
}

export interface ArtifactStoreOptions {
  /** The session directory; files go to `<sessionDir>/artifacts/`. The store never creates sessionDir. */
  sessionDir: string;
  /** Bytes of image files this session may write; past it images are summarized without a file. */
  maxArtifactBytes: number;
  /** Clock for artifact names (tests). */
  now?: () => Date;
  /** Decompression-bomb guard: images declaring more pixels than this are refused (default 100 megapixels). */
  limitInputPixels?: number;
}

export interface SaveOptions {
  /** Compute blankCheck (a full decode) when none is known for these bytes. */
  blankCheck?: boolean;
  /** A blankCheck declared next to the bytes (the envelope's); remembered for later copies of the same bytes. */
  knownBlankCheck?: BlankCheck;
  /**
   * File name prefix of a new file (default `capture`; a `record` GIF is a `recording`; an image of a plain
   * MCP result `image-call<seq>`). Letters, digits and `-` only.
   */
  namePrefix?: string;
  /**
   * The MIME type declared next to the bytes (an image block's `mimeType`, a data: URI's). Bytes in no sniffed
   * format are still written when it names another format (`notRasterExtension`); else they are refused.
   */
  declaredMimeType?: string;
}

/** Default pixel limit: 100 megapixels (a 4K frame is 8.3). */
export const DEFAULT_LIMIT_INPUT_PIXELS = 100_000_000;

/** sharp once loaded: a header read then goes to the thread pool without waiting a turn. */
let sharpLoaded: Sharp | undefined;

/** The first save of a fingerprint. */
interface FirstCopy {
  saved: Promise<SavedImage>;
  /**
   * The latest copy of its bytes (proven equal), while something else keeps it in memory: weakly held, the
   * store never keeps an image's bytes alive.
   */
  bytes: WeakRef<Buffer>;
  /** Its sha256, once the save has settled. */
  sha256?: string;
}

/** No file: `error` says why to a person, `failure` to the code. */
export function failed(error: string, failure: SaveFailure): SavedImage {
  return { sha256: '', bytes: 0, error, failure, deduplicated: false };
}

/** A write that did not happen. */
type WriteFault = { error: string; failure: 'disk' };

function diskFault(what: unknown): WriteFault {
  return { error: `disk error: ${typeof what === 'string' ? what : errorText(what)}`, failure: 'disk' };
}

/**
 * Bytes per write call. Linux (6.x, ext4) gives a buffered write page-cache folios as large as the call; on a
 * VM whose host takes back free memory (free page reporting) the large ones come from memory the host must
 * fault in again. In the bench, after the figures before it, a 4K capture's write in 1 MiB calls all sent at
 * once took 19-20 ms (31-34 ms of CPU per save) where 256 KiB calls took 6 ms (BENCHMARKS.md, 2026-12-07).
 * One call for the whole capture (7.5 MB) was slower still (18-26 ms).
 */
const WRITE_CHUNK = 256 * 1024;
/**
 * Bytes hashed between two turns of the event loop while the pool writes (about 0.6 ms of sha256): the turns
 * keep this thread answering other work during a 4K capture's 4-5 ms of hashing; the write does not need them.
 */
const HASH_SLICE = 1024 * 1024;

/** sha256 (hex) of the bytes. */
function sha256Hex(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/** Length plus a hash of the first and last 4 KiB: equal bytes always give equal fingerprints. */
function fingerprintOf(buf: Buffer): string {
  const edge = 4096;
  const h = createHash('sha256').update(buf.subarray(0, edge));
  if (buf.length > edge) h.update(buf.subarray(Math.max(edge, buf.length - edge)));
  return `${buf.length}:${h.digest('base64')}`;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    // Keep the reason short and free of bytes: first line of the message only.
    const msg = err.message.split('\n', 1)[0]!.slice(0, 300);
    return code && !msg.startsWith(code) ? `${code}: ${msg}` : msg;
  }
  return String(err).slice(0, 300);
}

/** Writes image bytes once per distinct sha256 into `<sessionDir>/artifacts/`, within a byte budget. */
export class ArtifactStore {
  readonly sessionDir: string;
  readonly artifactsDir: string;
  readonly maxArtifactBytes: number;
  readonly limitInputPixels: number;
  private readonly now: () => Date;
  /** Saves by sha256 of the bytes, and by the cheap fingerprint that lets a new image be written at once. */
  private readonly known = new Map<string, Promise<SavedImage>>();
  private readonly byFingerprint = new Map<string, FirstCopy>();
  private readonly computing = new Map<string, Promise<BlankCheck | undefined>>();
  private counter = 0;
  private written = 0;
  private used = 0;
  private omittedImages = 0;
  private omittedBytes = 0;

  constructor(options: ArtifactStoreOptions) {
    this.sessionDir = options.sessionDir;
    this.artifactsDir = path.join(options.sessionDir, ARTIFACTS_DIR);
    this.maxArtifactBytes = options.maxArtifactBytes;
    this.limitInputPixels = options.limitInputPixels ?? DEFAULT_LIMIT_INPUT_PIXELS;
    this.now = options.now ?? (() => new Date());
  }

  /** Bytes written so far (reserved while a write is in flight). */
  get usedBytes(): number {
    return this.used;
  }

  /** Images (and their bytes) summarized without a file because the budget was spent. */
  get omitted(): { images: number; bytes: number } {
    return { images: this.omittedImages, bytes: this.omittedBytes };
  }

  /** Number of files written. */
  get filesWritten(): number {
    return this.written;
  }

  /** Absolute path of an artifact path relative to the session dir. */
  absolutePath(relative: string): string {
    return path.join(this.sessionDir, relative);
  }

  /** Save image bytes (a Buffer or base64 text). Never throws: problems come back as `error`. */
  async save(data: Buffer | string, options: SaveOptions = {}): Promise<SavedImage> {
    try {
      let buf: Buffer;
      if (typeof data === 'string') {
        const decoded = decodeBase64Fast(data);
        if (!Buffer.isBuffer(decoded)) return failed(`bad base64: ${decoded.error}`, 'invalid');
        buf = decoded;
      } else if (Buffer.isBuffer(data)) {
        buf = data;
      } else {
        return failed('not image bytes (neither a Buffer nor a string)', 'invalid');
      }
      if (buf.length === 0) return failed('empty image data', 'invalid');
      return await this.saveBuffer(buf, options);
    } catch (err) {
      return failed(`artifact store failure: ${errorText(err)}`, 'store');
    }
  }

  /**
   * The blankCheck known for these bytes (declared with an earlier copy), else computed once from `image`
   * and remembered. Undefined when the bytes cannot be decoded.
   */
  async ensureBlankCheck(sha256: string, image: Buffer): Promise<BlankCheck | undefined> {
    const pending = this.known.get(sha256);
    const record = pending ? await pending : undefined;
    if (record?.blankCheck) return record.blankCheck;
    // One decode per distinct image even when several copies ask at once.
    let computing = this.computing.get(sha256);
    if (!computing) {
      computing = this.blankCheckOf(image);
      this.computing.set(sha256, computing);
      computing.finally(() => this.computing.delete(sha256)).catch(() => undefined);
    }
    const computed = await computing;
    if (record && computed && !record.blankCheck) record.blankCheck = computed;
    return record?.blankCheck ?? computed;
  }

  /**
   * Same bytes always have the same fingerprint (length + head + tail), so an unknown fingerprint proves the
   * bytes are new and the file write can start at once; the full sha256 is computed while the write and the
   * header read run on the thread pool, which keeps the cost near one write. A known fingerprint is decided
   * by comparing the bytes with the latest copy of the first's still in memory (a capture's image block and
   * envelope hold the same bytes: a compare costs a tenth of a hash), else by the full sha256.
   */
  private async saveBuffer(buf: Buffer, options: SaveOptions): Promise<SavedImage> {
    const fp = fingerprintOf(buf);
    const earlier = this.byFingerprint.get(fp);
    if (earlier) {
      // A disk error may be transient: these bytes try again, as a copy after it settled would (saveNew has
      // forgotten the failed first by then, so the retry saves them, or waits for another copy's retry).
      if (earlier.bytes.deref()?.equals(buf)) {
        const first = await earlier.saved;
        if (this.keptAnyway(first, options)) return this.saveNew(buf, options, fp, first.sha256);
        return first.failure === 'disk'
          ? this.saveBuffer(buf, options)
          : this.deduplicated(first, buf, options);
      }
      const sha256 = sha256Hex(buf);
      // These bytes stand in for the first's from now on: the next copy (this capture's other one) compares.
      if (sha256 === earlier.sha256) earlier.bytes = new WeakRef(buf);
      const first = await earlier.saved;
      const same = first.sha256 === sha256 ? first : await this.known.get(sha256);
      if (same?.failure === 'disk') return this.saveBuffer(buf, options);
      if (same && this.keptAnyway(same, options)) return this.saveNew(buf, options, fp, sha256);
      if (same) return this.deduplicated(same, buf, options);
      return this.saveNew(buf, options, undefined, sha256); // a fingerprint collision: new bytes after all
    }
    return this.saveNew(buf, options, fp);
  }

  /**
   * True when bytes refused as no image are now declared as a format the recorder writes as it came (an SVG
   * sent first as `image/png`, then as `image/svg+xml`): they are written, not deduplicated to the refusal.
   */
  private keptAnyway(first: SavedImage, options: SaveOptions): boolean {
    return (
      first.failure === 'invalid' &&
      !first.format &&
      !first.notRaster &&
      notRasterExtension(options.declaredMimeType) !== undefined
    );
  }

  private async deduplicated(first: SavedImage, buf: Buffer, options: SaveOptions): Promise<SavedImage> {
    if (!first.blankCheck && options.knownBlankCheck) first.blankCheck = options.knownBlankCheck;
    if (!first.blankCheck && options.blankCheck && !first.error && !first.notRaster)
      first.blankCheck = await this.blankCheckOf(buf);
    return { ...first, deduplicated: true };
  }

  private async saveNew(
    buf: Buffer,
    options: SaveOptions,
    fp?: string,
    sha256?: string,
  ): Promise<SavedImage> {
    const pending = this.firstSave(buf, options, sha256);
    const first: FirstCopy = { saved: pending, bytes: new WeakRef(buf) };
    if (fp) this.byFingerprint.set(fp, first);
    const saved = await pending;
    first.sha256 = saved.sha256;
    if (saved.failure === 'disk') {
      // A disk error may be transient: let a later copy of the same bytes try again.
      if (fp && this.byFingerprint.get(fp)?.saved === pending) this.byFingerprint.delete(fp);
    } else if (!this.known.has(saved.sha256) || saved.notRaster) {
      // A file written for bytes refused before (keptAnyway) stands for them from now on.
      this.known.set(saved.sha256, pending);
    }
    return { ...saved };
  }

  private async metadata(buf: Buffer): Promise<{ width?: number; height?: number }> {
    if (buf[0] === 0x42 && buf[1] === 0x4d) {
      // sharp has no BMP loader; the header says all we need.
      const h = readBmpHeader(buf);
      if (!h) throw new Error('bad BMP header');
      return { width: h.width, height: h.height };
    }
    sharpLoaded ??= await loadSharp();
    const sharp = sharpLoaded;
    return sharp(buf, { limitInputPixels: this.limitInputPixels }).metadata();
  }

  private async blankCheckOf(buf: Buffer): Promise<BlankCheck | undefined> {
    try {
      return await computeBlankCheck(buf, this.limitInputPixels);
    } catch {
      return undefined;
    }
  }

  /** Width and height from sharp's header read, or the reason it failed. */
  private async dimensions(
    buf: Buffer,
    format: ImageFormat,
  ): Promise<{ width: number; height: number } | string> {
    try {
      const m = await this.metadata(buf);
      const width = m.width ?? 0;
      const height = m.height ?? 0;
      if (width <= 0 || height <= 0) return `not a readable ${format} image: no dimensions`;
      return { width, height };
    } catch (err) {
      const text = errorText(err);
      if (/pixel limit/i.test(text)) return `too many pixels: ${text}`;
      return `not a readable ${format} image: ${text}`;
    }
  }

  private tooManyPixels(d: { width: number; height: number }): string | undefined {
    if (d.width * d.height <= this.limitInputPixels) return undefined;
    return `too many pixels: ${d.width}x${d.height} exceeds ${this.limitInputPixels}`;
  }

  private async firstSave(buf: Buffer, options: SaveOptions, knownSha?: string): Promise<SavedImage> {
    // Hashed while the thread pool writes the file (below), or for a refusal.
    let sha256 = knownSha;
    const hash = (): string => {
      sha256 ??= sha256Hex(buf);
      return sha256;
    };
    const format = sniffImageFormat(buf);
    const notRaster = format ? undefined : notRasterExtension(options.declaredMimeType);
    if (notRaster) return this.saveNotRaster(buf, notRaster, options, hash, knownSha);
    if (!format)
      return {
        ...failed('not an image (unrecognised magic bytes)', 'invalid'),
        sha256: hash(),
        bytes: buf.length,
      };
    const base: SavedImage = { sha256: '', bytes: buf.length, format, deduplicated: false };
    if (options.knownBlankCheck) base.blankCheck = options.knownBlankCheck;
    let dims: Promise<{ width: number; height: number } | string> | undefined;
    const dimsOf = () => {
      dims ??= this.dimensions(buf, format);
      return dims;
    };

    /** A refusal before any write: facts from the header when it reads. */
    const refuse = async (error: string, failure: SaveFailure): Promise<SavedImage> => {
      const out: SavedImage = { ...base, sha256: hash(), error, failure };
      const d = await dimsOf();
      if (typeof d !== 'string') Object.assign(out, d);
      return out;
    };
    // Cheap checks first, so bombs, cut-off files and over-budget images are never written.
    const header = headerDimensions(buf, format);
    const bomb = header && this.tooManyPixels(header);
    if (bomb) return refuse(bomb, 'invalid');
    const truncated = truncationOf(buf, format);
    if (truncated) return refuse(truncated, 'invalid');
    if (this.used + buf.length > this.maxArtifactBytes) {
      this.omittedImages++;
      this.omittedBytes += buf.length;
      return refuse(`over artifact budget (${this.maxArtifactBytes} bytes per session)`, 'budget');
    }

    this.used += buf.length; // reserved before the awaits so concurrent saves respect the budget
    // sharp's header read goes to the thread pool first (short, and it must not queue behind the write), then
    // every chunk of the write at once; this thread hashes meanwhile. For a 4K capture the hash (4-5 ms) takes
    // longer than the write, so the write costs little on top; with every chunk already queued, the write never
    // waits for this thread to send the next one.
    const reading = dimsOf();
    const temp = this.tempFile();
    let busy = true;
    const writing = this.writeTemp(temp.path, buf).finally(() => {
      busy = false;
    });
    const computing = !base.blankCheck && options.blankCheck ? this.blankCheckOf(buf) : undefined;
    if (!knownSha) base.sha256 = sha256 = await hashWhile(buf, () => busy);
    else base.sha256 = hash();
    const [d, fault, blankCheck] = await Promise.all([reading, writing, computing]);
    if (blankCheck) base.blankCheck = blankCheck;
    if (typeof d !== 'string') Object.assign(base, d);
    const problem = typeof d === 'string' ? d : this.tooManyPixels(d);
    if (problem) {
      // sharp refused what the cheap checks let by: the temp file never gets a name.
      if (!fault) removeTemp(temp.path);
      this.used -= buf.length;
      return { ...base, error: problem, failure: 'invalid' };
    }
    const written = fault ?? this.place(temp, EXTENSION[format], safePrefix(options.namePrefix));
    if ('error' in written) {
      this.used -= buf.length;
      return { ...base, ...written };
    }
    return { ...base, path: written.path };
  }

  /**
   * Bytes of a format the recorder reads no pixels of (`notRasterExtension`): written as they came, within the
   * budget, the same way as an image (temp file, hash while the pool writes, a name by a hard link); never
   * decoded, so no width, height or blankCheck.
   */
  private async saveNotRaster(
    buf: Buffer,
    ext: string,
    options: SaveOptions,
    hash: () => string,
    knownSha: string | undefined,
  ): Promise<SavedImage> {
    const base: SavedImage = {
      sha256: '',
      bytes: buf.length,
      notRaster: true,
      mimeType: bareMimeType(options.declaredMimeType),
      deduplicated: false,
    };
    if (this.used + buf.length > this.maxArtifactBytes) {
      this.omittedImages++;
      this.omittedBytes += buf.length;
      return {
        ...base,
        sha256: hash(),
        error: `over artifact budget (${this.maxArtifactBytes} bytes per session)`,
        failure: 'budget',
      };
    }
    this.used += buf.length;
    const temp = this.tempFile();
    let busy = true;
    const writing = this.writeTemp(temp.path, buf).finally(() => {
      busy = false;
    });
    base.sha256 = knownSha ?? (await hashWhile(buf, () => busy));
    const fault = await writing;
    const written = fault ?? this.place(temp, ext, safePrefix(options.namePrefix));
    if ('error' in written) {
      this.used -= buf.length;
      return { ...base, ...written };
    }
    return { ...base, path: written.path };
  }

  /** A fresh temp name in `artifacts/` (`.capture-<pid>-<k>-<random>.partial`) and the artifact name's number. */
  private tempFile(): { path: string; n: number } {
    return { path: tempFileIn(this.artifactsDir, 'capture'), n: ++this.counter };
  }

  /**
   * The bytes in a new file `tmp` (exclusive create), written by the thread pool in 256 KiB chunks all sent at
   * once (each at its own position), then closed once every chunk has settled. The file is opened on this
   * thread: one syscall, where a round trip through the pool (behind sharp's header read and the garbage
   * collector's helpers) delayed the write by up to 1.5 ms. Creates `artifacts/` when missing (never the session
   * dir itself). A failed write leaves no file: the descriptor is closed only after every chunk settled (a
   * closed number may be reused by another file at once), then the temp name is removed.
   */
  private async writeTemp(tmp: string, buf: Buffer): Promise<WriteFault | undefined> {
    let fd: number;
    try {
      fd = fs.openSync(tmp, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return diskFault(err);
      // artifacts/ not there yet (or vanished): create it, never the session dir itself.
      try {
        fs.mkdirSync(this.artifactsDir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return diskFault(e);
      }
      try {
        fd = fs.openSync(tmp, 'wx');
      } catch (again) {
        return diskFault(again);
      }
    }
    const chunks: Promise<void>[] = [];
    for (let start = 0; start < buf.length; start += WRITE_CHUNK)
      chunks.push(writeRange(fd, buf, start, Math.min(buf.length, start + WRITE_CHUNK)));
    const failure = (await Promise.allSettled(chunks)).find((c) => c.status === 'rejected');
    try {
      await closeFd(fd); // on the pool: closing a new file can wait for a virus scanner (Windows)
    } catch (err) {
      removeTemp(tmp);
      return diskFault(failure ? failure.reason : err);
    }
    if (!failure) return undefined;
    removeTemp(tmp);
    return diskFault(failure.reason);
  }

  /**
   * Give the complete temp file a fresh name `<prefix>-<UTC stamp>-<n>.<ext>` by a hard link, which never
   * replaces a file, so a kill -9 mid-write leaves only a `.partial` (never bundled), never a short image under
   * an artifact's name; then remove the temp name. On this thread: metadata syscalls, each cheaper than a
   * round trip through the pool.
   */
  private place(
    temp: { path: string; n: number },
    ext: string,
    prefix: string,
  ): { path: string } | WriteFault {
    let n = temp.n;
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const name = artifactFileName(prefix, this.now(), n, ext);
        const placed = placeNewFile(temp.path, path.join(this.artifactsDir, name));
        if (placed === 'taken') {
          n = ++this.counter; // a name left by an earlier writer of this session: next number
          continue;
        }
        if (placed !== 'ok') return diskFault(placed);
        this.written++;
        return { path: `${ARTIFACTS_DIR}/${name}` };
      }
      return diskFault('could not find a free artifact name');
    } catch (err) {
      return diskFault(err);
    } finally {
      removeTemp(temp.path);
    }
  }
}

/** Best effort: a `.partial` left behind is never bundled, and a later run removes it (util/temp-files). */
function removeTemp(tmp: string): void {
  try {
    fs.unlinkSync(tmp);
  } catch {
    // gone already, or not removable now
  }
}

/** Write `buf[start, end)` at the same position in the file, again after a short write. */
async function writeRange(fd: number, buf: Buffer, start: number, end: number): Promise<void> {
  let offset = start;
  while (offset < end) {
    const written = await writeAt(fd, buf, offset, end - offset);
    if (written <= 0) throw new Error('short write');
    offset += written;
  }
}

/** sha256 of `buf`, fed slice by slice with a turn of the event loop between slices while `busy()`. */
async function hashWhile(buf: Buffer, busy: () => boolean): Promise<string> {
  const hasher = createHash('sha256');
  let end = 0;
  while (end < buf.length && busy()) {
    const next = Math.min(buf.length, end + HASH_SLICE);
    hasher.update(buf.subarray(end, next));
    end = next;
    await nextTurn();
  }
  hasher.update(buf.subarray(end));
  return hasher.digest('hex');
}

/** A file name prefix as given when it is safe (letters, digits, `-`), else `capture`. */
function safePrefix(prefix: string | undefined): string {
  return prefix !== undefined && /^[A-Za-z0-9-]{1,40}$/.test(prefix) ? prefix : 'capture';
}
