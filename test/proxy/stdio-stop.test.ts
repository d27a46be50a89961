/**
 * How the stdio proxy stops its server: the MCP specification's stdio shutdown, on every platform. A stop
 * (SIGINT, SIGTERM, SIGHUP, SIGBREAK to mcec-record; an abort for a library user) closes the server's stdin,
 * gives it the grace to exit, then sends SIGTERM, and half the grace later SIGKILL. Before, a signal was
 * passed on at once (on Windows child.kill is TerminateProcess): a server that flushes when its stdin closes
 * lost what it held. Calls in flight are recorded as failed, saying how the server was stopped.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runStdioProxy } from '../../src/proxy/stdio.js';
import { SAME_STOP_MS } from '../../src/util/stop-signal.js';
import { tempDir } from '../support/temp.js';
import { collectingRecorder, waitFor } from './helpers.js';
import { readSessions } from './sim-script.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
const STOP_CHILD = fileURLToPath(new URL('./fixtures/stop-child.mjs', import.meta.url));

let tmp: string;
const children: ChildProcessWithoutNullStreams[] = [];
beforeEach(() => {
  tmp = tempDir('mcec-stop-');
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

const call = (id: number, name: string) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })}\n`;

function text(stream: Readable): () => string {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  return () => Buffer.concat(parts).toString('utf8');
}

/** `mcec-record stdio` in front of the stop child. */
function recordCli(mode: string, extra: string[] = []) {
  const sessionsDir = path.join(tmp, 'sessions');
  const flushFile = path.join(tmp, 'flushed.txt');
  const child = spawn(
    process.execPath,
    [
      RECORD_CLI,
      'stdio',
      '--sessions',
      sessionsDir,
      ...extra,
      '--',
      process.execPath,
      STOP_CHILD,
      mode,
      flushFile,
    ],
    { cwd: tmp },
  );
  children.push(child);
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exit, stdout: text(child.stdout), stderr: text(child.stderr), sessionsDir, flushFile };
}

/** One call answered, one in flight ("hang"), both recorded. */
async function oneAnsweredOneInFlight(p: ReturnType<typeof recordCli>): Promise<void> {
  p.child.stdin.write(call(1, 'quick'));
  p.child.stdin.write(call(2, 'hang'));
  await waitFor(() => p.stdout().includes('done 1'));
  await waitFor(() => {
    try {
      return readSessions(p.sessionsDir).flatMap((s) => s.calls).length === 2;
    } catch {
      return false; // a log being created right now
    }
  });
}

describe('mcec-record stdio stops its server as the MCP specification says', () => {
  it('SIGTERM: the server’s stdin is closed and it flushes and exits on its own; its exit code, a truthful record', async () => {
    const p = recordCli('flush');
    await oneAnsweredOneInFlight(p);
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    expect(fs.readFileSync(p.flushFile, 'utf8')).toBe('flushed 1,2\n');
    expect(p.stderr()).toContain(
      "SIGTERM received: the server's stdin is closed; it has 2 s to exit before SIGTERM",
    );
    expect(p.stderr()).not.toContain('has not exited');
    const [session] = readSessions(p.sessionsDir);
    expect(session!.session.status).toBe('ended');
    expect(session!.calls.map((c) => [c.tool, c.status === 'fault'])).toEqual([
      ['quick', false],
      ['hang', true],
    ]);
    expect(session!.calls[1]!.error_detail).toContain(
      'server exited (exit code 0) while mcec-record stopped it (SIGTERM received: stdin closed)',
    );
  });

  it('a server that ignores its stdin’s end gets SIGTERM after --stop-grace; a second signal does not wait', async () => {
    const p = recordCli('deaf', ['--stop-grace', '300ms']);
    await oneAnsweredOneInFlight(p);
    p.child.kill('SIGINT');
    expect(await p.exit).toBe(128 + 15);
    expect(p.stderr()).toContain('SIGINT received: the server');
    expect(p.stderr()).toContain('mcec-record: the server has not exited: SIGTERM');
    const [session] = readSessions(p.sessionsDir);
    expect(session!.calls[1]!.error_detail).toContain(
      'server exited (killed by SIGTERM) while mcec-record stopped it (SIGINT received: stdin closed, SIGTERM)',
    );

    // A grace of 10 minutes: the same Ctrl+C delivered twice at once (a terminal's process group and npx's
    // forwarding) is one stop; a second Ctrl+C (SAME_STOP_MS later) sends SIGTERM at once.
    fs.rmSync(p.sessionsDir, { recursive: true, force: true });
    const q = recordCli('deaf', ['--stop-grace', '10m']);
    await oneAnsweredOneInFlight(q);
    q.child.kill('SIGINT');
    q.child.kill('SIGINT');
    await waitFor(() => q.stderr().includes('SIGINT received'));
    await new Promise((r) => setTimeout(r, SAME_STOP_MS + 200));
    expect(q.stderr()).not.toContain('the server has not exited: SIGTERM');
    q.child.kill('SIGINT');
    expect(await q.exit).toBe(128 + 15);
  });

  it('--stop-grace 0 (or 0s) is no grace: SIGTERM at once; a value that is not a duration says what is taken', async () => {
    const p = recordCli('deaf', ['--stop-grace', '0s']);
    await oneAnsweredOneInFlight(p);
    p.child.kill('SIGINT');
    // No grace: SIGTERM at once and SIGKILL right after (src/proxy/README.md); which of the two ends the server
    // is the scheduler's choice on a busy machine, and mcec-record exits as its server did.
    expect([128 + 15, 128 + 9]).toContain(await p.exit);
    expect(p.stderr()).toContain('mcec-record: the server has not exited: SIGTERM');
    expect(p.stderr()).toContain(
      "SIGINT received: the server's stdin is closed; it has 0 s to exit before SIGTERM",
    );
    fs.rmSync(p.sessionsDir, { recursive: true, force: true });
    const q = recordCli('deaf', ['--stop-grace', '-1s']);
    expect(await q.exit).toBe(2);
    expect(q.stderr()).toContain('expected a duration such as 2s, 500ms or 1m (at most 10m), or 0 for none');
  });

  it('a server that ignores SIGTERM too is killed half the grace later (library: an AbortSignal stops it)', async () => {
    const recorder = collectingRecorder();
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const said = text(stderr);
    const answers = text(stdout);
    const stop = new AbortController();
    const exit = runStdioProxy({
      command: process.execPath,
      args: [STOP_CHILD, 'stubborn', path.join(tmp, 'never.txt')],
      recorder,
      stdin,
      stdout,
      stderr,
      forwardSignals: false,
      signal: stop.signal,
      stopGraceMs: 200,
    });
    await waitFor(() => said().includes('stop-child stubborn ready'));
    stdin.write(call(7, 'hang'));
    stdin.write(call(8, 'quick'));
    await waitFor(() => answers().includes('done 8'));
    stop.abort();
    expect(await exit).toBe(128 + 9);
    expect(said()).toContain('mcec-record: the server has not exited: SIGTERM\n');
    expect(said()).toContain('mcec-record: the server has not exited: SIGKILL\n');
    expect(recorder.collected.failed.map((f) => f.reason)).toEqual([
      'server exited (killed by SIGKILL) while mcec-record stopped it (stop asked for: stdin closed, SIGTERM, SIGKILL)',
    ]);
    expect(recorder.collected.closed).toBe(1);
    expect(fs.existsSync(path.join(tmp, 'never.txt'))).toBe(false);
  });

  it('the client’s end of input alone waits for the server (a pipeline’s last answers still come)', async () => {
    const recorder = collectingRecorder();
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const answers = text(stdout);
    const flushFile = path.join(tmp, 'flushed.txt');
    const exit = runStdioProxy({
      command: process.execPath,
      args: [STOP_CHILD, 'flush', flushFile],
      recorder,
      stdin,
      stdout,
      stderr: new PassThrough(),
      forwardSignals: false,
      stopGraceMs: 0,
    });
    stdin.end(call(3, 'quick'));
    expect(await exit).toBe(0);
    expect(answers()).toContain('done 3');
    expect(fs.readFileSync(flushFile, 'utf8')).toBe('flushed 3\n');
    expect(recorder.collected.failed).toEqual([]);
  });

  it('a stop after the client closed its input counts the grace from that close (SIGTERM at once when it passed)', async () => {
    const recorder = collectingRecorder();
    const stdin = new PassThrough();
    const stderr = new PassThrough();
    const said = text(stderr);
    const stop = new AbortController();
    const exit = runStdioProxy({
      command: process.execPath,
      args: [STOP_CHILD, 'deaf', path.join(tmp, 'never.txt')],
      recorder,
      stdin,
      stdout: new PassThrough(),
      stderr,
      forwardSignals: false,
      signal: stop.signal,
      stopGraceMs: 100,
    });
    await waitFor(() => said().includes('stop-child deaf ready'));
    stdin.end(); // as an MCP client's close begins; the server stays up
    await new Promise((resolve) => setTimeout(resolve, 250)); // past the grace, counted from the close
    stop.abort(); // the client's SIGTERM
    expect(await exit).toBe(128 + 15);
    expect(said()).toContain(
      "stop asked for: the server's stdin is closed; it has 0 s to exit before SIGTERM",
    );
  });

  it.each([
    ['deaf', 'without an export', false, 'SIGTERM', 'SIGTERM'],
    // The worst case: the server's SIGKILL and the export's whole wait must both fit before the client's.
    ['stubborn', 'with a collector that never answers', true, 'SIGKILL', 'SIGTERM, SIGKILL'],
    // The client's SIGTERM ends a longer grace: else the client's SIGKILL would leave the server running.
    ['deaf', 'with --stop-grace 10m', false, 'SIGTERM', 'SIGTERM'],
  ] as const)(
    'the MCP SDK’s own close (stdin, 2 s, SIGTERM, 2 s, SIGKILL) finds mcec-record done before its SIGKILL: a %s server, %s',
    async (mode, how, withExport, killedBy, steps) => {
      const sessionsDir = path.join(tmp, 'sessions');
      const collector = withExport ? await silentCollector() : null;
      const otlp = collector ? ['--otlp', collector.url] : [];
      if (how.includes('--stop-grace')) otlp.push('--stop-grace', '10m');
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [
          RECORD_CLI,
          'stdio',
          '--sessions',
          sessionsDir,
          ...otlp,
          '--',
          process.execPath,
          STOP_CHILD,
          mode,
          'x',
        ],
        stderr: 'pipe',
      });
      const said = text(transport.stderr as Readable);
      const answers: unknown[] = [];
      transport.onmessage = (m) => answers.push(m);
      await transport.start();
      // The SDK does not hand out its child; whether mcec-record exited by itself is what this test is about.
      const child = (transport as unknown as { _process: ChildProcessWithoutNullStreams })._process;
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.once('exit', (_c, signal) => resolve(signal)),
      );
      try {
        await transport.send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'quick', arguments: {} },
        });
        await transport.send({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'hang', arguments: {} },
        });
        await waitFor(() => answers.length === 1);
        await waitFor(() => {
          try {
            return readSessions(sessionsDir).flatMap((x) => x.calls).length === 2;
          } catch {
            return false;
          }
        });
        await transport.close(); // resolves once the proxy exited, or after the SIGKILL it sends then
        expect(await exited).toBeNull(); // not the client's SIGKILL
        expect(said()).toContain('SIGTERM received');
        const [session] = readSessions(sessionsDir);
        expect(session!.session.status).toBe('ended');
        expect(session!.calls[1]!.error_detail).toContain(
          // The client closed the server's stdin (through mcec-record's), not mcec-record's stop.
          `server exited (killed by ${killedBy}) while mcec-record stopped it (client closed stdin; SIGTERM received: ${steps})`,
        );
        // The close went to its end: what the collector did not get was said (and its counts logged).
        if (withExport) expect(said()).toContain('spans delivered');
      } finally {
        await collector?.close();
      }
    },
  );
});

/** A collector that takes every request and never answers: a close waits its whole export wait. */
async function silentCollector(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The session's end is committed: mcec-record's close has begun (its export's wait comes after). */
function sessionEnded(sessionsDir: string): () => boolean {
  return () => {
    try {
      return readSessions(sessionsDir)[0]?.session.status === 'ended';
    } catch {
      return false;
    }
  };
}

describe('a signal while mcec-record writes the sessions (the server has exited)', () => {
  it('the first is ignored with one line (an MCP client’s late SIGTERM): the close ends, exit code the server’s', async () => {
    const collector = await silentCollector();
    try {
      const p = recordCli('flush', ['--otlp', collector.url, '--otlp-shutdown-timeout', '4s']);
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        p.child.on('exit', (_c, s) => resolve(s)),
      );
      p.child.stdin.write(call(1, 'quick'));
      await waitFor(() => p.stdout().includes('done 1'));
      p.child.stdin.end(); // the client's close: the server flushes and exits
      await waitFor(sessionEnded(p.sessionsDir));
      p.child.kill('SIGTERM');
      await waitFor(() => p.stderr().includes('SIGTERM received while'), 10_000);
      expect(await p.exit).toBe(0);
      expect(await exited).toBeNull();
      expect(p.stderr()).toContain(
        'mcec-record: SIGTERM received while the sessions are being written: ignored; send it again to stop now (the sessions may be incomplete)\n',
      );
      // The close went on to its end: the export's counts, and what was not delivered, were said.
      expect(p.stderr()).toContain('spans delivered');
    } finally {
      await collector.close();
    }
  }, 30_000);

  it('a second one ends mcec-record by that signal at once, though the close would take 30 s more', async () => {
    const collector = await silentCollector();
    try {
      const p = recordCli('flush', ['--otlp', collector.url, '--otlp-shutdown-timeout', '30s']);
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        p.child.on('exit', (_c, s) => resolve(s)),
      );
      p.child.stdin.write(call(1, 'quick'));
      await waitFor(() => p.stdout().includes('done 1'));
      p.child.stdin.end();
      await waitFor(sessionEnded(p.sessionsDir));
      p.child.kill('SIGINT');
      p.child.kill('SIGINT'); // the same stop delivered twice: ignored with the first
      await waitFor(() => p.stderr().includes('SIGINT received while'), 10_000);
      await new Promise((r) => setTimeout(r, SAME_STOP_MS + 200));
      expect(p.child.exitCode).toBe(null);
      const second = Date.now();
      p.child.kill('SIGINT');
      expect(await exited).toBe('SIGINT');
      expect(Date.now() - second).toBeLessThan(10_000); // generous; the close had 30 s of export wait left
      expect(p.stderr()).not.toContain('spans delivered');
    } finally {
      await collector.close();
    }
  }, 30_000);
});
