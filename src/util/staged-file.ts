/**
 * A new file written front to back through a staging buffer: text is copied into the buffer and written out
 * when it fills, one write per 256 KiB instead of one per line. What was appended can be cut back.
 */
import fs from 'node:fs';

const STAGING = 256 * 1024;

/** Appends to a file it created; `close` writes what is staged. */
export class StagedFile {
  private fd: number | null;
  private readonly staging = Buffer.allocUnsafe(STAGING);
  private staged = 0;
  private flushed = 0;

  /** Create `file` (never one that exists). */
  constructor(readonly file: string) {
    this.fd = fs.openSync(file, 'wx');
  }

  /** Bytes appended so far. */
  get length(): number {
    return this.flushed + this.staged;
  }

  get closed(): boolean {
    return this.fd === null;
  }

  /** Append `text`, `bytes` long in UTF-8; returns the offset it starts at. */
  append(text: string, bytes: number): number {
    const fd = this.openFd();
    const at = this.length;
    if (this.staged + bytes > STAGING) this.flush();
    if (bytes > STAGING) {
      writeAll(fd, Buffer.from(text, 'utf8'), this.flushed);
      this.flushed += bytes;
    } else {
      this.staged += this.staging.write(text, this.staged, 'utf8');
    }
    return at;
  }

  /** Append `text` and a line break; returns the bytes appended (UTF-8), learnt by encoding it once. */
  appendLine(text: string): number {
    this.openFd(); // throws once closed
    // UTF-8 takes at most 3 bytes per UTF-16 unit: room for that, or the exact length when it is that big.
    if (text.length * 3 + 1 > STAGING) {
      const bytes = Buffer.byteLength(text, 'utf8');
      this.append(text, bytes);
      this.append('\n', 1);
      return bytes + 1;
    }
    if (this.staged + text.length * 3 + 1 > STAGING) this.flush();
    const bytes = this.staging.write(text, this.staged, 'utf8');
    this.staging[this.staged + bytes] = 10;
    this.staged += bytes + 1;
    return bytes + 1;
  }

  /** Drop everything past `length` bytes (staged bytes are dropped, written ones cut off the file). */
  truncate(length: number): void {
    const fd = this.openFd();
    if (length >= this.flushed) {
      this.staged = length - this.flushed;
      return;
    }
    fs.ftruncateSync(fd, length);
    this.flushed = length;
    this.staged = 0;
  }

  /** Write what is staged and close the file (idempotent; it is closed even when that write fails). */
  close(): void {
    if (this.fd === null) return;
    try {
      this.flush();
    } finally {
      fs.closeSync(this.fd);
      this.fd = null;
    }
  }

  private flush(): void {
    if (this.staged === 0 || this.fd === null) return;
    writeAll(this.fd, this.staging.subarray(0, this.staged), this.flushed);
    this.flushed += this.staged;
    this.staged = 0;
  }

  private openFd(): number {
    if (this.fd === null) throw new Error(`${this.file}: written to after it was closed`);
    return this.fd;
  }
}

function writeAll(fd: number, data: Buffer, at: number): void {
  let done = 0;
  while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done, at + done);
}
