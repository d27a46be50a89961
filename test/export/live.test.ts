/** The live export, driven as the recorder drives it, against a real receiver: same spans as a backfill. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exportSessions } from '../../src/export/backfill.js';
import { LiveTraceExport } from '../../src/export/live.js';
import { createRecorder } from '../../src/record/index.js';
import { listSessions } from '../../src/store/session-reader.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { tempDir } from '../support/temp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  cleanups.push(() => r.close());
  return r;
}

function envelopeOf(sessionId: string, ok: boolean) {
  const env = ok
    ? { sessionId, ok: true, result: { windows: [] } }
    : {
        sessionId,
        ok: false,
        error: { code: 'selector-matched-3', category: 'selector', detail: 'three matches' },
      };
  return { content: [{ type: 'text', text: JSON.stringify(env) }], isError: !ok };
}

/** A recorded session of four calls, the third one failing, with the export told after each commit. */
async function recordWithLiveExport(live: LiveTraceExport): Promise<string> {
  const root = tempDir('mcec-live-');
  cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
  const recorder = createRecorder({ sessionsDir: root, scenario: 'live export', stderr: () => {} });
  let n = 0;
  const call = recorder.wrap(async (_tool: string, args: Record<string, unknown>) => {
    n += 1;
    return envelopeOf(String(args.sessionId), n !== 3);
  });
  const sid = 'live-1';
  for (const tool of ['windows', 'capture', 'find', 'find']) {
    await call(tool, { sessionId: sid, selector: 'Button[name=Save]' });
    await recorder.flush();
    const dir = listSessions(root)[0]!.dir;
    live.committed(dir);
  }
  await recorder.end(sid, { passed: true, reason: 'recovered' });
  await recorder.close();
  const dir = listSessions(root)[0]!.dir;
  live.ended(dir);
  return dir;
}

const key = (s: ReceivedSpan) => `${s.traceId}/${s.spanId}`;

describe('LiveTraceExport', () => {
  it('sends each call once as it settles, then the root, with the same spans a backfill sends', async () => {
    const live = await receiver();
    const exporter = new LiveTraceExport({ url: live.url, scheduledDelayMillis: 50 });
    const dir = await recordWithLiveExport(exporter);
    await exporter.shutdown();
    expect(exporter.counts()).toMatchObject({ spans: 5, exported: 5, dropped: 0, queued: 0 });
    expect(exporter.counts('live-1')).toMatchObject({ spans: 5, exported: 5, dropped: 0 });
    expect(live.spans.map((s) => s.name)).toEqual([
      'tools/call windows',
      'tools/call capture',
      'tools/call find',
      'tools/call find',
      'live export',
    ]);
    const later = await receiver();
    await exportSessions([dir], { url: later.url });
    const byId = new Map(later.spans.map((s) => [key(s), s]));
    expect([...byId.keys()].sort()).toEqual(live.spans.map(key).sort());
    for (const span of live.spans) expect(span).toEqual(byId.get(key(span)));
  });

  it('never throws and never blocks when the collector is down: the spans are counted as dropped', async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close();
    const exporter = new LiveTraceExport({ url, scheduledDelayMillis: 10, exportTimeoutMillis: 1000 });
    await recordWithLiveExport(exporter);
    await exporter.shutdown();
    expect(exporter.counts('live-1')).toMatchObject({ spans: 5, exported: 0, dropped: 5, queued: 0 });
    expect(exporter.counts('live-1').lastError).toBeTruthy();
  });

  it('counts a log it cannot read and goes on', () => {
    const exporter = new LiveTraceExport({ url: 'http://127.0.0.1:9/v1/traces' });
    exporter.committed(path.join(os.tmpdir(), 'no-such-session-dir'));
    expect(exporter.readErrors).toBe(1);
    return exporter.shutdown();
  });
});
