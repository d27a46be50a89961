import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { replaySession } from '../../src/replay/index.js';
import type { CallToolResult } from '../../src/sim/index.js';
import { answer, initialize, call as mcpCall } from '../support/mcp-messages.js';
import { env, reportValidator, StdioReplay, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();

/** The demo's calls as the recording holds them, each as [tool, args]. */
function recordedCalls(): Array<[string, Record<string, unknown>]> {
  return fixture.demo.wire.map((w) => [w.tool, w.args]);
}

describe('--order any (default)', () => {
  it('answers calls out of recorded order from the matching recordings', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: false });
    const calls = recordedCalls();
    // displays before windows, the Video Player capture before Notepad's.
    const order = [0, 2, 1, 10, 3];
    const outs = [];
    for (const i of order) outs.push(env(await replay.callTool(calls[i]![0], calls[i]![1])));
    expect(outs.map((o) => o.ok)).toEqual([true, true, true, false, true]);
    expect(outs[3]!.error.code).toBe('frame-all-black');
    const report = await replay.close();
    expect(report.calls.map((c) => c.recordedSeq)).toEqual([1, 3, 2, 11, 4]);
    expect(report.exitCode).toBe(0);
    expect(report.firstDivergence).toBeNull();
  });

  it('answers an unmatched call with the nearest recording of its tool, and reports it', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: false });
    const out = env(
      await replay.callTool('find', { window: 'Save As', value: 'Open', sessionId: fixture.demo.sessionId }),
    );
    expect(out.error.code).toBe('selector-matched-3'); // #8, the nearest find: only `value` differs
    const report = await replay.close();
    expect(report.calls[0]).toMatchObject({ outcome: 'nearest', recordedSeq: 8 });
    expect(report.unmatched[0]!.differences).toEqual([
      { path: '/value', recorded: 'Save', live: 'Open', why: 'another value' },
    ]);
    expect(report.exitCode).toBe(0);
  });
});

describe('--order strict', () => {
  it('follows the recorded sequence and ends at the first divergence with exit code 1', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: false, order: 'strict' });
    const calls = recordedCalls();
    expect(env(await replay.callTool(...calls[0]!)).ok).toBe(true);
    const diverged = env(await replay.callTool(...calls[2]!)); // displays where windows was recorded
    expect(diverged.error).toMatchObject({ code: 'replay-diverged', category: 'internal' });
    expect(diverged.error.detail).toContain('nearest is #2 windows');
    await replay.ended;
    // Once diverged, every call is refused, even the one the recording expected.
    expect(env(await replay.callTool(...calls[1]!)).error.code).toBe('replay-diverged');
    const report = await replay.close();
    expect(report.exitCode).toBe(1);
    expect(report.firstDivergence).toMatchObject({
      n: 2,
      tool: 'displays',
      nearest: { seq: 2, tool: 'windows' },
    });
    expect(report.firstDivergence!.differences[0]).toMatchObject({
      path: '/tool',
      recorded: 'windows',
      live: 'displays',
    });
    expect(reportValidator()(report)).toEqual([]);
  });

  it('mcec-replay --order strict --stdio stops at the divergence after writing its answer, exit 1', async () => {
    const replay = new StdioReplay([fixture.demo.sessionDir, '--stdio', '--order', 'strict', '--json']);
    await replay.request('tools/call', { name: 'session-start', arguments: {} });
    const answer = await replay.request('tools/call', {
      name: 'capture',
      arguments: { window: 'Video Player' },
    });
    expect(env(answer.result as CallToolResult).error.code).toBe('replay-diverged');
    // stdin stays open: the replay exits on its own.
    expect(await replay.exited).toBe(1);
    const report = JSON.parse(replay.stderr);
    expect(report.firstDivergence).toMatchObject({ n: 2, tool: 'capture' });
    expect(reportValidator()(report)).toEqual([]);
  });
});

describe('--lockdown', () => {
  it('a changed agent gets replay-unmatched for the call the recording lacks; the replay goes on and exits 1', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: false, lockdown: true });
    const calls = recordedCalls();
    expect(env(await replay.callTool(...calls[0]!)).ok).toBe(true);
    const changed = env(
      await replay.callTool('capture', { window: 'Calculator', sessionId: fixture.demo.sessionId }),
    );
    expect(changed).toMatchObject({ ok: false, sessionId: fixture.demo.sessionId });
    expect(changed.error).toMatchObject({ code: 'replay-unmatched', category: 'internal' });
    expect(changed.error.detail).toMatch(/nearest is #4 capture \(\/window: another value\)/);
    expect(changed.error.lastObservation).toBeUndefined();
    expect(env(await replay.callTool(...calls[1]!)).ok).toBe(true);
    const report = await replay.close();
    expect(report.exitCode).toBe(1);
    expect(report.counts).toMatchObject({ calls: 3, matched: 2, unmatched: 1 });
  });

  it('mcec-replay without --lockdown names a call the nearest recording answered as such, not as unmatched', async () => {
    const replay = new StdioReplay([fixture.demo.sessionDir, '--stdio']);
    await replay.request('tools/call', { name: 'session-start', arguments: {} });
    await replay.request('tools/call', {
      name: 'query',
      arguments: { window: 'Untitled - Notepad', maxNodes: 5, sessionId: fixture.demo.sessionId },
    });
    expect(await replay.end()).toBe(0);
    expect(replay.stderr).toContain('1 answered by the nearest, 0 unmatched');
    expect(replay.stderr).toContain(
      'answered by the nearest: call 2 query {"window":"Untitled - Notepad","maxNodes":5,',
    );
    expect(replay.stderr).not.toMatch(/unmatched: call/);
  });

  it('mcec-replay --lockdown exits 1 naming the first unmatched call', async () => {
    const file = path.join(fixture.work, 'lockdown-report.json');
    const replay = new StdioReplay([fixture.demo.sessionDir, '--stdio', '--lockdown', '--report', file]);
    await replay.request('tools/call', { name: 'session-start', arguments: {} });
    await replay.request('tools/call', {
      name: 'query',
      arguments: { window: 'Untitled - Notepad', maxNodes: 5, sessionId: fixture.demo.sessionId },
    });
    expect(await replay.end()).toBe(1);
    expect(replay.stderr).toContain(
      'first divergence: call 2 query {"window":"Untitled - Notepad","maxNodes":5,',
    );
    expect(replay.stderr).toContain('unmatched: call 2 query');
    expect(replay.stderr).toMatch(/nearest: #5 query/);
    expect(replay.stderr).toMatch(/\/maxNodes: extra: the recorded call had no such argument/);
    const report = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(reportValidator()(report)).toEqual([]);
    expect(report).toMatchObject({
      exitCode: 1,
      options: { lockdown: true },
      firstDivergence: { n: 2, tool: 'query' },
    });
  });
});

describe('a recording of a server that is not MCEC', () => {
  it("answers what it cannot replay as a plain tool error in the replay's words, no MCEC envelope", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-plain-'));
    try {
      const sessionsDir = path.join(dir, 'sessions');
      const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
      const [init, initAnswer] = initialize('acme/files');
      recorder.recordExchange(init, initAnswer, { transport: 'http' });
      const meta = { transport: 'http' as const, mcpSessionId: 'a1b2-c3' };
      recorder.recordExchange(mcpCall(1, 'read', { path: 'x' }), answer(1, { content: [] }), meta);
      // A call the client cancelled: recorded without an answer.
      recorder.beginExchange(mcpCall(2, 'slow', {}), meta).cancelled?.('the client cancelled the call');
      await recorder.close();
      const sessionDir = path.join(sessionsDir, fs.readdirSync(sessionsDir).find((n) => n.includes('acme'))!);

      const replay = await replaySession(sessionDir, { http: false, lockdown: true });
      const unmatched = await replay.callTool('read', { path: 'y' });
      const noAnswer = await replay.callTool('slow', {});
      for (const [result, code] of [
        [unmatched, 'replay-unmatched'],
        [noAnswer, 'replay-no-answer'],
      ] as const) {
        expect(result.isError).toBe(true);
        expect(result.content).toEqual([
          { type: 'text', text: expect.stringMatching(new RegExp(`^${code}: `)) },
        ]);
        expect(JSON.stringify(result.content)).not.toContain('\\"ok\\"');
      }
      expect(JSON.stringify(noAnswer.content)).toContain('the client cancelled the call');
      const report = await replay.close();
      expect(report.calls.map((c) => c.code)).toEqual(['replay-unmatched', 'replay-no-answer']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
