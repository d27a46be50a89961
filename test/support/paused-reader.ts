/**
 * A raw HTTP client for write-deadline tests: it POSTs one body and then reads only as the test says (paused
 * from the start, so the kernel's receive buffer stays at its small default while nothing is read).
 */
import net from 'node:net';
import { waitFor } from '../proxy/helpers.js';

export interface PausedReader {
  socket: net.Socket;
  /** Resolves when the connection closed. */
  done: Promise<void>;
  received(): number;
  closed(): boolean;
}

/** POST `body` to `/mcp` on `port`, then read nothing until told. */
export function pausedReader(port: number, body: string): PausedReader {
  const socket = net.connect(port, '127.0.0.1');
  socket.pause();
  let received = 0;
  let closed = false;
  socket.on('data', (c: Buffer) => {
    received += c.length;
  });
  socket.on('error', () => {});
  const done = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('close', () => {
    closed = true;
  });
  socket.write(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return { socket, done, received: () => received, closed: () => closed };
}

/**
 * Read `total` bytes (an answer and its headers) `step` bytes (1 MiB) at a time, pausing `pauseMs` after
 * each step (paused from the data handler the moment a step is read, so a step is about `step`, not what a
 * poll let through); resolves with the number of pauses, or early when the connection closed.
 */
export async function readSlowly(
  client: PausedReader,
  total: number,
  pauseMs: number,
  step = 1024 * 1024,
): Promise<number> {
  let upTo = 0;
  client.socket.on('data', () => {
    if (client.received() >= upTo) client.socket.pause();
  });
  let pauses = 0;
  while (client.received() < total && !client.closed()) {
    upTo = client.received() + step;
    client.socket.resume();
    await waitFor(() => client.received() >= Math.min(upTo, total) || client.closed(), 10_000);
    await new Promise((r) => setTimeout(r, pauseMs));
    pauses++;
  }
  return pauses;
}
