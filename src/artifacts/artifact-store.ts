import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { decodeBase64Strict, type ImageFormat, sniffImageFormat } from '../contract/image-bytes.js';
import type { BlankCheck } from '../contract/types.js';
import { ARTIFACTS_DIR, utcStampMillis } from '../store/layout.js';
import { computeBlankCheck } from './blank-check.js';
import { EXTENSION, readBmpHeader, truncationOf } from './image-file.js';

/** What became of one image's bytes. */
export interface SavedImage {
  /** sha256 (hex) of the decoded bytes; '' when they could not be decoded. */
  sha256: string;
  /** Decoded length in bytes (0 when not decoded). */
  bytes: number;
  format?: ImageFormat;
  width?: number;
  height?: number;
  /** Relative to the session dir: `artifacts/capture-<UTC yyyyMMdd-HHmmssfff>-<n>.<ext>`. */
  path?: string;
  /** Why no file was written: bad base64, not an image, truncated, too many pixels, over budget, disk error. */
  error?: string;
  blankCheck?: BlankCheck;
  /** True when these bytes had been seen before in this session (no new file). */
  deduplicated: boolean;
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
}

/** Default pixel limit: 100 megapixels (a 4K frame is 8.3). */
export const DEFAULT_LIMIT_INPUT_PIXELS = 100_000_000;

type SharpModule = typeof import('sharp')['default'];
let sharpModule: Promise<SharpModule> | undefined;
/** sharp costs ~100 ms to load: import it once, on first use. */
function loadSharp(): Promise<SharpModule> {
  sharpModule ??= import('sharp').then((m) => m.default);
  return sharpModule;
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
  private readonly known = new Map<string, Promise<SavedImage>>();
  private counter = 0;
  private written = 0;
  private used = 0;
  private omittedImages = 0;
  private omittedBytes = 0;
  private dirReady = false;

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
      return await this.saveUnsafe(data, options);
    } catch (err) {
      return {
        sha256: '',
        bytes: 0,
        error: `artifact store failure: ${errorText(err)}`,
        deduplicated: false,
      };
    }
  }

  private async saveUnsafe(data: Buffer | string, options: SaveOptions): Promise<SavedImage> {
    let buf: Buffer;
    if (typeof data === 'string') {
      const decoded = data.length > 0 ? decodeBase64Strict(data) : { error: 'empty string' };
      if (!Buffer.isBuffer(decoded))
        return { sha256: '', bytes: 0, error: `bad base64: ${decoded.error}`, deduplicated: false };
      buf = decoded;
    } else if (Buffer.isBuffer(data)) {
      buf = data;
    } else {
      return {
        sha256: '',
        bytes: 0,
        error: 'not image bytes (neither a Buffer nor a string)',
        deduplicated: false,
      };
    }
    if (buf.length === 0) return { sha256: '', bytes: 0, error: 'empty image data', deduplicated: false };

    const format = sniffImageFormat(buf);
    // Header-only metadata runs on the thread pool while the hash runs here.
    const meta = format ? this.metadata(buf) : undefined;
    const sha256 = createHash('sha256').update(buf).digest('hex');

    const seen = this.known.get(sha256);
    if (seen) {
      meta?.catch(() => undefined);
      const first = await seen;
      if (!first.blankCheck && options.knownBlankCheck) first.blankCheck = options.knownBlankCheck;
      if (!first.blankCheck && options.blankCheck && !first.error) {
        first.blankCheck = await this.blankCheckOf(buf);
      }
      return { ...first, deduplicated: true };
    }
    const pending = this.firstSave(buf, sha256, format, meta, options);
    this.known.set(sha256, pending);
    const saved = await pending;
    // A disk error may be transient: let a later copy of the same bytes try again.
    if (saved.error?.startsWith('disk error')) this.known.delete(sha256);
    return { ...saved };
  }

  /**
   * The blankCheck known for these bytes (declared with an earlier copy), else computed once from `image`
   * and remembered. Undefined when the bytes were never saved or cannot be decoded.
   */
  async ensureBlankCheck(sha256: string, image: Buffer): Promise<BlankCheck | undefined> {
    const pending = this.known.get(sha256);
    const record = pending ? await pending : undefined;
    if (record?.blankCheck) return record.blankCheck;
    const computed = await this.blankCheckOf(image);
    if (record && computed) record.blankCheck = computed;
    return computed;
  }

  private async metadata(buf: Buffer): Promise<{ width?: number; height?: number; format?: string }> {
    if (buf[0] === 0x42 && buf[1] === 0x4d) {
      // sharp has no BMP loader; the header says all we need.
      const h = readBmpHeader(buf);
      if (!h) throw new Error('bad BMP header');
      return { width: h.width, height: h.height, format: 'bmp' };
    }
    const sharp = await loadSharp();
    return sharp(buf, { limitInputPixels: this.limitInputPixels }).metadata();
  }

  private async blankCheckOf(buf: Buffer): Promise<BlankCheck | undefined> {
    try {
      return await computeBlankCheck(buf, this.limitInputPixels);
    } catch {
      return undefined;
    }
  }

  private async firstSave(
    buf: Buffer,
    sha256: string,
    format: ImageFormat | undefined,
    meta: Promise<{ width?: number; height?: number }> | undefined,
    options: SaveOptions,
  ): Promise<SavedImage> {
    const base: SavedImage = { sha256, bytes: buf.length, deduplicated: false };
    if (!format || !meta) return { ...base, error: 'not an image (unrecognised magic bytes)' };
    base.format = format;
    let width: number;
    let height: number;
    try {
      const m = await meta;
      width = m.width ?? 0;
      height = m.height ?? 0;
    } catch (err) {
      const text = errorText(err);
      if (/pixel limit/i.test(text)) return { ...base, error: `too many pixels: ${text}` };
      return { ...base, error: `not a readable ${format} image: ${text}` };
    }
    if (width <= 0 || height <= 0) return { ...base, error: `not a readable ${format} image: no dimensions` };
    base.width = width;
    base.height = height;
    if (width * height > this.limitInputPixels) {
      return { ...base, error: `too many pixels: ${width}x${height} exceeds ${this.limitInputPixels}` };
    }
    const truncated = truncationOf(buf, format);
    if (truncated) return { ...base, error: truncated };
    if (options.knownBlankCheck) base.blankCheck = options.knownBlankCheck;

    if (this.used + buf.length > this.maxArtifactBytes) {
      this.omittedImages++;
      this.omittedBytes += buf.length;
      return { ...base, error: `over artifact budget (${this.maxArtifactBytes} bytes per session)` };
    }
    this.used += buf.length; // reserve before the await so concurrent saves respect the budget
    const [written, blankCheck] = await Promise.all([
      this.write(buf, format),
      !base.blankCheck && options.blankCheck ? this.blankCheckOf(buf) : undefined,
    ]);
    if (blankCheck) base.blankCheck = blankCheck;
    if ('error' in written) {
      this.used -= buf.length;
      return { ...base, error: written.error };
    }
    return { ...base, path: written.path };
  }

  /** One writeFile per image; creates `artifacts/` once (never the session dir itself). */
  private async write(buf: Buffer, format: ImageFormat): Promise<{ path: string } | { error: string }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const n = ++this.counter;
      const name = `capture-${utcStampMillis(this.now())}-${n}.${EXTENSION[format]}`;
      try {
        if (!this.dirReady) await this.ensureDir();
        await fsp.writeFile(path.join(this.artifactsDir, name), buf, { flag: 'wx' });
        this.written++;
        return { path: `${ARTIFACTS_DIR}/${name}` };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue; // a name left by an earlier writer of this session: next number
        if (code === 'ENOENT' && this.dirReady) {
          this.dirReady = false; // artifacts/ vanished: recreate it once (the session dir must still exist)
          continue;
        }
        return { error: `disk error: ${errorText(err)}` };
      }
    }
    return { error: 'disk error: could not find a free artifact name' };
  }

  private async ensureDir(): Promise<void> {
    try {
      await fsp.mkdir(this.artifactsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    this.dirReady = true;
  }
}
