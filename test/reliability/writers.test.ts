/**
 * Several writers, no loss: two recorder processes record the same MCEC session (the same session-start
 * answer, so one session dir and one log) at the same time, 300 calls each with 8 in flight. Before seqs
 * were allocated under SQLite's write lock they overwrote each other's rows (the issue: 343 of 602 kept, 0
 * reported lost). Every call of both must be in the log, each writer's calls in the order they started,
 * the second writer reported as a `concurrent-writer` event, and the summary must say who wrote what.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sessionDirName } from '../../src/paths/naming.js';
import { renderFailureSummary } from '../../src/report/render.js';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { expectEventsValid } from '../record/helpers.js';
import { removeRoot, reportFigure, sessionDirOf, tempRoot } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/two-writers-child.mjs', import.meta.url));
const CALLS = 300;
const SESSION_ID = 'a11ce0b0b001';
// The server's session-start time: an hour before this run, on the second (inside the recorder's skew limit
// on any date, and far enough from the recorder's own clock that a dir named from that clock would differ).
const STARTED_AT = new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000).toISOString();

interface Done {
  pid: number;
  counts: { calls: number; lostCalls: number; recordFailures: number };
  stderr: string[];
}

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

/** Start both writers, let them go at the same moment, and collect what each reports. */
async function recordTwice(sessionsDir: string): Promise<Done[]> {
  const children = ['A', 'B'].map((label) =>
    fork(CHILD, [sessionsDir, label, String(CALLS), SESSION_ID, STARTED_AT], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    }),
  );
  const stderr = children.map(() => '');
  children.forEach((c, i) => {
    c.stderr!.on('data', (b: Buffer) => {
      stderr[i] += b.toString('utf8');
    });
  });
  const message = (kind: string) =>
    Promise.all(
      children.map(
        (c, i) =>
          new Promise<Record<string, unknown>>((resolve, reject) => {
            const onMessage = (m: Record<string, unknown>) => {
              if (m.kind !== kind) return;
              c.off('message', onMessage);
              resolve(m);
            };
            c.on('message', onMessage);
            c.once('exit', (code) =>
              reject(new Error(`writer ${i} exited (${code}) before '${kind}': ${stderr[i]}`)),
            );
          }),
      ),
    );
  await message('ready');
  const started = message('started');
  for (const c of children) c.send('go');
  await started;
  const done = message('done');
  for (const c of children) c.send('go');
  const results = (await done) as unknown as Done[];
  await Promise.all(
    children.map(
      (c) => new Promise((resolve) => (c.exitCode !== null ? resolve(0) : c.once('exit', resolve))),
    ),
  );
  return results;
}

describe('two processes write one session', () => {
  it('keeps every call of both, in each writer’s start order, and reports the second writer', async () => {
    const { root, sessionsDir } = tempRoot();
    roots.push(root);
    const done = await recordTwice(sessionsDir);
    for (const d of done) {
      // Each recorder counted its own calls (the session-start and the finds) and lost none. A commit that
      // waited longer than its 20 ms busy timeout for the other writer's lock (a loaded machine) is retried
      // and reported as a commit failure, never as a loss.
      expect(d.counts).toMatchObject({ calls: CALLS + 1, lostCalls: 0 });
      for (const line of d.stderr) expect(line).toMatch(/recording failed \(commit\)/);
    }

    const dir = sessionDirOf(sessionsDir, SESSION_ID);
    expect(path.basename(dir)).toBe(sessionDirName(new Date(STARTED_AT), SESSION_ID));
    const reader = SessionReader.open(dir);
    try {
      const rows = [...reader.calls()];
      expect(rows).toHaveLength(2 * (CALLS + 1));
      expect(rows.every((r) => r.status === 'ok')).toBe(true);
      for (const label of ['A', 'B']) {
        const ns = rows
          .filter((r) => r.tool === 'find' && (JSON.parse(r.args!) as { writer: string }).writer === label)
          .map((r) => (JSON.parse(r.args!) as { n: number }).n);
        // All of this writer's calls, and (seq order) in the order this writer started them.
        expect(ns).toEqual(Array.from({ length: CALLS }, (_, i) => i + 1));
      }
      // How often seq order switches from one writer's call to the other's: they really ran together.
      const writerOf = (r: { args: string | null }) =>
        (JSON.parse(r.args ?? '{}') as { writer?: string }).writer;
      const finds = rows.filter((r) => r.tool === 'find');
      const interleaved = finds.filter((r, i) => i > 0 && writerOf(r) !== writerOf(finds[i - 1]!)).length;
      const stats = reader.stats();
      expect(stats).toMatchObject({
        calls: 2 * (CALLS + 1),
        ok: 2 * (CALLS + 1),
        lostCalls: 0,
      });
      for (const e of reader.events('record-failure')) {
        expect(JSON.parse(e.detail!)).toMatchObject({ stage: 'commit', lost: 0 });
      }

      // Who wrote: both writers, each with its own calls; each noticed the other.
      const writers = reader.writers();
      expect(writers.map((w) => w.pid).sort()).toEqual(done.map((d) => d.pid).sort());
      expect(writers.map((w) => w.calls)).toEqual([CALLS + 1, CALLS + 1]);
      expect(writers.every((w) => w.closed_at !== null)).toBe(true);
      const noticed = reader
        .events('concurrent-writer')
        .map((e) => JSON.parse(e.detail!) as { pid: number; other: { pid: number } });
      expect(noticed.length).toBeGreaterThanOrEqual(1);
      for (const n of noticed) expect(n.pid).not.toBe(n.other.pid);
      expectEventsValid(dir); // concurrent-writer included, against schema/session-log-event.schema.json

      const summary = await buildSummary(reader);
      expect(summary.counts).toMatchObject({ calls: 2 * (CALLS + 1), failures: 0, lostCalls: 0 });
      expect(summary.writers).toHaveLength(2);
      const text = await renderFailureSummary(summary);
      expect(text).toMatch(
        new RegExp(
          `Written by 2 processes at the same time: pid \\d+ \\(${CALLS + 1} calls\\), pid \\d+ \\(${CALLS + 1} calls\\)`,
        ),
      );
      reportFigure('writers', {
        calls: rows.length,
        expected: 2 * (CALLS + 1),
        concurrentWriterEvents: noticed.length,
        writerSwitchesInSeqOrder: interleaved,
      });
    } finally {
      reader.close();
    }
  }, 120_000);
});
