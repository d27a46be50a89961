/**
 * The real-world end of a stdio recorder with a live export: an MCP client (the SDK's StdioClientTransport)
 * closes it, ending its stdin, and sends SIGTERM 2 s later. With the collector down the recorder must still
 * write the export's final counts, say what was not delivered, and exit with the server's code, not by signal.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { STDIO_SHUTDOWN_TIMEOUT_MS } from '../../src/export/live-options.js';
import { calls, events, expectEventsValid, sessionDirs } from '../record/helpers.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { ROOT } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
const SIM_CLI = path.join(ROOT, 'dist/cli/mcec-sim.js');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('mcec-record stdio --otlp closed by an MCP client', () => {
  it('with the collector down: exits with the server code in time, says what was not delivered, logs it', async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close();
    const root = tempDir('mcec-otlp-close-');
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const sessions = path.join(root, 'sessions');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        RECORD_CLI,
        'stdio',
        '--sessions',
        sessions,
        '--otlp',
        url,
        '--',
        process.execPath,
        SIM_CLI,
        '--stdio',
      ],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const client = new Client({ name: 'close-test', version: '1' });
    await client.connect(transport);
    // The SDK does not hand out its child; its exit code and signal are what this test is about.
    const child = (transport as unknown as { _process: ChildProcess })._process;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
      (resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
    );
    await client.callTool({ name: 'displays', arguments: {} });
    await client.callTool({ name: 'windows', arguments: {} });
    const closedAt = Date.now();
    await client.close();
    const exit = await exited;
    expect(exit.signal).toBeNull();
    expect(exit.code).toBe(0);
    // Generous: the bound on the export's wait plus 3 s for the rest of the close on a loaded machine.
    expect(exit.at - closedAt).toBeLessThan(STDIO_SHUTDOWN_TIMEOUT_MS + 3000);
    const dir = path.join(sessions, sessionDirs(sessions)[0]!);
    const spans = calls(dir).length + 1; // a span per call and the session's root span
    const [e] = events(dir, 'otlp-export');
    expect(e?.data).toMatchObject({ spans, exported: 0, dropped: spans, queued: 0 });
    expect(e?.data.lastError).toMatch(/ECONNREFUSED/);
    expect(stderr).toContain(
      `OpenTelemetry export to ${url}: 0 of ${spans} spans delivered, ${spans} dropped: no answer from the collector before shutdown`,
    );
    expectEventsValid(dir);
  }, 30_000);
});
