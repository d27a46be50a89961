/**
 * The MCEC-like HTTP transport's write deadline (src/wire/http.ts, used by the simulator and the replay),
 * with real sockets: a client that asks for a large answer and never reads it is hung up on once it has
 * taken none of its bytes for `writeTimeoutMs` (its slot, one of 16, freed on close); a client that reads
 * slowly but reads is never cut.
 */
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpListener, listenHttp } from '../../src/wire/http.js';
import { waitFor } from '../proxy/helpers.js';
import { pausedReader, readSlowly } from '../support/paused-reader.js';

const MiB = 1024 * 1024;
const listeners: HttpListener[] = [];
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const l of listeners.splice(0)) await l.close();
});

/** A transport whose every call is answered with a result of about `bytes` bytes. */
async function bigAnswers(bytes: number, writeTimeoutMs: number) {
  let dispatched = 0;
  const text = 'x'.repeat(bytes);
  const listener = await listenHttp(
    {
      dispatch: async (msg) => {
        dispatched++;
        const id = (msg as { id: number }).id;
        return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } };
      },
    },
    { port: 0, writeTimeoutMs },
  );
  listeners.push(listener);
  return { listener, dispatched: () => dispatched };
}

/** A raw client that sends one call and reads only when told (paused from the start). */
function rawClient(port: number, id: number) {
  const client = pausedReader(
    port,
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'windows' } }),
  );
  sockets.push(client.socket);
  return client;
}

/** One ordinary call: its status. */
async function statusOf(url: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'windows' } }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('HTTP transport write deadline', () => {
  it('hangs up on a client that reads none of a 40 MiB answer; its slot serves others again', async () => {
    // Bigger than what loopback's kernel buffers take in for a paused reader (8 MiB fit whole here).
    const answerBytes = 40 * MiB;
    const { listener, dispatched } = await bigAnswers(answerBytes, 500);
    const stuck = rawClient(listener.port, 1);
    await waitFor(() => dispatched() === 1, 15_000);
    // Eight deadlines (the check counts its own ticks, so a busy machine only makes the deadline later).
    await new Promise((r) => setTimeout(r, 4000));
    expect(await statusOf(listener.url)).toBe(200);
    // Reading now gets what the kernels held, then the end: never the whole answer.
    stuck.socket.resume();
    await waitFor(() => stuck.closed(), 30_000);
    expect(stuck.received()).toBeLessThan(answerBytes);
  }, 60_000);

  it('never cuts a client that reads slowly but reads (each pause a quarter of the deadline)', async () => {
    const answerBytes = 8 * MiB;
    const { listener } = await bigAnswers(answerBytes, 2000);
    const client = rawClient(listener.port, 1);
    const pauses = await readSlowly(client, answerBytes, 500);
    expect(client.closed()).toBe(false);
    expect(client.received()).toBeGreaterThan(answerBytes);
    expect(pauses).toBeGreaterThanOrEqual(5); // 2.5 s or more without reading, in all
  }, 60_000);

  it('never cuts a slow reader of an answer larger than the kernels hold (it is written in slices)', async () => {
    // 24 MiB: what loopback's kernel buffers do not take whole (the 8 MiB above fit), read 4 MiB a step.
    // Written in one piece, the answer's byte count never moved while it waited, and the reader was cut.
    const answerBytes = 24 * MiB;
    const { listener } = await bigAnswers(answerBytes, 2000);
    const client = rawClient(listener.port, 1);
    const pauses = await readSlowly(client, answerBytes, 500, 4 * MiB);
    expect(client.closed()).toBe(false);
    expect(client.received()).toBeGreaterThan(answerBytes);
    expect(pauses).toBeGreaterThanOrEqual(5); // 2.5 s or more without reading, in all
  }, 60_000);
});
