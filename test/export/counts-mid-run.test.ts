/**
 * The live export's counts while a session is still being recorded: spans on their way are "queued", not
 * "not delivered", and the log's counts catch up once the collector answers, with no further call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { failureSummaryText } from '../../src/sessions/summarize.js';
import { events, sessionDirs } from '../record/helpers.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { tempDir } from '../support/temp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!done()) throw new Error(`not within 15 s: ${what}`);
}

describe('the live export mid-run', () => {
  it('says queued while the collector has not answered, then the delivered count without another call', async () => {
    const r = await startOtlpReceiver();
    cleanups.push(() => r.close());
    let release = false;
    // The collector holds its answers until the test has read the mid-run counts.
    r.answer = () => ({ status: 200, delayMs: release ? 0 : 3000 });
    const root = tempDir('mcec-otlp-midrun-');
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const recorder = createRecorder({
      sessionsDir: root,
      otlp: { url: r.url, scheduledDelayMillis: 10 },
      stderr: () => {},
    });
    cleanups.push(() => recorder.close());
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      sessionId: 'mid-1',
      ok: true,
      result: { windows: [] },
    }));
    for (let i = 0; i < 3; i++) {
      await call('windows', { sessionId: 'mid-1' });
      await recorder.flush();
    }
    const dir = path.join(root, sessionDirs(root)[0]!);
    const counts = () => events(dir, 'otlp-export').at(-1)?.data;
    await until(() => r.requests >= 1, 'the collector has the first batch (its answer held)');
    // One more call: its commit writes the counts as they stand, nothing answered yet.
    await call('windows', { sessionId: 'mid-1' });
    await recorder.flush();
    const mid = counts()!;
    expect(mid).toMatchObject({ spans: 3, exported: 0, dropped: 0, queued: 3 });
    // On their way, not lost.
    expect(await failureSummaryText(dir)).toContain(
      ': 0 of 3 spans delivered so far, 3 queued (the recorder was still running',
    );
    release = true;
    // The collector answers; the log catches up with no further call.
    await until(() => counts()?.exported === 4, 'the log counts the 4 delivered spans');
    expect(counts()).toMatchObject({ spans: 4, exported: 4, dropped: 0, queued: 0 });
    expect(await failureSummaryText(dir)).toContain(
      ': 4 of 4 spans delivered so far (the recorder was still running',
    );
    await recorder.close();
    expect(await failureSummaryText(dir)).toContain(': 5 of 5 spans delivered\n');
  }, 30_000);
});
