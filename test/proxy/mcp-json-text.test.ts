/**
 * MCP servers that are not MCEC answering in shapes the SDK client takes as results, behind `mcec-record stdio`
 * and the SDK client: JSON text with a boolean `ok`, as many web APIs answer (the SDK's McpServer), and
 * `structuredContent` without `content` (a hand-written server). The recording keeps each answer as it came and
 * its outcome as MCP says (`isError`), with no contract violation, and a replay gives the client the same results.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { describe, expect, it } from 'vitest';
import { replaySession } from '../../src/replay/index.js';
import { pidAlive } from '../../src/util/temp-files.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { waitFor } from './helpers.js';
import { readSessions } from './sim-script.js';

const SERVER = fileURLToPath(new URL('./fixtures/json-text-server.mjs', import.meta.url));
const STRUCTURED_ONLY = fileURLToPath(new URL('./fixtures/structured-only-server.mjs', import.meta.url));
const MCEC_RECORD = path.resolve('dist/cli/mcec-record.js');
const temp = tempDirPerTest('mcp-json-text-');

async function callEach(transport: Transport, names = ['post', 'channels', 'whoami']): Promise<unknown[]> {
  const client = new Client({ name: 'json-text-test', version: '1.0.0' });
  await client.connect(transport);
  const results: unknown[] = [];
  for (const name of names) results.push(await client.callTool({ name, arguments: {} }));
  await client.close();
  return results;
}

describe('a server that is not MCEC answering in shapes the SDK client takes as results', () => {
  it('JSON text with a boolean ok (no MCEC envelope) is recorded as it came: ok unless isError, no violations; a replay answers the same', async () => {
    const direct = await callEach(new StdioClientTransport({ command: process.execPath, args: [SERVER] }));

    const sessionsDir = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessionsDir);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCEC_RECORD, 'stdio', '--sessions', sessionsDir, '--', process.execPath, SERVER],
      stderr: 'ignore',
    });
    const proxied = await callEach(transport);
    await waitFor(() => !pidAlive(transport.pid!), 20_000);
    expect(proxied).toEqual(direct);

    const [s] = readSessions(sessionsDir);
    const rows = s!.calls.map((c) => ({
      tool: c.tool,
      status: c.status,
      code: c.error_code,
      detail: c.error_detail,
      violations: c.violations,
      text: (JSON.parse(c.response!) as { result: { content: Array<{ text: string }> } }).result.content[0]!
        .text,
    }));
    expect(rows).toEqual([
      {
        tool: 'post',
        status: 'ok',
        code: null,
        detail: null,
        violations: null,
        text: '{"ok":false,"error":"channel_not_found"}',
      },
      {
        tool: 'channels',
        status: 'ok',
        code: null,
        detail: null,
        violations: null,
        text: '{"ok":true,"channels":["general","random"]}',
      },
      {
        tool: 'whoami',
        status: 'failed',
        code: 'tool-error',
        detail: '{"ok":false,"error":"not_authed"}',
        violations: null,
        text: '{"ok":false,"error":"not_authed"}',
      },
    ]);

    const replay = await replaySession(s!.dir, { http: { port: 0 }, order: 'strict' });
    temp.defer(async () => {
      await replay.close();
    });
    expect(await callEach(new StreamableHTTPClientTransport(new URL(replay.url)))).toEqual(direct);
  }, 60_000);

  it('structuredContent without content is a result (the SDK client takes it): ok unless isError, kept as it came', async () => {
    const names = ['temperature', 'failing'];
    const direct = await callEach(
      new StdioClientTransport({ command: process.execPath, args: [STRUCTURED_ONLY] }),
      names,
    );
    const sessionsDir = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessionsDir);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCEC_RECORD, 'stdio', '--sessions', sessionsDir, '--', process.execPath, STRUCTURED_ONLY],
      stderr: 'ignore',
    });
    expect(await callEach(transport, names)).toEqual(direct);
    await waitFor(() => !pidAlive(transport.pid!), 20_000);

    const [s] = readSessions(sessionsDir);
    expect(
      s!.calls.map((c) => [c.tool, c.status, c.error_code, c.violations, JSON.parse(c.response!).result]),
    ).toEqual([
      ['temperature', 'ok', null, null, { structuredContent: { celsius: 21 } }],
      [
        'failing',
        'failed',
        'tool-error',
        null,
        { structuredContent: { error: 'no station' }, isError: true },
      ],
    ]);
    const replay = await replaySession(s!.dir, { http: { port: 0 }, order: 'strict' });
    temp.defer(async () => {
      await replay.close();
    });
    expect(await callEach(new StreamableHTTPClientTransport(new URL(replay.url)), names)).toEqual(direct);
  }, 60_000);
});
