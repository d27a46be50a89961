/**
 * File-descriptor calls on the thread pool, as promises. Raw descriptors, not `fs.promises` FileHandles: a
 * FileHandle call costs extra turns of the event loop, and the zip and the artifact store count their turns.
 */
import fs from 'node:fs';

export function openFd(file: string, flags: string): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.open(file, flags, (err, fd) => (err ? reject(err) : resolve(fd))),
  );
}

/** Read up to `length` bytes at file position `at` into the start of `buffer`; the count read. */
export function readAt(fd: number, buffer: Buffer, length: number, at: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.read(fd, buffer, 0, length, at, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead))),
  );
}

/** Write `length` bytes of `buf` from `offset`, at the same position in the file; the count written. */
export function writeAt(fd: number, buf: Buffer, offset: number, length: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.write(fd, buf, offset, length, offset, (err, written) => (err ? reject(err) : resolve(written))),
  );
}

export function closeFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.close(fd, (err) => (err ? reject(err) : resolve())));
}
