import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { LOG_FILE } from '../../src/paths/naming.js';
import { LogPool } from '../../src/store/log-pool.js';
import type { CallRow, SessionRow } from '../../src/store/schema.js';
import { SessionLog } from '../../src/store/session-log.js';
import { callRow, sessionRow } from '../support/log-rows.js';
import { tempDirPerTest } from '../support/per-test-temp.js';

const temp = tempDirPerTest('mcec-');

function read<T>(file: string, sql: string): T[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

describe('SessionLog', () => {
  it('creates the directory and log, and a reader sees committed rows while the writer is open', () => {
    const dir = path.join(temp.dir, '20261202-101502-abc123def456');
    const log = SessionLog.open({ dir, session: sessionRow() });
    log.beginCall(callRow(1));
    expect(log.commit().error).toBeUndefined();
    const file = path.join(dir, LOG_FILE);
    expect(read<CallRow>(file, 'SELECT * FROM calls')).toMatchObject([{ seq: 1, status: 'pending' }]);
    expect(read<SessionRow>(file, 'SELECT * FROM session')).toMatchObject([
      { session_id: 'abc123def456', status: 'open', writer_pid: process.pid },
    ]);
    log.completeCall(
      callRow(1, { status: 'ok', ok: 1, duration_ms: 2.5, ended_at: '2026-12-02T10:15:03.003Z' }),
    );
    log.commit();
    expect(read<CallRow>(file, 'SELECT * FROM calls')).toMatchObject([{ seq: 1, status: 'ok', ok: 1 }]);
    expect(fs.readFileSync(path.join(dir, 'session.sqlite-wal')).length).toBeGreaterThan(0);
    log.close();
  });

  it('writes a completed row in place of a pending one that never reached the file, in one transaction', () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({ dir, session: sessionRow() });
    log.beginCall(callRow(1));
    log.beginCall(callRow(2));
    log.completeCall(callRow(1, { status: 'failed', ok: 0, error_code: 'selector-matched-3' }));
    log.addWarning({ callSeq: 1, code: 'tree-truncated', detail: 'clipped' });
    log.deleteCall(2);
    const outcome = log.commit();
    expect(outcome.committed).toBe(3); // session row, call 1, warning (call 2 never written)
    const rows = read<CallRow>(path.join(dir, LOG_FILE), 'SELECT * FROM calls');
    expect(rows).toEqual([
      expect.objectContaining({ seq: 1, status: 'failed', error_code: 'selector-matched-3' }),
    ]);
    log.close();
  });

  it('holds a young pending row one commit (a completing one up to a second), then writes it; a plain commit writes all', () => {
    const dir = path.join(temp.dir, 's');
    const file = path.join(dir, LOG_FILE);
    const log = SessionLog.open({ dir, session: sessionRow() });
    const seqs = () => read<CallRow>(file, 'SELECT seq, status FROM calls ORDER BY seq');
    log.beginCall(callRow(1));
    log.beginCall(callRow(2), true); // already returned: its completed row follows
    log.addEvent({ at: 'a', kind: 'step', callSeq: null, detail: '{}' });
    const first = log.commit({ holdYoungPendingMs: 1000 });
    expect(first).toMatchObject({ held: 2, committed: 2 }); // session row and the event
    expect(seqs()).toEqual([]);
    expect(log.dirty).toBe(true);
    // Held rows are still queued: a completion replaces the pending row (one row written, never two).
    log.completeCall(callRow(1, { status: 'ok', ok: 1 }));
    const second = log.commit({ holdYoungPendingMs: 1000 });
    expect(second.held).toBe(1); // call 2 waits for its completion; call 1 is written completed
    expect(seqs()).toEqual([{ seq: 1, status: 'ok' }]);
    // A plain commit (flush, close) holds nothing back.
    expect(log.commit().held).toBeUndefined();
    expect(seqs()).toEqual([
      { seq: 1, status: 'ok' },
      { seq: 2, status: 'pending' },
    ]);
    expect(log.dirty).toBe(false);
    // A pending row held once is written at the next holding commit even if still young.
    log.beginCall(callRow(3));
    expect(log.commit({ holdYoungPendingMs: 1000 }).held).toBe(1);
    expect(log.commit({ holdYoungPendingMs: 1000 }).held).toBeUndefined();
    expect(seqs()).toHaveLength(3);
    log.close();
  });

  it('deletes a committed call and keeps the latest event of a kind as one row', () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({ dir, session: sessionRow() });
    log.beginCall(callRow(1));
    log.setLatestEvent({ at: 'a', kind: 'truncation', detail: '{"omittedCalls":1}' });
    log.commit();
    log.deleteCall(1);
    log.setLatestEvent({ at: 'b', kind: 'truncation', detail: '{"omittedCalls":2}' });
    log.setLatestEvent({ at: 'c', kind: 'truncation', detail: '{"omittedCalls":3}' });
    log.addEvent({ at: 'd', kind: 'step', detail: '{}' });
    log.commit();
    const file = path.join(dir, LOG_FILE);
    expect(read(file, 'SELECT * FROM calls')).toEqual([]);
    expect(read(file, 'SELECT kind, detail FROM events ORDER BY id')).toEqual([
      { kind: 'truncation', detail: '{"omittedCalls":3}' },
      { kind: 'step', detail: '{}' },
    ]);
    log.close();
  });

  it('recreates a vanished directory, counts the calls lost with it, and lands the completion there', () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({ dir, session: sessionRow() });
    log.beginCall(callRow(1));
    log.completeCall(callRow(1, { status: 'ok', ok: 1 }));
    log.beginCall(callRow(2));
    log.commit();
    fs.rmSync(dir, { recursive: true, force: true });
    log.completeCall(callRow(2, { status: 'ok', ok: 1 }));
    const outcome = log.commit();
    expect(outcome.error).toBeUndefined();
    // Call 1's row is lost with the file; call 2 was pending there and its completion writes it again.
    expect(outcome.recovered).toEqual({ reason: expect.stringContaining('vanished'), lostCalls: 1 });
    const file = path.join(dir, LOG_FILE);
    expect(read(file, 'SELECT seq, status FROM calls')).toEqual([{ seq: 2, status: 'ok' }]);
    expect(read(file, 'SELECT session_id FROM session')).toEqual([{ session_id: 'abc123def456' }]);
    log.close();
  });

  it('moves a file that is not a database aside, on open and on a later commit', () => {
    const dir = path.join(temp.dir, 's');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, LOG_FILE), 'this is not a database, it is text '.repeat(200));
    const log = SessionLog.open({ dir, session: sessionRow() });
    log.beginCall(callRow(1));
    log.completeCall(callRow(1, { status: 'ok', ok: 1 }));
    const first = log.commit();
    expect(first.recovered?.reason).toMatch(/not a usable database.*moved aside/);
    expect(fs.readdirSync(dir).some((f) => f.startsWith(`${LOG_FILE}.corrupt-`))).toBe(true);

    // Replaced under a running writer: detected by identity, recreated.
    fs.rmSync(path.join(dir, `${LOG_FILE}-wal`), { force: true });
    fs.rmSync(path.join(dir, `${LOG_FILE}-shm`), { force: true });
    fs.writeFileSync(path.join(temp.dir, 'garbage'), 'garbage '.repeat(1000));
    fs.renameSync(path.join(temp.dir, 'garbage'), path.join(dir, LOG_FILE));
    log.beginCall(callRow(2));
    const second = log.commit();
    expect(second.error).toBeUndefined();
    expect(second.recovered).toMatchObject({ lostCalls: 1 });
    expect(read(path.join(dir, LOG_FILE), 'SELECT seq FROM calls')).toEqual([{ seq: 2 }]);
    log.close();
  });

  it('keeps operations queued while another writer holds the lock, then commits them', () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({ dir, session: sessionRow(), busyTimeoutMs: 5 });
    log.commit();
    const other = new Database(path.join(dir, LOG_FILE));
    other.exec('BEGIN EXCLUSIVE');
    log.beginCall(callRow(1));
    const blocked = log.commit();
    expect(blocked.error?.message).toMatch(/locked|busy/i);
    expect(log.queued).toBe(1);
    other.exec('COMMIT');
    other.close();
    expect(log.commit()).toMatchObject({ committed: 1 });
    expect(read(path.join(dir, LOG_FILE), 'SELECT seq FROM calls')).toEqual([{ seq: 1 }]);
    log.close();
  });

  it('closing waits out a commit of another process to mark its writer row closed', async () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({ dir, session: sessionRow(), busyTimeoutMs: 5 });
    log.beginCall(callRow(1));
    log.commit();
    // Another writer holds the write lock for 150 ms: far past a commit's wait, well inside close's.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(process.argv[1]);
         db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
         setTimeout(() => { db.exec('COMMIT'); db.close(); }, 150);`,
        path.join(dir, LOG_FILE),
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once('data', () => resolve());
      holder.once('exit', (code) => reject(new Error(`lock holder exited (${code}) before locking`)));
    });
    log.close();
    await new Promise((resolve) => (holder.exitCode !== null ? resolve(0) : holder.once('exit', resolve)));
    const writers = read<{ pid: number; closed_at: string | null }>(
      path.join(dir, LOG_FILE),
      'SELECT pid, closed_at FROM writers',
    );
    expect(writers).toEqual([{ pid: process.pid, closed_at: expect.any(String) }]);
  });

  it('on a full disk keeps a bounded queue and counts the calls it drops', () => {
    const dir = path.join(temp.dir, 's');
    const log = SessionLog.open({
      dir,
      session: sessionRow(),
      pragmas: ['max_page_count = 12'],
      maxQueuedOps: 50,
    });
    const big = 'x'.repeat(3000);
    let outcome = log.commit();
    let dropped = 0;
    for (let i = 1; i <= 120; i += 1) {
      log.beginCall(callRow(i, { args: big }));
      outcome = log.commit();
      dropped += outcome.dropped?.calls ?? 0;
    }
    expect(outcome.error?.message).toMatch(/full/i);
    expect(log.queued).toBeLessThanOrEqual(51);
    const stored = read<{ n: number }>(path.join(dir, LOG_FILE), 'SELECT COUNT(*) AS n FROM calls')[0]!.n;
    expect(stored + dropped + log.queued).toBe(120); // every call is stored, queued or counted as dropped
    expect(dropped).toBeGreaterThan(0);
    const queued = log.queued;
    expect(log.discardQueue().calls).toBe(queued);
    log.close();
  });

  it('reopening an existing session dir continues above its highest seq', () => {
    const dir = path.join(temp.dir, 's');
    const a = SessionLog.open({ dir, session: sessionRow() });
    a.beginCall(callRow(1));
    a.beginCall(callRow(7));
    a.close();
    const b = SessionLog.open({ dir, session: sessionRow() });
    expect(b.existingMaxSeq).toBe(7);
    b.close();
  });

  it('keeps at most the pool cap of handles open, closes an ended log at once, and loses nothing queued', () => {
    const pool = new LogPool(2);
    const logs = ['a', 'b', 'c'].map((id) =>
      SessionLog.open({ dir: path.join(temp.dir, id), session: sessionRow(id), pool }),
    );
    expect(pool.size).toBe(2);
    expect(logs[0]!.handleOpen).toBe(false); // the least recently used made room for the third
    logs[0]!.beginCall(callRow(1)); // queued while its handle is closed
    logs[0]!.completeCall(callRow(1, { status: 'ok', ok: 1 }));
    expect(logs[0]!.commit()).toMatchObject({ committed: 2 }); // reopened on demand: session row and call
    expect(logs[0]!.handleOpen).toBe(true);
    expect(pool.size).toBe(2);
    expect(read(path.join(temp.dir, 'a', LOG_FILE), 'SELECT seq, status FROM calls')).toEqual([
      { seq: 1, status: 'ok' },
    ]);

    // An ended session closes its log as soon as its queue is written; a late write reopens it and keeps it
    // open (until idle, or until the pool needs room: below).
    logs[1]!.setSessionFields({ status: 'ended', ended_at: '2026-12-02T10:16:00.000Z' });
    logs[1]!.commit();
    expect(logs[1]!.handleOpen).toBe(false);
    logs[1]!.beginCall(callRow(1, { status: 'ok', ok: 1 }));
    expect(logs[1]!.commit().error).toBeUndefined();
    expect(logs[1]!.handleOpen).toBe(true);
    expect(read(path.join(temp.dir, 'b', LOG_FILE), 'SELECT status FROM session')).toEqual([
      { status: 'ended' },
    ]);

    // A log whose file vanished while its handle was closed is recreated and the loss is counted.
    logs[2]!.beginCall(callRow(1, { status: 'ok', ok: 1 }));
    logs[2]!.commit();
    logs[2]!.closeHandle();
    fs.rmSync(path.join(temp.dir, 'c'), { recursive: true, force: true });
    logs[2]!.beginCall(callRow(2, { status: 'ok', ok: 1 }));
    expect(logs[2]!.commit().recovered).toEqual({
      reason: expect.stringContaining('vanished'),
      lostCalls: 1,
    });
    expect(read(path.join(temp.dir, 'c', LOG_FILE), 'SELECT seq FROM calls')).toEqual([{ seq: 2 }]);
    for (const log of logs) log.close();
    expect(pool.size).toBe(0);
  });
  it('an ended log written again keeps its handle until idle: one reopen for many late writes, then released', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      /** The real pool, counting the file opens it is told of (every open of a log's file goes through it). */
      class CountingPool extends LogPool {
        opens = 0;
        override willOpen(log: Parameters<LogPool['willOpen']>[0]): void {
          this.opens += 1;
          super.willOpen(log);
        }
      }
      const pool = new CountingPool(4, 60_000);
      const dir = path.join(temp.dir, 'late');
      const file = path.join(dir, LOG_FILE);
      const log = SessionLog.open({ dir, session: sessionRow(), pool });
      log.setSessionFields({ status: 'ended', ended_at: '2026-12-02T10:16:00.000Z' });
      expect(log.commit().error).toBeUndefined();
      expect(log.handleOpen).toBe(false); // given back at the end
      expect(pool.opens).toBe(1);
      // A server that goes on naming the ended session: before, each of these commits opened the file,
      // registered the writer and closed it again (a WAL checkpoint), about 5 ms each.
      for (let seq = 1; seq <= 50; seq++) {
        log.beginCall(callRow(seq, { status: 'ok', ok: 1 }));
        expect(log.commit().error).toBeUndefined();
      }
      expect(pool.opens).toBe(2);
      expect(log.handleOpen).toBe(true);
      expect(read(file, 'SELECT closed_at FROM writers')).toEqual([{ closed_at: null }]);
      // Idle for the pool's releaseIdleMs: the writer row is released and the handle given back with it.
      vi.advanceTimersByTime(60_000);
      expect(log.handleOpen).toBe(false);
      expect(pool.size).toBe(0);
      expect(
        read<{ closed_at: string | null }>(file, 'SELECT closed_at FROM writers')[0]!.closed_at,
      ).not.toBeNull();
      expect(read(file, 'SELECT COUNT(*) AS n FROM calls')).toEqual([{ n: 50 }]);
      // A write after the release opens the file and registers the writer again.
      log.beginCall(callRow(51, { status: 'ok', ok: 1 }));
      expect(log.commit().error).toBeUndefined();
      expect(pool.opens).toBe(3);
      expect(read(file, 'SELECT closed_at FROM writers')).toEqual([{ closed_at: null }]);
      log.close();
      expect(read(file, 'SELECT COUNT(*) AS n FROM calls')).toEqual([{ n: 51 }]);
      expect(pool.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a writer that committed alone sees a writer that came later: new seqs above its, and a concurrent-writer event', () => {
    const dir = path.join(temp.dir, '20261202-101502-abc123def456');
    const a = SessionLog.open({ dir, session: sessionRow() });
    for (const seq of [1, 2, 3]) {
      a.beginCall(callRow(seq));
      expect(a.commit().error).toBeUndefined(); // later commits skip the writers and seq reads: nobody else wrote
    }
    const b = SessionLog.open({ dir, session: sessionRow() });
    b.beginCall(callRow(1));
    expect(b.commit().error).toBeUndefined();
    a.beginCall(callRow(4));
    const outcome = a.commit();
    expect(outcome.concurrentWriters).toEqual([{ pid: process.pid, host: expect.any(String) }]);
    expect([a.storedSeq(4), b.storedSeq(1)]).toEqual([5, 4]);
    a.beginCall(callRow(5));
    expect(a.commit().concurrentWriters).toBeUndefined(); // reported once
    expect(a.storedSeq(5)).toBe(6);
    b.close();
    a.close();
    const file = path.join(dir, LOG_FILE);
    expect(read<{ seq: number }>(file, 'SELECT seq FROM calls ORDER BY seq').map((r) => r.seq)).toEqual([
      1, 2, 3, 4, 5, 6,
    ]);
    expect(read(file, "SELECT id FROM events WHERE kind = 'concurrent-writer'")).toHaveLength(2);
  });

  it('setting a session field to the value it has queues no write', () => {
    const log = SessionLog.open({ dir: path.join(temp.dir, 'd'), session: sessionRow() });
    expect(log.commit().error).toBeUndefined();
    log.setSessionFields({ last_observation: '{"a":1}' });
    expect(log.dirty).toBe(true);
    expect(log.commit().committed).toBe(1);
    log.setSessionFields({ last_observation: '{"a":1}', status: 'open' });
    expect(log.dirty).toBe(false);
    log.close();
  });
});
