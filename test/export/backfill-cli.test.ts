/**
 * `mcec-bundle export` of a session still being recorded (its root span is not final yet, under the final
 * span's id), and what an export error says about the collector's answer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exportSessions } from '../../src/export/backfill.js';
import { createRecorder, type Recorder } from '../../src/record/index.js';
import { sessionDirs } from '../record/helpers.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
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

/** A recorder with one session of two calls, left open; its sessions root and dir. */
async function openSession(): Promise<{ recorder: Recorder; root: string; dir: string; id: string }> {
  const root = tempDir('mcec-otlp-backfill-');
  cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
  const recorder = createRecorder({ sessionsDir: root, stderr: () => {} });
  cleanups.push(() => recorder.close());
  const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    sessionId: 'live-1',
    ok: true,
    result: { windows: [] },
  }));
  await call('windows', { sessionId: 'live-1' });
  await call('windows', { sessionId: 'live-1' });
  await recorder.flush();
  const name = sessionDirs(root)[0]!;
  return { recorder, root, dir: path.join(root, name), id: 'live-1' };
}

describe('mcec-bundle export of a session still being recorded', () => {
  it('sends nothing for it: named alone exit 1, with --since left out and named; once ended it goes', async () => {
    const r = await receiver();
    const { recorder, root, dir, id } = await openSession();
    const named = await runNode([BUNDLE_CLI, 'export', id, '--sessions', root, '--otlp', r.url]);
    expect(named.code).toBe(1);
    expect(named.stderr).toContain('still being recorded');
    const since = await runNode([
      BUNDLE_CLI,
      'export',
      '--since',
      '1d',
      '--sessions',
      root,
      '--otlp',
      r.url,
      '--json',
    ]);
    expect(since.code).toBe(0);
    expect(JSON.parse(since.stdout)).toMatchObject({ sessions: 0, spans: 0, stillRecording: [dir] });
    expect(r.requests).toBe(0);
    await recorder.end(id, { passed: true });
    await recorder.close();
    const after = await runNode([BUNDLE_CLI, 'export', id, '--sessions', root, '--otlp', r.url, '--json']);
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout)).toMatchObject({
      sessions: 1,
      spans: 3,
      exported: 3,
      stillRecording: [],
    });
  }, 60_000);
});

describe('an export error', () => {
  it.each([429, 500])(
    'names the collector status %i',
    async (status) => {
      const r = await receiver();
      r.answer = () => ({ status });
      const { recorder, dir } = await openSession();
      await recorder.close();
      const res = await exportSessions([dir], { url: r.url, exportTimeoutMillis: 1500 });
      expect(res.dropped).toBe(res.spans);
      expect(res.lastError).toContain(`(HTTP ${status})`);
    },
    30_000,
  );
});
