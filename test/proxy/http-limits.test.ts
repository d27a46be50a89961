import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { MAX_RECORD_BYTES_LIMIT } from '../../src/proxy/bounded.js';
import { startHttpProxy } from '../../src/proxy/http.js';
import type { Recorder } from '../../src/record/index.js';
import { decideVerdict, readVerdictFacts } from '../../src/report/verdict.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { expectEventsValid } from '../record/helpers.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { type ProxyExtras, recordingHttpProxy, simOnHttp } from '../support/sim-http-proxy.js';
import { slowClients } from '../support/slow-clients.js';
import { collectingRecorder, post, startServer, waitFor } from './helpers.js';
import { readSessions } from './sim-script.js';

// Timeouts, oversize answers and request paths, through real HTTP: the simulator where it can play the part,
// small hand-written servers where the test must decide when (or how much) the target answers.
const MiB = 1024 * 1024;
const TOKEN = 'tok-limits-5e1d0c';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const SID = '5f19c9c01a3f';
const temp = tempDirPerTest('mcec-limits-');

async function startSim() {
  const { listener } = await simOnHttp(path.join(temp.dir, 'sim-sessions'), { token: TOKEN });
  temp.defer(() => listener.close());
  return listener;
}

async function startProxy(target: string, extras: ProxyExtras = {}) {
  const started = await recordingHttpProxy(target, path.join(temp.dir, 'recorded'), extras);
  temp.defer(started.close);
  return started;
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** A CallToolResult answer whose envelope says ok or not, in the server's JSON-RPC shape. */
function toolAnswer(id: number, ok: boolean, extra = ''): string {
  const envelope = ok
    ? { ok: true, sessionId: SID, result: { recording: 'C:\\\\mcec\\\\rec.gif', extra } }
    : { ok: false, sessionId: SID, error: { code: 'consent-denied', category: 'internal', detail: 'no' } };
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: !ok },
  });
}

/** A target that holds every request until the test releases it with the bytes to answer. */
async function heldTarget() {
  const held: Array<(body: string) => void> = [];
  const server = await startServer((req, res) => {
    req.resume();
    req.on('end', () =>
      held.push((body) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(body);
      }),
    );
  });
  temp.defer(() => server.close());
  return { url: server.url, held };
}

function sessionOf(recorder: Recorder) {
  const sessions = readSessions(recorder.sessionsDir).filter((s) => s.calls.length > 0);
  expect(sessions).toHaveLength(1);
  return sessions[0]!;
}

describe('HTTP proxy timeouts', () => {
  it('answers 504 naming the tool, records a proxy-error row, then replaces it with the late real answer', async () => {
    const target = await heldTarget();
    const { recorder, proxy } = await startProxy(target.url, {
      timeoutMs: 60_000,
      toolTimeoutsMs: { record: 100 },
    });
    const answer = await post(proxy.url, toolCall(3, 'record', { action: 'oneshot', sessionId: SID }));
    expect(answer.status).toBe(504);
    const error = JSON.parse(answer.body.toString()).error as string;
    expect(error).toMatch(/within 100 ms \(tool record\)/);
    expect(error).toMatch(/may still run on the server/);
    expect(error).toMatch(/--timeout record=/);

    // What the log says while MCEC is still working: the call is a proxy-error fault naming the timeout.
    await recorder.flush();
    let s = sessionOf(recorder);
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]).toMatchObject({ tool: 'record', status: 'fault', error_code: 'proxy-error' });
    expect(s.calls[0]!.error_detail).toMatch(/504.*100 ms/);
    expect(s.events.find((e) => e.kind === 'proxy-error')?.detail).toMatchObject({
      status: 504,
      tool: 'record',
      timeoutMs: 100,
      clientAnswered: true,
      transport: 'http',
    });

    // MCEC answers after all: the row becomes the real outcome; an event says the client had got 504.
    await waitFor(() => target.held.length === 1);
    target.held[0]!(toolAnswer(3, true));
    await waitFor(() => {
      void recorder.flush();
      return sessionOf(recorder).calls[0]!.status === 'ok';
    });
    await recorder.flush();
    s = sessionOf(recorder);
    expect(s.calls[0]).toMatchObject({ tool: 'record', status: 'ok', ok: 1, error_code: null });
    const late = s.events.find((e) => e.kind === 'late-answer');
    expect(late?.call_seq).toBe(s.calls[0]!.seq);
    expect(late?.detail).toMatchObject({ client: 'proxy-timeout' });
    expect(late?.detail.reason).toMatch(/504.*100 ms/);
    await recorder.close();
    expectEventsValid(s.dir);
    // The agent saw a 504 whatever MCEC answered later: the run is FAIL, and says why.
    const reader = SessionReader.open(s.dir);
    try {
      const decision = reader.snapshot(() => decideVerdict(readVerdictFacts(reader)));
      expect(decision.verdict).toBe('FAIL');
      expect(decision.reason).toMatch(/call #\d+ record timed out at the proxy: the client got 504/);
    } finally {
      reader.close();
    }
    // the proxy goes on serving
    const next = post(proxy.url, toolCall(4, 'windows', { sessionId: SID }));
    await waitFor(() => target.held.length === 2);
    target.held[1]!(toolAnswer(4, true));
    expect((await next).status).toBe(200);
  });

  it('against the simulator: a 504 on wait-for, then its real failure recorded when it comes, others served meanwhile', async () => {
    const sim = await startSim();
    const { recorder, proxy } = await startProxy(sim.url, { toolTimeoutsMs: { 'wait-for': 200 } });
    const start = await post(proxy.url, toolCall(1, 'session-start', {}), AUTH);
    const sid = JSON.parse(JSON.parse(start.body.toString()).result.content[0].text).sessionId as string;
    const waiting = post(
      proxy.url,
      toolCall(2, 'wait-for', { window: 'Notepad', value: 'never-there', timeout: 1500, sessionId: sid }),
      AUTH,
    );
    const windows = await post(proxy.url, toolCall(3, 'windows', { sessionId: sid }), AUTH);
    expect(windows.status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/tool wait-for/);
    await waitFor(() => {
      void recorder.flush();
      return readSessions(recorder.sessionsDir).some((s) => s.events.some((e) => e.kind === 'late-answer'));
    }, 10_000);
    await recorder.close();
    const s = readSessions(recorder.sessionsDir).find((x) => x.calls.some((c) => c.tool === 'wait-for'))!;
    const wait = s.calls.find((c) => c.tool === 'wait-for')!;
    expect(wait).toMatchObject({ status: 'failed', error_code: 'wait-condition-timeout', ok: 0 });
    expect(s.calls.map((c) => c.tool)).toEqual(['session-start', 'wait-for', 'windows']);
    expect(s.events.find((e) => e.kind === 'late-answer')).toMatchObject({
      call_seq: wait.seq,
      detail: { client: 'proxy-timeout' },
    });
    expectEventsValid(s.dir);
  });

  it("waits for a call's own timeout argument plus 30 s unless the tool has its own setting", async () => {
    const slow = await startServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end(toolAnswer(1, true)), 300));
    });
    temp.defer(() => slow.close());
    const recorder = collectingRecorder();
    const proxy = await startHttpProxy({ listen: { port: 0 }, target: slow.url, recorder, timeoutMs: 100 });
    temp.defer(() => proxy.close());
    // 100 ms would cut it; the call asked MCEC to wait 200 ms, so the proxy waits 30.2 s
    expect((await post(proxy.url, toolCall(1, 'wait-for', { timeout: 200 }))).status).toBe(200);
    expect((await post(proxy.url, toolCall(1, 'capture', {}))).status).toBe(504);
    const strict = await startHttpProxy({
      listen: { port: 0 },
      target: slow.url,
      recorder,
      toolTimeoutsMs: { 'wait-for': 100 },
    });
    temp.defer(() => strict.close());
    expect((await post(strict.url, toolCall(1, 'wait-for', { timeout: 200 }))).status).toBe(504);
  });

  it('records the answer of a client that disconnected, with a late-answer event saying so', async () => {
    const target = await heldTarget();
    const { recorder, proxy } = await startProxy(target.url);
    // The proxy learns of the disconnect from a socket event; the answer must come after it, or the race
    // (answer first) is a plain exchange. Watch the recorder's port for the proxy's clientLeft.
    const left: string[] = [];
    const begin = recorder.beginExchange.bind(recorder);
    recorder.beginExchange = (request, meta) => {
      const pending = begin(request, meta);
      return {
        ...pending,
        clientLeft: (reason: string) => {
          left.push(reason);
          pending.clientLeft(reason);
        },
      };
    };
    await new Promise<void>((resolve) => {
      const req = http.request(proxy.url, { method: 'POST' });
      req.on('error', () => resolve());
      req.end(toolCall(5, 'request-command-access', { sessionId: SID }));
      void waitFor(() => target.held.length === 1).then(() => {
        req.destroy();
        resolve();
      });
    });
    await waitFor(() => left.length === 1);
    await recorder.flush();
    expect(sessionOf(recorder).calls[0]!.status).toBe('pending');
    target.held[0]!(toolAnswer(5, false));
    await waitFor(() => {
      void recorder.flush();
      return sessionOf(recorder).events.some((e) => e.kind === 'late-answer');
    });
    await recorder.close();
    const s = sessionOf(recorder);
    expect(s.calls[0]).toMatchObject({ status: 'failed', error_code: 'consent-denied' });
    expect(s.events.find((e) => e.kind === 'late-answer')?.detail).toMatchObject({ client: 'disconnected' });
    expect(s.events.some((e) => e.kind === 'proxy-error')).toBe(false);
  });
});

describe('HTTP proxy body deadline', () => {
  it('is not starved by 16 clients trickling their bodies: each gets 408 at the deadline, others are served', async () => {
    const sim = await startSim();
    const recorder = collectingRecorder();
    const proxy = await startHttpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      target: sim.url,
      recorder,
      bodyTimeoutMs: 1000,
    });
    temp.defer(() => proxy.close());
    // The attack on the proxy's 16 slots in front of MCEC: a byte of body every so often.
    const slow = await slowClients(proxy.url, 16, { everyMs: 200, headers: AUTH });
    temp.defer(async () => {
      for (const c of slow) c.destroy();
    });
    const ask = () => post(proxy.url, toolCall(1, 'displays', {}), AUTH);
    const deadline = Date.now() + 15_000;
    let answer = await ask();
    while (answer.status !== 200 && Date.now() < deadline) {
      expect(answer.status).toBe(503); // MCEC's own, from the proxy in its place
      await new Promise((r) => setTimeout(r, 100));
      answer = await ask();
    }
    expect(answer.status).toBe(200);
    await Promise.all(slow.map((c) => c.closed));
    expect(slow.map((c) => c.status())).toEqual(Array(16).fill(408));
    const tooSlow = recorder.collected.events.filter((e) => e.detail.status === 408);
    expect(tooSlow).toHaveLength(16);
    expect(tooSlow[0]!.detail).toMatchObject({ reason: 'body too slow', timeoutMs: 1000, server: 'mcec' });
    // None of them reached the simulator: only the served call was forwarded.
    expect(recorder.collected.begun.every((b) => (b.request as { id?: unknown }).id === 1)).toBe(true);
  });
});

describe('HTTP proxy with answers over the recording limit', () => {
  it('streams a 3 MiB answer unchanged, records it as oversize, and serves other clients meanwhile', async () => {
    // The target sends half of the big answer, then waits until the test has been served a small one.
    const filler = 'x'.repeat(3 * MiB);
    const big = (isError: boolean) =>
      Buffer.from(
        `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${filler}"}],"isError":${isError}}}`,
      );
    const held = { resume: null as (() => void) | null };
    const resumeBig = async () => {
      await waitFor(() => held.resume !== null);
      const resume = held.resume!;
      held.resume = null;
      resume();
    };
    const target = await startServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const name = JSON.parse(Buffer.concat(parts).toString()).params.name as string;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        if (name === 'windows') {
          res.end(toolAnswer(2, true));
          return;
        }
        const body = big(name === 'get-text');
        const half = body.length >> 1;
        res.write(body.subarray(0, half));
        held.resume = () => res.end(body.subarray(half));
      });
    });
    temp.defer(() => target.close());
    const { recorder, proxy } = await startProxy(target.url, { maxRecordBytes: MiB });

    const capture = post(proxy.url, toolCall(1, 'capture', { sessionId: SID }));
    await waitFor(() => held.resume !== null);
    const small = await post(proxy.url, toolCall(2, 'windows', { sessionId: SID }));
    expect(small.status).toBe(200);
    await resumeBig();
    const received = await capture;
    expect(received.status).toBe(200);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(received.body)).toBe(sha(big(false)));

    // a failed one (isError true), then the proxy still records normally
    const failed = post(proxy.url, toolCall(1, 'get-text', { sessionId: SID }));
    await resumeBig();
    expect((await failed).body.length).toBe(big(true).length);
    await recorder.close();

    const s = sessionOf(recorder);
    expect(s.calls.map((c) => [c.tool, c.status, c.payload_dropped])).toEqual([
      ['capture', 'ok', 1],
      ['windows', 'ok', 0],
      ['get-text', 'failed', 1],
    ]);
    expect(s.calls[0]!.envelope).toBeNull();
    expect(s.calls[2]).toMatchObject({ error_code: 'answer-not-recorded', ok: 0 });
    expect(s.calls[2]!.error_detail).toMatch(/over the recording limit of 1048576 bytes.*isError: true/);
    const oversize = s.events.filter((e) => e.kind === 'oversize-message');
    expect(oversize.map((e) => [e.call_seq, e.detail])).toEqual([
      [1, { direction: 'answer', bytes: big(false).length, limit: MiB, isError: false, transport: 'http' }],
      [3, { direction: 'answer', bytes: big(true).length, limit: MiB, isError: true, transport: 'http' }],
    ]);
    expect(fs.statSync(path.join(s.dir, 'session.sqlite')).size).toBeLessThan(MiB);
    expectEventsValid(s.dir);
  });

  it('against the simulator: an inline capture over a small limit passes byte for byte and bundles', async () => {
    /** session-start, an inline capture (about 10 KB), a black capture (under 3 KB), session-end. */
    const play = async (url: string) => {
      const start = await post(url, toolCall(1, 'session-start', {}), AUTH);
      const sid = JSON.parse(JSON.parse(start.body.toString()).result.content[0].text).sessionId as string;
      const rest = [
        await post(url, toolCall(2, 'capture', { window: 'Notepad', sessionId: sid }), AUTH),
        await post(url, toolCall(3, 'capture', { window: 'Video Player', sessionId: sid }), AUTH),
        await post(url, toolCall(4, 'session-end', { sessionId: sid }), AUTH),
      ];
      return {
        sid,
        bodies: [start, ...rest].map((a) => a.body.toString('base64')),
        sizes: rest.map((a) => a.body.length),
      };
    };
    const direct = await play((await startSim()).url);
    expect(direct.sizes[0]).toBeGreaterThan(8 * 1024);
    expect(direct.sizes[1]).toBeLessThan(8 * 1024);
    const { recorder, proxy } = await startProxy((await startSim()).url, {
      maxRecordBytes: 8 * 1024,
      maxBodyBytes: 4096,
    });
    const proxied = await play(proxy.url);
    expect(proxied.bodies).toEqual(direct.bodies);
    await recorder.close();
    const s = readSessions(recorder.sessionsDir).find((x) => x.session.session_id === proxied.sid)!;
    expect(s.calls.map((c) => [c.tool, c.status, c.error_code, c.payload_dropped])).toEqual([
      ['session-start', 'ok', null, 0],
      ['capture', 'ok', null, 1],
      ['capture', 'failed', 'frame-all-black', 0],
      ['session-end', 'ok', null, 0],
    ]);
    expect(s.events.find((e) => e.kind === 'oversize-message')).toMatchObject({
      call_seq: 2,
      detail: { direction: 'answer', limit: 8192, isError: false },
    });
    expectEventsValid(s.dir);
    const bundle = await buildBundle(s.dir, { output: path.join(temp.dir, 'b.zip') });
    expect((await verifyBundle(bundle.bundle)).ok).toBe(true);
  });

  it('refuses a request body limit above the recording limit, and a recording limit V8 cannot hold', async () => {
    const recorder = collectingRecorder();
    const base = { listen: { port: 0 }, target: 'http://127.0.0.1:1/mcp', recorder };
    await expect(startHttpProxy({ ...base, maxRecordBytes: 1024 })).rejects.toThrow(
      new RangeError(
        'Expected options.maxRecordBytes to be at least 1048576, the default options.maxBodyBytes ' +
          '(or give a smaller options.maxBodyBytes)',
      ),
    );
    await expect(startHttpProxy({ ...base, maxRecordBytes: 1024, maxBodyBytes: 2048 })).rejects.toThrow(
      new RangeError('Expected options.maxBodyBytes to be an integer between 1 and 1024'),
    );
    await expect(startHttpProxy({ ...base, maxRecordBytes: 2 ** 30 })).rejects.toThrow(
      new RangeError(
        `Expected options.maxRecordBytes to be an integer between 1 and ${MAX_RECORD_BYTES_LIMIT}`,
      ),
    );
    await expect(startHttpProxy({ ...base, timeoutMs: 0 })).rejects.toThrow(
      new RangeError('Expected options.timeoutMs to be an integer between 1 and 86400000'),
    );
  });
});

describe('HTTP proxy request paths', () => {
  const disguised = ['/./mcp', '/%2e/mcp', '/x/../mcp', '//mcp', '/MCP', '/%2E%2E/mcp', '/mcp#frag'];
  const other = ['/mcp/', '/mcp.json', '/other'];

  it('refuses every POST path but the exact /mcp with MCEC 404, whatever the Host, and never forwards it', async () => {
    let hits = 0;
    const target = await startServer((req, res) => {
      hits++;
      req.resume();
      res.end(toolAnswer(1, true));
    });
    temp.defer(() => target.close());
    const { recorder, proxy } = await startProxy(target.url);
    const base = `http://127.0.0.1:${proxy.port}`;
    const body = toolCall(1, 'launch', { path: 'calc.exe', sessionId: SID });
    for (const p of [...disguised, ...other, `http://127.0.0.1:${proxy.port}/mcp`]) {
      const headerSets: Array<Record<string, string>> = [
        {},
        { Host: 'evil.example' },
        { Host: 'evil.example', Origin: 'https://evil.example' },
      ];
      for (const headers of headerSets) {
        const answer = await rawPost(base, p, body, headers);
        expect(answer.status, `${p} ${JSON.stringify(headers)}`).toBe(404);
        expect(answer.headers['content-type']).toBe('application/json');
        expect(answer.body.toString()).toBe('{"error":"Not found: only POST /mcp is supported"}');
      }
    }
    expect(hits).toBe(0);
    // the exact path, with a query: gated (403 for a foreign Host), else forwarded and recorded
    expect((await rawPost(base, '/mcp?x=1', body, { Host: 'evil.example' })).status).toBe(403);
    expect(hits).toBe(0);
    expect((await rawPost(base, '/mcp?x=1', body)).status).toBe(200);
    expect(hits).toBe(1);
    await recorder.close();
    const sessions = readSessions(recorder.sessionsDir);
    const calls = sessions.flatMap((s) => s.calls);
    expect(calls.map((c) => c.tool)).toEqual(['launch']);
    const refusals = sessions.flatMap((s) => s.events).filter((e) => e.detail.status === 404);
    expect(refusals).toHaveLength(3 * (disguised.length + other.length + 1));
    expect(refusals.find((e) => e.detail.path === '/%2e/mcp')?.detail.reason).toMatch(/reads as \/mcp/);
    expect(refusals.find((e) => e.detail.path === '/mcp/')?.detail.reason).toBe('path is not /mcp');
    for (const s of sessions) expectEventsValid(s.dir);
  });

  it('against the simulator: what it would run behind a disguised path never reaches it through the proxy', async () => {
    const sim = await startSim();
    // The simulator, like MCEC, normalizes the path: a disguised /mcp runs the call there.
    expect(
      (await rawPost(sim.url.replace(/\/mcp$/, ''), '/./mcp', toolCall(1, 'windows', {}), AUTH)).status,
    ).toBe(200);
    const { recorder, proxy } = await startProxy(sim.url);
    const base = `http://127.0.0.1:${proxy.port}`;
    for (const p of disguised) {
      expect((await rawPost(base, p, toolCall(1, 'session-start', {}), AUTH)).status, p).toBe(404);
    }
    expect((await rawPost(base, '/mcp?via=proxy', toolCall(2, 'session-start', {}), AUTH)).status).toBe(200);
    await recorder.close();
    const calls = readSessions(recorder.sessionsDir).flatMap((s) => s.calls);
    expect(calls.map((c) => [c.tool, c.rpc_id, c.status])).toEqual([['session-start', '2', 'ok']]);
  });
});

/** POST with an exact request-target (node:http sends the path as given). */
function rawPost(base: string, requestTarget: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      const url = new URL(base);
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: requestTarget,
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}
