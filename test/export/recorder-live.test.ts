/**
 * The recorder's live export end to end: the demo with --otlp, a proxied call under the agent's own trace,
 * and a collector that is down, each against a real OTLP/HTTP receiver.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { failureSummaryText } from '../../src/sessions/summarize.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { events, expectEventsValid, sessionDirs } from '../record/helpers.js';
import { exportScope } from '../support/export-scope.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { simBehindHttpProxy } from '../support/sim-http-proxy.js';
import { recordOneStdioCall } from '../support/stdio-record.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { tempRoot, receiver, defer } = exportScope('mcec-live-rec-');

const rpc = (id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
  });

async function post(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return res.text();
}

describe('createRecorder({ otlp })', () => {
  it('the demo with --otlp gives one trace whose spans match the session calls one to one', async () => {
    const r = await receiver();
    const sessions = path.join(tempRoot(), 'sessions');
    // Not spawnSync: the receiver lives in this process and must answer while the demo runs.
    const demo = await promisify(execFile)(
      process.execPath,
      [path.join(ROOT, 'dist/cli/demo.js'), '--sessions', sessions, '--json', '--otlp', r.url],
      { encoding: 'utf8' },
    );
    const { sessionDir } = JSON.parse(demo.stdout.trim().split('\n').at(-1)!) as { sessionDir: string };
    const reader = SessionReader.open(sessionDir);
    const calls = [...reader.calls()];
    const scenario = reader.session().scenario;
    reader.close();
    expect(new Set(r.spans.map((s) => s.traceId)).size).toBe(1);
    const root = r.spans.find((s) => s.parentSpanId === '')!;
    expect(root.name).toBe(scenario);
    const callSpans = r.spans.filter((s) => s !== root);
    expect(callSpans.map((s) => [s.attributes['mcec.call.seq'], s.name])).toEqual(
      calls.map((c) => [c.seq, `tools/call ${c.tool}`]),
    );
    for (const s of callSpans) expect(s.parentSpanId).toBe(root.spanId);
    // The log says what became of its spans, in the shape the event schema gives.
    const [exportEvent] = events(sessionDir, 'otlp-export');
    expect(exportEvent?.data).toMatchObject({
      url: r.url,
      spans: calls.length + 1,
      exported: calls.length + 1,
      dropped: 0,
    });
    expectEventsValid(sessionDir);
  }, 60_000);

  it("makes a proxied call a child of the agent's span when its params._meta carries a traceparent", async () => {
    const root = tempRoot();
    const r = await receiver();
    const recorder = createRecorder({
      sessionsDir: path.join(root, 'recorded'),
      transport: 'http',
      otlp: { url: r.url, scheduledDelayMillis: 20 },
      stderr: () => {},
    });
    const rig = await simBehindHttpProxy(root, { recorder });
    defer(() => rig.close());
    const started = JSON.parse(await post(rig.url, rpc(1, 'session-start', {}))) as {
      result: { content: Array<{ text: string }> };
    };
    const sid = (JSON.parse(started.result.content.at(-1)!.text) as { sessionId: string }).sessionId;
    const agentTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const agentSpan = '00f067aa0ba902b7';
    await post(
      rig.url,
      rpc(2, 'windows', { sessionId: sid }, { traceparent: `00-${agentTrace}-${agentSpan}-01` }),
    );
    await post(rig.url, rpc(3, 'windows', { sessionId: sid }, { traceparent: 'not a trace context' }));
    await post(rig.url, rpc(4, 'session-end', { sessionId: sid }));
    await rig.close();
    const windows = r.spans.filter((s) => s.name === 'tools/call windows');
    expect(windows).toHaveLength(2);
    const [under, plain] = windows as [(typeof windows)[0], (typeof windows)[0]];
    const rootSpan = r.spans.find((s) => s.parentSpanId === '')!;
    expect(under).toMatchObject({ traceId: agentTrace, parentSpanId: agentSpan });
    expect(under.links).toEqual([{ traceId: rootSpan.traceId, spanId: rootSpan.spanId }]);
    expect(plain).toMatchObject({ traceId: rootSpan.traceId, parentSpanId: rootSpan.spanId });
    expect(under.attributes['network.transport']).toBe('tcp');
    const dir = path.join(root, 'recorded', sessionDirs(path.join(root, 'recorded'))[0]!);
    expect(events(dir, 'trace-parent').map((e) => e.data)).toEqual([
      { traceparent: `00-${agentTrace}-${agentSpan}-01` },
    ]);
    expectEventsValid(dir);
  }, 60_000);

  it('with the collector down, every call returns as usual and the log counts the spans as dropped', async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close();
    const root = tempRoot();
    const recorder = createRecorder({
      sessionsDir: root,
      otlp: { url, scheduledDelayMillis: 10, exportTimeoutMillis: 500, shutdownTimeoutMs: 3000 },
      stderr: () => {},
    });
    const envelope = { sessionId: 'down-1', ok: true, result: { windows: [] } };
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => envelope);
    for (let i = 0; i < 5; i += 1) expect(await call('windows', { sessionId: 'down-1' })).toBe(envelope);
    await recorder.end('down-1', { passed: true });
    await recorder.close();
    const dir = path.join(root, sessionDirs(root)[0]!);
    const [e] = events(dir, 'otlp-export');
    expect(e?.data).toMatchObject({ spans: 6, exported: 0, dropped: 6, queued: 0 });
    expect(typeof e?.data.lastError).toBe('string');
    expectEventsValid(dir);
    // The failure summary says so in its Recording section.
    expect(await failureSummaryText(dir)).toMatch(
      new RegExp(
        `- OpenTelemetry export to ${url.replace(/[.]/g, '\\.')}: 0 of 6 spans delivered, 6 not \\(`,
      ),
    );
  }, 60_000);
});

describe('mcec-record stdio --otlp with the collector down (the built CLI, a short run)', () => {
  it('says on stderr what was not delivered and why, and the log event carries the error', async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close();
    const sessions = path.join(tempRoot(), 'sessions');
    const run = await recordOneStdioCall(['--sessions', sessions, '--otlp', url]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(
      new RegExp(
        `OpenTelemetry export to ${url.replace(/[.]/g, '\\.')}: 0 of (\\d+) spans delivered, \\1 dropped: \\S`,
      ),
    );
    const dir = path.join(sessions, sessionDirs(sessions)[0]!);
    const [e] = events(dir, 'otlp-export');
    expect(e?.data).toMatchObject({ exported: 0, queued: 0 });
    expect(e?.data.dropped).toBe(e?.data.spans);
    expect(e?.data.lastError).toMatch(/\S/); // the SDK's error, or: no answer before shutdown
    expectEventsValid(dir);
  }, 60_000);
});
