/**
 * A server that sends far more than it is asked for, through the real stdio proxy and a real log: progress
 * notifications for a call, notifications of the connection and answers to ids never asked. The client
 * gets every byte; the log holds what the peer sent only up to its own budget (`maxLogBytes` characters),
 * the rest counted in the `truncation` event and said in the failure summary.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { buildSummary, renderFailureSummary } from '../../src/report/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { expectEventsValid } from '../record/helpers.js';
import { stdioProxy } from '../support/stdio-proxy.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from './helpers.js';
import { readSessions } from './sim-script.js';

const CHILD = fileURLToPath(new URL('./fixtures/jsonrpc-child.mjs', import.meta.url));
const KiB = 1024;
const MiB = 1024 * KiB;
const SID = '5f19c9c01a3f';
let tmp: string;

beforeEach(() => {
  tmp = tempDir('mcec-stdio-chatty-');
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

const call = (id: number, args: Record<string, unknown>) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: { sessionId: SID, ...args }, _meta: { progressToken: `tok-${id}` } } })}\n`;

function collect(stream: Readable) {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  const bytes = () => Buffer.concat(parts);
  return {
    bytes,
    answers: () =>
      bytes()
        .toString('latin1')
        .split('\n')
        .filter((l) => l.includes('"isError"')),
  };
}
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Writes each line and waits for its answer before the next, as a client with one call at a time. */
async function sendEach(stdin: Writable, out: ReturnType<typeof collect>, lines: string[]): Promise<void> {
  for (const line of lines) {
    const answers = out.answers().length;
    stdin.write(line);
    await waitFor(() => out.answers().length === answers + 1, 60_000);
  }
}

/** The child's own output for the same input, without the proxy. */
async function direct(lines: string[]): Promise<Buffer> {
  const child = spawn(process.execPath, [CHILD], { stdio: ['pipe', 'pipe', 'ignore'] });
  const out = collect(child.stdout);
  const done = new Promise((resolve) => child.on('exit', resolve));
  await sendEach(child.stdin, out, lines);
  child.stdin.end();
  await done;
  return out.bytes();
}

/** The child behind a real stdio proxy recording with a 1 MiB log budget. */
function proxied() {
  const sessions = path.join(tmp, 'sessions');
  const recorder = createRecorder({
    sessionsDir: sessions,
    transport: 'stdio',
    limits: { maxLogBytes: MiB },
  });
  const { stdin, stdout, exit } = stdioProxy(recorder, [CHILD]);
  return { sessions, stdin, out: collect(stdout), exit };
}

/** The sessions that recorded a call, once the proxy exited cleanly. */
async function recordedAfterExit(proxy: ReturnType<typeof proxied>) {
  proxy.stdin.end();
  expect(await proxy.exit).toBe(0);
  return readSessions(proxy.sessions).filter((s) => s.calls.length > 0);
}

async function throughProxy(lines: string[]) {
  const proxy = proxied();
  await sendEach(proxy.stdin, proxy.out, lines);
  const recorded = await recordedAfterExit(proxy);
  expect(recorded).toHaveLength(1);
  return { bytes: proxy.out.bytes(), session: recorded[0]! };
}

describe('stdio proxy in front of a server that sends what nobody asked for', () => {
  it('keeps the log within its budget for the peer, counts the rest, and passes every byte', async () => {
    const lines = [
      call(1, { bytes: 10 }),
      // 20 x 256 KiB notifications of the connection, 20 x 256 KiB answers never asked, 20,000 progress notes
      call(2, { bytes: 10, progress: 20_000, notes: 20, unasked: 20, pad: 256 * KiB }),
    ];
    const { bytes, session } = await throughProxy(lines);
    expect(sha(bytes)).toBe(sha(await direct(lines)));
    expect(bytes.length).toBeGreaterThan(10 * MiB);

    expect(session.calls.map((c) => [c.seq, c.tool])).toEqual([
      [1, 'big'],
      [2, 'big'],
    ]);
    // Before: 20,000 progress events, 20 notifications and 20 answers of 256 KiB each: a 14 MB log.
    const size = fs.statSync(path.join(session.dir, 'session.sqlite')).size;
    expect(size).toBeLessThan(4 * MiB);
    const truncation = session.events.filter((e) => e.kind === 'truncation').at(-1)!.detail;
    expect(truncation.omittedCalls).toBe(0);
    expect(truncation.omittedEvents).toBeGreaterThan(0);
    const kept = session.events.filter((e) => ['notification', 'exchange'].includes(e.kind));
    expect(kept.length + Number(truncation.omittedEvents)).toBe(20_000 + 20 + 20);
    // A notification of the connection is clipped as a call's event is.
    const note = session.events.find((e) => e.kind === 'notification' && e.call_seq === null)!;
    expect(JSON.stringify(note.detail).length).toBeLessThan(64 * KiB);
    expectEventsValid(session.dir);

    const reader = SessionReader.open(session.dir);
    try {
      const md = await renderFailureSummary(await buildSummary(reader));
      expect(md).toContain(
        `- Events the server sent past the log limit, counted but not kept: ${truncation.omittedEvents} (`,
      );
    } finally {
      reader.close();
    }
  }, 120_000);

  it('keeps the handshake when the first call floods the budget before it lands', async () => {
    const init = `${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} })}\n`;
    const proxy = proxied();
    proxy.stdin.write(init);
    await waitFor(() => proxy.out.bytes().includes('"echo":"initialize"'));
    proxy.stdin.write(call(1, { bytes: 10, progress: 20_000 }));
    await waitFor(() => proxy.out.answers().length === 1, 60_000);
    const [session] = await recordedAfterExit(proxy);
    expect(session!.events.filter((e) => e.kind === 'exchange').map((e) => e.detail.method)).toEqual([
      'initialize',
    ]);
    expect(
      session!.events.filter((e) => e.kind === 'truncation').at(-1)!.detail.omittedEvents,
    ).toBeGreaterThan(0);
  }, 120_000);

  it('holds what comes before the first call lands to the same budget (it was kept in memory whole)', async () => {
    const lines = [call(1, { bytes: 10, unasked: 20, pad: 256 * KiB })];
    const { bytes, session } = await throughProxy(lines);
    expect(sha(bytes)).toBe(sha(await direct(lines)));
    const size = fs.statSync(path.join(session.dir, 'session.sqlite')).size;
    expect(size).toBeLessThan(3 * MiB); // before: 5.3 MB
    const exchanges = session.events.filter((e) => e.kind === 'exchange');
    expect(exchanges.length).toBeLessThan(20);
    expect(exchanges.length).toBeGreaterThan(0);
    const failure = session.events.find((e) => e.kind === 'record-failure')!.detail;
    expect(failure.message).toBe(
      `${20 - exchanges.length} handshake events before the first call were not kept`,
    );
    expectEventsValid(session.dir);
  }, 120_000);
});
