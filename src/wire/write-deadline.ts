/**
 * The write deadline of an HTTP answer, one mechanism for the simulator's and replay's transport and the
 * recording proxy: a client that takes none of the bytes waiting for it for `ms` is hung up on; one that
 * reads slowly but reads, or has nothing waiting for it (a quiet event stream), is never cut.
 */
import type http from 'node:http';

/** The write deadline when none is given: the transport's, the proxy's and `--write-timeout`'s default. */
export const DEFAULT_WRITE_TIMEOUT_MS = 30_000;

/** Slices an answer is written in: each one the client takes shows as progress (see `takenBytes`). */
export const WRITE_SLICE_BYTES = 64 * 1024;

/**
 * What the client has taken of the connection's writes, and what still waits for it. Node says no more
 * than this: a write counts in `bytesWritten` from the moment it is handed over, and in `writableLength`
 * until the kernel has taken all of it, so a write is taken whole or not at all (hence answers go out in
 * slices, `writeInSlices`).
 */
function takenBytes(socket: http.ServerResponse['socket']): { taken: number; waiting: number } {
  if (!socket || socket.destroyed) return { taken: 0, waiting: 0 };
  const waiting = socket.writableLength;
  return { taken: (socket.bytesWritten ?? 0) - waiting, waiting };
}

/**
 * Watch `res` until it finishes or closes: once bytes have waited for the client for `ms` (checked four
 * times per deadline, at most every second) without any of them taken, `onStall` runs (it must end `res`;
 * by default `res.destroy()`). Time with nothing waiting does not count. Call it once per answer, when
 * bytes first wait (a write returned false, or the end left some unsent): an answer written at once costs
 * no timer.
 */
export function watchWrites(
  res: http.ServerResponse,
  ms: number,
  onStall: () => void = () => res.destroy(),
): void {
  if (res.writableFinished || res.destroyed) return;
  // Counted from now: the deadline passes between `ms` and `ms` plus one check after bytes last moved.
  let taken = takenBytes(res.socket).taken;
  let still = 0;
  const every = Math.max(10, Math.min(1000, Math.floor(ms / 4)));
  const check = setInterval(() => {
    const now = takenBytes(res.socket);
    still = now.waiting > 0 && now.taken === taken ? still + every : 0;
    taken = now.taken;
    if (still >= ms) {
      stop();
      onStall();
    }
  }, every);
  check.unref();
  const stop = () => clearInterval(check);
  res.once('finish', stop);
  res.once('close', stop);
}

/**
 * End `res` with `body` in slices of WRITE_SLICE_BYTES, each after the client took the last (back-pressure),
 * so a client reading slowly shows progress to `watchWrites`; with `writeTimeoutMs`, watched by it.
 */
export function writeInSlices(res: http.ServerResponse, body: Buffer, writeTimeoutMs?: number): void {
  let at = 0;
  let watched = writeTimeoutMs === undefined;
  const next = (): void => {
    while (at + WRITE_SLICE_BYTES < body.length) {
      const slice = body.subarray(at, at + WRITE_SLICE_BYTES);
      at += WRITE_SLICE_BYTES;
      if (!res.write(slice)) {
        if (!watched) {
          watched = true;
          watchWrites(res, writeTimeoutMs!);
        }
        res.once('drain', next);
        return;
      }
    }
    res.end(body.subarray(at));
    if (!watched && !res.writableFinished) watchWrites(res, writeTimeoutMs!);
  };
  next();
}
