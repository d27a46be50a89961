/**
 * Routing as MCEC means its ids (mcec-wire §8), through `wrap` around the simulator: refusals stamped with the
 * default id land in the session the call named, unknown-session creates no session, the provisioning
 * tools' sessionId routes nothing, and nothing is written for a session without a tool call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRecorder, type Recorder } from '../../src/record/index.js';
import { listSessionSummaries } from '../../src/sessions/list.js';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { type CallToolResult, createSimulator, envelopeOf, type Simulator } from '../../src/sim/index.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { calls, events, expectEventsValid, sessionDirs } from './helpers.js';

const temp = tempDirPerTest();

interface Rig {
  sim: Simulator;
  recorder: Recorder;
  notices: string[];
  call(
    tool: string,
    args?: Record<string, unknown>,
  ): Promise<{ sessionId: string; ok: boolean; code?: string }>;
}

function rig(): Rig {
  const sim = createSimulator({ seed: 5, sessionsRoot: path.join(temp.dir, 'sim'), pollMs: 5 });
  const notices: string[] = [];
  const recorder = createRecorder({
    sessionsDir: path.join(temp.dir, 'rec'),
    stderr: (line) => notices.push(line),
  });
  const dispatch = recorder.wrap((tool, args) => sim.callTool(tool, args));
  return {
    sim,
    recorder,
    notices,
    async call(tool, args = {}) {
      const env = envelopeOf((await dispatch(tool, args)) as CallToolResult);
      return {
        sessionId: env.sessionId as string,
        ok: env.ok,
        code: env.ok ? undefined : env.error.code,
      };
    },
  };
}

/** The recorded session dir of `id`. */
function dirOf(id: string): string {
  const name = sessionDirs(path.join(temp.dir, 'rec')).find((d) => d.endsWith(`-${id}`));
  if (!name) throw new Error(`no session dir for ${id}`);
  return path.join(temp.dir, 'rec', name);
}

const rows = (id: string) => calls(dirOf(id)).map((c) => [c.tool, c.status, c.error_code]);

describe('routing through wrap against the simulator', () => {
  it('files pre-routing refusals in the session the call named, with the emergency stop there', async () => {
    const r = rig();
    const def = (await r.call('windows')).sessionId;
    const sid = (await r.call('session-start')).sessionId;
    await r.call('find', { window: 'Notepad', by: 'automationid', value: '15', sessionId: sid });

    r.sim.control.emergencyStop(true);
    const stopped = await r.call('capture', { window: 'Notepad', sessionId: sid });
    expect(stopped).toEqual({ sessionId: def, ok: false, code: 'emergency-stopped' }); // stamped with the default
    r.sim.control.emergencyStop(false);
    r.sim.control.consentPending(true);
    expect((await r.call('invoke', { window: 'Notepad', value: 'x', sessionId: sid })).code).toBe(
      'consent-pending',
    );
    r.sim.control.consentPending(false);
    r.sim.control.bootstrapOnly(true);
    expect((await r.call('query', { window: 'Notepad', sessionId: sid })).code).toBe('bootstrap-only');
    r.sim.control.bootstrapOnly(false);
    r.sim.control.agentCommands(false);
    expect((await r.call('session-status', { sessionId: ` ${sid} ` })).code).toBe('agent-commands-disabled');
    r.sim.control.agentCommands(true);
    // a refusal of a call that named no session stays in the default session
    r.sim.control.emergencyStop(true);
    expect((await r.call('displays')).code).toBe('emergency-stopped');
    r.sim.control.emergencyStop(false);
    await r.recorder.close();

    expect(sessionDirs(path.join(temp.dir, 'rec'))).toHaveLength(2);
    expect(rows(sid)).toEqual([
      ['session-start', 'ok', null],
      ['find', 'ok', null],
      ['capture', 'failed', 'emergency-stopped'],
      ['invoke', 'failed', 'consent-pending'],
      ['query', 'failed', 'bootstrap-only'],
      ['session-status', 'failed', 'agent-commands-disabled'],
    ]);
    expect(events(dirOf(sid), 'emergency-stop').map((e) => e.call_seq)).toEqual([3]);
    expect(rows(def)).toEqual([
      ['windows', 'ok', null],
      ['displays', 'failed', 'emergency-stopped'],
    ]);
    // the session the agent was in shows the stop, and fails
    const summary = await summarizeSession(dirOf(sid));
    expect(summary.events.emergencyStop).toBe(true);
    expect(summary.verdict).toBe('FAIL');
    expectEventsValid(dirOf(sid));
  });

  it('unknown-session creates no session: the call fails in the current session, naming the rejected id', async () => {
    const r = rig();
    const sid = (await r.call('session-start')).sessionId;
    await r.call('displays', { sessionId: sid });
    for (const bad of ['feedfeedfeed', '   ', '../escape'])
      expect(await r.call('find', { value: 'x', sessionId: bad })).toMatchObject({
        sessionId: bad,
        code: 'unknown-session',
      });
    // ending an id nobody started is ended:false, stamped with that id: no session for it either
    expect(await r.call('session-end', { sessionId: 'abcabcabcabc' })).toMatchObject({ ok: true });
    await r.recorder.close();

    expect(sessionDirs(path.join(temp.dir, 'rec'))).toEqual([expect.stringMatching(new RegExp(`-${sid}$`))]);
    const rowsOf = calls(dirOf(sid));
    expect(rowsOf.map((c) => [c.tool, c.error_code])).toEqual([
      ['session-start', null],
      ['displays', null],
      ['find', 'unknown-session'],
      ['find', 'unknown-session'],
      ['find', 'unknown-session'],
      ['session-end', null],
    ]);
    expect(rowsOf.slice(2, 5).map((c) => JSON.parse(c.envelope!).sessionId)).toEqual([
      'feedfeedfeed',
      '   ',
      '../escape',
    ]);
    expect(rowsOf[2]!.error_detail).toContain("'feedfeedfeed'");
    // no violation: the rejected id was never used as a session
    expect(rowsOf.every((c) => c.violations === null)).toBe(true);
  });

  it("a first call refused unknown-session lands in the recorder's default session", async () => {
    const r = rig();
    expect((await r.call('find', { value: 'x', sessionId: 'feedfeedfeed' })).code).toBe('unknown-session');
    await r.recorder.close();
    expect(sessionDirs(path.join(temp.dir, 'rec'))).toEqual([
      expect.stringMatching(new RegExp(`-${r.recorder.defaultSessionId}$`)),
    ]);
    expect(rows(r.recorder.defaultSessionId)).toEqual([['find', 'failed', 'unknown-session']]);
  });

  it("a call started before the server's default was learned is filed there, not in a placeholder", async () => {
    const sim = createSimulator({ seed: 5, sessionsRoot: path.join(temp.dir, 'sim'), pollMs: 5 });
    const recorder = createRecorder({ sessionsDir: path.join(temp.dir, 'rec'), stderr: () => {} });
    let release: (value: unknown) => void = () => {};
    const dispatch = recorder.wrap((tool, args) =>
      tool === 'wait-for' ? new Promise((resolve) => (release = resolve)) : sim.callTool(tool, args),
    );
    const def = envelopeOf((await dispatch('windows', {})) as CallToolResult).sessionId as string;
    // The agent's next call starts before the queue has processed the first call's answer.
    const waiting = dispatch('wait-for', { name: 'Save' });
    await recorder.flush();
    // While it is in flight its pending row is in the server's default session: no second session dir.
    expect(sessionDirs(path.join(temp.dir, 'rec'))).toEqual([expect.stringMatching(new RegExp(`-${def}$`))]);
    expect(calls(dirOf(def)).map((c) => [c.tool, c.status])).toEqual([
      ['windows', 'ok'],
      ['wait-for', 'pending'],
    ]);
    release(await sim.callTool('windows', {}));
    await waiting;
    await recorder.close();
    expect(rows(def).map((row) => row[0])).toEqual(['windows', 'wait-for']);
  });

  it('provision-session and end-session: their sessionId names an install, not a session', async () => {
    const r = rig();
    const def = (await r.call('windows')).sessionId;
    const sid = (await r.call('session-start')).sessionId;
    const provisioned = await r.call('provision-session', { sessionId: 'install-0001' });
    expect(provisioned.sessionId).toBe(def);
    expect((await r.call('end-session', { sessionId: sid, token: 't' })).sessionId).toBe(def);
    await r.recorder.close();
    expect(rows(def).map((row) => row[0])).toEqual(['windows', 'provision-session', 'end-session']);
    expect(rows(sid).map((row) => row[0])).toEqual(['session-start']);
    expect(sessionDirs(path.join(temp.dir, 'rec'))).toHaveLength(2);
  });

  it('keeps at most 1,000 handshake events before the first call, and says how many it did not keep', async () => {
    const recorder = createRecorder({ sessionsDir: path.join(temp.dir, 'rec'), transport: 'stdio' });
    for (let id = 1; id <= 1005; id += 1)
      recorder.recordExchange({ jsonrpc: '2.0', id, method: 'ping' }, { jsonrpc: '2.0', id, result: {} });
    recorder.recordExchange(
      { jsonrpc: '2.0', id: 2000, method: 'tools/call', params: { name: 'windows', arguments: {} } },
      { jsonrpc: '2.0', id: 2000, result: { content: [{ type: 'text', text: '{"ok":true,"result":{}}' }] } },
    );
    await recorder.close();
    const dir = dirOf(recorder.defaultSessionId);
    expect(events(dir, 'exchange')).toHaveLength(1000);
    expect(events(dir, 'record-failure').map((e) => e.data)).toEqual([
      { stage: 'event', message: '5 handshake events before the first call were not kept', lost: 0 },
    ]);
    expectEventsValid(dir);
  });

  it('writes no dir for a session without a tool call; steps before any call join the first session', async () => {
    const r = rig();
    r.recorder.step(undefined, 'connect', 'passed');
    await r.recorder.flush();
    expect(fs.existsSync(path.join(temp.dir, 'rec'))).toBe(false);
    const sid = (await r.call('session-start')).sessionId;
    // declared for a session that never gets a call: not written, said on stderr
    r.recorder.step('0000deadbeef', 'orphan step', 'failed');
    await r.recorder.end('0000deadbeef', { passed: false });
    await r.recorder.close();
    expect(sessionDirs(path.join(temp.dir, 'rec'))).toEqual([expect.stringMatching(new RegExp(`-${sid}$`))]);
    expect(events(dirOf(sid), 'step').map((e) => e.data.name)).toEqual(['connect']);
    expect(r.notices.join('\n')).toMatch(/session 0000deadbeef holds no tool call/);
    const listed = await listSessionSummaries(path.join(temp.dir, 'rec'));
    expect(listed.map((l) => l.id)).toEqual([sid]);
  });
});
