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
  return (
    (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 61
  );
}

/**
 * Streaming scan for long runs of base64 alphabet (the shape of inline image bytes) in text or binary data.
 * Byte loop, no regex: inputs can be large. JSON escapes of `+`, `/`, `=` (`\u002B`, `\/`) continue a run.
 */
export class Base64RunScanner {
  private run = 0;
  /** The start of an escape sequence cut by a chunk boundary. */
  private carry: Buffer = Buffer.alloc(0);
  /** Longest run seen so far. */
  longest = 0;

  constructor(private readonly threshold: number) {}

  /** Feed the next chunk (UTF-8 bytes; non-ASCII bytes are never base64, so text can be fed as UTF-8). */
  feed(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    this.carry = Buffer.alloc(0);
    const n = data.length;
    let i = 0;
    while (i < n) {
      const c = data[i]!;
      if (isBase64Byte(c)) {
        this.bump();
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
          else this.run = 0;
          return;
        }
        if (data[j] === 47 /* / */) {
          this.bump();
          i = j + 1;
          continue;
        }
        if (data[j] === 117 /* u */ && escapeIsBase64(data, j + 1)) {
          this.bump();
          i = j + 5;
          continue;
        }
      }
      this.run = 0;
      i += 1;
    }
  }

  /** True once a run of at least `threshold` chars was seen. */
  get hit(): boolean {
    return this.longest >= this.threshold;
  }

  private bump(): void {
    this.run += 1;
    if (this.run > this.longest) this.longest = this.run;
  }
}

function escapeIsBase64(data: Buffer, at: number): boolean {
  if (data[at] !== 48 || data[at + 1] !== 48) return false; // "00"
  const hi = data[at + 2];
  const lo = (data[at + 3] ?? 0) | 0x20; // lower-case hex letter
  return (hi === 50 && (lo === 98 || lo === 102)) || (hi === 51 && lo === 100); // 2b, 2f, 3d
}

/** Length of the longest base64-alphabet run in a string (escaped `+`, `/` and `=` included). */
export function longestBase64Run(text: string): number {
  const scanner = new Base64RunScanner(Number.POSITIVE_INFINITY);
  scanner.feed(text);
  return scanner.longest;
}
