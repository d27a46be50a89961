/**
 * prune never deletes a session that is still being written: the loss (a writer that keeps
 * recording after end(), pruned by its `ended_at`: 6 calls lost) reproduced against a real recorder and a
 * real sessions dir, and the rules that keep it: recent file times of the log and its WAL, a live writer.
 */
import { type ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sessionDirName } from '../../src/paths/naming.js';
import { createRecorder } from '../../src/record/index.js';
import { pruneSessions } from '../../src/sessions/prune.js';
import { LogPool } from '../../src/store/log-pool.js';
import { SessionLog } from '../../src/store/session-log.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { callRow, sessionRow } from '../support/log-rows.js';
import { runNode } from '../support/programs.js';
import { BUNDLE_CLI, findResult, removeRoot, sessionDirOf, tempRoot } from './helpers.js';

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
    expect(kept).toEqual([`${sessionId}:live-writer`]); // its recorder still holds the session
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
      session: sessionRow(sessionId, { scenario: null, started_at: new Date().toISOString() }),
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
        detail: `its writer, pid ${process.pid} on ${os.hostname()}, is still running and has not closed it`,
      }),
    ]);
    other.close();
    expect((await pruneSessions(sessionsDir, options)).map((p) => p.dirName)).toEqual([path.basename(dir)]);
  });

  it('keeps an ended session whose writer process still runs, even with --keep-recent 0 (the issue: 93 calls lost)', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const sessionId = 'be11a0000003';
    const child: ChildProcess = fork(
      path.join(import.meta.dirname, 'fixtures', 'ended-writer-child.mjs'),
      [sessionsDir, sessionId, '7', '93'],
      { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
    );
    const message = (kind: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const onMessage = (m: Record<string, unknown>) => {
          if (m.kind !== kind) return;
          child.off('message', onMessage);
          resolve(m);
        };
        child.on('message', onMessage);
        child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before '${kind}'`)));
      });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const ended = await message('ended');
      const dir = sessionDirOf(sessionsDir, sessionId);
      // The session row says ended and the writer gave its log handle back; its process still runs.
      const prune = (...extra: string[]) =>
        runNode([BUNDLE_CLI, 'prune', '--older-than', '0', '--keep-recent', '0', '--json', ...extra], {
          env: { MCEC_SESSIONS_DIR: sessionsDir },
        });
      const first = await prune();
      expect(first.code, first.stderr).toBe(0);
      const kept = JSON.parse(first.stdout) as { removed: unknown[]; kept: Array<Record<string, string>> };
      expect(kept.removed).toEqual([]);
      expect(kept.kept).toEqual([
        {
          dir,
          reason: 'live-writer',
          detail: expect.stringContaining(`pid ${ended.pid} on ${os.hostname()}`),
        },
      ]);
      expect(fs.existsSync(path.join(dir, 'session.sqlite'))).toBe(true);
      // The writer goes on after its end, as in the issue: every call lands.
      const done = message('done');
      child.send('go');
      expect((await done).counts).toMatchObject({ calls: 100, lostCalls: 0, recordFailures: 0 });
      await exited;
      expect(callsIn(dir)).toEqual(Array.from({ length: 100 }, (_, i) => ({ n: i + 1, status: 'ok' })));
      // Its writer is gone (closed and exited): now it goes.
      const second = await prune();
      expect(second.code, second.stderr).toBe(0);
      expect(
        (JSON.parse(second.stdout) as { removed: Array<{ dir: string }> }).removed.map((r) => r.dir),
      ).toEqual([dir]);
      expect(fs.existsSync(dir)).toBe(false);
    } finally {
      child.kill();
    }
  });

  it('a long-running writer releases an ended session once idle: prune removes it then, never while it is written', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    // A proxy's logs: one pool for the process, its idle release shortened from 10 min to 1.5 s (15 of the
    // busy log's 100 ms writes: a busy machine's late timers never make it look idle).
    const pool = new LogPool(64, 1500);
    const startedAt = new Date(Date.now() - 60 * MINUTE);
    const openLog = (sessionId: string) =>
      SessionLog.open({
        dir: path.join(sessionsDir, sessionDirName(startedAt, sessionId)),
        pool,
        session: sessionRow(sessionId, { scenario: null, started_at: startedAt.toISOString() }),
      });
    const note = (log: SessionLog, n: number) => {
      log.addEvent({ at: new Date().toISOString(), kind: 'step', detail: JSON.stringify({ n }) });
      log.commit();
    };
    const idle = openLog('be11a0000004'); // ended, then nothing more
    const busy = openLog('be11a0000005'); // ended, then written again and again
    const open = openLog('be11a0000006'); // never ended
    const waiting = openLog('be11a0000007'); // ended with a call still running (a long tool timeout)
    for (const log of [idle, busy, open, waiting]) note(log, 1);
    waiting.beginCall(callRow(1));
    for (const log of [idle, busy, waiting]) {
      log.setSessionFields({ status: 'ended', ended_at: new Date().toISOString() });
      log.commit();
    }
    const live = (log: SessionLog) => {
      const reader = SessionReader.open(log.dir);
      try {
        return reader.liveWriters().length;
      } finally {
        reader.close();
      }
    };
    /** Write `busy` every 100 ms (each write its own commit; its handle stays open from the first) until `done`. */
    const writeBusyUntil = async (done: () => boolean) => {
      for (let n = 2; !done(); n++) {
        if (n > 300) throw new Error('not released within 30 s');
        await new Promise((r) => setTimeout(r, 100));
        note(busy, n);
      }
    };
    const idleUntil = async (done: () => boolean) => {
      for (let n = 0; !done(); n++) {
        if (n > 300) throw new Error('not released within 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    expect([idle, busy, open, waiting].map(live)).toEqual([1, 1, 1, 1]); // right after the end: still this process's
    await writeBusyUntil(() => live(idle) === 0);
    expect([idle, busy, open, waiting].map(live)).toEqual([0, 1, 1, 1]);
    const prune = (now = new Date()) =>
      pruneSessions(sessionsDir, { olderThanMs: 0, recentMs: 0, now: new Date(now.getTime() + 1000) });
    const kept: string[] = [];
    const removed = await pruneSessions(sessionsDir, {
      olderThanMs: 0,
      recentMs: 0,
      now: new Date(Date.now() + 1000),
      onKept: (loc, why) => kept.push(`${loc.sessionId}:${why.kind}`),
    });
    expect(removed.map((p) => p.dirName)).toEqual([path.basename(idle.dir)]);
    expect(kept.sort()).toEqual([
      'be11a0000005:live-writer',
      'be11a0000006:live-writer',
      'be11a0000007:live-writer',
    ]);
    expect(fs.existsSync(idle.dir)).toBe(false);
    // Once `busy` is idle too it goes; a write after its release registers the writer again first.
    await idleUntil(() => live(busy) === 0);
    note(busy, 9);
    expect(live(busy)).toBe(1);
    expect((await prune()).map((p) => p.dirName)).not.toContain(path.basename(busy.dir));
    await idleUntil(() => live(busy) === 0);
    // The call still running kept `waiting` its writer all along (a release there would let prune delete
    // the dir its answer is about to be written to); once the call ends and the log idles, it is released.
    expect([open, waiting].map(live)).toEqual([1, 1]);
    expect((await prune()).map((p) => p.dirName)).toEqual([path.basename(busy.dir)]);
    waiting.completeCall(
      callRow(1, { status: 'ok', ok: 1, ended_at: new Date().toISOString(), duration_ms: 1 }),
    );
    waiting.commit();
    await idleUntil(() => live(waiting) === 0);
    expect((await prune()).map((p) => p.dirName)).toEqual([path.basename(waiting.dir)]);
    // The session never ended keeps its writer however long it idles.
    expect(live(open)).toBe(1);
    for (const log of [idle, busy, open, waiting]) log.close();
    expect(live(open)).toBe(0);
  }, 120_000);
});
