import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { createRecorder } from '../../src/record/index.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { SIM_STDIO_CHILD, stdioProxy } from '../support/stdio-proxy.js';
import { tempDir } from '../support/temp.js';
import { waitFor } from './helpers.js';
import { allText, readSessions, SCRIPT, sessionIdFrom } from './sim-script.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
let tmp: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeEach(() => {
  tmp = tempDir('mcec-');
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Collects a stream's bytes and counts its lines. */
function collect(stream: Readable) {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  const bytes = () => Buffer.concat(parts);
  return { bytes, lines: () => bytes().toString('utf8').split('\n').filter(Boolean) };
}

/** Play SCRIPT line by line, waiting for each answer (a notification gets none), then end the input. */
async function playScript(input: Writable, output: { lines(): string[] }): Promise<void> {
  let sessionId = '';
  let expected = 0;
  for (const [i, step] of SCRIPT.entries()) {
    const line = step(sessionId);
    input.write(`${line}\n`);
    if (!line.includes('"notifications/')) expected++;
    await waitFor(() => output.lines().length === expected);
    if (i === 3) sessionId = sessionIdFrom(output.lines()[expected - 1]!);
  }
  input.end();
}

/** The simulator run directly as a child: the reference bytes. */
async function directBytes(): Promise<Buffer> {
  const child = spawn(process.execPath, [SIM_STDIO_CHILD, path.join(tmp, 'sim')]);
  children.push(child);
  const out = collect(child.stdout);
  await playScript(child.stdin, out);
  await new Promise((resolve) => child.on('close', resolve));
  return out.bytes();
}

function spawnRecordCli(args: string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, [RECORD_CLI, ...args], { cwd: tmp });
  children.push(child);
  return child;
}

/** `mcec-record stdio` recording into `sessionsDir` in front of the stdio simulator (`simArgs` after its root). */
const recordCliBeforeStdioSim = (sessionsDir: string, ...simArgs: string[]) =>
  spawnRecordCli([
    'stdio',
    '--sessions',
    sessionsDir,
    '--',
    process.execPath,
    SIM_STDIO_CHILD,
    path.join(tmp, 'sim'),
    ...simArgs,
  ]);

const exitOf = (child: ChildProcessWithoutNullStreams) =>
  new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));

describe('stdio proxy in front of the simulator', () => {
  it('relays the same bytes as the simulator gives directly, and the session bundles and verifies', async () => {
    const expected = await directBytes();
    const recorder = createRecorder({ sessionsDir: path.join(tmp, 'recorded'), transport: 'stdio' });
    const { stdin, stdout, exit } = stdioProxy(recorder, [SIM_STDIO_CHILD, path.join(tmp, 'sim')]);
    const out = collect(stdout);
    await playScript(stdin, out);
    expect(await exit).toBe(0);
    expect(out.bytes().equals(expected)).toBe(true);
    expect(out.bytes().toString()).toContain('\\u002B');

    const sessions = readSessions(recorder.sessionsDir);
    expect(sessions.every((s) => s.session.status === 'ended')).toBe(true);
    const calls = sessions.flatMap((s) => s.calls);
    expect(calls.map((c) => [c.tool, c.status, c.transport, c.error_code])).toEqual([
      ['session-start', 'ok', 'stdio', null],
      ['windows', 'ok', 'stdio', null],
      ['find', 'failed', 'stdio', 'selector-matched-3'],
      ['capture', 'ok', 'stdio', null],
      ['capture', 'failed', 'stdio', 'frame-all-black'],
      ['invoke', 'failed', 'stdio', 'target-elevated'],
      ['no-such-tool', 'failed', 'stdio', 'unknown-tool'],
      ['session-end', 'ok', 'stdio', null],
    ]);
    const events = sessions.flatMap((s) => s.events);
    expect(events.filter((e) => e.kind === 'protocol-fault').map((e) => e.detail.code)).toEqual(
      expect.arrayContaining([-32601, -32700]),
    );
    expect(events.filter((e) => e.kind === 'protocol-fault')).toHaveLength(2);
    for (const s of sessions) {
      expect(JSON.parse(s.session.environment).server).toMatchObject({ name: 'MCEC' });
      const bundle = await buildBundle(s.dir, { output: path.join(tmp, `${path.basename(s.dir)}.zip`) });
      expect((await verifyBundle(bundle.bundle)).problems).toEqual([]);
    }
  });

  it('matches out-of-order responses to their requests', async () => {
    const recorder = createRecorder({ sessionsDir: path.join(tmp, 'recorded'), transport: 'stdio' });
    const { stdin, stdout, exit } = stdioProxy(recorder, [SIM_STDIO_CHILD, path.join(tmp, 'sim')]);
    const out = collect(stdout);
    const slow = { name: 'wait-for', arguments: { window: 'Notepad', value: 'never-there', timeout: 300 } };
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: slow })}\n`);
    stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'windows', arguments: {} } })}\n`,
    );
    await waitFor(() => out.lines().length === 2);
    expect(out.lines().map((l) => JSON.parse(l).id)).toEqual([1, 'slow']);
    stdin.end();
    expect(await exit).toBe(0);
    // Both ran in the simulator's default session (the first calls, before its id was known: they land
    // there in the order they completed).
    const sessions = readSessions(recorder.sessionsDir);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.calls.map((c) => [c.rpc_id, c.tool, c.status, c.error_code])).toEqual([
      ['1', 'windows', 'ok', null],
      ['"slow"', 'wait-for', 'failed', 'wait-condition-timeout'],
    ]);
  });

  it('mcec-record stdio: same bytes through the CLI, notices on stderr only, the child exit code', async () => {
    const expected = await directBytes();
    const sessionsDir = path.join(tmp, 'recorded');
    const child = recordCliBeforeStdioSim(sessionsDir, '3');
    const out = collect(child.stdout);
    const err = collect(child.stderr);
    await playScript(child.stdin, out);
    expect(await exitOf(child)).toBe(3);
    expect(out.bytes().equals(expected)).toBe(true);
    expect(err.bytes().toString()).toContain(`sessions in ${sessionsDir}`);
    const sessions = readSessions(sessionsDir);
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.every((s) => s.session.status === 'ended')).toBe(true);
  });

  it('mcec-record stdio: SIGTERM stops the server (stdin closed, then SIGTERM), sessions are closed, exit is 128+15', async () => {
    const sessionsDir = path.join(tmp, 'recorded');
    const child = spawnRecordCli([
      'stdio',
      '--sessions',
      sessionsDir,
      '--stop-grace',
      '300ms',
      '--',
      process.execPath,
      SIM_STDIO_CHILD,
      path.join(tmp, 'sim'),
    ]);
    const out = collect(child.stdout);
    const slow = { name: 'wait-for', arguments: { window: 'Notepad', value: 'never-there', timeout: 20000 } };
    child.stdin.write(
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"windows","arguments":{}}}\n',
    );
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: slow })}\n`);
    await waitFor(() => out.lines().length === 1);
    // the windows call is recorded by now; the wait-for is in flight when the signal comes
    await waitFor(() => {
      try {
        return readSessions(sessionsDir).flatMap((s) => s.calls).length === 2;
      } catch {
        return false; // a log being created right now
      }
    });
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(128 + 15);
    // the wait-for started before the server's default session was known; its failure went there too
    const sessions = readSessions(sessionsDir);
    expect(sessions).toHaveLength(1);
    const [session] = sessions;
    expect(session!.session.status).toBe('ended');
    expect(session!.calls.map((c) => [c.tool, c.status])).toEqual([
      ['windows', 'ok'],
      ['wait-for', 'fault'],
    ]);
    // The simulator waits for the wait-for in flight once its stdin closes: SIGTERM ended it 300 ms later.
    expect(session!.calls[1]!.error_detail).toMatch(
      /server exited \(killed by SIGTERM\) while mcec-record stopped it \(SIGTERM received: stdin closed, SIGTERM\)/,
    );
  });

  it('mcec-record stdio: a server that cannot start gives 127; no command is bad usage (2)', async () => {
    const missing = spawnRecordCli(['stdio', '--sessions', path.join(tmp, 'r'), '--', '/nonexistent/mcec']);
    const err = collect(missing.stderr);
    expect(await exitOf(missing)).toBe(127);
    expect(err.bytes().toString()).toMatch(/cannot start/);
    const usage = spawnRecordCli(['stdio']);
    expect(await exitOf(usage)).toBe(2);
  });
});

describe('mcec-record http (CLI)', () => {
  it('records through the CLI and closes the sessions on SIGINT so they bundle at once', async () => {
    const { listener } = await simOnHttp(path.join(tmp, 'sim'), { seed: 7, token: 'cli-token-abcdef' });
    try {
      const sessionsDir = path.join(tmp, 'recorded');
      const child = spawnRecordCli([
        'http',
        '--listen',
        '127.0.0.1:0',
        '--target',
        listener.url,
        '--sessions',
        sessionsDir,
      ]);
      const err = collect(child.stderr);
      await waitFor(() => /recording (http:\S+)/.test(err.bytes().toString()));
      const url = /recording (http:\S+)/.exec(err.bytes().toString())![1]!;
      const { post } = await import('./helpers.js');
      const headers = { Authorization: 'Bearer cli-token-abcdef' };
      const init = await post(url, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', headers);
      expect(init.status).toBe(200);
      const call = await post(
        url,
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"windows","arguments":{}}}',
        headers,
      );
      expect(JSON.parse(call.body.toString()).result.isError).toBe(false);
      child.kill('SIGINT');
      expect(await exitOf(child)).toBe(0);
      expect(err.bytes().toString()).toContain('sessions closed');
      const sessions = readSessions(sessionsDir);
      expect(sessions).toHaveLength(1);
      expect(sessions[0]!.session.status).toBe('ended');
      expect(sessions[0]!.calls.map((c) => c.tool)).toEqual(['windows']);
      const bundle = await buildBundle(sessions[0]!.dir, { output: path.join(tmp, 'b.zip') });
      expect((await verifyBundle(bundle.bundle)).ok).toBe(true);
      expect(allText(tmp)).not.toContain('cli-token-abcdef');
    } finally {
      await listener.close();
    }
  });

  it('refuses a non-loopback listen host without --allow-remote, and bad options, with exit code 2', async () => {
    const remote = spawnRecordCli(['http', '--listen', '0.0.0.0:0', '--sessions', path.join(tmp, 'r')]);
    const err = collect(remote.stderr);
    expect(await exitOf(remote)).toBe(2);
    expect(err.bytes().toString()).toMatch(/allow-remote/);
    expect(await exitOf(spawnRecordCli(['http', '--listen', 'nonsense']))).toBe(2);
    expect(await exitOf(spawnRecordCli(['http', '--bogus']))).toBe(2);
    expect(await exitOf(spawnRecordCli(['frobnicate']))).toBe(2);
    const help = spawnRecordCli(['--help']);
    const out = collect(help.stdout);
    expect(await exitOf(help)).toBe(0);
    expect(out.bytes().toString()).toMatch(/Examples:[\s\S]*mcec-record stdio/);
  });
});

describe('mcec-record options for timeouts and the recording limit (CLI)', () => {
  /** Run the CLI to its end; its exit code and stderr. */
  async function run(args: string[]) {
    const child = spawnRecordCli(args);
    const err = collect(child.stderr);
    const out = collect(child.stdout);
    const code = await exitOf(child);
    return { code, stderr: err.bytes().toString(), stdout: out.bytes().toString() };
  }

  it('explains bad durations and sizes with exit code 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--timeout', '60000'], /--timeout "60000": give a unit: expected a duration such as 150s/],
      [['--timeout', 'soon'], /--timeout "soon": expected a duration such as 150s, 2m, 90000ms or 1h/],
      [['--timeout', 'wait for=3s'], /before "=" goes a tool name/],
      [['--timeout', 'record=later'], /--timeout "record=later": expected a duration/],
      [['--timeout', '25h'], /at most 24h/],
      [['--write-timeout', 'never'], /--write-timeout "never": expected a duration such as 30s/],
      [['--write-timeout', '0ms'], /--write-timeout "0ms": expected a duration/],
      [['--max-record-bytes', 'lots'], /--max-record-bytes must be a size such as/],
      [['--max-record-bytes', '1GiB'], /--max-record-bytes must be at most \d+ bytes/],
      [['--max-record-bytes', '512KB'], /--max-body \(1048576 bytes\) cannot exceed --max-record-bytes/],
    ];
    const results = await Promise.all(
      cases.map(([args]) => run(['http', '--listen', '127.0.0.1:0', ...args])),
    );
    for (const [i, [args, message]] of cases.entries()) {
      expect(results[i]!.code, args.join(' ')).toBe(2);
      expect(results[i]!.stderr, args.join(' ')).toMatch(message);
    }
    const stdio = await run(['stdio', '--max-record-bytes', 'huge', '--', process.execPath, '-e', '0']);
    expect(stdio.code).toBe(2);
    expect(stdio.stderr).toMatch(/--max-record-bytes must be a size/);
  });

  it('teaches the options in --help and says the effective timeouts when it starts', async () => {
    const help = await run(['http', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--timeout 150s --timeout record=90s --timeout wait-for=10m/);
    expect(help.stdout).toMatch(/request-command-access/);
    expect(help.stdout).toMatch(/--max-record-bytes <size>/);
    expect(help.stdout).toMatch(/--write-timeout <duration>[\s\S]*clients that stop reading/);
    expect(help.stdout).toMatch(/\/\.\/mcp, \/%2e\/mcp/);
    expect((await run(['stdio', '--help'])).stdout).toMatch(/no proxy timeout on stdio/);

    const child = spawnRecordCli([
      'http',
      '--listen',
      '127.0.0.1:0',
      '--sessions',
      path.join(tmp, 'r'),
      '--timeout',
      '3m',
      '--timeout',
      'record=90s',
      '--timeout',
      'wait-for=500ms',
      '--max-record-bytes',
      '64MiB',
    ]);
    const err = collect(child.stderr);
    await waitFor(() => err.bytes().toString().includes('timeouts'));
    expect(err.bytes().toString()).toMatch(
      /timeouts 180 s, record 90 s, wait-for 500 ms; answers over 64 MB pass unrecorded/,
    );
    child.kill('SIGINT');
    expect(await exitOf(child)).toBe(0);
  });
});
