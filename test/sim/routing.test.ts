/** The simulator routes sessions and answers id-less calls the way the real server does (mcec-wire §8). */
import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/sim/index.js';
import { call, simulatorsInTempDir } from './helpers.js';

const tmp = simulatorsInTempDir({ seed: 11, now: () => new Date('2026-07-01T23:30:05.123Z'), pollMs: 5 });
const sim = tmp.sim;

const HEX12 = /^[0-9a-f]{12}$/;

describe('the default session', () => {
  it('has a real 12-hex id from the first call, on every envelope of calls that name no session', async () => {
    const s = sim();
    const first = await call(s, 'windows');
    expect(first.env.sessionId).toMatch(HEX12);
    const def = first.env.sessionId;
    const status = await call(s, 'session-status');
    expect(status.env.sessionId).toBe(def);
    expect(status.env.result!.sessionId).toBe(def);
    // a failure and an unknown tool in the default session carry its id too
    expect((await call(s, 'find', { window: 'Save As', value: 'Save' })).env.sessionId).toBe(def);
    expect((await call(s, 'teleport')).env.sessionId).toBe(def);
    // a started session gets its own id; calls naming it carry it, calls naming none still the default's
    const started = (await call(s, 'session-start')).env.sessionId!;
    expect(started).toMatch(HEX12);
    expect(started).not.toBe(def);
    expect((await call(s, 'displays', { sessionId: started })).env.sessionId).toBe(started);
    expect((await call(s, 'displays', { sessionId: ` ${started} ` })).env.sessionId).toBe(started);
    expect((await call(s, 'displays')).env.sessionId).toBe(def);
  });

  it('ending the default session starts a fresh one on the next call', async () => {
    const s = sim();
    const def = (await call(s, 'displays')).env.sessionId!;
    const end = await call(s, 'session-end', { sessionId: def });
    expect(end.env).toMatchObject({ ok: true, sessionId: def, result: { sessionId: def, ended: true } });
    const next = (await call(s, 'displays')).env.sessionId!;
    expect(next).toMatch(HEX12);
    expect(next).not.toBe(def);
  });
});

describe('refusals before routing carry the default id, not the one the call named', () => {
  async function started(s: Simulator): Promise<{ def: string; sid: string }> {
    const def = (await call(s, 'displays')).env.sessionId!;
    const sid = (await call(s, 'session-start')).env.sessionId!;
    return { def, sid };
  }

  it('emergency-stopped (latched through the control and through send_command)', async () => {
    const s = sim();
    const { def, sid } = await started(s);
    s.control.emergencyStop(true);
    for (const name of ['capture', 'session-status', 'session-end', 'teleport']) {
      const { env } = await call(s, name, { window: 'Notepad', sessionId: sid });
      expect(env).toMatchObject({ ok: false, sessionId: def, error: { code: 'emergency-stopped' } });
    }
    s.control.emergencyStop(false);
    await call(s, 'send_command', { command: 'sim:emergency-stop on', sessionId: sid });
    expect((await call(s, 'find', { value: 'x', sessionId: sid })).env).toMatchObject({
      sessionId: def,
      error: { code: 'emergency-stopped', category: 'internal' },
    });
    await call(s, 'send_command', { command: 'sim:emergency-stop off' });
    expect((await call(s, 'displays', { sessionId: sid })).env).toMatchObject({ ok: true, sessionId: sid });
  });

  it('consent-pending (observations still served), bootstrap-only, agent-commands-disabled on session-*', async () => {
    const s = sim();
    const { def, sid } = await started(s);

    s.control.consentPending(true);
    expect((await call(s, 'invoke', { window: 'Notepad', value: 'x', sessionId: sid })).env).toMatchObject({
      sessionId: def,
      error: { code: 'consent-pending', category: 'internal' },
    });
    expect((await call(s, 'displays', { sessionId: sid })).env).toMatchObject({ ok: true, sessionId: sid });
    s.control.consentPending(false);

    await call(s, 'send_command', { command: 'sim:bootstrap-only on' });
    expect((await call(s, 'capture', { window: 'Notepad', sessionId: sid })).env).toMatchObject({
      sessionId: def,
      error: { code: 'bootstrap-only' },
    });
    await call(s, 'send_command', { command: 'sim:bootstrap-only off' });

    s.control.agentCommands(false);
    // the session-* tools are refused before routing; the routed tools after it, in their session
    expect((await call(s, 'session-status', { sessionId: sid })).env).toMatchObject({
      sessionId: def,
      error: { code: 'agent-commands-disabled' },
    });
    expect((await call(s, 'displays', { sessionId: sid })).env).toMatchObject({
      sessionId: sid,
      error: { code: 'agent-commands-disabled' },
    });
    s.control.agentCommands(true);
  });

  it('session-end without a sessionId is bad-arguments in the default session; an unknown id is ended:false', async () => {
    const s = sim();
    const { def } = await started(s);
    for (const args of [{}, { sessionId: '   ' }]) {
      expect((await call(s, 'session-end', args)).env).toMatchObject({
        sessionId: def,
        error: { code: 'bad-arguments', category: 'invalid-argument' },
      });
    }
    expect((await call(s, 'session-end', { sessionId: 'abcdefabcdef' })).env).toMatchObject({
      ok: true,
      sessionId: 'abcdefabcdef',
      result: { sessionId: 'abcdefabcdef', ended: false },
    });
  });
});

describe('unknown-session', () => {
  it('echoes the rejected id as sent, blank ones included, and does not create it', async () => {
    const s = sim();
    const def = (await call(s, 'displays')).env.sessionId!;
    for (const id of ['0123456789ab', '   ', 'not a session']) {
      const { env } = await call(s, 'find', { value: 'x', sessionId: id });
      expect(env).toMatchObject({ ok: false, sessionId: id, error: { code: 'unknown-session' } });
      expect(env.error!.detail).toContain(`'${id}'`);
    }
    expect((await call(s, 'session-status', { sessionId: 'feedfeedfeed' })).env).toMatchObject({
      sessionId: 'feedfeedfeed',
      error: { code: 'unknown-session' },
    });
    expect((await call(s, 'displays', { sessionId: '0123456789ab' })).env.error?.code).toBe(
      'unknown-session',
    );
    expect((await call(s, 'displays')).env.sessionId).toBe(def);
  });
});

describe('id-less tools/call', () => {
  const callMsg = (extra: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    method: 'tools/call',
    params: { name: 'displays', arguments: {} },
    ...extra,
  });

  it('runs a tools/call without an id or with id null and answers with id null', async () => {
    const s = sim();
    for (const msg of [callMsg({}), callMsg({ id: null })]) {
      const answer = await s.handle(msg);
      expect(answer).toMatchObject({ jsonrpc: '2.0', id: null, result: { isError: false } });
    }
    // initialize, ping and tools/list are answered the same way; notifications and unknown methods are not
    expect(await s.handle({ jsonrpc: '2.0', method: 'ping' })).toEqual({
      jsonrpc: '2.0',
      id: null,
      result: {},
    });
    expect(await s.handle({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeNull();
    expect(await s.handle({ jsonrpc: '2.0', method: 'bogus/method', id: null })).toBeNull();
    expect(await s.handle({ jsonrpc: '2.0', method: 'bogus/method', id: 3 })).toMatchObject({
      id: 3,
      error: { code: -32601 },
    });
  });

  it('initialize carries commandAccess and instructions', async () => {
    const answer = (await sim().handle({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })) as {
      result: Record<string, unknown>;
    };
    expect(answer.result).toMatchObject({
      serverInfo: { name: 'MCEC' },
      commandAccess: { gatedTools: ['launch'], enabledRawCommands: [] },
      instructions: expect.any(String),
    });
  });
});
