import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { LOG_FILE } from '../../src/paths/naming.js';
import { AdvancingClock, systemClock } from '../../src/record/clock.js';
import { createRecorder, type RecordStage } from '../../src/record/index.js';
import { createRecorderOnClock } from '../../src/record/recorder.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { killWhenReady } from '../support/crash.js';
import { deferred } from '../support/deferred.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import {
  calls,
  callToolResult,
  events,
  expectCleanLog,
  expectEventsValid,
  makePng,
  NOTEPAD,
} from './helpers.js';

const temp = tempDirPerTest();

const SID = 'fa017fa017fa';

/**
 * A recorder into the test's dir (its stderr lines kept) around a tool answering `{ n }` in session SID, with a
 * first query (`n`) already committed: the session's dir and its log exist.
 */
async function oneQueryCommitted(n: number) {
  const lines: string[] = [];
  const recorder = createRecorder({ sessionsDir: temp.dir, stderr: (l) => lines.push(l) });
  const dispatch = recorder.wrap(async (_t: string, args: Record<string, unknown>) => ({
    sessionId: SID,
    ok: true,
    result: { n: args.n },
  }));
  await dispatch('query', { sessionId: SID, n });
  await recorder.flush();
  return { lines, recorder, dispatch, dir: recorder.session(SID)!.dir };
}

async function captureOutput(
  rgb: [number, number, number],
): Promise<{ out: Record<string, unknown>; png: Buffer }> {
  const png = await makePng(48, 32, rgb);
  const env = {
    sessionId: SID,
    ok: true,
    result: {
      handle: NOTEPAD.handle,
      width: 48,
      height: 32,
      encoding: 'png',
      bytes: png.length,
      base64: png.toString('base64'),
    },
  };
  return { out: callToolResult(env, png), png };
}

describe('recording never breaks a call', () => {
  it('a dispatch that keeps running while the session directory is removed: the call returns, the log comes back', async () => {
    const lines: string[] = [];
    const recorder = createRecorder({ sessionsDir: temp.dir, stderr: (l) => lines.push(l) });
    const gate = deferred();
    const first = await captureOutput([200, 10, 10]);
    const later = await captureOutput([10, 200, 10]);
    const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
      if (args.slow) await gate.promise;
      if (tool === 'capture') return args.n === 1 ? first.out : later.out;
      return { sessionId: SID, ok: true, result: { n: args.n } };
    });
    await dispatch('capture', { sessionId: SID, n: 1 });
    await dispatch('query', { sessionId: SID, n: 2 });
    const slow = dispatch('query', { sessionId: SID, n: 3, slow: true });
    await recorder.flush();
    const dir = recorder.session(SID)!.dir;
    expect(calls(dir).map((r) => r.status)).toEqual(['ok', 'ok', 'pending']);
    fs.rmSync(dir, { recursive: true, force: true });
    gate.resolve();
    expect(await slow).toEqual({ sessionId: SID, ok: true, result: { n: 3 } });
    expect(await dispatch('capture', { sessionId: SID, n: 4 })).toBe(later.out);
    await recorder.close();

    // The directory and log were recreated; the in-flight call landed there, and the loss is on record.
    expect(calls(dir).map((r) => [r.seq, r.status])).toEqual([
      [3, 'ok'],
      [4, 'ok'],
    ]);
    const failure = events(dir, 'record-failure');
    expect(failure.map((e) => e.data)).toEqual([
      { stage: 'store', message: expect.stringContaining('vanished'), lost: 2 },
    ]);
    expect(recorder.session(SID)!.counts).toMatchObject({ recordFailures: 1, lostCalls: 2 });
    expectEventsValid(dir);
    const reader = SessionReader.open(dir);
    expect(reader.session()).toMatchObject({ session_id: SID, status: 'ended' });
    expect(reader.stats()).toMatchObject({ recordFailures: 1, lostCalls: 2 });
    reader.close();
    // The capture after the removal has its artifact in the recreated dir.
    const envelope = JSON.parse(calls(dir)[1]!.envelope!);
    expect(fs.existsSync(path.join(dir, envelope.result.artifact))).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/recording failed \(store\) in session fa017fa017fa/);
  });

  it('a log file replaced by one that is not a database is moved aside and a fresh log continues', async () => {
    const { lines, recorder, dispatch, dir } = await oneQueryCommitted(1);
    const garbage = path.join(temp.dir, 'garbage');
    fs.writeFileSync(garbage, 'not sqlite at all '.repeat(500));
    fs.renameSync(garbage, path.join(dir, LOG_FILE));
    for (const s of ['-wal', '-shm']) fs.rmSync(path.join(dir, `${LOG_FILE}${s}`), { force: true });
    expect(await dispatch('query', { sessionId: SID, n: 2 })).toMatchObject({ ok: true });
    await recorder.close();
    expect(calls(dir).map((r) => r.seq)).toEqual([2]);
    expect(fs.readdirSync(dir).some((f) => f.startsWith(`${LOG_FILE}.corrupt-`))).toBe(true);
    expect(events(dir, 'record-failure')[0]!.data).toMatchObject({
      stage: 'store',
      message: expect.stringMatching(/replaced.*not a usable database/),
      lost: 1,
    });
    expect(lines).toHaveLength(1);
  });

  it('a database locked by another writer delays the log, never the calls, and the commit failure is recorded', async () => {
    const { lines, recorder, dispatch, dir } = await oneQueryCommitted(0);
    const other = new Database(path.join(dir, LOG_FILE));
    other.exec('BEGIN EXCLUSIVE');
    // Every call returns while the other writer still holds the lock (it lets go only after the loop); each
    // flush tries a commit there and then.
    for (let n = 1; n <= 10; n += 1) {
      expect(await dispatch('query', { sessionId: SID, n })).toMatchObject({ ok: true });
      await recorder.flush();
    }
    expect(recorder.session(SID)!.counts.recordFailures).toBe(1);
    other.exec('COMMIT');
    other.close();
    await recorder.close();
    expect(calls(dir).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(events(dir, 'record-failure').map((e) => e.data)).toEqual([
      { stage: 'commit', message: expect.stringMatching(/locked|busy/i), lost: 0 },
    ]);
    expect(lines).toEqual([expect.stringContaining('recording failed (commit)')]);
  });

  it('a full disk: calls return, the loss is counted, stderr hears about it once', async () => {
    const lines: string[] = [];
    const recorder = createRecorderOnClock(
      { sessionsDir: temp.dir, stderr: (l) => lines.push(l) },
      systemClock,
      {
        sqlitePragmas: ['max_page_count = 25'],
      },
    );
    const payload = 'y'.repeat(2000);
    const dispatch = recorder.wrap(async (_t: string, args: Record<string, unknown>) => ({
      sessionId: SID,
      ok: true,
      result: { n: args.n, payload },
    }));
    for (let n = 1; n <= 50; n += 1) {
      expect(await dispatch('query', { sessionId: SID, n })).toMatchObject({ result: { n } });
      await recorder.flush(); // committed call by call, so the disk fills part way through
    }
    await recorder.close();
    const info = recorder.session(SID)!;
    const dir = info.dir;
    const okRows = calls(dir).filter((r) => r.status === 'ok').length;
    expect(okRows).toBeGreaterThan(0);
    expect(okRows).toBeLessThan(50);
    expect(okRows + info.counts.lostCalls).toBe(50);
    expect(info.counts.recordFailures).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/recording failed \(commit\).*full/)]);
  });

  it('a bug in a stage: the call returns as dispatched, the row keeps its metadata, the failure is an event', async () => {
    const lines: string[] = [];
    let broken: RecordStage | undefined;
    const recorder = createRecorderOnClock(
      { sessionsDir: temp.dir, stderr: (l) => lines.push(l) },
      systemClock,
      {
        beforeStage: (stage) => {
          if (stage === broken) throw new Error(`injected ${stage} bug`);
        },
      },
    );
    const { out, png } = await captureOutput([30, 30, 160]);
    const failure = callToolResult({
      sessionId: SID,
      ok: false,
      error: { code: 'element-not-found', category: 'no-target', detail: 'no Save button' },
    });
    const dispatch = recorder.wrap(async (tool: string, _args: Record<string, unknown>) =>
      tool === 'capture' ? out : failure,
    );
    // Stages run after a success has returned: flush before switching the fault.
    broken = 'compact';
    expect(await dispatch('capture', { sessionId: SID })).toBe(out);
    await recorder.flush();
    broken = 'parse';
    expect(await dispatch('find', { sessionId: SID })).toBe(failure);
    await recorder.flush();
    broken = 'redact'; // both the arguments' and the envelope's redaction fail
    expect(await dispatch('find', { sessionId: SID })).toBe(failure);
    await recorder.flush();
    broken = undefined;
    expect(await dispatch('capture', { sessionId: SID })).toBe(out);
    await recorder.close();
    const dir = recorder.session(SID)!.dir;
    const rows = calls(dir);
    expect(rows.map((r) => [r.seq, r.tool, r.status, r.payload_dropped, r.envelope === null])).toEqual([
      [1, 'capture', 'ok', 1, true],
      [2, 'find', 'failed', 1, true],
      [3, 'find', 'failed', 1, true],
      [4, 'capture', 'ok', 0, false],
    ]);
    expect(events(dir, 'record-failure').map((e) => [e.data.stage, e.data.message])).toEqual([
      ['compact', 'injected compact bug'],
      ['parse', 'injected parse bug'],
      ['redact', 'injected redact bug'],
      ['redact', 'injected redact bug'],
    ]);
    expect(recorder.session(SID)!.counts).toMatchObject({ recordFailures: 4, pending: 0, calls: 4 });
    expectEventsValid(dir);
    expect(lines.map((l) => /\((\w+)\)/.exec(l)![1])).toEqual(['compact', 'parse', 'redact']);
    expectCleanLog(dir, [png.toString('base64')]);
  });

  it('an artifact that cannot be written: artifactError in the summary, a record-failure event, the call untouched', async () => {
    const lines: string[] = [];
    const recorder = createRecorder({ sessionsDir: temp.dir, stderr: (l) => lines.push(l) });
    const { out, png } = await captureOutput([120, 60, 0]);
    const dispatch = recorder.wrap(async (tool: string, _args: Record<string, unknown>) =>
      tool === 'capture' ? out : { sessionId: SID, ok: true, result: {} },
    );
    await dispatch('query', { sessionId: SID });
    await recorder.flush();
    const dir = recorder.session(SID)!.dir;
    fs.writeFileSync(path.join(dir, 'artifacts'), 'a file where the artifacts folder should be');
    expect(await dispatch('capture', { sessionId: SID })).toBe(out);
    await recorder.close();
    const envelope = JSON.parse(calls(dir)[1]!.envelope!);
    expect(envelope.result).toMatchObject({
      kind: 'capture-summary',
      artifactError: expect.stringMatching(/^disk error/),
    });
    expect(events(dir, 'record-failure').map((e) => e.data)).toEqual([
      { stage: 'artifact', message: expect.stringMatching(/^disk error/), lost: 0 },
    ]);
    expect(lines).toEqual([expect.stringContaining('recording failed (artifact)')]);
    expectCleanLog(dir, [png.toString('base64')]);
  });

  it('a sessions dir that cannot be created: calls return (even with a throwing stderr); the loss is written once it can', async () => {
    const blocked = path.join(temp.dir, 'sessions');
    fs.writeFileSync(blocked, 'a file in the way');
    let stderrCalls = 0;
    const clock = new AdvancingClock();
    const recorder = createRecorderOnClock(
      {
        sessionsDir: blocked,
        stderr: () => {
          stderrCalls += 1;
          throw new Error('stderr is gone too');
        },
      },
      clock,
    );
    const dispatch = recorder.wrap(async (_t: string, args: Record<string, unknown>) => ({
      sessionId: SID,
      ok: args.n !== 2,
      ...(args.n === 2
        ? { error: { code: 'element-not-found', category: 'no-target', detail: 'x' } }
        : { result: { n: args.n } }),
    }));
    expect(await dispatch('query', { sessionId: SID, n: 1 })).toMatchObject({ ok: true });
    expect(await dispatch('find', { sessionId: SID, n: 2 })).toMatchObject({ ok: false });
    await recorder.flush();
    expect(recorder.session(SID)!.counts).toMatchObject({
      calls: 2,
      recordFailures: 1,
      lostCalls: 2,
      pending: 0,
    });
    expect(stderrCalls).toBe(1);
    // The way is cleared: once the 1 s retry interval is past the log opens and says what was lost.
    fs.rmSync(blocked);
    clock.advance(1000);
    expect(await dispatch('query', { sessionId: SID, n: 3 })).toMatchObject({ ok: true });
    await recorder.close();
    const dir = recorder.session(SID)!.dir;
    expect(calls(dir).map((r) => [r.seq, r.status])).toEqual([[3, 'ok']]);
    expect(events(dir, 'record-failure').map((e) => e.data)).toEqual([
      { stage: 'open', message: expect.stringMatching(/ENOTDIR|EEXIST|not a directory/), lost: 2 },
    ]);
  });
});

describe('a crash', () => {
  it('a writer killed with SIGKILL mid-call leaves its completed calls and a pending row for the one in flight', async () => {
    const child = await killWhenReady('in-flight', temp.dir);
    const [name] = fs.readdirSync(temp.dir);
    const dir = path.join(temp.dir, name!);
    expect(calls(dir).map((r) => [r.seq, r.tool, r.status])).toEqual([
      [1, 'capture', 'ok'],
      [2, 'find', 'ok'],
      [3, 'wait-for', 'pending'],
    ]);
    const reader = SessionReader.open(dir);
    expect(reader.session()).toMatchObject({ status: 'aborted', writer_pid: child.pid });
    reader.close();
  });
});
