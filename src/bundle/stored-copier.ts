/**
 * Stored (not deflated) files copied into the zip by a helper thread. A stored file's place in the zip is known
 * as soon as its size is, so the thread reads it, sums it (CRC-32, sha256) and writes it and its local header
 * at that place with blocking calls, on the other core, while the main thread renders the bundle's documents.
 * Copying them from the main thread instead waits for a turn of its event loop at every read and write.
 */
import { Worker } from 'node:worker_threads';

/** One stored file to copy: its local header (CRC-32 left 0) goes at `offset`, its bytes right after it. */
export interface CopyJob {
  file: string;
  size: number;
  offset: number;
  header: Buffer;
}

/** What the thread found in a copied file. */
export interface Copied {
  crc: number;
  sha256: string;
}

/** The thread is gone (it could not start, or stopped): the job was not done, and can be done elsewhere. */
export class CopierStopped extends Error {}

/** The thread's code (plain CommonJS, so it runs the same from `src/` under vitest and from `dist/`). */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const zlib = require('node:zlib');
const fd = workerData.fd;
const buffer = Buffer.allocUnsafeSlow(1 << 20);
function writeAll(data, at) {
  for (let done = 0; done < data.length; ) done += fs.writeSync(fd, data, done, data.length - done, at + done);
}
function copy(job) {
  const hash = createHash('sha256');
  const header = Buffer.from(job.header.buffer, job.header.byteOffset, job.header.byteLength);
  const dataAt = job.offset + header.length;
  let crc = 0;
  let at = 0;
  const input = fs.openSync(job.file, 'r');
  try {
    for (;;) {
      // One byte past what is left: a file that grew is caught without reading all of it.
      const n = fs.readSync(input, buffer, 0, Math.min(buffer.length, job.size - at + 1), at);
      if (n === 0) break;
      if (at + n > job.size) { at += n; break; }
      const chunk = buffer.subarray(0, n);
      crc = zlib.crc32(chunk, crc);
      hash.update(chunk);
      writeAll(chunk, dataAt + at);
      at += n;
    }
  } finally {
    fs.closeSync(input);
  }
  if (at !== job.size) throw new Error(job.file + ' changed while it was zipped: ' + job.size + ' bytes expected, ' + at + ' read');
  header.writeUInt32LE(crc >>> 0, 14);
  writeAll(header, job.offset);
  return { crc: crc >>> 0, sha256: hash.digest('hex') };
}
parentPort.on('message', (job) => {
  if (job === 'end') return parentPort.close(); // the last job is done: let the thread exit
  try {
    parentPort.postMessage({ ok: true, copied: copy(job) });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: err && err.message ? err.message : String(err), code: err && err.code });
  }
});
`;

/**
 * The helper thread writing into the open zip `fd`: jobs are copied one after another in the order given.
 * Null when this Node has no native CRC-32 (before 20.15): then the caller copies on the main thread.
 */
export class StoredCopier {
  private readonly worker: Worker;
  private readonly pending: Array<{ resolve: (c: Copied) => void; reject: (e: Error) => void }> = [];
  private failure: CopierStopped | null = null;
  private closed: Promise<void> | null = null;

  private constructor(fd: number) {
    this.worker = new Worker(SOURCE, { eval: true, workerData: { fd } });
    this.worker.on(
      'message',
      (m: { ok: true; copied: Copied } | { ok: false; message: string; code?: string }) => {
        const waiting = this.pending.shift();
        if (!waiting) return;
        if (m.ok) waiting.resolve(m.copied);
        else waiting.reject(Object.assign(new Error(m.message), m.code ? { code: m.code } : {}));
      },
    );
    const fail = (err: CopierStopped) => {
      this.failure ??= err;
      for (const waiting of this.pending.splice(0)) waiting.reject(err);
    };
    this.worker.on('error', (err) =>
      fail(new CopierStopped(`the zip's copying thread failed: ${err.message}`)),
    );
    this.worker.on('exit', (code) =>
      fail(new CopierStopped(`the zip's copying thread stopped (exit code ${code})`)),
    );
  }

  /** A copier for `fd`, or null when stored files have to be copied on the main thread. */
  static open(fd: number): StoredCopier | null {
    try {
      return new StoredCopier(fd);
    } catch {
      return null; // no thread to be had here (a host that forbids them): the main thread copies
    }
  }

  /** Queue one file; resolves with its sums once it and its header are in the zip (CopierStopped: not copied). */
  copy(job: CopyJob): Promise<Copied> {
    if (this.failure) return Promise.reject(this.failure);
    const done = new Promise<Copied>((resolve, reject) => this.pending.push({ resolve, reject }));
    this.worker.postMessage(job);
    return done;
  }

  /** No more jobs: the thread exits once the queued ones are done, giving its memory back. */
  end(): void {
    if (!this.failure) this.worker.postMessage('end');
  }

  /** Stop the thread once it has no write in flight (the zip's fd may be closed after this). Idempotent. */
  close(): Promise<void> {
    this.closed ??= this.worker.terminate().then(() => undefined);
    return this.closed;
  }
}
