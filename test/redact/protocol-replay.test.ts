/**
 * Redaction changes nothing but secrets: the handshake recorded through each proxy in front of the simulator
 * (tool descriptions, JSON Schemas with a property named `token`, instructions, commandAccess notes quoting
 * `chars:`) comes back from mcec-replay byte for byte, and the official MCP SDK client accepts it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { replaySession } from '../../src/replay/index.js';
import { post } from '../proxy/helpers.js';
import { readSessions } from '../proxy/sim-script.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { ROOT } from '../support/programs.js';
import { recordingHttpProxy, simOnHttp } from '../support/sim-http-proxy.js';

const SIM_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-sim.js');
const RECORD_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-record.js');
const REPLAY_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-replay.js');

const temp = tempDirPerTest('mcec-');

const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify(
    params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
  );
const INITIALIZE = rpc(1, 'initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'protocol-replay', version: '1' },
});
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
const TOOLS_LIST = rpc(2, 'tools/list');
const SESSION_START = rpc(3, 'tools/call', { name: 'session-start', arguments: {} });

/** The recorded handshake: nothing in it was a secret, so nothing in it may read as redacted. */
function expectNothingRedacted(sessionsDir: string): string {
  const sessions = readSessions(sessionsDir);
  expect(sessions).toHaveLength(1);
  const stored = JSON.stringify(sessions);
  expect(stored).not.toContain('[redacted]');
  expect(stored).not.toContain('[typed text');
  // The words the issue saw rewritten are there as the server wrote them.
  expect(stored).toContain('credential: HTTP requests');
  expect(stored).toMatch(/built-ins \(chars:, /);
  return sessions[0]!.dir;
}

/** tools/list served by the replay over HTTP, as bytes (same request id as recorded). */
async function replayedToolsList(sessionDir: string): Promise<{ bytes: Buffer; url: string }> {
  const replay = await replaySession(sessionDir, { http: {} });
  temp.defer(async () => {
    await replay.close();
  });
  const answer = await post(replay.url!, TOOLS_LIST);
  expect(answer.status).toBe(200);
  return { bytes: answer.body, url: replay.url! };
}

/** The SDK client's listTools() against the replay: it validates every tool with its own schemas. */
async function sdkListTools(url: string) {
  const client = new Client({ name: 'sdk-check', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    return await client.listTools();
  } finally {
    await client.close();
  }
}

describe('the handshake recorded through a proxy replays byte for byte', () => {
  it('HTTP proxy: tools/list bytes equal, the SDK accepts them, instructions and notes kept', async () => {
    const { listener } = await simOnHttp(path.join(temp.dir, 'sim'), { seed: 7 });
    temp.defer(() => listener.close());
    const { proxy, sessionsDir, close } = await recordingHttpProxy(
      listener.url,
      path.join(temp.dir, 'recorded'),
    );
    temp.defer(close);
    const init = await post(proxy.url, INITIALIZE);
    await post(proxy.url, INITIALIZED);
    const sent = await post(proxy.url, TOOLS_LIST);
    await post(proxy.url, SESSION_START);
    await close();

    const dir = expectNothingRedacted(sessionsDir);
    const { bytes, url } = await replayedToolsList(dir);
    expect(bytes.toString('utf8')).toBe(sent.body.toString('utf8'));
    // initialize comes back as recorded too (instructions, commandAccess note); only the id is the live one's.
    const replayedInit = await post(url, INITIALIZE);
    expect(replayedInit.body.toString('utf8')).toBe(init.body.toString('utf8'));

    const listed = await sdkListTools(url);
    const direct = await sdkListTools(listener.url);
    expect(listed).toEqual(direct);
    const endSession = listed.tools.find((t) => t.name === 'end-session')!;
    expect(endSession.inputSchema.properties?.token).toMatchObject({ type: 'string' });
  });

  it('stdio proxy: tools/list bytes equal to what the server wrote; the SDK lists through mcec-replay --stdio', async () => {
    const sessionsDir = path.join(temp.dir, 'recorded');
    const child = spawn(
      process.execPath,
      [
        RECORD_CLI,
        'stdio',
        '--sessions',
        sessionsDir,
        '--',
        process.execPath,
        SIM_CLI,
        '--stdio',
        '--seed',
        '7',
        '--sessions',
        path.join(temp.dir, 'sim'),
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const lines: string[] = [];
    let buffered = '';
    child.stdout.on('data', (c: Buffer) => {
      buffered += c.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts.filter(Boolean));
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const waitLines = async (n: number) => {
      for (let i = 0; i < 600 && lines.length < n; i++) await new Promise((r) => setTimeout(r, 50));
      expect(lines.length).toBeGreaterThanOrEqual(n);
    };
    child.stdin.write(`${INITIALIZE}\n`);
    await waitLines(1);
    child.stdin.write(`${INITIALIZED}\n${TOOLS_LIST}\n`);
    await waitLines(2);
    child.stdin.write(`${SESSION_START}\n`);
    await waitLines(3);
    child.stdin.end();
    expect(await exited).toBe(0);
    const sentToolsList = lines.find((l) => JSON.parse(l).id === 2)!;

    const dir = expectNothingRedacted(sessionsDir);
    const { bytes } = await replayedToolsList(dir);
    expect(bytes.toString('utf8')).toBe(sentToolsList);

    const client = new Client({ name: 'sdk-check', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [REPLAY_CLI, dir, '--stdio'],
        stderr: 'ignore',
      }),
    );
    try {
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toContain('end-session');
      const endSession = listed.tools.find((t) => t.name === 'end-session')!;
      expect(endSession.inputSchema.properties?.token).toMatchObject({ type: 'string' });
      expect(client.getInstructions()).toBe(JSON.parse(lines[0]!).result.instructions);
    } finally {
      await client.close();
    }
  });
});
