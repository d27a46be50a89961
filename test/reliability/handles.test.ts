/**
 * Handles bounded: one long-running recorder records 1,000 sessions under `ulimit -n 256` (a real child
 * process started by bash). Each WAL log holds three descriptors, so without a cap the ~80th open session
 * could not open its log; with ended logs closed at once and idle ones closed past the pool's cap (64),
 * every call of every session is in its log and nothing is counted lost. 1,000 is nearly four times where
 * the child died of EMFILE before the pool (264 sessions); 5,000 showed the same in five times the time.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { listSessions } from '../../src/store/session-reader.js';
import { tmpfsTempDir } from '../support/temp.js';
import { removeRoot, reportFigure } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/many-sessions-child.mjs', import.meta.url));
const SESSIONS = 1000;
const CALLS = 2;

describe('handles: 1,000 sessions in one process under ulimit -n 256', () => {
  // On tmpfs: the suite is about descriptors, and each log's close on a VM's disk costs ~30 ms of fsync.
  const root = tmpfsTempDir('mcec-fd-');
  afterAll(() => removeRoot(root));

  it('records every call of every session, ended and open, and counts nothing lost', () => {
    const sessionsDir = path.join(root, 'sessions');
    const t0 = performance.now();
    const res = spawnSync(
      'bash',
      [
        '-c',
        'ulimit -n 256 && exec "$0" "$@"',
        process.execPath,
        CHILD,
        sessionsDir,
        String(SESSIONS),
        String(CALLS),
      ],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 280_000 },
    );
    const wallMs = performance.now() - t0;
    expect(res.status, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout) as {
      softLimit: number;
      maxFds: number;
      stderr: string[];
      counts: Record<string, { calls: number; lostCalls: number; recordFailures: number } | null>;
    };
    expect(out.softLimit).toBe(256);
    // No "recording failed" notice; only the pool's size, from the file limit.
    expect(out.stderr).toEqual([
      'mcec-recorder: this process may open 256 files (ulimit -n): keeping at most 42 session logs open at once (64 otherwise)',
    ]);
    expect(out.maxFds).toBeLessThan(256);

    const locations = listSessions(sessionsDir);
    expect(locations).toHaveLength(SESSIONS);
    const problems: string[] = [];
    for (const loc of locations) {
      const i = Number(loc.sessionId.slice(1));
      const counts = out.counts[loc.sessionId];
      const expected = CALLS + (i % 2 === 0 ? 1 : 0); // even sessions also made a session-end call
      if (!counts || counts.calls !== expected || counts.lostCalls !== 0 || counts.recordFailures !== 0) {
        problems.push(`${loc.sessionId}: counts ${JSON.stringify(counts)}`);
      }
      const db = new Database(path.join(loc.dir, 'session.sqlite'), { readonly: true, fileMustExist: true });
      try {
        const calls = db.prepare('SELECT tool, status FROM calls ORDER BY seq').all() as Array<{
          tool: string;
          status: string;
        }>;
        const finds = calls.filter((c) => c.tool === 'find' && c.status === 'ok').length;
        const session = db.prepare('SELECT status FROM session').get() as { status: string };
        const failures = (
          db.prepare("SELECT count(*) AS n FROM events WHERE kind = 'record-failure'").get() as { n: number }
        ).n;
        if (calls.length !== expected || finds !== CALLS || session.status !== 'ended' || failures !== 0) {
          problems.push(
            `${loc.sessionId}: ${calls.length} rows, ${finds} finds, ${session.status}, ${failures} failures`,
          );
        }
      } finally {
        db.close();
      }
    }
    expect(problems.slice(0, 10)).toEqual([]);
    reportFigure('handles', {
      sessions: SESSIONS,
      calls: locations.length * CALLS + SESSIONS / 2,
      softLimit: out.softLimit,
      maxOpenFds: out.maxFds,
      wallMs: Math.round(wallMs),
      tmpfs: root.startsWith('/dev/shm'),
    });
  }, 300_000);
});
