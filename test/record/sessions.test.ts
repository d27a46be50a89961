import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { safeDerivedId } from '../../src/paths/derived-id.js';
import { createRecorder } from '../../src/record/index.js';
import { deferred } from '../support/deferred.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { calls, callToolResult, events, expectEventsValid, sessionDirs, withLog } from './helpers.js';

const temp = tempDirPerTest();

function dirOf(id: string): string {
  const name = sessionDirs(temp.dir).find((d) => d.endsWith(`-${id}`));
  if (!name) throw new Error(`no session dir for ${id} in ${sessionDirs(temp.dir).join(', ')}`);
  return path.join(temp.dir, name);
}

describe('sessions', () => {
  it('16 interleaved in-flight calls across 4 sessions land in the right sessions in start order', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const ids = ['aaaa00000001', 'bbbb00000002', 'cccc00000003', 'dddd00000004'];
    const gates = Array.from({ length: 16 }, () => deferred());
    const dispatch = recorder.wrap(async (_tool, args) => {
      await gates[args.n as number]!.promise;
      return { sessionId: args.sessionId, ok: true, result: { n: args.n } };
    });
    const results = Array.from({ length: 16 }, (_, n) => dispatch('query', { sessionId: ids[n % 4]!, n }));
    await recorder.flush();
    // All 16 are pending on disk while they run.
    for (const id of ids)
      expect(calls(dirOf(id)).map((r) => r.status)).toEqual(['pending', 'pending', 'pending', 'pending']);
    // Finish them in a scrambled order.
    for (const n of [7, 0, 15, 3, 12, 9, 1, 14, 4, 11, 2, 8, 13, 6, 10, 5]) gates[n]!.resolve();
    const values = await Promise.all(results);
    expect(values.map((v) => (v as { result: { n: number } }).result.n)).toEqual([...Array(16).keys()]);
    await recorder.close();
    expect(sessionDirs(temp.dir)).toHaveLength(4);
    ids.forEach((id, i) => {
      const rows = calls(dirOf(id));
      expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
      expect(rows.map((r) => JSON.parse(r.args!).n)).toEqual([i, i + 4, i + 8, i + 12]);
      expect(rows.every((r) => r.status === 'ok')).toBe(true);
      expect(recorder.session(id)?.counts).toMatchObject({ calls: 4, pending: 0, failures: 0 });
    });
  });

  it('moves a call whose envelope names another session than its argument, and opens sessions from envelopes', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const gate = deferred();
    const dispatch = recorder.wrap(async (_tool, args) => {
      await gate.promise;
      return callToolResult({ sessionId: 'eeee00000005', ok: true, result: { echo: args.sessionId } });
    });
    const pending = dispatch('find', { sessionId: 'ffff00000006' });
    await recorder.flush();
    expect(calls(dirOf('ffff00000006')).map((r) => r.status)).toEqual(['pending']);
    gate.resolve();
    await pending;
    await recorder.flush();
    // The session the argument named holds no call any more: it leaves nothing behind, at once.
    expect(sessionDirs(temp.dir).filter((d) => d.endsWith('-ffff00000006'))).toEqual([]);
    expect(calls(dirOf('eeee00000005')).map((r) => [r.seq, r.tool, r.status])).toEqual([[1, 'find', 'ok']]);
    expect(events(dirOf('eeee00000005'), 'session-start')[0]!.data).toEqual({
      sessionId: 'eeee00000005',
      via: 'envelope',
    });
    expect(recorder.session('ffff00000006')).toBeUndefined();
    await recorder.close();
    expect(sessionDirs(temp.dir)).toEqual([expect.stringMatching(/-eeee00000005$/)]);
  });

  it('never uses an unsafe id in a path: a derived name, an event and a violation', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const hostile = '../../etc/passwd\u0000\n';
    const dispatch = recorder.wrap(async (_t: string, _a: Record<string, unknown>) => ({
      sessionId: hostile,
      ok: true,
      result: {},
    }));
    await dispatch('query', { sessionId: hostile });
    await recorder.close();
    const derived = safeDerivedId(hostile);
    expect(sessionDirs(temp.dir)).toEqual([expect.stringMatching(new RegExp(`^\\d{8}-\\d{6}-${derived}$`))]);
    const dir = dirOf(derived);
    expect(events(dir, 'unsafe-session-id')[0]!.data).toEqual({
      originalId: JSON.stringify(hostile).slice(1, -1),
      derivedId: derived,
    });
    const session = withLog(dir, (db) => db.prepare('SELECT session_id, original_id FROM session').get());
    expect(session).toEqual({ session_id: derived, original_id: JSON.stringify(hostile).slice(1, -1) });
    const [row] = calls(dir);
    expect(JSON.parse(row!.violations!)).toEqual([
      expect.objectContaining({ message: expect.stringContaining(`recorded as ${derived}`) }),
    ]);
    expect(recorder.session(hostile)?.id).toBe(derived);
    expectEventsValid(dir);
    // Nothing was written outside the sessions temp.dir.
    expect(fs.readdirSync(path.dirname(temp.dir)).filter((f) => f === 'etc')).toEqual([]);
  });

  it('uses the default session (a fresh 12-hex id) for calls that name none, with steps and a verdict', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    expect(recorder.defaultSessionId).toMatch(/^[0-9a-f]{12}$/);
    const dispatch = recorder.wrap(async (_t: string, _a: Record<string, unknown>) => ({
      ok: true,
      result: { windows: [] },
    }));
    await dispatch('windows', {});
    recorder.step(undefined, 'open notepad', 'passed', 'took 2 s');
    recorder.step(undefined, 'save file', 'failed');
    await recorder.end(recorder.defaultSessionId, { passed: false, reason: 'save dialog never appeared' });
    const dir = dirOf(recorder.defaultSessionId);
    // end() resolves when it is on disk, while the recorder still runs.
    const session = withLog(dir, (db) =>
      db.prepare('SELECT status, passed, end_reason, ended_at FROM session').get(),
    );
    expect(session).toMatchObject({ status: 'ended', passed: 0, end_reason: 'save dialog never appeared' });
    expect(events(dir).map((e) => [e.kind, e.data])).toEqual([
      ['session-start', { sessionId: recorder.defaultSessionId, via: 'default' }],
      ['step', { name: 'open notepad', status: 'passed', detail: 'took 2 s' }],
      ['step', { name: 'save file', status: 'failed' }],
      ['session-end', { via: 'end', passed: false, reason: 'save dialog never appeared' }],
    ]);
    expect(recorder.session(recorder.defaultSessionId)).toMatchObject({
      id: recorder.defaultSessionId,
      dir,
      status: 'ended',
      counts: { calls: 1, pending: 0, failures: 0 },
      lastObservation: null,
    });
    await recorder.close();
    expect(recorder.session('nope00000000')).toBeUndefined();
  });

  it('close() ends open sessions via close; calls after close pass through unrecorded', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const dispatch = recorder.wrap(async (_t, args) => ({ sessionId: args.sessionId, ok: true, result: {} }));
    await dispatch('query', { sessionId: 'abcabcabcabc' });
    await recorder.close();
    await recorder.close(); // idempotent
    const out = await dispatch('query', { sessionId: 'abcabcabcabc' });
    expect(out).toMatchObject({ ok: true });
    const dir = dirOf('abcabcabcabc');
    // WAL checkpointed and removed. No catalog sidecar: record's createRecorder was given no closed-sessions
    // handler (the package's createRecorder writes one: test/catalog/sidecar.test.ts).
    expect(fs.readdirSync(dir).sort()).toEqual(['session.sqlite']);
    expect(calls(dir)).toHaveLength(1);
    expect(events(dir, 'session-end').map((e) => e.data)).toEqual([{ via: 'close' }]);
  });

  it('a session-end result ends its session; the last good observation is kept compact for session()', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const dispatch = recorder.wrap(async (tool, args) =>
      tool === 'session-end'
        ? { sessionId: args.sessionId, ok: true, result: { sessionId: args.sessionId, ended: true } }
        : { sessionId: args.sessionId, ok: true, result: { found: true, element: { name: 'OK' } } },
    );
    await dispatch('find', { sessionId: 'abcabcabcabc' });
    await dispatch('click', { sessionId: 'abcabcabcabc' }); // not an observation
    await dispatch('session-end', { sessionId: 'abcabcabcabc' });
    await recorder.flush();
    expect(recorder.session('abcabcabcabc')).toMatchObject({
      status: 'ended',
      lastObservation: { found: true, element: { name: 'OK' } },
    });
    const dir = dirOf('abcabcabcabc');
    expect(events(dir, 'session-end').map((e) => e.data)).toEqual([{ via: 'session-end' }]);
    await recorder.close();
    expect(events(dir, 'session-end')).toHaveLength(1); // close does not end it again
  });
});

describe('exchanges (the proxies)', () => {
  it('records initialize into the environment, tools/call as calls, and the rest as exchange events in the first session', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir, transport: 'stdio' });
    recorder.recordExchange(
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18' } },
      {
        jsonrpc: '2.0',
        id: 0,
        result: {
          protocolVersion: '2025-06-18',
          serverInfo: { name: 'MCEC', version: '3.1.0' },
          capabilities: {},
          instructions: 'Observe, then act.',
          commandAccess: { enabled: ['capture'], gated: ['launch'] },
        },
      },
    );
    recorder.recordExchange({ jsonrpc: '2.0', method: 'notifications/initialized' }, null);
    recorder.recordExchange(
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 1, result: { tools: [] } },
    );
    const startedAt = new Date('2026-12-02T10:00:00.000Z');
    const pending = recorder.beginExchange(
      {
        jsonrpc: '2.0',
        id: 12,
        method: 'tools/call',
        params: { name: 'wait-for', arguments: { selector: "name='x'", sessionId: '5f19c9c01a3f' } },
      },
      { startedAt },
    );
    await recorder.flush();
    const dir = dirOf('5f19c9c01a3f');
    expect(calls(dir)).toEqual([
      expect.objectContaining({
        seq: 1,
        tool: 'wait-for',
        status: 'pending',
        rpc_id: '12',
        transport: 'stdio',
      }),
    ]);
    pending.complete(
      {
        jsonrpc: '2.0',
        id: 12,
        result: callToolResult({
          sessionId: '5f19c9c01a3f',
          ok: false,
          error: { code: 'wait-condition-timeout', category: 'timeout', detail: 'no' },
        }),
      },
      { startedAt, endedAt: new Date('2026-12-02T10:00:05.000Z') },
    );
    recorder.recordExchange(
      {
        jsonrpc: '2.0',
        id: 13,
        method: 'tools/call',
        params: { name: 'nope', arguments: { sessionId: '5f19c9c01a3f' } },
      },
      { jsonrpc: '2.0', id: 13, error: { code: -32601, message: 'Method not found' } },
    );
    recorder.recordExchange(null, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Parse error' },
    });
    const failing = recorder.beginExchange(
      {
        jsonrpc: '2.0',
        id: 14,
        method: 'tools/call',
        params: { name: 'capture', arguments: { sessionId: '5f19c9c01a3f' } },
      },
      { transport: 'http' },
    );
    failing.fail('target down: ECONNREFUSED');
    failing.complete({}); // ignored after fail
    await recorder.close();

    const rows = calls(dir);
    expect(rows.map((r) => [r.seq, r.tool, r.status, r.error_code, r.rpc_id, r.transport])).toEqual([
      [1, 'wait-for', 'failed', 'wait-condition-timeout', '12', 'stdio'],
      [2, 'nope', 'fault', '-32601', '13', 'stdio'],
      [3, 'capture', 'fault', 'proxy-error', '14', 'http'],
    ]);
    expect(rows[0]).toMatchObject({
      duration_ms: 5000,
      output_kind: 'json-rpc-result',
      ended_at: '2026-12-02T10:00:05.000Z',
    });
    expect(JSON.parse(rows[0]!.response!).result.content).toEqual([{ type: 'text', text: '[envelope]' }]);
    expect(rows[2]!.error_detail).toBe('target down: ECONNREFUSED');
    // The handshake and the protocol faults went into the session of the first call: no other session.
    expect(sessionDirs(temp.dir)).toEqual([path.basename(dir)]);
    const env = JSON.parse(
      withLog(
        dir,
        (db) => (db.prepare('SELECT environment FROM session').get() as { environment: string }).environment,
      ),
    );
    expect(env.server).toEqual({
      name: 'MCEC',
      version: '3.1.0',
      protocolVersion: '2025-06-18',
      commandAccess: { enabled: ['capture'], gated: ['launch'] },
      instructionsSha256: createHash('sha256').update('Observe, then act.').digest('hex'),
    });
    expect(events(dir, 'exchange').map((e) => e.data.method)).toEqual([
      'initialize',
      'notifications/initialized',
      'tools/list',
      null,
    ]);
    expect(events(dir, 'protocol-fault').map((e) => [e.call_seq, e.data])).toEqual([
      [2, { code: -32601, message: 'Method not found', id: 13, method: 'tools/call' }],
      [null, { code: -32700, message: 'Parse error', id: null, method: null }],
    ]);
    expect(expectEventsValid(dir)).toBeGreaterThan(5);
  });

  it('takes events and secrets from a proxy: a remembered token is scrubbed everywhere', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    recorder.rememberSecret('Bearer tok-7f3a9c2e1d');
    recorder.event(undefined, 'proxy-error', { reason: 'upstream said: bad token tok-7f3a9c2e1d' });
    recorder.recordExchange(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'query', arguments: { note: 'tok-7f3a9c2e1d' } },
      },
      { jsonrpc: '2.0', id: 1, result: callToolResult({ ok: true, result: { echo: 'tok-7f3a9c2e1d' } }) },
    );
    await recorder.close();
    const dir = dirOf(recorder.defaultSessionId);
    expect(events(dir, 'proxy-error')[0]!.data).toEqual({ reason: 'upstream said: bad token [redacted]' });
    const [row] = calls(dir);
    expect(row!.args).not.toContain('tok-7f3a9c2e1d');
    expect(row!.envelope).not.toContain('tok-7f3a9c2e1d');
  });
});

describe('back-pressure', () => {
  it('a flood of calls that never yields to the event loop stays bounded, and every call lands', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const result = { ok: true, result: { found: true, element: { name: 'x'.repeat(200) } } };
    const dispatch = recorder.wrap(async (_t: string, _a: Record<string, unknown>) => result);
    const total = 20_000;
    let midway = -1;
    for (let n = 0; n < total; n += 1) {
      // Resolved at once: without back-pressure this loop would never give the recorder a turn.
      await dispatch('find', { n });
      if (n === 15_000) {
        const dir = dirOf(recorder.defaultSessionId);
        midway = withLog(
          dir,
          (db) => (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n,
        );
      }
    }
    // The queue was cut and drained while the loop ran: most calls were already on disk at 15,000.
    expect(midway).toBeGreaterThan(15_000 - 8192 - 1);
    await recorder.close();
    const dir = dirOf(recorder.defaultSessionId);
    const counts = withLog(dir, (db) =>
      db.prepare('SELECT status, count(*) AS n FROM calls GROUP BY status').all(),
    );
    expect(counts).toEqual([{ status: 'ok', n: total }]);
  });
});

describe('the last good observation', () => {
  it('is stored clipped (long strings, big values) while the agent still gets it whole', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const text = 'word '.repeat(400_000); // 2 MB of OCR text
    const dispatch = recorder.wrap(async (tool: string, _a: Record<string, unknown>) =>
      tool === 'get-text'
        ? { ok: true, result: { text, lineCount: 1 } }
        : { ok: false, error: { code: 'element-not-found', category: 'no-target', detail: 'gone' } },
    );
    await dispatch('get-text', {});
    const failure = (await dispatch('find', {})) as unknown as {
      error: { lastObservation: { text: string } };
    };
    expect(failure.error.lastObservation.text).toBe(text);
    await recorder.close();
    const stored = withLog(dirOf(recorder.defaultSessionId), (db) =>
      JSON.parse(
        (db.prepare('SELECT last_observation FROM session').get() as { last_observation: string })
          .last_observation,
      ),
    );
    expect(stored.lineCount).toBe(1);
    expect(stored.text).toMatch(/^(word ){51}w\.\.\. \[2000000 chars\]$/);
    // After close the recorder keeps only the stored form.
    expect(recorder.session(recorder.defaultSessionId)?.lastObservation).toEqual(stored);
  });

  it('a failure after a 10,000-deep observation still returns, with the observation attached', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir });
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10_000; i += 1) deep = i % 2 === 0 ? [deep] : { a: deep };
    const dispatch = recorder.wrap(async (tool: string, _a: Record<string, unknown>) =>
      tool === 'query'
        ? { ok: true, result: { tree: deep } }
        : { ok: false, error: { code: 'uia-faulted', category: 'internal', detail: 'x' } },
    );
    await dispatch('query', {});
    const failure = (await dispatch('invoke', {})) as unknown as {
      error: { lastObservation: { tree: unknown } };
    };
    let node: unknown = failure.error.lastObservation.tree;
    for (let i = 0; i < 10_000; i += 1) node = Array.isArray(node) ? node[0] : (node as { a: unknown }).a;
    expect(node).toBe('bottom');
    await recorder.close();
    expect(calls(dirOf(recorder.defaultSessionId)).map((r) => r.status)).toEqual(['ok', 'failed']);
  });
});

describe('redaction options', () => {
  it('adds user keys and patterns to the defaults, and can keep typed text', async () => {
    const recorder = createRecorder({
      sessionsDir: temp.dir,
      redact: { keys: ['pin', /^x-account/i], patterns: [/ACCT-\d{4,8}/g], keepTypedText: true },
    });
    const dispatch = recorder.wrap(async (_t: string, args: Record<string, unknown>) => ({
      ok: true,
      result: { echo: `typed into ACCT-12345678 with pin ${args.pin}`, 'X-Account-Id': 'acc-998877' },
    }));
    await dispatch('invoke', { action: 'type', value: 'hello world', pin: '8642', apiKey: 'k-1234567890' });
    await recorder.close();
    const [row] = calls(dirOf(recorder.defaultSessionId));
    expect(JSON.parse(row!.args!)).toEqual({
      action: 'type',
      value: 'hello world',
      pin: '[redacted]',
      apiKey: '[redacted]',
    });
    expect(JSON.parse(row!.envelope!).result).toEqual({
      echo: 'typed into [redacted] with pin [redacted]',
      'X-Account-Id': '[redacted]',
    });
  });
});
