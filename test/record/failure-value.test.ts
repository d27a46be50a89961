/**
 * A failure's value for the agent is built at once when it cannot depend on queued work, and waits for the
 * queue when it can (an observation still queued, image bytes to compact): either way it is the value the
 * queue would build, and the stored rows are the same.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { calls, callToolResult, envelopeIn, makePng, sessionDirs, sha256, tempDir } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const FOUND = { found: true, element: { name: 'OK', automationId: '15' } };
const failed = (extra: Record<string, unknown> = {}) =>
  callToolResult({
    ok: false,
    error: { code: 'element-not-found', category: 'not-found', detail: 'no such element', ...extra },
  });

function setup(outputs: Record<string, () => unknown | Promise<unknown>>) {
  const dir = tempDir();
  dirs.push(dir);
  const recorder = createRecorder({ sessionsDir: dir, stderr: () => {} });
  const call = recorder.wrap(async (tool: string, _args: Record<string, unknown>) => {
    const make = outputs[tool];
    if (!make) throw new Error(`dispatch failed for ${tool}`);
    return make();
  });
  return { dir, recorder, call };
}

describe('a failure handed back without waiting for the queue', () => {
  it('is the very same object when there is no last observation to attach', async () => {
    const out = failed();
    const { recorder, call } = setup({ find: () => out });
    expect(await call('find', {})).toBe(out);
    await recorder.close();
  });

  it('gets the last good observation of a call still queued (the same turn), and later ones', async () => {
    const { dir, recorder, call } = setup({
      query: () => callToolResult({ ok: true, result: FOUND }),
      click: () => failed(),
    });
    // No await between: the query's completion is still queued when the failure returns.
    const [, first] = await Promise.all([call('query', {}), call('click', {})]);
    expect((envelopeIn(first).error as Record<string, unknown>).lastObservation).toEqual(FOUND);
    await recorder.flush();
    const second = await call('click', {}); // nothing queued now: built on the critical path
    expect((envelopeIn(second).error as Record<string, unknown>).lastObservation).toEqual(FOUND);
    const thrown = await call('type', {});
    expect(envelopeIn(thrown)).toMatchObject({
      ok: false,
      error: { code: 'unhandled', lastObservation: FOUND },
    });
    await recorder.close();
    const [session] = sessionDirs(dir);
    const rows = calls(path.join(dir, session!));
    expect(rows.map((r) => r.status)).toEqual(['ok', 'failed', 'failed', 'failed']);
    // The stored envelopes are what the server sent: the fill is for the agent only.
    expect(JSON.parse(rows[1]!.envelope!).error.lastObservation).toBeUndefined();
    expect(JSON.parse(rows[2]!.envelope!).error.lastObservation).toBeUndefined();
    expect(JSON.parse(rows[3]!.envelope!).error.lastObservation).toEqual(FOUND);
  });

  it('keeps a failure that carries its own observation as is, and one that leaks bytes waits for compaction', async () => {
    const png = await makePng(8, 6, [10, 20, 30]);
    const own = failed({ lastObservation: { found: false } });
    const leaked = failed({ lastObservation: { base64: png.toString('base64'), width: 8, height: 6 } });
    const { recorder, call } = setup({ find: () => own, 'wait-for': () => leaked });
    expect(await call('find', {})).toBe(own);
    const lo = (envelopeIn(await call('wait-for', {})).error as Record<string, unknown>)
      .lastObservation as Record<string, unknown>;
    expect(lo).toMatchObject({ kind: 'capture-summary', width: 8, height: 6 });
    expect(path.isAbsolute(lo.artifact as string)).toBe(true);
    expect(sha256(fs.readFileSync(lo.artifact as string))).toBe(sha256(png));
    await recorder.close();
  });
});
