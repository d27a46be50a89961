/**
 * A server that is not MCEC (its initialize says so): plain CallToolResults are plain calls, its sessions are
 * its MCP sessions, and an envelope it does send is still read as one.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/index.js';
import { planSession } from '../../src/export/session-spans.js';
import { createRecorder } from '../../src/record/index.js';
import { hashMcpSessionId } from '../../src/record/server-identity.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { readSessions } from '../proxy/sim-script.js';
import { answer, call, initialize } from '../support/mcp-messages.js';
import { tempDir } from '../support/temp.js';

let tmp: string;
beforeEach(() => {
  tmp = tempDir('plain-server-');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('a server that is not MCEC', () => {
  it('records plain results truthfully: ok unless isError, content kept, no violations, one session per MCP session', async () => {
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('acme/files');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    const a = { transport: 'http' as const, mcpSessionId: 'a1b2-c3' };
    const b = { transport: 'http' as const, mcpSessionId: 'ffff-0000' };
    recorder.recordExchange(
      call(1, 'read', { path: 'x', sessionId: 'not-a-routing-id' }),
      answer(1, {
        content: [
          { type: 'text', text: 'hello' },
          { type: 'resource_link', uri: 'file:///x', name: 'x' },
        ],
      }),
      a,
    );
    recorder.recordExchange(
      call(2, 'read', { path: 'y' }),
      answer(2, { content: [{ type: 'text', text: 'ENOENT: no such file y' }], isError: true }),
      b,
    );
    const envelope = { ok: true, sessionId: null, result: { saved: true } };
    recorder.recordExchange(
      call(3, 'save', {}),
      answer(3, { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: false }),
      a,
    );
    await recorder.close();

    const sessions = readSessions(sessionsDir);
    // Named by the server and a hash of the Mcp-Session-Id (a credential-like token, never stored).
    const [idA, idB] = [
      `acme-files-${hashMcpSessionId('a1b2-c3')}`,
      `acme-files-${hashMcpSessionId('ffff-0000')}`,
    ];
    expect(sessions.map((s) => s.session.session_id).sort()).toEqual([idA, idB].sort());
    const byId = new Map(sessions.map((s) => [s.session.session_id, s]));
    const first = byId.get(idA)!;
    expect(first.calls.map((c) => [c.tool, c.status, c.violations])).toEqual([
      ['read', 'ok', null],
      ['save', 'ok', null],
    ]);
    // The plain result is kept as it came (text as text, the resource link as it is).
    expect(JSON.parse(first.calls[0]!.response!)).toMatchObject({
      result: {
        content: [
          { type: 'text', text: 'hello' },
          { type: 'resource_link', uri: 'file:///x' },
        ],
      },
    });
    // An envelope in the text is still read as one.
    expect(JSON.parse(first.calls[1]!.envelope!)).toMatchObject({ ok: true, result: { saved: true } });
    const failed = byId.get(idB)!.calls[0]!;
    expect([
      failed.status,
      failed.error_code,
      failed.error_category,
      failed.error_detail,
      failed.violations,
    ]).toEqual(['failed', 'tool-error', null, 'ENOENT: no such file y', null]);
  });

  it('a task-augmented call answered with a CreateTaskResult (MCP tasks) is ok, kept as it came, no violation', async () => {
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('mcp-servers/everything');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    const request = call(1, 'simulate-research-query', { topic: 'mcp' });
    (request.params as Record<string, unknown>).task = { ttl: 60000 };
    const created = {
      task: {
        taskId: '87d901bd3582f146ebe6aac106e920bb',
        status: 'working',
        ttl: 300000,
        createdAt: '2026-12-07T07:30:20.684Z',
        lastUpdatedAt: '2026-12-07T07:30:20.685Z',
        pollInterval: 1000,
        statusMessage: 'Gathering sources...',
      },
    };
    recorder.recordExchange(request, answer(1, created), { transport: 'http', mcpSessionId: 'a1' });
    await recorder.close();
    const [s] = readSessions(sessionsDir);
    const row = s!.calls[0]!;
    expect([row.status, row.error_code, row.violations]).toEqual(['ok', null, null]);
    expect(JSON.parse(row.response!)).toMatchObject({ result: created });
  });

  it('an MCEC server is still read as MCEC (a plain result there breaks the contract)', async () => {
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('MCEC');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    recorder.recordExchange(call(1, 'windows'), answer(1, { content: [{ type: 'text', text: 'hello' }] }), {
      transport: 'http',
      mcpSessionId: 'x',
    });
    await recorder.close();
    const [s] = readSessions(sessionsDir);
    expect(s!.session.session_id).toMatch(/^[0-9a-f]{12}$/);
    expect(s!.calls[0]!.status).toBe('failed');
    expect(s!.calls[0]!.error_code).toBe('envelope-unparseable');
  });
});

describe('OpenTelemetry spans of a plain server (the MCP semantic conventions)', () => {
  it('mcp.session.id is the hash of the real Mcp-Session-Id, tool_error for isError, no null request id, the protocol version', async () => {
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('acme/files');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    const meta = { transport: 'http' as const, mcpSessionId: '6f1e-77' };
    recorder.recordExchange(call(1, 'read'), answer(1, { content: [{ type: 'text', text: 'x' }] }), meta);
    recorder.recordExchange(
      { ...call(2, 'read'), id: null },
      answer(2, { content: [{ type: 'text', text: 'no' }], isError: true }),
      meta,
    );
    recorder.recordExchange(
      call(3, 'read'),
      { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'bad params' } },
      meta,
    );
    await recorder.close();
    const [s] = readSessions(sessionsDir);
    const reader = SessionReader.open(s!.dir);
    try {
      const spans = planSession(reader);
      const calls = spans.filter((p) => p.kind === 'client');
      for (const span of spans) {
        expect(span.attributes).toMatchObject({
          'mcp.session.id': hashMcpSessionId('6f1e-77'),
          'mcec.session.id': `acme-files-${hashMcpSessionId('6f1e-77')}`,
          'mcp.protocol.version': '2025-06-18',
        });
      }
      expect(calls.map((c) => c.attributes['jsonrpc.request.id'])).toEqual(['1', undefined, '3']);
      expect(calls[1]!.attributes).toMatchObject({
        'error.type': 'tool_error',
        'mcec.error.code': 'tool-error',
      });
      expect(calls[2]!.attributes).toMatchObject({
        'error.type': '-32602',
        'rpc.response.status_code': '-32602',
      });
      expect(calls[0]!.attributes['error.type']).toBeUndefined();
    } finally {
      reader.close();
    }
  });
});

describe('the Mcp-Session-Id is a credential-like token', () => {
  it('its value reaches no session id, dir name, log, bundle or span; a 16-hex hash names the session', async () => {
    const token = 'sess-7d9c2b0e4f6a41c8b5e3a9d1f0c2e7b4';
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('acme/files');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    const meta = { transport: 'http' as const, mcpSessionId: token };
    // A server that echoes the header's value in an answer: redacted like any secret.
    const echo = { content: [{ type: 'text', text: `your session: ${token}` }] };
    recorder.recordExchange(call(1, 'read'), answer(1, echo), meta);
    recorder.recordExchange(
      call(2, 'read'),
      answer(2, { content: [{ type: 'text', text: 'no' }], isError: true }),
      meta,
    );
    await recorder.close();

    const [s] = readSessions(sessionsDir);
    expect(s!.session.session_id).toMatch(/^acme-files-[0-9a-f]{16}$/);
    const mcpSession = s!.events.filter((e) => e.kind === 'mcp-session').map((e) => e.detail);
    expect(mcpSession).toEqual([{ mcpSessionHash: hashMcpSessionId(token) }]);
    // Every byte the recording wrote, the bundle's entries (read back by unzip) and the spans.
    const written = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const full = path.join(dir, e.name);
        return [e.name, ...(e.isDirectory() ? written(full) : [fs.readFileSync(full).toString('latin1')])];
      });
    const bundle = await buildBundle(s!.dir, { output: path.join(tmp, 'bundle.zip') });
    const unzipped = execFileSync('unzip', ['-p', bundle.bundle], { maxBuffer: 64 * 1024 * 1024 }).toString(
      'latin1',
    );
    const reader = SessionReader.open(s!.dir);
    let spans: string;
    try {
      spans = JSON.stringify(planSession(reader));
    } finally {
      reader.close();
    }
    for (const text of [...written(sessionsDir), unzipped, spans]) expect(text).not.toContain(token);
    expect(spans).toContain(hashMcpSessionId(token));
  });

  it("what a proxy reports on the client's word goes into its MCP session only once a call started there; an exchange's own events wait with it", async () => {
    const sessionsDir = path.join(tmp, 'sessions');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const [init, initAnswer] = initialize('acme/files');
    recorder.recordExchange(init, initAnswer, { transport: 'http' });
    const a = { transport: 'http' as const, mcpSessionId: 'client-a' };
    const b = { transport: 'http' as const, mcpSessionId: 'client-b' };
    const ok = (id: number) => answer(id, { content: [{ type: 'text', text: 'ok' }] });
    const fault = (message: string) => ({ code: -32700, message, id: null, method: null, transport: 'http' });
    const orphan = (id: string) => ({ jsonrpc: '2.0', id, result: {} });
    recorder.recordExchange(call(1, 'read', {}), ok(1), a);
    // B has no call yet: its faults and orphan answers are the connection's (A's, where the last call landed);
    // its exchange's answer over the limit waits for B's session with that exchange.
    recorder.event(undefined, 'protocol-fault', fault('b before its call'), b);
    recorder.recordExchange(null, orphan('b-early'), b);
    const read = recorder.beginExchange({ jsonrpc: '2.0', id: 2, method: 'resources/read' }, b);
    read.tooLarge({ bytes: 9000, limit: 4096 });
    recorder.recordExchange(call(3, 'read', {}), ok(3), b);
    // A's call again makes A's session the latest: B's faults and orphan answers now go into B's.
    recorder.recordExchange(call(4, 'read', {}), ok(4), a);
    recorder.event(undefined, 'protocol-fault', fault('b after its call'), b);
    recorder.recordExchange(null, orphan('b-late'), b);
    await recorder.close();

    const sessions = readSessions(sessionsDir);
    const of = (mcpSessionId: string) => {
      const s = sessions.find(
        (x) => x.session.session_id === `acme-files-${hashMcpSessionId(mcpSessionId)}`,
      )!;
      return s.events.flatMap((e) => {
        if (e.kind === 'protocol-fault') return [`protocol-fault ${String(e.detail.message)}`];
        if (e.kind === 'oversize-message') return [`oversize-message ${String(e.detail.method)}`];
        if (e.kind !== 'exchange' || e.detail.method === 'initialize') return [];
        const response = e.detail.response as { id?: unknown } | null;
        return [`exchange ${String(e.detail.method)} ${String(response?.id ?? null)}`];
      });
    };
    expect(of('client-a')).toEqual(['protocol-fault b before its call', 'exchange null b-early']);
    expect(of('client-b')).toEqual([
      'exchange resources/read null',
      'oversize-message resources/read',
      'protocol-fault b after its call',
      'exchange null b-late',
    ]);
  });
});
