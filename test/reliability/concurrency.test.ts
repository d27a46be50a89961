/**
 * Concurrency: 4 sessions with 16 calls in flight each, recorded while the built `mcec-bundle` bundles one of
 * them and `mcec-bundle list` reads all of them. Every call returns its own result, every call lands in its
 * own session in the order it started, the bundle of the running session verifies and holds a consistent
 * snapshot of the log, and `list` sees all four sessions while they are written.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyBundle } from '../../src/bundle/verify.js';
import { createRecorder, type Dispatch } from '../../src/record/index.js';
import {
  bundleCliAsync,
  PNG_BASE64_PREFIX,
  realPng,
  removeRoot,
  reportFigure,
  scanLogs,
  sessionDirOf,
  tempRoot,
} from './helpers.js';

const SESSIONS = ['c0ffee000001', 'c0ffee000002', 'c0ffee000003', 'c0ffee000004'];
const IN_FLIGHT = 16;

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

/** A find result (or a capture every 25th call) whose envelope names its session, as the server's does. */
function answer(sessionId: string, k: number, png: Buffer): Record<string, unknown> {
  const capture = k % 25 === 0;
  const envelope = {
    ok: true,
    sessionId,
    result: capture
      ? {
          handle: 1,
          width: 32,
          height: 24,
          encoding: 'png',
          bytes: png.length,
          base64: png.toString('base64'),
        }
      : {
          found: true,
          element: { controlType: 'Button', name: `${sessionId}:${k}`, children: [] },
          window: null,
        },
  };
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: false };
}

describe('concurrency', () => {
  it('4 sessions x 16 in flight while mcec-bundle bundles one and list reads all', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const pngs = await Promise.all(SESSIONS.map((_, i) => realPng(32, 24, 40 + i)));
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const wrapped = recorder.wrap<Dispatch>(async (_tool, args) => {
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
      const i = SESSIONS.indexOf(args.sessionId as string);
      return answer(args.sessionId as string, args.k as number, pngs[i]!);
    });
    const started = new Map<string, number[]>(SESSIONS.map((s) => [s, []]));
    const wrong: string[] = [];
    let stop = false;
    const next = new Map<string, number>(SESSIONS.map((s) => [s, 0]));
    const call = async (sessionId: string) => {
      const k = next.get(sessionId)!;
      next.set(sessionId, k + 1);
      started.get(sessionId)!.push(k);
      const got = (await wrapped(k % 25 === 0 ? 'capture' : 'find', { sessionId, k })) as {
        content: Array<{ text: string }>;
      };
      const env = JSON.parse(got.content.at(-1)!.text) as {
        sessionId: string;
        result: { element?: { name: string } };
      };
      if (env.sessionId !== sessionId || (k % 25 !== 0 && env.result.element?.name !== `${sessionId}:${k}`))
        wrong.push(`${sessionId}:${k}`);
    };
    // Every session exists on disk before the CLI looks.
    for (const s of SESSIONS) await call(s);
    await recorder.flush();

    const workers = SESSIONS.flatMap((s) =>
      Array.from({ length: IN_FLIGHT }, async () => {
        while (!stop) await call(s);
      }),
    );
    const zip = path.join(root, 'running.zip');
    await new Promise((r) => setTimeout(r, 150));
    const [bundled, ...lists] = await Promise.all([
      bundleCliAsync([SESSIONS[0]!, '--sessions', sessionsDir, '-o', zip, '--json']),
      bundleCliAsync(['list', '--sessions', sessionsDir, '--json']),
      new Promise((r) => setTimeout(r, 300)).then(() =>
        bundleCliAsync(['list', '--sessions', sessionsDir, '--json']),
      ),
    ]);
    const callsWhileCliRan = [...next.values()].reduce((a, b) => a + b, 0);
    stop = true;
    await Promise.all(workers);
    await recorder.close();

    expect(wrong).toEqual([]);
    expect(callsWhileCliRan).toBeGreaterThan(SESSIONS.length * IN_FLIGHT);

    // The running session bundled: verified, readable by unzip, with a consistent log snapshot.
    expect(bundled.code, bundled.stderr).toBe(0);
    expect(JSON.parse(bundled.stdout)).toMatchObject({ bundle: zip });
    expect((await verifyBundle(zip)).problems).toEqual([]);
    expect(spawnSync('unzip', ['-tq', zip]).status).toBe(0);
    const snapshotDir = path.join(root, 'snapshot');
    fs.mkdirSync(snapshotDir);
    expect(spawnSync('unzip', ['-q', zip, '*/session.sqlite', '-d', snapshotDir]).status).toBe(0);
    const [top] = fs.readdirSync(snapshotDir);
    const snap = new Database(path.join(snapshotDir, top!, 'session.sqlite'), { readonly: true });
    expect(snap.pragma('integrity_check', { simple: true })).toBe('ok');
    const snapCalls = (snap.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n;
    snap.close();
    expect(snapCalls).toBeGreaterThan(0);
    expect(snapCalls).toBeLessThanOrEqual(started.get(SESSIONS[0]!)!.length);

    // list saw all four sessions, each with calls, while they were written.
    for (const l of lists) {
      expect(l.code, l.stderr).toBe(0);
      const rows = JSON.parse(l.stdout) as Array<{ id: string; calls: number; error?: string }>;
      expect(rows.map((r) => r.id).sort()).toEqual([...SESSIONS].sort());
      for (const r of rows) {
        expect(r.error).toBeUndefined();
        expect(r.calls).toBeGreaterThan(0);
      }
    }

    // Each session's log holds exactly its calls, in the order they started, all completed.
    for (const s of SESSIONS) {
      const db = new Database(path.join(sessionDirOf(sessionsDir, s), 'session.sqlite'), { readonly: true });
      const rows = db.prepare('SELECT seq, status, args FROM calls ORDER BY seq').all() as Array<{
        seq: number;
        status: string;
        args: string;
      }>;
      db.close();
      expect(rows.map((r) => (JSON.parse(r.args) as { k: number }).k)).toEqual(started.get(s));
      expect(rows.every((r) => r.status === 'ok')).toBe(true);
      expect(recorder.session(s)!.counts).toMatchObject({ pending: 0, lostCalls: 0, recordFailures: 0 });
    }
    expect(scanLogs(sessionsDir, [PNG_BASE64_PREFIX])).toEqual([]);
    reportFigure('concurrency', {
      calls: [...next.values()].reduce((a, b) => a + b, 0),
      callsWhileCliRan,
      snapshotCalls: snapCalls,
    });
  });
});
