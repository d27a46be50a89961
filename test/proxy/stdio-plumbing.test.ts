import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOM_WAIT_MS } from '../../src/proxy/recorder-port.js';
import { runStdioProxy } from '../../src/proxy/stdio.js';
import { stdioProxy } from '../support/stdio-proxy.js';
import { collectingRecorder, waitFor } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/jsonrpc-child.mjs', import.meta.url));

/** Run the proxy over in-memory client pipes in front of the fixture child. */
function run(args: string[] = [CHILD], faultAnswerMs = 5000) {
  const recorder = collectingRecorder();
  const { stdin, stdout, stderr, exit } = stdioProxy(recorder, args, { faultAnswerMs });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const lines = () => Buffer.concat(out).toString('utf8').split('\n').filter(Boolean);
  return {
    stdin,
    exit,
    lines,
    out,
    stderrText: () => Buffer.concat(err).toString('utf8'),
    collected: recorder.collected,
  };
}

describe('stdio proxy plumbing', () => {
  it('relays bytes unchanged, matches out-of-order responses by id, and exits with the child', async () => {
    const p = run();
    p.stdin.write('{"jsonrpc":"2.0","id":1,"method":"slow","params":{"ms":150}}\n');
    p.stdin.write('{"jsonrpc":"2.0","id":"1","method":"slow","params":{"ms":50}}\n{"jsonrpc":"2.0","id":2,');
    p.stdin.write('"method":"tools/list"}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    await waitFor(() => p.lines().length === 3);
    expect(p.lines()).toEqual([
      '{"jsonrpc":"2.0","id":2,"result":{"echo":"tools/list","plus":"a\\u002Bb"}}',
      '{"jsonrpc":"2.0","id":"1","result":{"slept":50}}',
      '{"jsonrpc":"2.0","id":1,"result":{"slept":150}}',
    ]);
    p.stdin.end();
    expect(await p.exit).toBe(0);
    const byRequest = p.collected.completed.map((c) => [
      (c.request as { id: unknown }).id,
      (c.response as { result: unknown }).result,
    ]);
    expect(byRequest).toEqual([
      [2, { echo: 'tools/list', plus: 'a+b' }],
      ['1', { slept: 50 }],
      [1, { slept: 150 }],
    ]);
    expect(p.collected.exchanges.map((e) => (e.request as { method: string }).method)).toEqual([
      'notifications/initialized',
    ]);
    expect(p.collected.begun[0]!.meta?.transport).toBe('stdio');
    expect(p.collected.closed).toBe(1);
  });

  it('passes non-JSON lines and stderr through untouched and records them as protocol faults', async () => {
    const p = run();
    p.stdin.write('garbage in\n{"jsonrpc":"2.0","id":5,"method":"noise"}\n');
    await waitFor(() => p.lines().length === 3);
    expect(p.lines()).toEqual([
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
      'this line is not JSON',
      '{"jsonrpc":"2.0","id":5,"result":{"noisy":true}}',
    ]);
    await waitFor(() => p.stderrText().includes('child says hello'));
    p.stdin.end();
    expect(await p.exit).toBe(0);
    // the bad client line is paired with the server's -32700 (one exchange, the recorder makes the fault);
    // the bad server line has no answer and is a protocol fault of the proxy's own
    expect(p.collected.exchanges).toEqual([
      {
        request: { unparsed: 'garbage in' },
        response: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
      },
    ]);
    const faults = p.collected.events.filter((e) => e.kind === 'protocol-fault');
    expect(faults.map((f) => f.detail.message)).toEqual(['response not JSON: this line is not JSON']);
  });

  it('records a bad line the server never answers on its own', async () => {
    const p = run(['-e', 'process.stdin.resume(); process.stdin.on("end", () => process.exit(0))'], 300);
    p.stdin.write('not json\n');
    await waitFor(() => p.collected.events.length === 1, 3000);
    expect(p.collected.events[0]!.detail.message).toBe('request not JSON: not json');
    p.stdin.end();
    expect(await p.exit).toBe(0);
  });

  it('propagates a non-zero exit code and fails calls still in flight', async () => {
    const p = run();
    p.stdin.write(
      '{"jsonrpc":"2.0","id":1,"method":"hang"}\n{"jsonrpc":"2.0","id":2,"method":"exit","params":{"code":3}}\n',
    );
    expect(await p.exit).toBe(3);
    expect(p.collected.failed.map((f) => [(f.request as { id: number }).id, f.reason])).toEqual([
      [1, 'server exited'],
      [2, 'server exited'],
    ]);
    expect(p.collected.closed).toBe(1);
  });

  it('reports 128+signal when the child is killed', async () => {
    const p = run(['-e', 'process.kill(process.pid, "SIGTERM"); setTimeout(() => {}, 10000)']);
    expect(await p.exit).toBe(128 + 15);
  });

  it.each([
    ['the server cannot be started', '/nonexistent/mcec-server', [], /cannot start .*ENOENT/],
    // Node throws from spawn() for a NUL byte here, as it does on Windows for a .cmd file without a shell.
    [
      'Node refuses the spawn at once (one line, not a stack trace)',
      process.execPath,
      ['-e', 'a\u0000b'],
      /^mcec-record: cannot start .*node.*: ERR_INVALID_ARG_VALUE \(.*\)\n$/,
    ],
  ])('exits 127 when %s', async (_case, command, args, said) => {
    const recorder = collectingRecorder();
    const stderr = new PassThrough();
    const text: string[] = [];
    stderr.on('data', (c: Buffer) => text.push(c.toString()));
    const code = await runStdioProxy({
      command,
      args,
      recorder,
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
      forwardSignals: false,
    });
    expect(code).toBe(127);
    expect(text.join('')).toMatch(said);
    expect(recorder.collected.closed).toBe(1);
  });
});

describe('stdio proxy pacing', () => {
  it("reads the client's next bytes only once the recorder has room again (or after ROOM_WAIT_MS)", async () => {
    const recorder = collectingRecorder();
    let askedAt = Number.NaN;
    let releasedAt = Number.NaN;
    let release = () => {};
    // No room from the second chunk on, until released.
    let asked = 0;
    recorder.room = () => {
      asked += 1;
      if (asked < 2) return undefined;
      if (asked === 2) askedAt = performance.now();
      return new Promise<void>((resolve) => {
        release = () => {
          releasedAt = performance.now();
          resolve();
        };
      });
    };
    const { stdin, stdout, exit } = stdioProxy(recorder, [CHILD]);
    const answers: Array<{ line: string; at: number }> = [];
    let tail = '';
    stdout.on('data', (c: Buffer) => {
      const parts = (tail + c.toString('utf8')).split('\n');
      tail = parts.pop()!;
      for (const line of parts) answers.push({ line, at: performance.now() });
    });
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
    await waitFor(() => answers.length === 1);
    stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n');
    await waitFor(() => answers.length === 2);
    // The proxy forwarded the second request, then found no room: the third waits.
    stdin.write('{"jsonrpc":"2.0","id":3,"method":"tools/list"}\n');
    await new Promise((r) => setTimeout(r, 150));
    release();
    await waitFor(() => answers.length === 3);
    const third = answers[2]!;
    expect(third.line).toContain('"id":3');
    // Not before the release, unless the 1 s wait ran out first (a slow machine): never at once.
    expect(third.at).toBeGreaterThanOrEqual(Math.min(releasedAt, askedAt + ROOM_WAIT_MS) - 1);
    stdin.end();
    expect(await exit).toBe(0);
    expect(recorder.collected.completed).toHaveLength(3);
  });
});

describe('stdio proxy pacing at exit', () => {
  it("leaves the client's stdin paused when the recorder's room comes after the child exited", async () => {
    const recorder = collectingRecorder();
    let release = () => {};
    recorder.room = () =>
      new Promise<void>((resolve) => {
        release = resolve;
      });
    // A child that leaves at the first bytes it reads, while the proxy waits for room.
    const { stdin, exit } = stdioProxy(recorder, ['-e', "process.stdin.once('data', () => process.exit(0))"]);
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
    expect(await exit).toBe(0);
    expect(stdin.isPaused()).toBe(true);
    release();
    await new Promise((r) => setImmediate(r));
    // Detached: a stdin read on would be taken from its next owner (and keep a process's event loop alive).
    expect(stdin.isPaused()).toBe(true);
  });
});
