/**
 * The FAIL rules that are not about recovery, through the real HTTP proxy in front of the simulator: an
 * emergency stop, a proxy error and a protocol error on a tools/call each fail a run even when a retry
 * of the same call on the same target succeeded afterwards.
 */
import { describe, expect, it } from 'vitest';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { sessionIdFrom } from '../proxy/sim-script.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { runBundle, send, sessionDirOf, simBehindHttpProxy, toolCall } from './helpers.js';

const temp = tempDirPerTest('mcec-verdict-');

describe('FAIL without an unrecovered failure, through the HTTP proxy', () => {
  it('an emergency stop fails the run even though the same capture succeeded once released', async () => {
    const rig = await simBehindHttpProxy(temp.dir);
    let sid = '';
    try {
      sid = sessionIdFrom((await send(rig.url, toolCall(1, 'session-start', {}))).text);
      const capture = (id: number) => toolCall(id, 'capture', { window: 'Notepad', sessionId: sid });
      await send(rig.url, capture(2));
      rig.sim.control.emergencyStop(true);
      expect((await send(rig.url, capture(3))).text).toContain('emergency-stopped');
      rig.sim.control.emergencyStop(false);
      await send(rig.url, capture(4));
      await send(rig.url, toolCall(5, 'session-end', { sessionId: sid }));
    } finally {
      await rig.close();
    }
    const summary = await summarizeSession(sessionDirOf(rig.sessionsDir, sid));
    expect(summary.failures.map((f) => [f.seq, f.code, f.recovered])).toEqual([
      [3, 'emergency-stopped', true],
    ]);
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReason).toBe('an emergency stop happened');
    const list = await runBundle(['list', '--failed', '--json', '--sessions', rig.sessionsDir]);
    expect((JSON.parse(list.stdout) as Array<{ id: string }>).map((r) => r.id)).toContain(sid);
  });

  it('a proxy error (502: MCEC cut the connection) fails the run even when the retry succeeded', async () => {
    const rig = await simBehindHttpProxy(temp.dir);
    let sid = '';
    try {
      sid = sessionIdFrom((await send(rig.url, toolCall(1, 'session-start', {}))).text);
      rig.cut = true;
      const cut = await send(rig.url, toolCall(2, 'windows', { sessionId: sid }));
      expect(cut.status).toBe(502);
      rig.cut = false;
      expect((await send(rig.url, toolCall(3, 'windows', { sessionId: sid }))).status).toBe(200);
      await send(rig.url, toolCall(4, 'session-end', { sessionId: sid }));
    } finally {
      await rig.close();
    }
    const summary = await summarizeSession(sessionDirOf(rig.sessionsDir, sid));
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReason).toMatch(/^call #2 windows hit a proxy error: proxy-error 502: /);
    expect(summary.failingCall).toMatchObject({ seq: 2, tool: 'windows', code: 'proxy-error' });
  });

  it('a protocol error answering a tools/call fails the run', async () => {
    const rig = await simBehindHttpProxy(temp.dir);
    let sid = '';
    try {
      sid = sessionIdFrom((await send(rig.url, toolCall(1, 'session-start', {}))).text);
      // No "jsonrpc": "2.0": MCEC (and the simulator) answer -32600 instead of running the tool.
      const bad = JSON.stringify({
        id: 2,
        method: 'tools/call',
        params: { name: 'windows', arguments: { sessionId: sid } },
      });
      expect((await send(rig.url, bad)).text).toContain('-32600');
      await send(rig.url, toolCall(3, 'windows', { sessionId: sid }));
      await send(rig.url, toolCall(4, 'session-end', { sessionId: sid }));
    } finally {
      await rig.close();
    }
    const summary = await summarizeSession(sessionDirOf(rig.sessionsDir, sid));
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReason).toBe('call #2 windows got a protocol error (-32600) instead of an answer');
  });
});
