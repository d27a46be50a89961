import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLogForReading, openSessionDb } from '../../src/store/open.js';
import { listSessions, resolveSession, SessionReader } from '../../src/store/session-reader.js';
import { pidAlive } from '../../src/util/temp-files.js';
import { calls, deadPid, FixtureSession, makeSessionsDir, removeDir } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';

const temp = tempDirPerTest();

function make(
  sessionsDir: string,
  sessionId: string,
  startedAt = '2026-12-02T10:15:00.000Z',
): FixtureSession {
  const f = FixtureSession.create(sessionsDir, { sessionId, startedAt: new Date(startedAt) });
  f.close();
  return f;
}

describe('listSessions', () => {
  it('lists session dirs holding a log, oldest first, and skips everything else', () => {
    make(temp.dir, 'bbbbbbbbbbbb', '2026-12-03T00:00:00.000Z');
    make(temp.dir, 'aaaaaaaaaaaa', '2026-12-02T00:00:00.000Z');
    fs.mkdirSync(path.join(temp.dir, '20261202-000000-nolog'));
    fs.mkdirSync(path.join(temp.dir, 'not-a-session'));
    fs.writeFileSync(path.join(temp.dir, '20261202-000000-file'), 'x');
    const outside = makeSessionsDir();
    try {
      const linked = make(outside, 'cccccccccccc');
      fs.symlinkSync(linked.dir, path.join(temp.dir, linked.dirName));
      const list = listSessions(temp.dir);
      expect(list.map((s) => s.sessionId)).toEqual(['aaaaaaaaaaaa', 'bbbbbbbbbbbb']);
      expect(list[0]).toEqual({
        dir: path.join(temp.dir, '20261202-000000-aaaaaaaaaaaa'),
        dirName: '20261202-000000-aaaaaaaaaaaa',
        sessionId: 'aaaaaaaaaaaa',
        stamp: '20261202-000000',
      });
    } finally {
      removeDir(outside);
    }
  });

  it('returns [] for a missing sessions dir', () => {
    expect(listSessions(path.join(temp.dir, 'nope'))).toEqual([]);
  });
});

describe('resolveSession', () => {
  it('finds a session by a unique prefix, the full id or the dir name', () => {
    const a = make(temp.dir, '5f19c9c01a3f');
    make(temp.dir, '7a00000000ff', '2026-12-02T11:00:00.000Z');
    for (const input of ['5', '5f19', '5f19c9c01a3f', a.dirName]) {
      const hit = resolveSession(temp.dir, input);
      expect(hit.ok, input).toBe(true);
      if (hit.ok) expect(hit.session.dir).toBe(a.dir);
    }
  });

  it('prefers an exact id over longer ids sharing it as a prefix', () => {
    make(temp.dir, 'abc');
    make(temp.dir, 'abcdef');
    const hit = resolveSession(temp.dir, 'abc');
    expect(hit.ok && hit.session.sessionId).toBe('abc');
  });

  it('reports an ambiguous prefix with the sessions dir and every candidate', () => {
    make(temp.dir, 'abc111111111');
    make(temp.dir, 'abc222222222', '2026-12-02T12:00:00.000Z');
    const miss = resolveSession(temp.dir, 'abc');
    expect(miss.ok).toBe(false);
    if (miss.ok) return;
    expect(miss.reason).toBe('ambiguous');
    expect(miss.candidates.map((c) => c.sessionId)).toEqual(['abc111111111', 'abc222222222']);
    expect(miss.message).toContain(temp.dir);
    expect(miss.message).toContain('20261202-101500-abc111111111');
    expect(miss.message).toContain('20261202-120000-abc222222222');
  });

  it('reports an unknown id naming the sessions dir and the known sessions', () => {
    make(temp.dir, 'abc111111111');
    const miss = resolveSession(temp.dir, 'ffff');
    expect(miss.ok).toBe(false);
    if (miss.ok) return;
    expect(miss.reason).toBe('not-found');
    expect(miss.message).toContain(temp.dir);
    expect(miss.message).toContain('abc111111111');
    expect(resolveSession(path.join(temp.dir, 'missing'), 'ffff')).toMatchObject({
      ok: false,
      reason: 'not-found',
    });
  });

  it('refuses hostile ids without looking outside the sessions dir', () => {
    // A real session right outside the sessions dir, reachable only through `..`.
    const sessions = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessions);
    const outside = make(temp.dir, 'deadbeef0001');
    const hostile = [
      '',
      '..',
      '../x',
      `../${outside.dirName}`,
      '/',
      '/etc/passwd',
      'a/b',
      'a\\b',
      '..\\x',
      'ab\0cd',
      'a'.repeat(65),
      ' abc',
      'abc.',
      '%2e%2e',
    ];
    for (const id of hostile) {
      const miss = resolveSession(sessions, id);
      expect(miss.ok, JSON.stringify(id)).toBe(false);
      if (!miss.ok) {
        expect(miss.reason).toBe('invalid-id');
        expect(miss.candidates).toEqual([]);
        expect(miss.message).not.toContain('\0');
      }
    }
    expect(resolveSession(sessions, 'deadbeef')).toMatchObject({ ok: false, reason: 'not-found' });
  });
});

describe('SessionReader', () => {
  it('reads a log while the writer still has it open (WAL), seeing later commits', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'live00000001' });
    f.call(calls.findSave());
    const reader = SessionReader.open(f.dir);
    try {
      expect(reader.callCount()).toBe(1);
      expect(reader.session().status).toBe('open');
      f.call(calls.query());
      expect(reader.callCount()).toBe(2);
      // One snapshot: a commit in between does not change what the snapshot sees.
      const [before, after] = reader.snapshot(() => {
        const b = reader.callCount();
        f.call(calls.invokeSave());
        return [b, reader.callCount()];
      });
      expect(after).toBe(before);
      expect(reader.callCount()).toBe(3);
      expect(() =>
        (reader as unknown as { db: { exec(s: string): void } }).db.exec('DELETE FROM calls'),
      ).toThrow(/readonly/i);
    } finally {
      reader.close();
      f.close();
    }
  });

  it('reads an open session whose writer pid is dead as aborted, and its own live pid as open', () => {
    const crashed = FixtureSession.create(temp.dir, { sessionId: 'crash0000001', writerPid: deadPid() });
    crashed.close();
    const live = FixtureSession.create(temp.dir, { sessionId: 'alive0000001', writerPid: process.pid });
    live.close();
    const ended = FixtureSession.create(temp.dir, { sessionId: 'ended0000001', writerPid: deadPid() });
    ended.end();
    ended.close();
    const status = (dir: string) => {
      const r = SessionReader.open(dir);
      try {
        return r.session().status;
      } finally {
        r.close();
      }
    };
    expect(status(crashed.dir)).toBe('aborted');
    expect(status(live.dir)).toBe('open');
    expect(status(ended.dir)).toBe('ended');
    expect(pidAlive(process.pid)).toBe(true);
    expect(pidAlive(deadPid())).toBe(false);
    expect(pidAlive(0)).toBe(false);
  });

  it('streams calls in seq order across pages and allows other queries between rows', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'many00000001' });
    f.manyCalls(1234, (i) => ({ tool: i % 2 ? 'find' : 'query', args: { i } }));
    f.close();
    const reader = SessionReader.open(f.dir);
    try {
      let expected = 1;
      for (const row of reader.calls()) {
        expect(row.seq).toBe(expected++);
        if (row.seq === 600) expect(reader.call(600)?.tool).toBe('find'); // index 599 is odd
      }
      expect(expected).toBe(1235);
      expect([...reader.calls({ fromSeq: 1200, limit: 10 })].map((r) => r.seq)).toEqual([
        1200, 1201, 1202, 1203, 1204, 1205, 1206, 1207, 1208, 1209,
      ]);
      expect([...reader.calls({ fromSeq: 1230 })].map((r) => r.seq)).toEqual([1230, 1231, 1232, 1233, 1234]);
      expect(reader.tailCalls(3).map((r) => r.seq)).toEqual([1232, 1233, 1234]);
    } finally {
      reader.close();
    }
  });

  it('aggregates counts in SQL: statuses, violations, dropped payloads, record failures and lost calls', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'stats0000001' });
    f.call({
      ...calls.findSave(),
      violations: [
        { path: '/result', message: 'x' },
        { path: '/ok', message: 'y' },
      ],
    });
    f.call({ ...calls.ambiguousFind(), violations: [{ path: '/error', message: 'z' }] });
    f.call({ tool: 'capture', payloadDropped: true });
    f.call({ tool: 'invoke', status: 'pending' });
    f.event('record-failure', { stage: 'commit', message: 'disk full', lost: 3 });
    f.event('record-failure', { stage: 'artifact', message: 'EACCES', lost: 0 });
    f.close();
    const reader = SessionReader.open(f.dir);
    try {
      expect(reader.stats()).toMatchObject({
        calls: 4,
        ok: 2,
        failed: 1,
        pending: 1,
        violations: 3,
        droppedPayloads: 1,
        recordFailures: 2,
        lostCalls: 3,
        lastCallSeq: 4,
      });
    } finally {
      reader.close();
    }
  });

  it('says clearly when a dir has no log or the log has no session row', () => {
    expect(() => SessionReader.open(temp.dir)).toThrow(/no session\.sqlite/);
    const dir = path.join(temp.dir, '20261202-101500-empty0000001');
    fs.mkdirSync(dir);
    openSessionDb(path.join(dir, 'session.sqlite')).close();
    const reader = SessionReader.open(dir);
    try {
      expect(() => reader.session()).toThrow(/no session row/);
    } finally {
      reader.close();
    }
  });
  it('reads every column of every call as the driver returns it, across pages', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'columns00001' });
    f.manyCalls(1100, (i) =>
      i % 5 === 0
        ? { ...calls.ambiguousFind(), violations: [{ path: '/x', message: `v${i}` }] }
        : i % 7 === 0
          ? { tool: 'invoke', status: 'pending' }
          : { ...calls.findSave(), payloadDropped: i % 11 === 0, durationMs: i + 0.123456789 },
    );
    f.close();
    const reader = SessionReader.open(f.dir);
    const log = openLogForReading(path.join(f.dir, 'session.sqlite'));
    const { db } = log;
    try {
      // Every column of a CallRow (the `writer` column of schema 2 is read through writers()).
      const expected = (
        db.prepare('SELECT * FROM calls ORDER BY seq').all() as Array<Record<string, unknown>>
      ).map(({ writer: _writer, ...row }) => row);
      const streamed = [...reader.calls()];
      // Same values and the same key order (JSON text of a row is part of some outputs).
      expect(JSON.stringify(streamed)).toBe(JSON.stringify(expected));
      expect(reader.call(550)).toEqual(expected[549]);
      expect(streamed[9]!.duration_ms).toBe(9.123456789);
    } finally {
      log.close();
      reader.close();
    }
  });

  it('finds the newest call by tools, statuses and seq bound like a scan of every call would', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'lastwhere001' });
    // A common tool, a rare one, one that never succeeds and one whose calls are all pending.
    f.manyCalls(900, (i) =>
      i % 150 === 149
        ? { tool: 'displays', args: {}, result: { count: 1 } }
        : i % 40 === 7
          ? calls.waitForTimeout()
          : i % 97 === 3
            ? { tool: 'launch', status: 'pending' }
            : i % 9 === 0
              ? calls.ambiguousFind()
              : calls.findSave(),
    );
    f.close();
    const reader = SessionReader.open(f.dir);
    try {
      const all = [...reader.calls()];
      const filters = [
        { statuses: ['ok'], tools: ['find', 'query', 'capture'] },
        { statuses: ['ok'], tools: ['displays'] },
        { statuses: ['ok'], tools: ['displays'], beforeSeq: 300 },
        { statuses: ['ok'], tools: ['displays'], beforeSeq: 150 },
        { statuses: ['ok'], tools: ['wait-for'] },
        { statuses: ['failed', 'fault'], tools: ['wait-for', 'find'], beforeSeq: 500 },
        { tools: ['launch', 'displays', 'displays'] },
        { statuses: ['pending'] },
        { statuses: ['ok'], tools: ['no-such-tool'] },
        { beforeSeq: 2 },
        {},
      ];
      for (const filter of filters) {
        const expected = all
          .filter(
            (r) =>
              (!filter.statuses || filter.statuses.includes(r.status)) &&
              (!filter.tools || filter.tools.includes(r.tool)) &&
              (filter.beforeSeq === undefined || r.seq < filter.beforeSeq),
          )
          .at(-1);
        expect(reader.lastCallWhere(filter), JSON.stringify(filter)).toEqual(expected);
      }
      expect(reader.lastCallWhere({ statuses: ['ok'], tools: ['displays'] })?.seq).toBe(900);
    } finally {
      reader.close();
    }
  });

  it('marks failures recovered exactly when a later call of the same tool on the same target succeeded', () => {
    const f = FixtureSession.create(temp.dir, { sessionId: 'recovery0001' });
    // wait-for never succeeds; click succeeds only before its failures; find recovers now and then, on
    // one of three targets (by title in two spellings, by handle, by process); faults never recover.
    const targets = [
      { window: 'Save As' },
      { window: 'SAVE AS', process: 'notepad' },
      { handle: 131300, window: 'ignored' },
      { process: 'Notepad' },
      {},
    ];
    f.call({ tool: 'click', args: { x: 1 }, result: { clicked: true } });
    f.manyCalls(600, (i) => {
      const target = targets[Math.floor(i / 30) % targets.length]!;
      const okTarget = targets[Math.floor(i / 70) % targets.length]!;
      return i % 50 === 10
        ? calls.waitForTimeout()
        : i % 45 === 20
          ? { tool: 'click', error: { code: 'x', category: 'input', detail: 'd' } }
          : i % 30 === 5
            ? { ...calls.ambiguousFind(), args: { ...target, value: 'Save' } }
            : i % 70 === 0
              ? { ...calls.findSave(), args: { ...okTarget, by: 'automationid', value: '1' } }
              : i % 200 === 199
                ? {
                    tool: 'capture',
                    status: 'fault',
                    error: { code: 'y', category: 'internal', detail: 'e' },
                  }
                : i % 200 === 198
                  ? { tool: 'capture', args: { window: 'x' }, result: {} }
                  : calls.query();
    });
    f.call(calls.ambiguousFind());
    f.close();
    const reader = SessionReader.open(f.dir);
    try {
      const all = [...reader.calls()];
      // The rule, written out in JS: MCEC resolves handle > foreground > title / process / className.
      const targetOf = (json: string | null): string => {
        const a = (json ? JSON.parse(json) : {}) as Record<string, unknown>;
        if (typeof a.handle === 'number' && a.handle > 0) return `handle=${a.handle}`;
        if (a.foreground === true) return 'foreground';
        const parts: string[] = [];
        if (typeof a.window === 'string' && a.window) parts.push(`window=${a.window.toLowerCase()}`);
        if (typeof a.process === 'string' && a.process) parts.push(`process=${a.process.toLowerCase()}`);
        if (typeof a.className === 'string' && a.className) parts.push(`class=${a.className}`);
        return parts.join(' ');
      };
      const lastOk = new Map<string, number>();
      for (const r of all) if (r.status === 'ok') lastOk.set(`${r.tool}\n${targetOf(r.args)}`, r.seq);
      const failed = all.filter((r) => r.status === 'failed' || r.status === 'fault').reverse();
      const isRecovered = (r: (typeof all)[number]) =>
        r.status === 'failed' && (lastOk.get(`${r.tool}\n${targetOf(r.args)}`) ?? 0) > r.seq;
      const fact = (r: (typeof all)[number] | undefined) =>
        r
          ? {
              seq: r.seq,
              tool: r.tool,
              code: r.error_code,
              detail: r.error_detail,
              target: targetOf(r.args),
            }
          : null;
      const expected = {
        recovered: failed.filter(isRecovered).length,
        newestUnrecovered: fact(failed.find((r) => r.status === 'failed' && !isRecovered(r))),
        newestFault: fact(failed.find((r) => r.status === 'fault')),
      };
      const { failures, outcome } = reader.failuresAndOutcome(-1);
      expect(failures.map((r) => r.target)).toEqual(failed.map((r) => targetOf(r.args)));
      expect(failures.map((r) => [r.seq, r.recovered])).toEqual(
        failed.map((r) => [r.seq, isRecovered(r) ? 1 : 0]),
      );
      expect(outcome).toEqual(expected);
      expect(outcome.recovered).toBeGreaterThan(0);
      expect(outcome.newestFault).not.toBeNull();
      expect(failed.some((r) => r.tool === 'wait-for' && !isRecovered(r))).toBe(true);
      // Each find target has unrecovered failures (another target's success does not count) and recovered ones.
      const finds = failed.filter((r) => r.tool === 'find' && r.seq < all.length);
      expect(finds.some(isRecovered) && finds.some((r) => !isRecovered(r))).toBe(true);
      expect(new Set(finds.filter(isRecovered).map((r) => targetOf(r.args))).size).toBeGreaterThan(2);
      expect(failed.some((r) => r.status === 'fault' && (lastOk.get(`capture\nwindow=x`) ?? 0) > r.seq)).toBe(
        true,
      );
      expect(failures.filter((r) => r.status === 'fault').every((r) => r.recovered === 0)).toBe(true);
      // Fewer rows kept (none at all, as the verdict alone reads it) leave the outcome whole, also when the
      // newest fault or unrecovered failure is older than the rows kept.
      for (const limit of [0, 1, 5, 200]) {
        const kept = reader.failuresAndOutcome(limit);
        expect(kept.failures).toEqual(failures.slice(0, limit));
        expect(kept.outcome).toEqual(expected);
      }
    } finally {
      reader.close();
    }
  });
});
