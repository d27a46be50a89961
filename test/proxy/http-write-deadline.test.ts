/**
 * The HTTP proxy's write deadline, with real sockets: clients that send a call and then never read its
 * large answer (a paused socket: the kernel's receive buffer stays at its small default, as nothing is read)
 * are hung up on once the proxy's writes to them have waited `writeTimeoutMs`, so they cannot hold MCEC's 16
 * request slots; the hang-up is a `proxy-error` event in a real log; a client that reads slowly but reads is
 * never cut.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionReader } from '../../src/store/session-reader.js';
import { expectEventsValid } from '../record/helpers.js';
import { pausedReader, readSlowly } from '../support/paused-reader.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { recordingHttpProxy } from '../support/sim-http-proxy.js';
import { post, startServer, waitFor } from './helpers.js';

const MiB = 1024 * 1024;
const temp = tempDirPerTest('mcec-write-deadline-');

const toolCall = (id: number) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get-text', arguments: {} } });

/** A target answering every call with a JSON-RPC result of `bytes` bytes, written with back-pressure. */
async function bigAnswerTarget(bytes: number) {
  let requests = 0;
  const target = await startServer((req, res) => {
    requests++;
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const id = (JSON.parse(Buffer.concat(parts).toString('utf8')) as { id: number }).id;
      const head = Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`);
      const tail = Buffer.from('"}],"isError":false}}');
      const fill = Buffer.alloc(64 * 1024, 'x');
      let left = bytes - head.length - tail.length;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': bytes });
      res.write(head);
      const more = () => {
        while (left > 0) {
          const n = Math.min(left, fill.length);
          left -= n;
          if (!res.write(n === fill.length ? fill : fill.subarray(0, n))) {
            res.once('drain', more);
            return;
          }
        }
        res.end(tail);
      };
      more();
    });
    res.on('error', () => {});
  });
  temp.defer(() => target.close());
  return { url: target.url, requests: () => requests };
}

const rawClient = (port: number, id: number) => pausedReader(port, toolCall(id));

async function startProxy(targetUrl: string, writeTimeoutMs: number) {
  const started = await recordingHttpProxy(targetUrl, path.join(temp.dir, 'recorded'), {
    server: 'mcec',
    maxRecordBytes: MiB,
    writeTimeoutMs,
  });
  temp.defer(started.close);
  return started;
}

/** Wait until `check` holds (a log being written may not be readable yet: that counts as not yet). */
async function poll(check: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (check()) return;
    } catch {
      // not readable yet
    }
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The write deadline's proxy-error events in the log. */
function hungUpEvents(sessionsDir: string, validate: boolean) {
  return loggedEvents(sessionsDir, validate).filter(
    (e) => e.kind === 'proxy-error' && e.data.reason === 'client stopped reading',
  );
}

/** Every event of every session the recorder wrote (validated against the schema when asked). */
function loggedEvents(sessionsDir: string, validate = true) {
  const out: Array<{ kind: string; data: Record<string, unknown> }> = [];
  if (!fs.existsSync(sessionsDir)) return out;
  for (const name of fs.readdirSync(sessionsDir)) {
    const dir = path.join(sessionsDir, name);
    if (!fs.existsSync(path.join(dir, 'session.sqlite'))) continue;
    if (validate) expectEventsValid(dir);
    const reader = SessionReader.open(dir);
    try {
      for (const e of reader.events())
        out.push({ kind: e.kind, data: JSON.parse(e.detail ?? '{}') as Record<string, unknown> });
    } finally {
      reader.close();
    }
  }
  return out;
}

describe('HTTP proxy write deadline', () => {
  it('hangs up on 16 clients that never read an 8 MiB answer: their slots are freed and each is an event', async () => {
    const answerBytes = 8 * MiB;
    const target = await bigAnswerTarget(answerBytes);
    // The deadline leaves room for all 16 to reach the target and the 503 to be seen on a busy machine.
    const { proxy, sessionsDir, close } = await startProxy(target.url, 4000);
    const stuck = Array.from({ length: 16 }, (_, i) => rawClient(proxy.port, i + 1));
    temp.defer(async () => {
      for (const c of stuck) c.socket.destroy();
    });
    await waitFor(() => target.requests() === 16, 15_000);
    // While the 16 hold MCEC's slots, another client gets MCEC's 503 (the proxy in its place)...
    const refused = await post(proxy.url, toolCall(100), {});
    expect(refused.status).toBe(503);
    // ...until the write deadline hangs each of them up (each a proxy-error in the log, read while it is written)...
    await poll(() => hungUpEvents(sessionsDir, false).length === 16, 30_000);
    // ...and every slot is free again.
    const served = await Promise.all([1, 2, 3].map((i) => post(proxy.url, toolCall(100 + i), {})));
    expect(served.map((a) => a.status)).toEqual([200, 200, 200]);
    // Each was hung up: reading now gets what the kernels held, then the end, never the whole answer.
    for (const c of stuck) c.socket.resume();
    await Promise.all(stuck.map((c) => c.done));
    for (const c of stuck) expect(c.received()).toBeLessThan(answerBytes);
    await close();
    const hungUp = hungUpEvents(sessionsDir, true);
    expect(hungUp).toHaveLength(16);
    expect(hungUp[0]!.data).toMatchObject({
      transport: 'http',
      timeoutMs: 4000,
      method: 'POST',
      path: '/mcp',
    });
    expect(hungUp.every((e) => (e.data.bytes as number) < answerBytes)).toBe(true);
    // Their answers were still read for the recording: 16 oversize calls beside the 3 served.
    expect(loggedEvents(sessionsDir).filter((e) => e.kind === 'oversize-message').length).toBe(19);
  }, 60_000);

  it.each([
    [8, 1],
    [24, 4], // more than loopback's kernel buffers hold for a slow reader
  ])(
    'never cuts a client that reads slowly but reads (each pause shorter than the deadline): %i MiB, %i MiB a step',
    async (mib, stepMib) => {
      const answerBytes = mib * MiB;
      const target = await bigAnswerTarget(answerBytes);
      const { proxy, sessionsDir, close } = await startProxy(target.url, 2000);
      const client = rawClient(proxy.port, 1);
      temp.defer(async () => {
        client.socket.destroy();
      });
      // Read about a step, then pause 500 ms, until the whole answer (and its headers) has come: its pauses add
      // up to more than the deadline, but none comes near it (a quarter, so a busy machine's late timer is no cut).
      const pauses = await readSlowly(client, answerBytes, 500, stepMib * MiB);
      expect(client.closed()).toBe(false);
      expect(client.received()).toBeGreaterThan(answerBytes);
      expect(pauses).toBeGreaterThanOrEqual(5); // 2.5 s or more without reading, in all
      await close();
      const events = loggedEvents(sessionsDir);
      expect(events.filter((e) => e.data.reason === 'client stopped reading')).toEqual([]);
    },
    60_000,
  );
});
