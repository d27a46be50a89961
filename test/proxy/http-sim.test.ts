import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { type ProxyExtras, recordingHttpProxy, simOnHttp } from '../support/sim-http-proxy.js';
import { post, type RawAnswer, waitFor } from './helpers.js';
import { allText, playScriptOverHttp, readSessions } from './sim-script.js';

const TOKEN = 'tok-3f9a1c77e2b54d0e';
const temp = tempDirPerTest();

/** A fresh simulator on an ephemeral port: same seed, same clock, same artifact root every time. */
async function startSim(token: string | undefined = TOKEN) {
  const started = await simOnHttp(path.join(temp.dir, 'sim-sessions'), { token });
  temp.defer(() => started.listener.close());
  return started;
}

async function startProxy(target: string, extras: ProxyExtras = {}) {
  const started = await recordingHttpProxy(target, path.join(temp.dir, 'recorded'), extras);
  temp.defer(started.close);
  return started;
}

const playScript = (url: string) => playScriptOverHttp(url, TOKEN);

const comparable = (a: RawAnswer) => ({
  status: a.status,
  contentType: a.contentType,
  body: a.body.toString('base64'),
});

describe('HTTP proxy in front of the simulator', () => {
  it('answers byte for byte like the simulator, and the recorded session bundles and verifies', async () => {
    const direct = await startSim();
    const expected = await playScript(direct.listener.url);
    await direct.listener.close();

    const behind = await startSim();
    const { recorder, proxy } = await startProxy(behind.listener.url);
    const actual = await playScript(proxy.url);

    expect(actual.map(comparable)).toEqual(expected.map(comparable));
    // the script exercises what it should: an inline PNG with the server's \u002B escaping, protocol faults
    const capture = actual[6]!.body.toString('utf8');
    expect(capture).toContain('"type":"image"');
    expect(capture).toContain('\\u002B');
    expect(JSON.parse(actual[11]!.body.toString()).error.code).toBe(-32700);

    await recorder.close();
    const sessions = readSessions(recorder.sessionsDir);
    const simSession = sessions.find((s) => s.calls.some((c) => c.tool === 'capture'))!;
    expect(simSession).toBeDefined();
    expect(simSession.session.status).toBe('ended');
    expect(simSession.calls.map((c) => [c.tool, c.status, c.transport])).toEqual([
      ['session-start', 'ok', 'http'],
      ['windows', 'ok', 'http'],
      ['find', 'failed', 'http'],
      ['capture', 'ok', 'http'],
      ['capture', 'failed', 'http'],
      ['invoke', 'failed', 'http'],
      ['no-such-tool', 'failed', 'http'],
      ['session-end', 'ok', 'http'],
    ]);
    expect(simSession.calls.map((c) => c.error_code)).toEqual([
      null,
      null,
      'selector-matched-3',
      null,
      'frame-all-black',
      'target-elevated',
      'unknown-tool',
      null,
    ]);
    // the server's name and version reach every session's environment
    for (const s of sessions) {
      expect(JSON.parse(s.session.environment).server).toMatchObject({ name: 'MCEC', version: '3.0.0-sim' });
    }
    const events = sessions.flatMap((s) => s.events);
    const exchanges = events.filter((e) => e.kind === 'exchange').map((e) => e.detail.method);
    expect(exchanges).toEqual(
      expect.arrayContaining([
        'initialize',
        'notifications/initialized',
        'tools/list',
        'ping',
        'bogus/method',
      ]),
    );
    const faults = events.filter((e) => e.kind === 'protocol-fault').map((e) => e.detail.code);
    expect(faults.sort((a, b) => Number(a) - Number(b))).toEqual([-32700, -32601]);
    // the token went over the wire but into no file
    expect(allText(recorder.sessionsDir)).not.toContain(TOKEN);

    for (const s of sessions) {
      const bundle = await buildBundle(s.dir, { output: path.join(temp.dir, `${path.basename(s.dir)}.zip`) });
      const verified = await verifyBundle(bundle.bundle);
      expect(verified.problems).toEqual([]);
      expect(verified.ok).toBe(true);
    }
    expect(allText(temp.dir)).not.toContain(TOKEN);
  });

  it("passes a wrong token's 401 through and records the refused call", async () => {
    const { listener } = await startSim();
    const { recorder, proxy } = await startProxy(listener.url);
    const body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"windows","arguments":{}}}';
    const direct = await post(listener.url, body, { Authorization: 'Bearer wrong-token-123' });
    const proxied = await post(proxy.url, body, { Authorization: 'Bearer wrong-token-123' });
    expect(direct.status).toBe(401);
    expect(comparable(proxied)).toEqual(comparable(direct));
    await recorder.close();
    const calls = readSessions(recorder.sessionsDir).flatMap((s) => s.calls);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: 'windows', status: 'fault', error_code: 'proxy-error' });
    expect(calls[0]!.error_detail).toMatch(/401/);
    expect(allText(recorder.sessionsDir)).not.toContain('wrong-token-123');
  });

  it('answers 502 for a target that is down and records a proxy-error event', async () => {
    const { listener } = await startSim();
    const url = listener.url;
    await listener.close();
    const { recorder, proxy, notices } = await startProxy(url);
    const answer = await post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    expect(answer.status).toBe(502);
    expect(answer.contentType).toMatch(/application\/json/);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: expect.stringMatching(/ECONNREFUSED/) });
    // a tool call after it lands in a session, and the error with it
    const call = await post(
      proxy.url,
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"windows","arguments":{}}}',
    );
    expect(call.status).toBe(502);
    await recorder.close();
    const sessions = readSessions(recorder.sessionsDir);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.calls.map((c) => [c.tool, c.status, c.error_code])).toEqual([
      ['windows', 'fault', 'proxy-error'],
    ]);
    const events = sessions[0]!.events;
    expect(events.filter((e) => e.kind === 'proxy-error').map((e) => e.detail.status)).toEqual([502, 502]);
    expect(events.find((e) => e.kind === 'exchange')?.detail).toMatchObject({ method: 'tools/list' });
    expect(notices.join('\n')).not.toMatch(/no tool call followed/);
  });

  it('writes no session for a run without tool calls: what it saw goes to stderr', async () => {
    const { listener } = await startSim();
    const url = listener.url;
    await listener.close();
    const { recorder, proxy, notices } = await startProxy(url);
    expect((await post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')).status).toBe(502);
    await recorder.close();
    expect(fs.existsSync(recorder.sessionsDir) ? fs.readdirSync(recorder.sessionsDir) : []).toEqual([]);
    const notice = notices.join('\n');
    expect(notice).toMatch(/no tool call followed the handshake/);
    expect(notice).toContain('tools/list');
    expect(notice).toContain('proxy-error');
  });

  it('answers 413 for a body over 1 MiB without forwarding it, like the simulator would', async () => {
    const { listener } = await startSim();
    const { recorder, proxy, notices } = await startProxy(listener.url);
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'clipboard', arguments: { text: 'x'.repeat(1024 * 1024 + 10) } },
    });
    const direct = await post(listener.url, big, { Authorization: `Bearer ${TOKEN}` });
    const proxied = await post(proxy.url, big, { Authorization: `Bearer ${TOKEN}` });
    expect(direct.status).toBe(413);
    expect(proxied.status).toBe(413);
    expect(JSON.parse(proxied.body.toString())).toEqual({ error: expect.stringContaining('1048576') });
    // the proxy still forwards the next call
    const next = await post(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"ping"}', {
      Authorization: `Bearer ${TOKEN}`,
    });
    expect(next.status).toBe(200);
    await recorder.close();
    // no tool call reached the server: no session; the 413 and the ping are on stderr
    expect(readSessions(recorder.sessionsDir)).toEqual([]);
    expect(notices.join('\n')).toMatch(/proxy-error.*|ping/);
    expect(notices.join('\n')).toContain('ping');
  });

  it('survives a client that disconnects mid-call: the call is recorded and the next one works', async () => {
    const { listener } = await startSim();
    const { recorder, proxy } = await startProxy(listener.url);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'wait-for', arguments: { window: 'Notepad', value: 'never-there', timeout: 300 } },
    });
    await new Promise<void>((resolve) => {
      const req = http.request(proxy.url, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
      req.on('error', () => resolve());
      req.end(body);
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    const next = await post(
      proxy.url,
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"windows","arguments":{}}}',
      {
        Authorization: `Bearer ${TOKEN}`,
      },
    );
    expect(next.status).toBe(200);
    // both ran in the simulator's default session; the wait-for's answer still comes (300 ms)
    await waitFor(() => {
      const calls = readSessions(recorder.sessionsDir).flatMap((s) => s.calls);
      return calls.length === 2 && calls.every((c) => c.status !== 'pending');
    });
    await recorder.close();
    const calls = readSessions(recorder.sessionsDir).flatMap((s) => s.calls);
    // the first calls land in the simulator's default session in the order they completed
    expect(calls.map((c) => [c.tool, c.status, c.error_code])).toEqual([
      ['windows', 'ok', null],
      ['wait-for', 'failed', 'wait-condition-timeout'],
    ]);
  });

  it('carries 16 concurrent calls, each answer to its own request', async () => {
    const { listener } = await startSim();
    const { recorder, proxy } = await startProxy(listener.url);
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        post(
          proxy.url,
          JSON.stringify({
            jsonrpc: '2.0',
            id: 100 + i,
            method: 'tools/call',
            params: {
              name: i % 2 ? 'find' : 'windows',
              arguments: { window: 'Notepad', by: 'automationid', value: '15' },
            },
          }),
          { Authorization: `Bearer ${TOKEN}` },
        ),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200));
    expect(answers.map((a) => JSON.parse(a.body.toString()).id)).toEqual(
      Array.from({ length: 16 }, (_, i) => 100 + i),
    );
    await recorder.close();
    const calls = readSessions(recorder.sessionsDir).flatMap((s) => s.calls);
    expect(calls).toHaveLength(16);
    expect(calls.every((c) => c.status === 'ok')).toBe(true);
    expect(calls.map((c) => Number(c.rpc_id)).sort()).toEqual(Array.from({ length: 16 }, (_, i) => 100 + i));
  });
});
