/**
 * The rows of a streamed report.html, kept in a scratch file as they are rendered (bare rows as they are
 * measured, rows with bodies as those are shared out) so they are copied from it instead of being read from
 * the log and rendered a second time. Only rows go to the file, never the page. Bare rows are read back in
 * order through one window of 1 MiB; the rows with bodies, spooled newest first, each by one read of its own.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StagedFile } from '../../util/staged-file.js';

const WINDOW = 1024 * 1024;

/** Rows appended in order, each found again by its byte offset. */
export class RowSpool {
  private readonly out: StagedFile;

  /** A new scratch file in `dir` (a private temp dir that its owner removes). */
  constructor(dir: string) {
    this.out = new StagedFile(path.join(dir, `report-rows-${randomBytes(4).toString('hex')}.html`));
  }

  /** Append a row's HTML (`bytes` long in UTF-8, when the caller has measured it); returns its byte offset. */
  append(html: string, bytes = Buffer.byteLength(html, 'utf8')): number {
    if (this.out.closed) throw new Error('report.html row spool: append after finish');
    return this.out.append(html, bytes);
  }

  /** No more rows: write what is staged and close the file for writing (idempotent). */
  finish(): void {
    this.out.close();
  }

  /** A reader of the rows, asked for in ascending order; close it when done. */
  reader(): SpoolReader {
    this.finish();
    return new SpoolReader(this.out.file);
  }
}

/** Reads spooled rows through a 1 MiB window that moves forward. */
export class SpoolReader {
  private fd: number | null;
  private readonly window = Buffer.allocUnsafe(WINDOW);
  private start = 0;
  private length = 0;

  constructor(file: string) {
    this.fd = fs.openSync(file, 'r');
  }

  /** The row of `size` bytes at byte `at`, as text. */
  read(at: number, size: number): string {
    if (this.fd === null) throw new Error('report.html row spool: read after close');
    if (at >= this.start && at + size <= this.start + this.length) {
      return this.window.toString('utf8', at - this.start, at - this.start + size);
    }
    if (size > WINDOW) return readExactly(this.fd, Buffer.allocUnsafe(size), at).toString('utf8');
    this.start = at;
    this.length = fs.readSync(this.fd, this.window, 0, WINDOW, at);
    if (this.length < size) throw new Error(`report.html row spool: ${size} bytes at ${at} are not there`);
    return this.window.toString('utf8', 0, size);
  }

  /** The row of `size` bytes at byte `at`, read on its own (the window stays where the ordered rows are). */
  readAside(at: number, size: number): string {
    if (this.fd === null) throw new Error('report.html row spool: read after close');
    return readExactly(this.fd, Buffer.allocUnsafe(size), at).toString('utf8');
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

function readExactly(fd: number, into: Buffer, at: number): Buffer {
  let done = 0;
  while (done < into.length) {
    const n = fs.readSync(fd, into, done, into.length - done, at + done);
    if (n === 0) throw new Error(`report.html row spool: ${into.length} bytes at ${at} are not there`);
    done += n;
  }
  return into;
}
