import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeFrom, isPrintableAscii, type Loose, request, tempDir, toolsCall } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(root, 'dist/cli/mcec-sim.js');
const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** A running `mcec-sim --stdio` with line-by-line access to what it writes. */
class StdioChild {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  private buffered = '';
  private waiters: Array<() => void> = [];

  constructor(args: string[] = []) {
    this.child = spawn(process.execPath, [CLI, '--stdio', '--seed', '5', '--sessions', tmp.dir, ...args], {
      cwd: root,
    });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (text: string) => {
      this.buffered += text;
      let nl = this.buffered.indexOf('\n');
      while (nl >= 0) {
        this.lines.push(this.buffered.slice(0, nl));
        this.buffered = this.buffered.slice(nl + 1);
        nl = this.buffered.indexOf('\n');
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  send(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  /** Wait until `count` lines have been written in all. */
  async waitForLines(count: number, timeoutMs = 10_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < count) {
      if (Date.now() > deadline) throw new Error(`timed out with ${this.lines.length} of ${count} lines`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return this.lines.slice(0, count);
  }

  /** End stdin and wait for the exit code. */
  end(): Promise<number | null> {
    return new Promise((resolve) => {
      this.child.on('exit', (code) => resolve(code));
      this.child.stdin.end();
    });
  }
}

describe('mcec-sim --stdio (a real child process)', () => {
  let proc: StdioChild;
  beforeAll(() => {
    proc = new StdioChild();
  });

  it('answers overlapping calls out of order: a quick ping overtakes a slow wait-for', async () => {
    const start = Date.now();
    proc.send(toolsCall(1, 'wait-for', { window: 'Notepad', value: 'Never', timeout: 700 }));
    proc.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    const [first, second] = await proc.waitForLines(2);
    const a = JSON.parse(first!);
    const b = JSON.parse(second!);
    expect(a).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    expect(b.id).toBe(1);
    expect(Date.now() - start).toBeGreaterThanOrEqual(650);
    const { env } = envelopeFrom(b.result);
    expect(env.error).toMatchObject({ code: 'wait-condition-timeout', category: 'timeout' });
    expect(b.result.isError).toBe(true);
  });

  it('initialize, notifications, and each JSON-RPC fault', async () => {
    const before = proc.lines.length;
    proc.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 10,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18' },
      }),
    );
    proc.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })); // no reply
    proc.send('{not json');
    proc.send(JSON.stringify([{ jsonrpc: '2.0', id: 11, method: 'ping' }]));
    proc.send(JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'no/such' }));
    proc.send(toolsCall(13, 'send_command', { command: 'sim:throw' }));
    proc.send(JSON.stringify({ jsonrpc: '2.0', id: 14, method: 'ping' }));
    const lines = (await proc.waitForLines(before + 6)).slice(before).map((l) => JSON.parse(l));
    const byCode = (code: number) => lines.find((l: Loose) => l.error?.code === code);
    expect(lines.find((l: Loose) => l.id === 10).result.serverInfo).toEqual({
      name: 'MCEC',
      version: expect.stringMatching(/^3\.0\.\d+-sim$/),
    });
    expect(byCode(-32700)).toMatchObject({
      id: null,
      error: { message: expect.stringMatching(/^Parse error/) },
    });
    expect(byCode(-32600)).toMatchObject({ id: null });
    expect(byCode(-32601)).toMatchObject({ id: 12 });
    expect(byCode(-32603)).toMatchObject({ id: 13 });
    expect(lines.find((l: Loose) => l.id === 14)).toEqual({ jsonrpc: '2.0', id: 14, result: {} });
    await new Promise((r) => setTimeout(r, 100));
    expect(proc.lines.length).toBe(before + 6); // the notification got nothing
  });

  it('writes the server escaping on the line: \\u002B in base64, no raw + or <, printable ASCII only', async () => {
    const before = proc.lines.length;
    proc.send(toolsCall(20, 'capture', { window: 'Notepad' }));
    proc.send(toolsCall(21, 'get-text', { window: 'Notepad' }));
    const lines = (await proc.waitForLines(before + 2)).slice(before);
    for (const line of lines) {
      expect(isPrintableAscii(line)).toBe(true);
      expect(line).not.toContain('+');
      expect(line).not.toContain('<');
    }
    const capture = JSON.parse(lines.find((l) => l.includes('"id":20'))!);
    expect(lines.find((l) => l.includes('"id":20'))).toContain('\\u002B');
    expect(capture.result.content.map((b: Loose) => b.type)).toEqual(['image', 'text']);
    expect(envelopeFrom(capture.result).env.ok).toBe(true);
    const text = JSON.parse(JSON.parse(lines.find((l) => l.includes('"id":21'))!).result.content[0].text);
    expect(text.result.text).toContain("Hello + <world> & 'friends'");
  });

  it('exits 0 once stdin ends and every response is out', async () => {
    const before = proc.lines.length;
    proc.send(toolsCall(30, 'wait-for', { window: 'Notepad', value: 'Never', timeout: 200 }));
    const code = await proc.end();
    expect(code).toBe(0);
    expect(proc.lines.length).toBe(before + 1);
    expect(JSON.parse(proc.lines[before]!).id).toBe(30);
  });
});

describe('mcec-sim command line', () => {
  it('--help teaches with examples and exits 0; no transport is a usage error (exit 2)', () => {
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Examples:');
    expect(help.stdout).toContain('--http 127.0.0.1:5151');
    expect(help.stdout).toContain('sim:emergency-stop');
    const none = spawnSync(process.execPath, [CLI, '--seed', '7'], { encoding: 'utf8' });
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--stdio or --http/);
    const bad = spawnSync(process.execPath, [CLI, '--http', 'nowhere'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
  });

  it('--http prints its URL on stderr, serves POST /mcp with a token, and closes cleanly on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [CLI, '--http', '127.0.0.1:0', '--token', 'T0k', '--sessions', tmp.dir],
      { cwd: root },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8');
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL printed: ${stderr}`)), 10_000);
      child.stderr.on('data', (t: string) => {
        stderr += t;
        const m = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await request(url, { body: ping })).status).toBe(401);
    const ok = await request(url, { body: ping, headers: { authorization: 'Bearer T0k' } });
    expect(JSON.parse(ok.text)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(stderr).toContain('SIGTERM');
  });
});
