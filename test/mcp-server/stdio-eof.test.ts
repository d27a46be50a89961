/**
 * `mcec-bundle mcp` over stdio answers every request it has read before it exits on stdin's EOF: a client that
 * pipes its requests and closes its end (`printf ... | mcec-bundle mcp`) gets all its answers.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, collectOutput, ROOT } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
const toolCall = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** Write `messages` to `mcec-bundle mcp`'s stdin at once, close it, and collect the answers until it exits. */
function pipeInto(
  sessionsDir: string,
  messages: unknown[],
): Promise<{ code: number | null; answers: Array<{ id?: unknown; result?: unknown; error?: unknown }> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BUNDLE_CLI, 'mcp', '--sessions', sessionsDir], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const output = collectOutput(child);
    // A server that waits for an answer that never comes would hang the suite: cut it off.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const answers = output.stdout
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { id?: unknown });
      resolve({ code, answers });
    });
    child.stdin!.end(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
  });
}

describe('mcec-bundle mcp on stdio, stdin closed right after the requests', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('mcec-mcp-eof-');
    for (const [i, id] of ['eof000000001', 'eof000000002', 'eof000000003'].entries()) {
      const s = FixtureSession.create(dir, {
        sessionId: id,
        startedAt: new Date(Date.UTC(2026, 2, 1, 10, i)),
      });
      s.call(calls.findSave());
      s.call(calls.ambiguousFind());
      s.end({ passed: false, reason: 'fixture' });
      s.close();
    }
  });
  afterAll(() => removeDir(dir));

  it('answers initialize and every tools/call, then exits 0', async () => {
    const run = await pipeInto(dir, [
      INITIALIZE,
      INITIALIZED,
      toolCall(2, 'list_sessions'),
      toolCall(3, 'triage'),
      toolCall(4, 'get_summary', { session: 'eof000000002' }),
    ]);
    expect(run.code).toBe(0);
    // In the order they finish, not as asked.
    expect(run.answers.map((a) => a.id as number).sort()).toEqual([1, 2, 3, 4]);
    for (const a of run.answers) expect(a.result, JSON.stringify(a.error)).toBeDefined();
  });

  it('does not wait for a request the client cancelled', async () => {
    const run = await pipeInto(dir, [
      INITIALIZE,
      INITIALIZED,
      toolCall(2, 'list_sessions'),
      toolCall(3, 'triage'),
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 3, reason: 'changed my mind' },
      },
    ]);
    expect(run.code).toBe(0);
    expect(run.answers.map((a) => a.id)).toContain(2);
  });
});
