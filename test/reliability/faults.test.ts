/**
 * Faults under the recorder: the sessions dir deleted mid-session, the path of the sessions dir taken by a
 * file, session.sqlite replaced by a non-database file, a full disk (a real tmpfs filled to ENOSPC when this
 * machine lets us mount one; SQLite's max_page_count seam otherwise), an artifact write that fails, and the
 * database locked by another process. Every call still returns what the dispatch returned; every loss is
 * counted (SessionInfo.counts) and, once the log can be written again, visible in the summary.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { AdvancingClock } from '../../src/record/clock.js';
import { createRecorder, type Dispatch, type Recorder } from '../../src/record/index.js';
import { createRecorderOnClock } from '../../src/record/recorder.js';
import type { RecorderFaults } from '../../src/record/types.js';
import { renderFailureSummary } from '../../src/report/render.js';
import { buildSummary } from '../../src/report/summary.js';
import type { SessionSummary } from '../../src/report/types.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { tempDir } from '../support/temp.js';
import {
  findResult,
  PNG_BASE64_PREFIX,
  ROOT,
  realPng,
  removeRoot,
  scanLogs,
  sessionDirOf,
  tempRoot,
} from './helpers.js';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

function setup(options: Parameters<typeof createRecorder>[0] = {}, faults?: RecorderFaults) {
  const { root, sessionsDir } = tempRoot();
  roots.push(root);
  const notices: string[] = [];
  // The recorder's retry deadlines read this clock: a test moves it past an interval instead of sleeping.
  const clock = new AdvancingClock();
  const recorder = createRecorderOnClock(
    { sessionsDir, stderr: (l) => notices.push(l), ...options },
    clock,
    faults,
  );
  const returned: Array<{ sent: unknown; got: unknown }> = [];
  let delayMs = 0;
  const dispatch: Dispatch = async (tool, args) => {
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (tool === 'capture') return args.result;
    return findResult(String(args.n));
  };
  const wrapped = recorder.wrap(dispatch);
  let n = 0;
  /** `count` calls; each must come back as exactly what the dispatch returned. */
  const calls = async (count: number, tool = 'find') => {
    for (let i = 0; i < count; i++) {
      n += 1;
      const got = await wrapped(tool, { n });
      returned.push({ sent: n, got });
      expect((got as { content: Array<{ text: string }> }).content[0]!.text).toContain(`"name":"${n}"`);
    }
  };
  return {
    root,
    sessionsDir,
    clock,
    recorder,
    wrapped,
    notices,
    calls,
    get made() {
      return n;
    },
    slow(ms: number) {
      delayMs = ms;
    },
  };
}

/** A capture CallToolResult whose image is `png` (a success: handed back untouched). */
function capture(png: Buffer, width: number, height: number): Record<string, unknown> {
  const base64 = png.toString('base64');
  const envelope = {
    ok: true,
    sessionId: null,
    result: { handle: 1, width, height, encoding: 'png', bytes: png.length, base64 },
  };
  return {
    content: [
      { type: 'image', data: base64, mimeType: 'image/png' },
      { type: 'text', text: JSON.stringify(envelope) },
    ],
    isError: false,
  };
}

function rowCount(dir: string): number {
  const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function summaryOf(dir: string): Promise<{ summary: SessionSummary; text: string }> {
  const reader = SessionReader.open(dir);
  try {
    const summary = await buildSummary(reader);
    return { summary, text: await renderFailureSummary(summary) };
  } finally {
    reader.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether this machine lets the suite mount a tmpfs (root in a privileged container): real ENOSPC then. */
function canMountTmpfs(): boolean {
  if (process.platform !== 'linux') return false;
  const dir = tempDir('mcec-mount-probe-');
  try {
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    if (m.status !== 0) return false;
    spawnSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const MOUNT = canMountTmpfs();

describe('faults: every call returns, every loss is counted and shown', () => {
  it('the sessions dir is deleted mid-session (with a call in flight)', async () => {
    const t = setup();
    await t.calls(20);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    const before = rowCount(sessionDirOf(t.sessionsDir, id));
    expect(before).toBe(20);

    t.slow(150);
    const inFlight = t.wrapped('find', { n: 9999 });
    await t.recorder.flush(); // its pending row is in the log when the dir goes
    fs.rmSync(t.sessionsDir, { recursive: true, force: true });
    expect(await inFlight).toEqual(findResult('9999'));
    t.slow(0);
    await t.calls(20);
    await t.recorder.flush();

    const counts = t.recorder.session(id)!.counts;
    expect(counts.recordFailures).toBeGreaterThanOrEqual(1);
    expect(counts.lostCalls).toBe(20);
    await t.recorder.close();

    const dir = sessionDirOf(t.sessionsDir, id);
    // No silent loss: what the new log holds plus what is counted lost is every call made.
    expect(rowCount(dir) + counts.lostCalls).toBe(t.made + 1);
    const { summary, text } = await summaryOf(dir);
    expect(summary.counts.lostCalls).toBe(20);
    expect(summary.counts.recordFailures).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/Recording failures: \d+ \(20 calls lost\)/);
    expect(t.notices.length).toBeGreaterThanOrEqual(1);
    expect(t.notices.length).toBeLessThanOrEqual(3); // once per failing stage, not once per call
  });

  it('a file sits where the sessions dir should be, then goes away', async () => {
    const t = setup();
    fs.rmSync(t.sessionsDir, { recursive: true });
    fs.writeFileSync(t.sessionsDir, 'not a directory');
    await t.calls(15);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    expect(t.recorder.session(id)!.counts).toMatchObject({ calls: 15, lostCalls: 15 });
    expect(t.notices.join('\n')).toMatch(/recording failed \(open\)/);

    fs.rmSync(t.sessionsDir);
    t.clock.advance(1000); // past the 1 s after which a log that would not open is tried again
    await t.calls(5);
    await t.recorder.close();
    const dir = sessionDirOf(t.sessionsDir, id);
    expect(rowCount(dir)).toBe(5);
    const { summary, text } = await summaryOf(dir);
    expect(summary.counts.lostCalls).toBe(15);
    expect(text).toMatch(/\(15 calls lost\)/);
  });

  it('session.sqlite is replaced by a file that is not a database', async () => {
    const t = setup();
    await t.calls(10);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    const dir = sessionDirOf(t.sessionsDir, id);
    const log = path.join(dir, 'session.sqlite');
    fs.rmSync(log);
    for (const s of ['-wal', '-shm']) fs.rmSync(`${log}${s}`, { force: true });
    fs.writeFileSync(log, 'this is not a database '.repeat(200));
    await t.calls(10);
    await t.recorder.flush();
    const counts = t.recorder.session(id)!.counts;
    expect(counts.lostCalls).toBe(10);
    await t.recorder.close();
    expect(rowCount(dir) + counts.lostCalls).toBe(t.made);
    const { summary, text } = await summaryOf(dir);
    expect(summary.counts.lostCalls).toBe(10);
    expect(text).toMatch(/\(10 calls lost\)/);
  });

  it('an artifact write fails (a file where artifacts/ should be): the call returns, the error is counted', async () => {
    const t = setup();
    await t.calls(1);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    const dir = sessionDirOf(t.sessionsDir, id);
    fs.rmSync(path.join(dir, 'artifacts'), { recursive: true, force: true });
    fs.writeFileSync(path.join(dir, 'artifacts'), 'in the way');
    const png = await realPng(64, 48, 3);
    const result = capture(png, 64, 48);
    expect(await t.wrapped('capture', { result })).toBe(result);
    await t.recorder.flush();
    expect(t.recorder.session(id)!.counts.recordFailures).toBeGreaterThanOrEqual(1);
    await t.recorder.close();
    const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true });
    const errors = db.prepare('SELECT error FROM artifacts').all() as Array<{ error: string | null }>;
    db.close();
    expect(errors.length).toBeGreaterThanOrEqual(1);
    for (const e of errors) expect(e.error).toMatch(/disk error|artifact store/);
    expect(scanLogs(t.sessionsDir, [PNG_BASE64_PREFIX, png.toString('base64').slice(100, 140)])).toEqual([]);
    const { summary } = await summaryOf(dir);
    expect(summary.counts.recordFailures).toBeGreaterThanOrEqual(1);
  });

  it('SQLite runs out of pages (the max_page_count seam): calls return, the loss is counted', async () => {
    const t = setup({}, { sqlitePragmas: ['max_page_count = 12'] });
    await t.calls(300);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    const during = t.recorder.session(id)!.counts;
    expect(during.recordFailures).toBeGreaterThanOrEqual(1);
    await t.recorder.close();
    const counts = t.recorder.session(id)!.counts;
    const dir = sessionDirOf(t.sessionsDir, id);
    // Whatever did not fit is counted lost: nothing vanishes silently.
    expect(rowCount(dir) + counts.lostCalls).toBeGreaterThanOrEqual(300);
    expect(counts.lostCalls).toBeGreaterThan(0);
    expect(t.notices.join('\n')).toMatch(/recording failed/);
  });

  it.runIf(MOUNT)(
    'the disk fills up for real (tmpfs at ENOSPC), then frees: calls return, the summary shows it',
    async () => {
      const { root } = tempRoot();
      roots.push(root);
      const mnt = path.join(root, 'mnt');
      fs.mkdirSync(mnt);
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt]).status).toBe(0);
      let recorder: Recorder | undefined;
      try {
        const sessionsDir = path.join(mnt, 'sessions');
        const notices: string[] = [];
        recorder = createRecorder({ sessionsDir, stderr: (l) => notices.push(l) });
        const wrapped = recorder.wrap<Dispatch>(async (tool, args) =>
          tool === 'capture' ? args.result : findResult(String(args.n)),
        );
        let n = 0;
        const some = async (count: number) => {
          for (let i = 0; i < count; i++)
            expect(await wrapped('find', { n: ++n })).toEqual(findResult(String(n)));
        };
        await some(20);
        await recorder.flush();
        const id = recorder.defaultSessionId;
        // Fill the disk.
        const filler = path.join(mnt, 'filler');
        const fd = fs.openSync(filler, 'w');
        try {
          for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
        } catch (err) {
          expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
        } finally {
          fs.closeSync(fd);
        }
        await some(40);
        const png = await realPng(200, 150, 5);
        const result = capture(png, 200, 150);
        expect(await wrapped('capture', { result })).toBe(result);
        await recorder.flush(); // a commit on the full disk: it fails and is counted
        expect(recorder.session(id)!.counts.recordFailures).toBeGreaterThanOrEqual(1);
        // Free the disk: what was queued is committed on a later attempt.
        fs.rmSync(filler);
        await recorder.flush();
        await some(10);
        await recorder.close();
        const counts = recorder.session(id)!.counts;
        const dir = sessionDirOf(sessionsDir, id);
        expect(rowCount(dir) + counts.lostCalls).toBe(n + 1);
        const { summary, text } = await summaryOf(dir);
        expect(summary.counts.recordFailures).toBeGreaterThanOrEqual(1);
        expect(text).toMatch(/Recording failures: [1-9]/);
        expect(scanLogs(sessionsDir, [PNG_BASE64_PREFIX])).toEqual([]);
      } finally {
        await recorder?.close();
        spawnSync('umount', ['-l', mnt]);
      }
    },
  );

  it.runIf(MOUNT)(
    'the sessions dir becomes read-only mid-session (a read-only bind mount over it)',
    async () => {
      const t = setup();
      await t.calls(10);
      await t.recorder.flush();
      const id = t.recorder.defaultSessionId;
      const other = 'b0b0b0b0b0b0';
      const bind = (args: string[]) => expect(spawnSync('mount', args).status).toBe(0);
      bind(['--bind', t.sessionsDir, t.sessionsDir]);
      let mounted = true;
      try {
        bind(['-o', 'remount,bind,ro', t.sessionsDir]);
        expect(() => fs.mkdirSync(path.join(t.sessionsDir, 'probe'))).toThrow(/EROFS|read-only/);
        // The open log keeps its file handles; new files (an artifact, a new session's dir) cannot be made.
        await t.calls(10);
        const png = await realPng(120, 90, 9);
        const result = capture(png, 120, 90);
        expect(await t.wrapped('capture', { result })).toBe(result);
        for (let i = 0; i < 5; i++) {
          const got = await t.wrapped('find', { n: 500 + i, sessionId: other });
          expect(got).toEqual(findResult(String(500 + i)));
        }
        await t.recorder.flush();
        expect(t.recorder.session(id)!.counts.recordFailures).toBeGreaterThanOrEqual(1);
        expect(t.recorder.session(other)!.counts.lostCalls).toBe(5);
        spawnSync('umount', [t.sessionsDir]);
        mounted = false;
        t.clock.advance(1000); // past the 1 s after which a log that would not open is tried again
        for (let i = 0; i < 3; i++) await t.wrapped('find', { n: 600 + i, sessionId: other });
        await t.recorder.close();
      } finally {
        if (mounted) spawnSync('umount', ['-l', t.sessionsDir]);
      }
      const otherSummary = await summaryOf(sessionDirOf(t.sessionsDir, other));
      expect(otherSummary.summary.counts.lostCalls).toBe(5);
      expect(otherSummary.text).toMatch(/\(5 calls lost\)/);
      const own = await summaryOf(sessionDirOf(t.sessionsDir, id));
      expect(own.summary.counts.recordFailures).toBeGreaterThanOrEqual(1);
      expect(rowCount(sessionDirOf(t.sessionsDir, id))).toBe(t.made + 1);
      expect(scanLogs(t.sessionsDir, [PNG_BASE64_PREFIX])).toEqual([]);
    },
  );

  it('the database is locked by another process (BEGIN EXCLUSIVE for 1.5 s)', async () => {
    const t = setup();
    await t.calls(5);
    await t.recorder.flush();
    const id = t.recorder.defaultSessionId;
    const dir = sessionDirOf(t.sessionsDir, id);
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const Database = require('better-sqlite3');
         const db = new Database(process.argv[1]);
         db.pragma('busy_timeout = 5000');
         db.exec('BEGIN EXCLUSIVE');
         process.stdout.write('locked\\n');
         setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); }, 1500);`,
        path.join(dir, 'session.sqlite'),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    holder.stdout!.on('data', (b: Buffer) => {
      out += b.toString('utf8');
    });
    const exited = new Promise<number | null>((r) => holder.on('exit', r));
    while (!out.includes('locked')) await sleep(10);

    // While the lock is held every call still returns: all 40 before the holder lets go.
    for (let i = 0; i < 40; i++) {
      await t.calls(1);
      await sleep(10);
    }
    expect(out).not.toContain('released');
    const during = t.recorder.session(id)!.counts;
    expect(during.recordFailures).toBeGreaterThanOrEqual(1);

    expect(await exited).toBe(0);
    await t.calls(5);
    await t.recorder.close();
    const counts = t.recorder.session(id)!.counts;
    expect(counts.lostCalls).toBe(0);
    expect(rowCount(dir)).toBe(t.made);
    const { summary, text } = await summaryOf(dir);
    expect(summary.counts.recordFailures).toBeGreaterThanOrEqual(1);
    expect(summary.counts.lostCalls).toBe(0);
    expect(text).toMatch(/Recording failures: [1-9]/);
  });
});
