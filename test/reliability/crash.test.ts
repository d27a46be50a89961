/**
 * Durability: an agent process recording at a steady rate is killed with SIGKILL. Every call that completed
 * more than 50 ms before the kill is in the log, the call in flight shows as pending, and the session bundles
 * as FAIL (aborted) naming the pending call.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { type CrashChildMessage, killWhenReady } from '../support/crash.js';
import { bundleCli, removeRoot, reportFigure, sessionDirOf, tempRoot } from './helpers.js';

/** The durability window RELIABILITY.md promises: calls completed longer ago than this survive a kill. */
const WINDOW_MS = 50;

interface Done {
  n: number;
  at: number;
}

/** Record at a steady rate until `calls` calls completed (and at least `minMs` passed), then SIGKILL. */
async function recordAndKill(
  sessionsDir: string,
  calls: number,
  minMs: number,
): Promise<{ sessionId: string; done: Done[]; killAt: number }> {
  let readyAt = 0;
  const doneOf = (messages: readonly CrashChildMessage[]) =>
    messages.flatMap((m) => (m.kind === 'done' ? [{ n: m.n, at: m.at }] : []));
  const child = await killWhenReady('steady', sessionsDir, {
    args: ['2'],
    until: (messages) => {
      if (readyAt === 0 && messages.some((m) => m.kind === 'ready')) readyAt = Date.now();
      return doneOf(messages).length >= calls && Date.now() - readyAt >= minMs;
    },
  });
  return { sessionId: child.ready.sessionId, done: doneOf(child.messages), killAt: child.killedAt };
}

// A recording child, a kill, a summary and two built CLIs per test: seconds alone, more on a busy CI core.
describe('crash: SIGKILL while recording', { timeout: 120_000 }, () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const r of roots) removeRoot(r);
  });

  it.each([
    [150, 300],
    [400, 600],
    [60, 150],
  ])('keeps every call completed > 50 ms before the kill (%i calls, >= %i ms)', async (calls, minMs) => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const { sessionId, done, killAt } = await recordAndKill(sessionsDir, calls, minMs);
    const dir = sessionDirOf(sessionsDir, sessionId);

    const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true });
    const rows = db.prepare('SELECT seq, tool, status, args FROM calls ORDER BY seq').all() as Array<{
      seq: number;
      tool: string;
      status: string;
      args: string | null;
    }>;
    db.close();
    const okByN = new Set(
      rows
        .filter((r) => r.tool === 'find' && r.status === 'ok')
        .map((r) => (JSON.parse(r.args!) as { n: number }).n),
    );
    const mustBeThere = done.filter((d) => d.at < killAt - WINDOW_MS);
    expect(mustBeThere.length).toBeGreaterThan(calls / 2);
    const missing = mustBeThere
      .filter((d) => !okByN.has(d.n))
      .map((d) => `#${d.n} (${killAt - d.at} ms before)`);
    expect(missing).toEqual([]);
    const inWindow = done.filter((d) => d.at >= killAt - WINDOW_MS);
    reportFigure('crash', {
      completedBeforeKill: done.length,
      checkedOlderThan50ms: mustBeThere.length,
      inWindowNotChecked: inWindow.length,
      inWindowFound: inWindow.filter((d) => okByN.has(d.n)).length,
      youngestFoundMsBeforeKill: Math.min(...done.filter((d) => okByN.has(d.n)).map((d) => killAt - d.at)),
    });
    // The call in flight all along is there, pending.
    const waitFor = rows.filter((r) => r.tool === 'wait-for');
    expect(waitFor).toHaveLength(1);
    expect(waitFor[0]!.status).toBe('pending');

    // A reader sees the dead writer's session as aborted; the summary names the pending call.
    const reader = SessionReader.open(dir);
    try {
      expect(reader.session().status).toBe('aborted');
      const summary = await buildSummary(reader);
      expect(summary.verdict).toBe('FAIL');
      expect(summary.status).toBe('aborted');
      expect(summary.counts.pending).toBeGreaterThanOrEqual(1);
      expect(summary.failingCall?.status).toBe('pending');
      expect(['wait-for', 'find']).toContain(summary.failingCall?.tool);
    } finally {
      reader.close();
    }

    // The built CLI bundles it as FAIL.
    const zip = path.join(root, 'crash.zip');
    const r = bundleCli([sessionId, '--sessions', sessionsDir, '-o', zip, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'FAIL' });
    const verify = bundleCli(['verify', zip]);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  });
});
