/** Backfill of the demo session into a real OTLP/HTTP receiver that decodes with the official protos. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportSessions } from '../../src/export/backfill.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { useDemoSession } from '../support/demo-session.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';

const demoSession = useDemoSession();
let sessionDir: string;
let receiver: OtlpReceiver;

beforeAll(async () => {
  sessionDir = demoSession().sessionDir;
  receiver = await startOtlpReceiver();
}, 60_000);

afterAll(async () => {
  await receiver?.close();
});

describe('mcec-bundle export (backfill)', () => {
  it('sends one trace whose spans match the calls one to one, with MCP attribute names', async () => {
    const result = await exportSessions([sessionDir], { url: receiver.url });
    expect(result).toMatchObject({ sessions: 1, dropped: 0, queued: 0 });
    const reader = SessionReader.open(sessionDir);
    const calls = [...reader.calls()];
    const session = reader.session();
    reader.close();
    expect(result.exported).toBe(calls.length + 1);
    const spans = receiver.spans;
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const root = spans.find((s) => s.parentSpanId === '')!;
    expect(root.name).toBe(session.scenario);
    expect(root.attributes['mcec.verdict']).toBe('FAIL');
    expect(root.status.code).toBe(2); // STATUS_CODE_ERROR
    const children = spans.filter((s) => s !== root);
    expect(children.map((s) => s.attributes['mcec.call.seq'])).toEqual(calls.map((c) => c.seq));
    for (const [i, span] of children.entries()) {
      const call = calls[i]!;
      expect(span.parentSpanId).toBe(root.spanId);
      expect(span.name).toBe(`tools/call ${call.tool}`);
      expect(span.kind).toBe(3); // SPAN_KIND_CLIENT
      expect(span.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': call.tool,
        'mcec.session.id': session.session_id,
      });
      // MCEC's session id is no MCP session id (the conventions: only a real Mcp-Session-Id).
      expect(span.attributes['mcp.session.id']).toBeUndefined();
      expect(span.startMs).toBe(Date.parse(call.started_at));
      if (call.status === 'ok') expect(span.status.code).toBe(0);
      else {
        expect(span.status.code).toBe(2);
        // The MCP conventions: tool_error for a failed result, the JSON-RPC code for a protocol error.
        if (call.status === 'failed') {
          expect(span.attributes['error.type']).toBe('tool_error');
          expect(span.attributes['mcec.error.code']).toBe(call.error_code);
        } else if (call.output_kind === 'json-rpc-error') {
          expect(span.attributes['error.type']).toBe(call.error_code);
          expect(span.attributes['rpc.response.status_code']).toBe(call.error_code);
        } else expect(span.attributes['error.type']).toBe(call.error_code);
        expect(span.attributes['mcec.error.category']).toBe(call.error_category);
      }
      // Arguments are opt-in.
      expect(span.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    }
    // Images travel as references (hash and relative path), never as bytes.
    const artifactEvents = children.flatMap((s) => s.events.filter((e) => e.name === 'mcec.artifact'));
    expect(artifactEvents.length).toBeGreaterThan(0);
    for (const e of artifactEvents) {
      expect(e.attributes['mcec.artifact.sha256']).toMatch(/^[0-9a-f]{64}$/);
      expect(fs.existsSync(path.join(sessionDir, e.attributes['mcec.artifact.path'] as string))).toBe(true);
    }
    expect(JSON.stringify(spans)).not.toMatch(/iVBORw0KGgo/); // no PNG base64 anywhere
    expect(root.resource['service.name']).toBe('mcec-recorder');
  });

  it('sends the same ids the second time, so a backend keeps one copy', async () => {
    const before = receiver.spans.length;
    const first = receiver.spans.map((s) => `${s.traceId}/${s.spanId}`).sort();
    await exportSessions([sessionDir], { url: receiver.url });
    const second = receiver.spans
      .slice(before)
      .map((s) => `${s.traceId}/${s.spanId}`)
      .sort();
    expect(second).toEqual(first);
  });
});

describe('export when the collector misbehaves', () => {
  it('retries a 503 and a 429 and then delivers everything', async () => {
    const flaky = await startOtlpReceiver();
    flaky.answer = (n) => ({ status: n === 1 ? 503 : n === 2 ? 429 : 200 });
    try {
      const result = await exportSessions([sessionDir], { url: flaky.url });
      expect(flaky.requests).toBeGreaterThanOrEqual(3);
      expect(result.dropped).toBe(0);
      expect(result.exported).toBe(result.spans);
    } finally {
      await flaky.close();
    }
  }, 30_000);

  it('counts every span as dropped when the collector is down, and says why', async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close();
    const result = await exportSessions([sessionDir], { url, exportTimeoutMillis: 2000 });
    expect(result.exported).toBe(0);
    expect(result.dropped).toBe(result.spans);
    expect(result.queued).toBe(0);
    expect(result.lastError).toBeTruthy();
  }, 30_000);

  it('counts as dropped what a collector slower than the export timeout never acknowledged', async () => {
    const slow = await startOtlpReceiver();
    slow.answer = () => ({ status: 200, delayMs: 3000 });
    try {
      const result = await exportSessions([sessionDir], { url: slow.url, exportTimeoutMillis: 500 });
      expect(result.exported).toBe(0);
      expect(result.dropped).toBe(result.spans);
    } finally {
      await slow.close();
    }
  }, 30_000);

  it('sends the headers it is given (an API key)', async () => {
    const before = receiver.headers.length;
    await exportSessions([sessionDir], { url: receiver.url, headers: { 'x-api-key': 'k-123' } });
    expect(receiver.headers.slice(before).every((h) => h['x-api-key'] === 'k-123')).toBe(true);
    expect(receiver.headers[before]!['content-type']).toBe('application/x-protobuf');
  });
});
