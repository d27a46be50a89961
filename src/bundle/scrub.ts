/** Image bytes out of everything a bundle writes as text, and scanners that prove none are left. */
import { findImageBytes, getAtPointer, setAtPointer } from '../contract/image-bytes.js';

/** What stands where image bytes were (the existing evidence bundle's marker). */
export const REDACTED_BASE64 = '<redacted base64>';

/** Replace every inline image found by findImageBytes with the marker; mutates and returns the (new) root. */
export function scrubImageBytes(value: unknown): { value: unknown; replaced: number } {
  const found = findImageBytes(value).filter((loc) => getAtPointer(value, loc.path) !== REDACTED_BASE64);
  if (found.length === 0) return { value, replaced: 0 };
  let root = value;
  let replaced = 0;
  // Deepest-last order is not needed: pointers into nested JSON strings re-serialize only that string.
  for (const loc of found) {
    const res = setAtPointer(root, loc.path, REDACTED_BASE64);
    root = res.root;
    if (res.ok) replaced += 1;
  }
  // A location that could not be set (should not happen) must not leak: drop the whole value.
  if (replaced < found.length && leftoverImageBytes(root) > 0) {
    return {
      value: '[value dropped: it held image bytes that could not be redacted]',
      replaced: found.length,
    };
  }
  return { value: root, replaced };
}

/** How many inline images are left in a parsed value, not counting the redaction marker. */
export function leftoverImageBytes(value: unknown): number {
  return findImageBytes(value).filter((loc) => getAtPointer(value, loc.path) !== REDACTED_BASE64).length;
}

function isBase64Byte(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 47 && c <= 57) || c === 43 || c === 61;
}

/** How PNG, JPEG and GIF bytes begin once base64-encoded (BMP's `Qk` is too short to tell). */
const BASE64_SIGNATURES = ['iVBORw0KGgo', '/9j/', 'R0lGODlh', 'R0lGODdh'];
const SIGNATURE_CHARS = 11;
/** Raw magic numbers: PNG and GIF are long enough to mean something even in binary data. */
const RAW_MAGIC_STRONG = [
  Buffer.from('89504e470d0a1a0a', 'hex'),
  Buffer.from('GIF87a'),
  Buffer.from('GIF89a'),
];
/** JPEG's 3-byte marker only counts in text, where no binary bytes belong. */
const RAW_MAGIC_TEXT = [Buffer.from('ffd8ff', 'hex')];

/** What to look for in a file that is not parsed as JSON. */
export interface ImageScanOptions {
  /** A base64 run this long that starts like an image is reported (default 64). */
  minImageRun?: number;
  /** Any base64 run this long is reported, image-like or not (default: never). */
  maxPlainRun?: number;
  /** Also look for raw JPEG bytes (text files: no binary belongs there). */
  text?: boolean;
}

/**
 * Streaming scan for image bytes in text or binary data: base64 runs that begin with an image's base64
 * signature (JSON escapes of `+`, `/`, `=` such as `\u002B` continue a run), raw image magic numbers, and
 * optionally any very long base64 run. Byte loop and Buffer.indexOf, no regex: inputs can be large.
 */
export class Base64RunScanner {
  private run = 0;
  private prefix = '';
  /** The start of an escape sequence cut by a chunk boundary. */
  private carry: Buffer = Buffer.alloc(0);
  /** The last bytes of the previous chunk, so a magic number cut in two is still found. */
  private tail: Buffer = Buffer.alloc(0);
  private readonly minImageRun: number;
  private readonly maxPlainRun: number;
  private readonly magic: Buffer[];
  /** Longest run seen so far. */
  longest = 0;
  /** The first finding, in words, or null. */
  finding: string | null = null;

  constructor(options: ImageScanOptions = {}) {
    this.minImageRun = options.minImageRun ?? 64;
    this.maxPlainRun = options.maxPlainRun ?? Number.POSITIVE_INFINITY;
    this.magic = options.text ? [...RAW_MAGIC_STRONG, ...RAW_MAGIC_TEXT] : RAW_MAGIC_STRONG;
  }

  /** Feed the next chunk (UTF-8 bytes; non-ASCII bytes are never base64, so text can be fed as UTF-8). */
  feed(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    this.findMagic(bytes);
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    this.carry = Buffer.alloc(0);
    const n = data.length;
    let i = 0;
    while (i < n) {
      const c = data[i]!;
      if (isBase64Byte(c)) {
        this.bump(c);
        i += 1;
        continue;
      }
      if (c === 92 /* \ */) {
        let j = i;
        while (j < n && data[j] === 92) j += 1;
        const cut = j === n || (data[j] === 117 && j + 5 > n);
        if (cut) {
          // Keep a short cut escape for the next chunk; a pathological run of backslashes just ends the run.
          if (n - i <= 64) this.carry = Buffer.from(data.subarray(i));
          else this.reset();
          return;
        }
        if (data[j] === 47 /* / */) {
          this.bump(47);
          i = j + 1;
          continue;
        }
        const escaped = data[j] === 117 /* u */ ? escapedBase64(data, j + 1) : 0;
        if (escaped) {
          this.bump(escaped);
          i = j + 5;
          continue;
        }
      }
      this.reset();
      i += 1;
    }
  }

  /** True once something that looks like image bytes was seen. */
  get hit(): boolean {
    return this.finding !== null;
  }

  private findMagic(bytes: Buffer): void {
    if (this.finding) return;
    const data = this.tail.length > 0 ? Buffer.concat([this.tail, bytes]) : bytes;
    for (const m of this.magic) {
      if (data.indexOf(m) !== -1) {
        this.finding = 'holds raw image bytes (a PNG, GIF or JPEG signature)';
        return;
      }
    }
    this.tail = Buffer.from(data.subarray(Math.max(0, data.length - 7)));
  }

  private reset(): void {
    this.run = 0;
    this.prefix = '';
  }

  private bump(c: number): void {
    this.run += 1;
    if (this.run <= SIGNATURE_CHARS) this.prefix += String.fromCharCode(c);
    if (this.run > this.longest) this.longest = this.run;
    if (this.finding) return;
    if (this.run === this.minImageRun && BASE64_SIGNATURES.some((sig) => this.prefix.startsWith(sig))) {
      this.finding = `holds base64 image bytes (a run starting "${this.prefix}")`;
    } else if (this.run === this.maxPlainRun) {
      this.finding = `holds a ${this.run}-character base64 run`;
    }
  }
}

/** The char an escape `\u002B` / `\u002F` / `\u003D` stands for (`data[at]` is after the `u`), or 0. */
function escapedBase64(data: Buffer, at: number): number {
  if (data[at] !== 48 || data[at + 1] !== 48) return 0; // "00"
  const hi = data[at + 2];
  const lo = (data[at + 3] ?? 0) | 0x20; // lower-case hex letter
  if (hi === 50 && lo === 98) return 43; // 2b: +
  if (hi === 50 && lo === 102) return 47; // 2f: /
  if (hi === 51 && lo === 100) return 61; // 3d: =
  return 0;
}

/** Length of the longest base64-alphabet run in a string (escaped `+`, `/` and `=` included). */
export function longestBase64Run(text: string): number {
  const scanner = new Base64RunScanner();
  scanner.feed(text);
  return scanner.longest;
}
