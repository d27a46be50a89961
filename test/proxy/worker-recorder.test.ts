/**
 * The recorder in a worker thread (src/record/worker-recorder.ts) behind the real HTTP proxy, in front of the
 * simulator: it records what the in-process recorder records, a crash of the worker never breaks the wire,
 * and close commits everything. The worker runs the built entry, so the port is imported from dist/
 * (test/global-setup.ts builds it).
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHttpProxy } from '../../src/proxy/http.js';
import type { ProxyRecorder } from '../../src/proxy/recorder-port.js';
import { createRecorder } from '../../src/record/index.js';
import type { PendingExchange } from '../../src/record/types.js';
import { expectEventsValid } from '../record/helpers.js';
import { summaryOfSession } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { post, startServer } from './helpers.js';
import { allText, playScriptOverHttp, readSessions, SCRIPT } from './sim-script.js';

type WorkerModule = typeof import('../../src/record/worker-recorder.js');
const dist = path.resolve(import.meta.dirname, '../../dist/record/worker-recorder.js');
const { createWorkerRecorder, createWorkerRecorderWithFaults } = (await import(dist)) as WorkerModule;

const TOKEN = 'tok-77c1d0e9a4b35f21';
const temp = tempDirPerTest('mcec-worker-');
let simsStarted = 0;

/** A simulator of its own (its own artifact root), closed after the test. */
async function startSim() {
  const { listener } = await simOnHttp(path.join(temp.dir, `sim-${simsStarted++}`), { token: TOKEN });
  temp.defer(() => listener.close());
  return listener;
}

async function startProxy(target: string, recorder: ProxyRecorder) {
  const proxy = await startHttpProxy({ listen: { host: '127.0.0.1', port: 0 }, target, recorder });
  temp.defer(() => proxy.close());
  return proxy;
}

/** Play the simulator script through `url`; every answer's status and body. */
async function playScript(url: string): Promise<Array<{ status: number; body: string }>> {
  const answers = await playScriptOverHttp(url, TOKEN);
  return answers.map((answer) => ({ status: answer.status, body: answer.body.toString('utf8') }));
}

/** What a recording holds, without its times and ids: calls and event kinds per session, in order. */
function recorded(root: string) {
  return readSessions(root)
    .map((s) => ({
      status: s.session.status,
      calls: s.calls.map((c) => [c.tool, c.status, c.error_code, c.transport]),
      events: s.events.map((e) => e.kind),
    }))
    .sort((a, b) => a.calls.length - b.calls.length);
}

type WorkerRecorder = ReturnType<WorkerModule['createWorkerRecorder']>;

/**
 * A worker recorder over stdio whose thread blocks on a `hold` event (`stall()`) until `release()`, as on a
 * commit stalled by a hung disk; with a small cap of untaken JSON.
 */
async function stallableWorker(name: string, limits: { maxUntakenChars: number; roomHighChars?: number }) {
  const releaseFile = path.join(temp.dir, `${name}-release`);
  const dir = path.join(temp.dir, name);
  const worker = createWorkerRecorderWithFaults(
    { sessionsDir: dir, transport: 'stdio', stderr: () => {} },
    { holdOnEventKind: { kind: 'hold', untilFile: releaseFile }, ...limits },
  );
  await worker.ready();
  return {
    worker,
    dir,
    stall: () => worker.event(undefined, 'hold', {}),
    release: () => fs.writeFileSync(releaseFile, ''),
  };
}

/** A tools/call `get-state` through the worker, answered at once with one text block. */
function answeredCall(worker: WorkerRecorder, id: number, args: Record<string, unknown>, text = 'ok'): void {
  const request = {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'get-state', arguments: args },
  };
  worker
    .beginExchange(request, { transport: 'stdio' })
    .complete({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
}

/** Wait until the worker has room again (it caught up after a stall). */
async function caughtUp(worker: WorkerRecorder): Promise<void> {
  for (let room = worker.room(); room; room = worker.room()) await room;
}

describe('the recorder in a worker thread', () => {
  it('records through the proxy what the in-process recorder records, the token scrubbed, everything in the log at close', async () => {
    const inProcessDir = path.join(temp.dir, 'in-process');
    const inProcess = createRecorder({ sessionsDir: inProcessDir, transport: 'http', stderr: () => {} });
    const viaInProcess = await startProxy((await startSim()).url, inProcess);
    const expected = await playScript(viaInProcess.url);
    await inProcess.close();

    const notices: string[] = [];
    const workerDir = path.join(temp.dir, 'worker');
    const worker = createWorkerRecorder({
      sessionsDir: workerDir,
      transport: 'http',
      stderr: (line) => notices.push(line),
    });
    expect(worker.sessionsDir).toBe(workerDir);
    await worker.ready();
    const viaWorker = await startProxy((await startSim()).url, worker);
    const actual = await playScript(viaWorker.url);
    // Closed at once after the last answer: close resolves only when the worker's recorder committed it all.
    await worker.close();

    expect(actual.map((a) => a.status)).toEqual(expected.map((a) => a.status));
    expect(recorded(workerDir)).toEqual(recorded(inProcessDir));
    expect(recorded(workerDir).flatMap((s) => s.calls)).toHaveLength(8);
    expect(allText(workerDir)).not.toContain(TOKEN);
    expect(notices).toEqual([]);
  });

  it("reads every HTTP answer on the worker's thread and records it exactly as the in-process recorder does", async () => {
    // Answers by request id: what a target may send, each settled from the body's bytes on the worker's thread.
    const big = `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"${'y'.repeat(300_000)}"}]}}`;
    const accented = Buffer.from(
      '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"héllo — ✓"}]}}',
    );
    const cut = accented.indexOf('—') + 1; // inside the dash's three bytes: the answer comes in two chunks
    const answers: Record<number, (res: http.ServerResponse) => void> = {
      1: (res) =>
        json(res, 200, {
          jsonrpc: '2.0',
          id: 1,
          result: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            serverInfo: { name: 'a-target', version: '1' },
          },
        }),
      2: (res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write(accented.subarray(0, cut));
        setTimeout(() => res.end(accented.subarray(cut)), 5);
      },
      3: (res) =>
        json(res, 200, {
          jsonrpc: '2.0',
          id: 3,
          result: { content: [{ type: 'text', text: 'no such window' }], isError: true },
        }),
      4: (res) => json(res, 200, { jsonrpc: '2.0', id: 4, error: { code: -32602, message: 'bad params' } }),
      5: (res) => json(res, 500, { error: 'boom\ninside' }),
      6: (res) => {
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end('bad gateway\nfrom somewhere');
      },
      7: (res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end();
      },
      8: (res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"jsonrpc":"2.0","id":8,"result":');
      },
      9: (res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        for (let at = 0; at < big.length; at += 65_536) res.write(big.slice(at, at + 65_536));
        res.end();
      },
    };
    const target = await startServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const { id } = JSON.parse(Buffer.concat(parts).toString('utf8')) as { id?: number };
        if (id === undefined) {
          res.writeHead(202);
          res.end();
        } else answers[id]!(res);
      });
    });
    temp.defer(() => target.close());
    const requests = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      ...[2, 3, 4, 5, 6, 7, 8, 9].map((id) => ({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: `tool-${id}`, arguments: { n: id } },
      })),
    ];
    /** Every request through a proxy recording into `recorder`; the answers' statuses and bodies. */
    const play = async (recorder: ProxyRecorder) => {
      const proxy = await startProxy(target.url, recorder);
      const out: Array<[number, string]> = [];
      for (const r of requests) {
        const answer = await post(proxy.url, JSON.stringify(r));
        out.push([answer.status, answer.body.toString('utf8')]);
      }
      return out;
    };
    const inProcessDir = path.join(temp.dir, 'answers-in-process');
    const inProcess = createRecorder({ sessionsDir: inProcessDir, transport: 'http', stderr: () => {} });
    const expected = await play(inProcess);
    await inProcess.close();
    const workerDir = path.join(temp.dir, 'answers-worker');
    const worker = createWorkerRecorder({ sessionsDir: workerDir, transport: 'http', stderr: () => {} });
    await worker.ready();
    const actual = await play(worker);
    await worker.close();

    expect(actual).toEqual(expected);
    expect(actual[9]![1]).toBe(big);
    /** Every call and event row but their times and ids; a session's random id read as SESSION. */
    const rows = (root: string) =>
      readSessions(root).map((s) => {
        const kept = [
          ...s.calls.map(({ started_at, ended_at, duration_ms, ...row }) => row),
          ...s.events.map(({ id, at, ...event }) => event),
        ];
        return JSON.parse(JSON.stringify(kept).replaceAll(s.session.session_id, 'SESSION')) as unknown;
      });
    const recordedRows = rows(workerDir);
    expect(recordedRows).toEqual(rows(inProcessDir));
    const calls = readSessions(workerDir).flatMap((s) => s.calls);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([
      ['tool-2', 'ok'],
      ['tool-3', 'failed'],
      ['tool-4', 'fault'],
      ['tool-5', 'fault'],
      ['tool-6', 'fault'],
      ['tool-7', 'fault'],
      ['tool-8', 'fault'],
      ['tool-9', 'ok'],
    ]);
    const detail = calls.map((c) => c.error_detail ?? '').join('\n');
    expect(detail).toContain('target answered HTTP 500: boom inside');
    expect(detail).toContain('target answered HTTP 502 (not JSON: bad gateway from somewhere)');
    expect(calls[0]!.response).toContain('héllo — ✓');
  });

  it("brings the recorder's stderr notices back before close resolves; an event JSON cannot hold is dropped alone", async () => {
    const notices: string[] = [];
    const worker = createWorkerRecorder({
      sessionsDir: path.join(temp.dir, 'notices'),
      transport: 'http',
      stderr: (line) => notices.push(line),
    });
    const proxy = await startProxy((await startSim()).url, worker);
    // A handshake and no tool call: the recorder says at close what it did not write.
    const answer = await post(proxy.url, SCRIPT[0]!(''), { Authorization: `Bearer ${TOKEN}` });
    expect(answer.status).toBe(200);
    // A detail JSON cannot hold is dropped alone, said on stderr; the handshake is still reported.
    worker.event(undefined, 'step', { name: 'big', at: 10n });
    await worker.close();
    expect(notices.join('\n')).toMatch(/not recorded \(.*BigInt.*\): one event message/);
    expect(notices.join('\n')).toContain('no tool call followed the handshake');
  });

  it('a worker that crashes never breaks the wire: said once on stderr, the proxy keeps forwarding, close says so', async () => {
    const notices: string[] = [];
    const worker = createWorkerRecorderWithFaults(
      { sessionsDir: path.join(temp.dir, 'crash'), transport: 'http', stderr: (line) => notices.push(line) },
      { crashOnEventKind: 'proxy-error' },
    );
    const target = await startSim();
    const proxy = await startProxy(target.url, worker);
    const direct = await playScript(target.url);
    // A refused path is a proxy-error event: the worker throws on it, uncaught.
    expect((await post(proxy.url.replace(/\/mcp$/, '/admin'), '{}')).status).toBe(404);
    const deadline = Date.now() + 10_000;
    while (!notices.some((n) => n.includes('worker thread stopped')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(notices.filter((n) => n.includes('worker thread stopped'))).toHaveLength(1);
    expect(notices[0]).toContain('injected crash on a proxy-error event');
    // Every request of the script still goes through, answered as the target answers it directly.
    const through = await playScript(proxy.url);
    expect(through.map((a) => a.status)).toEqual(direct.map((a) => a.status));
    expect(JSON.parse(through[2]!.body).result).toEqual(JSON.parse(direct[2]!.body).result);
    await expect(worker.close()).rejects.toThrow(/worker thread stopped earlier/);
    expect(notices.filter((n) => n.includes('worker thread stopped'))).toHaveLength(1);
  });

  it('a stalled worker never makes the proxy hold more than its cap: requests past it are counted, not held', async () => {
    const release = path.join(temp.dir, 'release');
    const dir = path.join(temp.dir, 'stalled');
    const notices: string[] = [];
    const worker = createWorkerRecorderWithFaults(
      { sessionsDir: dir, transport: 'http', stderr: (l) => notices.push(l) },
      { holdOnEventKind: { kind: 'hold', untilFile: release }, maxUntakenChars: 1_000_000 },
    );
    await worker.ready();
    const target = await startSim();
    const proxy = await startProxy(target.url, worker);
    const recordedCalls = (await playScript(proxy.url)).filter((a) => a.body.includes('"content"')).length;
    // Then the worker's thread blocks (as on a stalled commit) while more than the cap's worth of requests goes
    // through: their messages alone would take the JSON held past it.
    worker.event(undefined, 'hold', {});
    const pad = 'x'.repeat(20_000);
    for (let id = 100; id < 160; id++) {
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'ping', params: { _meta: { pad } } });
      const answer = await post(proxy.url, body, { Authorization: `Bearer ${TOKEN}` });
      expect(answer.status).toBe(200);
    }
    fs.writeFileSync(release, '');
    await worker.close();

    const sessions = readSessions(dir);
    expect(sessions.flatMap((s) => s.calls)).toHaveLength(recordedCalls);
    const events = sessions.flatMap((s) => s.events);
    // An answer that came near the cap was recorded without its body (which ones depends on the flushes).
    const full = events.filter((e) => e.kind === 'oversize-message');
    expect(full.every((e) => e.detail.reason === 'queue-full' && e.detail.limit === 1_000_000)).toBe(true);
    // Past the cap a request is not posted at all, only counted: the gap says how many.
    const gaps = events.filter((e) => e.kind === 'recording-gap');
    expect(gaps).toHaveLength(1);
    const gap = gaps[0]!.detail as {
      toolCalls: number;
      requests: number;
      otherMessages: number;
      from: string;
      to: string;
    };
    expect(gap.requests).toBeGreaterThan(0);
    expect(gap.toolCalls).toBe(0); // pings
    expect(gap.requests).toBeLessThanOrEqual(60);
    const pings = events.filter((e) => e.kind === 'exchange' && e.detail.method === 'ping');
    expect(pings.length - 1 + gap.requests).toBe(60); // the script's own ping is recorded too
    expect(Date.parse(gap.to)).toBeGreaterThanOrEqual(Date.parse(gap.from));
    for (const s of sessions) expectEventsValid(s.dir);
    expect(notices.filter((n) => n.includes('not recorded until it catches up'))).toHaveLength(1);
  });

  it('a worker stalled for thousands of calls holds at most its cap: the calls past it are counted, then recording goes on', async () => {
    // Room comes back where the gap closes (half the cap): once room() is undefined, recording goes on.
    const { worker, dir, stall, release } = await stallableWorker('long-stall', {
      maxUntakenChars: 20_000,
      roomHighChars: 10_000,
    });
    stall();
    const total = 3_000;
    const kept = 'tok-kept-3b9f2e71c04d5a86';
    for (let id = 1; id <= total; id++) {
      // A bearer token per request, as the HTTP proxy tells them: kept while at the cap, not posted each time.
      worker.rememberHeaderSecret(id === total ? kept : `tok-${id}-${'z'.repeat(64)}`);
      answeredCall(worker, id, { id }, `ok ${id}`);
      if (id % 200 === 0) await new Promise((r) => setTimeout(r, 15)); // a flush now and then, as in a proxy
    }
    // An agent's declared steps are posted even at the cap, up to 1,000 in one gap; the rest are counted.
    for (let i = 1; i <= 1005; i++) worker.event(undefined, 'step', { name: `step ${i}`, status: 'ok' });
    release();
    await caughtUp(worker);
    // The token told during the gap reached the redactor: an answer echoing it is stored scrubbed.
    answeredCall(worker, total + 1, { id: total + 1 }, `token ${kept}`);
    await worker.close();
    const sessions = readSessions(dir);
    const calls = sessions.flatMap((s) => s.calls);
    const events = sessions.flatMap((s) => s.events);
    const gap = events.find((e) => e.kind === 'recording-gap');
    expect(gap).toBeDefined();
    const { toolCalls, requests, otherMessages } = gap!.detail as {
      toolCalls: number;
      requests: number;
      otherMessages: number;
    };
    expect(toolCalls).toBe(requests);
    expect(otherMessages).toBe(5); // the steps past the 1,000
    // About 20,000 chars of ~150-char calls were held; the rest were counted, not kept.
    expect(calls.length).toBeLessThan(400);
    expect(calls.length + toolCalls).toBe(total + 1);
    expect(calls.at(-1)?.args).toContain(`"id":${total + 1}`);
    expect(allText(dir)).not.toContain(kept);
    const steps = events.filter((e) => e.kind === 'step').map((e) => e.detail.name);
    expect(steps).toHaveLength(1000);
    expect(steps.at(-1)).toBe('step 1000');
    // Read back, the gap is a record failure and its tool calls are lost calls.
    const summary = await summaryOfSession(sessions[0]!.dir);
    expect(summary.counts.lostCalls).toBe(toolCalls);
    expect(summary.counts.recordFailures).toBe(1);
    for (const session of sessions) expectEventsValid(session.dir);
  });

  it('a recording gap goes into every session open during it', async () => {
    const { worker, dir, stall, release } = await stallableWorker('gap-sessions', {
      maxUntakenChars: 20_000,
    });
    answeredCall(worker, 1, { sessionId: 'gap-alpha' });
    answeredCall(worker, 2, { sessionId: 'gap-beta' });
    stall();
    for (let id = 3; id < 400; id++) {
      answeredCall(worker, id, { sessionId: id % 2 ? 'gap-alpha' : 'gap-beta' });
      if (id % 50 === 0) await new Promise((r) => setTimeout(r, 15)); // flushes, as in a proxy
    }
    release();
    await worker.close();
    const sessions = readSessions(dir);
    const byId = new Map(sessions.map((s) => [s.session.session_id, s]));
    for (const id of ['gap-alpha', 'gap-beta']) {
      const gaps = byId.get(id)?.events.filter((e) => e.kind === 'recording-gap') ?? [];
      expect(gaps, id).toHaveLength(1);
    }
    const counted = (
      byId.get('gap-alpha')!.events.find((e) => e.kind === 'recording-gap')!.detail as { toolCalls: number }
    ).toolCalls;
    expect(sessions.flatMap((s) => s.calls).length + counted).toBe(399);
  });

  it('a recording gap while no open session holds a call waits for the next call, not in a log never written', async () => {
    const { worker, dir, stall, release } = await stallableWorker('gap-no-calls', {
      maxUntakenChars: 20_000,
      roomHighChars: 10_000,
    });
    // A session named by a declaration alone is open but holds no call: it is never written.
    worker.event('gap-declared-only', 'step', { name: 'declared', status: 'ok' });
    stall();
    worker.event(undefined, 'padding', { text: 'x'.repeat(25_000) }); // past the cap once posted
    let room = worker.room();
    for (let i = 0; room === undefined && i < 250; i++) {
      await new Promise((r) => setTimeout(r, 20));
      room = worker.room();
    }
    expect(room).toBeInstanceOf(Promise);
    for (let id = 1; id <= 50; id++) answeredCall(worker, id, {}); // all counted: nothing recorded before them
    release();
    await caughtUp(worker);
    answeredCall(worker, 51, {}); // the first call recorded: the gap, kept for the connection, goes into its session
    await worker.close();
    const sessions = readSessions(dir);
    expect(sessions.map((s) => s.session.session_id)).not.toContain('gap-declared-only');
    const gaps = sessions.flatMap((s) => s.events.filter((e) => e.kind === 'recording-gap'));
    expect(gaps).toHaveLength(1);
    expect((gaps[0]!.detail as { toolCalls: number }).toolCalls).toBe(50);
    expect(sessions.flatMap((s) => s.calls).map((c) => c.rpc_id)).toEqual(['51']);
  });

  it('past its room mark a stalled worker makes room() wait until the worker takes the JSON again', async () => {
    const release = path.join(temp.dir, 'release');
    const dir = path.join(temp.dir, 'paced');
    const worker = createWorkerRecorderWithFaults(
      { sessionsDir: dir, transport: 'stdio', stderr: () => {} },
      { holdOnEventKind: { kind: 'hold', untilFile: release }, roomHighChars: 1_000 },
    );
    await worker.ready();
    expect(worker.room()).toBeUndefined();
    worker.event(undefined, 'hold', {});
    const calls = 6;
    for (let id = 1; id <= calls; id++) {
      const request = {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'echo', arguments: { id } },
      };
      const response = { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'x'.repeat(400) }] } };
      worker.recordExchange(request, response, { transport: 'stdio' });
    }
    // Once the batch is posted (every 10 ms) and not taken (the worker is blocked), there is no room.
    let room = worker.room();
    for (let i = 0; room === undefined && i < 250; i++) {
      await new Promise((r) => setTimeout(r, 20));
      room = worker.room();
    }
    expect(room).toBeInstanceOf(Promise);
    expect(worker.room()).toBe(room); // one promise for every request held back, not one each
    let wokeBeforeRelease = false;
    room!.then(() => {
      wokeBeforeRelease = !fs.existsSync(release);
    });
    await new Promise((r) => setTimeout(r, 100));
    fs.writeFileSync(release, '');
    await room;
    expect(wokeBeforeRelease).toBe(false);
    expect(worker.room()).toBeUndefined();
    await worker.close();
    const rows = readSessions(dir).flatMap((s) => s.calls);
    expect(rows).toHaveLength(calls);
    expect(rows.filter((c) => c.status === 'pending')).toEqual([]);
  });

  it("a note soon after its call's answer is the call's; one long after is kept as the session's event", async () => {
    const dir = path.join(temp.dir, 'notes');
    const worker = createWorkerRecorder({ sessionsDir: dir, transport: 'stdio', stderr: () => {} });
    await worker.ready();
    const request = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } };
    const exchange = worker.beginExchange(request, { transport: 'stdio' });
    exchange.complete({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    exchange.note('notification', { method: 'notifications/message', n: 1 });
    // Past the time a settled exchange is kept (a later batch lets it go): the note is not lost.
    await new Promise((r) => setTimeout(r, 400));
    worker.event(undefined, 'tick', {});
    await new Promise((r) => setTimeout(r, 100));
    exchange.note('notification', { method: 'notifications/message', n: 2 });
    await worker.close();
    const events = readSessions(dir).flatMap((s) => s.events);
    const notes = events.filter((e) => e.kind === 'notification');
    expect(notes.map((e) => e.detail.n)).toEqual([1, 2]);
    expect(notes[0]!.call_seq).toBe(1);
    expect(notes[1]!.call_seq).toBeNull();
  });

  // Four answers of about 1,560-1,750 chars or bytes, all before the next flush: together past a 4,000 cap.
  const answerText = 'x'.repeat(1_500);
  const answer = (id: number) => ({
    jsonrpc: '2.0',
    id,
    result: { content: [{ type: 'text', text: answerText }] },
  });
  async function fourAnswersPastTheCap(
    dir: string,
    transport: 'stdio' | 'http',
    give: (call: PendingExchange, id: number) => void,
  ) {
    const worker = createWorkerRecorderWithFaults(
      { sessionsDir: dir, transport, stderr: () => {} },
      { maxUntakenChars: 4_000 },
    );
    await worker.ready();
    for (let id = 1; id <= 4; id++) {
      const call = worker.beginExchange(
        { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get-state', arguments: {} } },
        { transport },
      );
      give(call, id);
    }
    await worker.close();
    const sessions = readSessions(dir);
    const full = sessions
      .flatMap((s) => s.events)
      .filter((e) => e.kind === 'oversize-message' && e.detail.reason === 'queue-full');
    return { calls: sessions.flatMap((s) => s.calls), full };
  }

  it('counts answers still waiting for the flush against the cap: those past it are recorded without their bodies', async () => {
    const { calls, full } = await fourAnswersPastTheCap(path.join(temp.dir, 'batched'), 'stdio', (call, id) =>
      call.complete(answer(id)),
    );
    expect(calls).toHaveLength(4);
    expect(full).toHaveLength(2);
  });

  it('counts answer bytes still waiting for the flush against the cap: those past it are read here and recorded without their bodies', async () => {
    const { calls, full } = await fourAnswersPastTheCap(
      path.join(temp.dir, 'batched-bytes'),
      'http',
      (call, id) => call.answered?.(200, Buffer.from(JSON.stringify(answer(id))), { transport: 'http' }),
    );
    // The first two with their answers, the last two without (read here: a queue-full oversize row each).
    expect(calls.map((c) => c.response?.includes(answerText) ?? false)).toEqual([true, true, false, false]);
    expect(full.map((e) => e.call_seq)).toEqual([3, 4]);
  });

  it('an answer JSON cannot hold still settles its call, as failed saying why, never left unanswered', async () => {
    const dir = path.join(temp.dir, 'unsendable');
    const notices: string[] = [];
    const worker = createWorkerRecorder({
      sessionsDir: dir,
      transport: 'stdio',
      stderr: (l) => notices.push(l),
    });
    await worker.ready();
    const call = worker.beginExchange(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get-state', arguments: {} } },
      { transport: 'stdio' },
    );
    // As an answer too long for one JSON text would (V8's string limit): it cannot cross to the worker.
    call.complete({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }], n: 10n } });
    await worker.close();
    const calls = readSessions(dir).flatMap((s) => s.calls);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([['get-state', 'fault']]);
    expect(JSON.stringify(calls[0])).toMatch(/could not be passed to the recorder.*BigInt/);
    expect(notices.join('\n')).toMatch(/not recorded \(.*BigInt.*\): one complete message/);
  });
});

/** Answer with a JSON body. */
function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
