import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { expectEventsValid } from '../record/helpers.js';
import { SIM_STDIO_CHILD, stdioProxy } from '../support/stdio-proxy.js';
import { tempDir } from '../support/temp.js';
import { collectingRecorder, waitFor } from './helpers.js';
import { readSessions, sessionIdFrom } from './sim-script.js';

// Lines over the recording limit, through a real child process: the fixture server (which can be asked for
// an answer of any size) and the simulator.
const CHILD = fileURLToPath(new URL('./fixtures/jsonrpc-child.mjs', import.meta.url));
const MiB = 1024 * 1024;
let tmp: string;

beforeEach(() => {
  tmp = tempDir('mcec-stdio-limits-');
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Collects a stream's bytes; `lines()` gives the complete lines. */
function collect(stream: Readable) {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  const bytes = () => Buffer.concat(parts);
  return { bytes, lines: () => bytes().toString('latin1').split('\n').slice(0, -1) };
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const rpc = (id: number, method: string, params?: unknown) =>
  `${JSON.stringify(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })}\n`;
const bigCall = (id: number, bytes: number, isError = false) =>
  rpc(id, 'tools/call', { name: 'big', arguments: { bytes, isError, sessionId: '5f19c9c01a3f' } });

describe('stdio proxy with lines over the recording limit', () => {
  it('passes a 3 MiB answer line through unchanged, pairs it with its call as oversize, and goes on', async () => {
    const recorder = collectingRecorder();
    const { stdin, stdout, exit } = stdioProxy(recorder, [CHILD], { maxRecordBytes: MiB });
    const out = collect(stdout);
    stdin.write(bigCall(1, 3 * MiB));
    stdin.write(rpc(2, 'tools/list'));
    await waitFor(() => out.lines().length === 2);
    const [big, list] = out.lines();
    expect(big!.length).toBeGreaterThan(3 * MiB);
    expect(big!.endsWith('"isError":false}}')).toBe(true);
    expect(JSON.parse(list!)).toMatchObject({ id: 2, result: { echo: 'tools/list' } });
    // a request line over the limit: passed on, noted; its answer cannot be paired and is kept as an orphan
    stdin.write(rpc(3, 'ping', { pad: 'p'.repeat(2 * MiB) }));
    await waitFor(() => out.lines().length === 3);
    stdin.end();
    expect(await exit).toBe(0);
    const c = recorder.collected;
    expect(c.oversize).toEqual([
      {
        request: expect.objectContaining({ id: 1, method: 'tools/call' }),
        answer: { bytes: big!.length, limit: MiB, isError: false },
      },
    ]);
    expect(c.completed.map((x) => (x.request as { id: number }).id)).toEqual([2]);
    expect(c.events.filter((e) => e.kind === 'oversize-message').map((e) => e.detail)).toEqual([
      {
        direction: 'request',
        bytes: rpc(3, 'ping', { pad: 'p'.repeat(2 * MiB) }).length - 1,
        limit: MiB,
        transport: 'stdio',
      },
    ]);
    expect(c.exchanges).toEqual([
      { request: null, response: { jsonrpc: '2.0', id: 3, result: { echo: 'ping', plus: 'a+b' } } },
    ]);
  });

  it('records oversize rows in the session log with the status read from isError', async () => {
    const recorder = createRecorder({ sessionsDir: path.join(tmp, 'recorded'), transport: 'stdio' });
    const { stdin, stdout, exit } = stdioProxy(recorder, [CHILD], { maxRecordBytes: MiB });
    const out = collect(stdout);
    stdin.write(bigCall(1, 2 * MiB, false));
    stdin.write(bigCall(2, 2 * MiB, true));
    await waitFor(() => out.lines().length === 2);
    stdin.end();
    expect(await exit).toBe(0); // closes the recorder
    const sessions = readSessions(path.join(tmp, 'recorded')).filter((s) => s.calls.length > 0);
    expect(sessions).toHaveLength(1);
    const s = sessions[0]!;
    expect(s.calls.map((x) => [x.tool, x.status, x.ok, x.error_code, x.payload_dropped, x.envelope])).toEqual(
      [
        ['big', 'ok', 1, null, 1, null],
        ['big', 'failed', 0, 'answer-not-recorded', 1, null],
      ],
    );
    expect(
      s.events.filter((e) => e.kind === 'oversize-message').map((e) => [e.call_seq, e.detail.isError]),
    ).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(fs.statSync(path.join(s.dir, 'session.sqlite')).size).toBeLessThan(MiB);
    expectEventsValid(s.dir);
  });

  it('against the simulator: a capture line over a small limit is the same bytes as without the proxy', async () => {
    const script = (sid: string) => [
      rpc(1, 'tools/call', { name: 'session-start', arguments: {} }),
      rpc(2, 'tools/call', { name: 'capture', arguments: { window: 'Notepad', sessionId: sid } }),
      rpc(3, 'tools/call', { name: 'capture', arguments: { window: 'Video Player', sessionId: sid } }),
    ];
    const play = async (input: Writable, output: ReturnType<typeof collect>) => {
      input.write(script('')[0]);
      await waitFor(() => output.lines().length === 1);
      const sid = sessionIdFrom(output.lines()[0]!);
      for (const [i, line] of script(sid).slice(1).entries()) {
        input.write(line);
        await waitFor(() => output.lines().length === i + 2);
      }
      input.end();
      return sid;
    };
    const direct = spawn(process.execPath, [SIM_STDIO_CHILD, path.join(tmp, 'sim')]);
    const directOut = collect(direct.stdout);
    await play(direct.stdin, directOut);
    await new Promise((resolve) => direct.on('close', resolve));

    const recorder = createRecorder({ sessionsDir: path.join(tmp, 'recorded'), transport: 'stdio' });
    const { stdin, stdout, exit } = stdioProxy(recorder, [SIM_STDIO_CHILD, path.join(tmp, 'sim')], {
      maxRecordBytes: 8 * 1024,
    });
    const out = collect(stdout);
    const sid = await play(stdin, out);
    expect(await exit).toBe(0);
    expect(sha(out.bytes())).toBe(sha(directOut.bytes()));
    expect(out.lines()[1]!.length).toBeGreaterThan(8 * 1024);
    const s = readSessions(path.join(tmp, 'recorded')).find((x) => x.session.session_id === sid)!;
    expect(s.calls.map((c) => [c.tool, c.status, c.error_code, c.payload_dropped])).toEqual([
      ['session-start', 'ok', null, 0],
      ['capture', 'ok', null, 1],
      ['capture', 'failed', 'frame-all-black', 0],
    ]);
    expectEventsValid(s.dir);
  });
});
