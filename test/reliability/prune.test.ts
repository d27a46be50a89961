/**
 * prune never deletes a session that is still being written: the loss (a writer that keeps
 * recording after end(), pruned by its `ended_at`: 6 calls lost) reproduced against a real recorder and a
 * real sessions dir, and the rules that keep it: recent file times of the log and its WAL, a live writer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { pruneSessions } from '../../src/bundle/sessions.js';
import { createRecorder } from '../../src/record/index.js';
import { SessionLog } from '../../src/store/session-log.js';
import { findResult, removeRoot, sessionDirOf, tempRoot } from './helpers.js';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

const MINUTE = 60_000;

function callsIn(dir: string): Array<{ n: number; status: string }> {
  const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare('SELECT args, status FROM calls ORDER BY seq').all() as Array<{
        args: string;
        status: string;
      }>
    ).map((r) => ({ n: (JSON.parse(r.args) as { n: number }).n, status: r.status }));
  } finally {
    db.close();
  }
}

describe('prune while a writer still writes', () => {
  it('keeps a session written after end() (the issue: 6 calls lost), then removes it once it is old', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => findResult());
    const sessionId = 'be11a0000001';
    for (let n = 1; n <= 10; n++) await call('find', { sessionId, n });
    await recorder.end(sessionId, { passed: true });
    const dir = sessionDirOf(sessionsDir, sessionId);

    // A minute later by prune's clock: `ended_at` is older than --older-than 30s, the log is not.
    const later = new Date(Date.now() + MINUTE);
    const kept: string[] = [];
    const pruned = await pruneSessions(sessionsDir, {
      olderThanMs: 30_000,
      now: later,
      onKept: (loc, why) => kept.push(`${loc.sessionId}:${why.kind}`),
    });
    expect(pruned).toEqual([]);
    expect(kept).toEqual([`${sessionId}:recently-written`]);
    // The writer goes on after end(), as in the issue: six more calls.
    for (let n = 11; n <= 16; n++) await call('find', { sessionId, n });
    await recorder.close();
    expect(recorder.session(sessionId)?.counts).toMatchObject({ calls: 16, lostCalls: 0, recordFailures: 0 });
    expect(callsIn(dir)).toEqual(Array.from({ length: 16 }, (_, i) => ({ n: i + 1, status: 'ok' })));

    // Its last call (after the end) is what ages, not ended_at; and once the files are old too, it goes.
    const lastCallAt = Date.now();
    const old = new Date(lastCallAt - 20 * MINUTE);
    for (const f of fs.readdirSync(dir)) fs.utimesSync(path.join(dir, f), old, old);
    expect(
      await pruneSessions(sessionsDir, { olderThanMs: 30_000, now: new Date(lastCallAt + 20_000) }),
    ).toEqual([]);
    const gone = await pruneSessions(sessionsDir, {
      olderThanMs: 30_000,
      now: new Date(lastCallAt + 40_000),
    });
    expect(gone.map((p) => p.dirName)).toEqual([path.basename(dir)]);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('never removes a session another writer holds open, even with --keep-recent 0', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => findResult());
    const sessionId = 'be11a0000002';
    for (let n = 1; n <= 3; n++) await call('find', { sessionId, n });
    await recorder.flush();
    const dir = sessionDirOf(sessionsDir, sessionId);
    // A second writer of the same session (another recorder sharing the MCEC session) opens the log...
    const other = SessionLog.open({
      dir,
      session: {
        session_id: sessionId,
        original_id: null,
        scenario: null,
        started_at: new Date().toISOString(),
        ended_at: null,
        status: 'open',
        passed: null,
        end_reason: null,
        recorder_version: 'test',
        writer_pid: process.pid,
        environment: '{}',
        last_observation: null,
      },
    });
    other.commit();
    // ...and the first one ends it: the row says ended, the log is still held.
    await recorder.end(sessionId, { passed: true });
    await recorder.close();
    const later = new Date(Date.now() + 60 * MINUTE);
    const kept: string[] = [];
    const options = { olderThanMs: 30_000, recentMs: 0, now: later };
    expect(
      await pruneSessions(sessionsDir, { ...options, onKept: (_l, why) => kept.push(JSON.stringify(why)) }),
    ).toEqual([]);
    expect(kept).toEqual([
      JSON.stringify({
        kind: 'live-writer',
        detail: `its log is held open by pid ${process.pid} on ${os.hostname()}`,
      }),
    ]);
    other.close();
    expect((await pruneSessions(sessionsDir, options)).map((p) => p.dirName)).toEqual([path.basename(dir)]);
  });
});
