/**
 * A session whose writer is on another host (a CI runner, a container, a Windows machine) and never closed
 * its log: that writer's pid cannot be checked from here. Such a session reads as `aborted` with
 * `openElsewhere` naming the host, fails (never green) in `list`, `show`, `junit` and `--format github`, and
 * `prune` keeps it only while its files were written lately. Real logs: a recorder killed with SIGKILL, its
 * writer row then naming another host (what a dir copied from that host holds), and the built CLI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { LOG_FILE } from '../../src/paths/naming.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { schemaValidator } from '../mcp-server/helpers.js';
import { IN_FLIGHT_SESSION_ID, killWhenReady } from '../support/crash.js';
import { deadPid, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, ROOT, runNode } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';
import { sessionDirOf } from './helpers.js';

// Not this machine's name, whatever runs the suite.
const OTHER_HOST = os.hostname() === 'ci-runner-7' ? 'ci-runner-8' : 'ci-runner-7';
const XSD = fs.readFileSync(path.join(ROOT, 'test/support/junit/JUnit.xsd'), 'utf8');
const validate = schemaValidator();
let root: string;

beforeAll(() => {
  root = tempDir('mcec-other-host-');
});
afterAll(() => removeDir(root));

/** Run `mcec-bundle <args> --sessions <dir>` (the built CLI). */
async function cli(
  sessions: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runNode([BUNDLE_CLI, ...args, '--sessions', sessions]);
}

async function cliJson(sessions: string, schema: string, args: string[]): Promise<unknown> {
  const run = await cli(sessions, args);
  expect(run.code, run.stderr).toBe(0);
  const value = JSON.parse(run.stdout) as unknown;
  expect(validate(schema, value), `${args.join(' ')} against ${schema}`).toEqual([]);
  return value;
}

/** Rewrite a log's writer rows as a copy from `host` holds them. */
function moveWritersTo(dir: string, host: string): void {
  const db = new Database(path.join(dir, LOG_FILE));
  try {
    db.prepare('UPDATE writers SET host = ?').run(host);
  } finally {
    db.close();
  }
}

/** Set the modification time of a session's log files `ageMs` back from now. */
function ageLogFiles(dir: string, ageMs: number): void {
  const t = new Date(Date.now() - ageMs);
  for (const name of [LOG_FILE, `${LOG_FILE}-wal`]) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) fs.utimesSync(file, t, t);
  }
}

interface Listing {
  id: string;
  status: string;
  openElsewhere: { host: string } | null;
  verdict: string;
  verdictReason: string;
  calls: number;
}

describe('a recorder SIGKILLed on another host', () => {
  let sessions: string;
  let dir: string;
  let pid: number;

  beforeAll(async () => {
    sessions = path.join(root, 'killed');
    const child = await killWhenReady('in-flight', sessions);
    pid = child.pid;
    dir = sessionDirOf(sessions, IN_FLIGHT_SESSION_ID);
    moveWritersTo(dir, OTHER_HOST);
  }, 60_000);

  it('reads as aborted, open on that host, with no live writer here and one that cannot be checked', () => {
    const reader = SessionReader.open(dir);
    try {
      expect(reader.storedStatus()).toBe('open');
      expect(reader.session().status).toBe('aborted');
      expect(reader.liveWriters()).toEqual([]);
      expect(reader.uncheckedWriters().map((w) => [w.host, w.pid])).toEqual([[OTHER_HOST, pid]]);
      expect(reader.openElsewhere()).toMatchObject({ host: OTHER_HOST, pid });
    } finally {
      reader.close();
    }
  });

  it('list, show, junit and --format github fail it as never ended, naming the host', async () => {
    const listed = (await cliJson(sessions, 'session-listing', ['list', '--json'])) as Listing[];
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      status: 'aborted',
      openElsewhere: { host: OTHER_HOST },
      verdict: 'FAIL',
    });
    const reason = `the session never ended: its log is still open on ${OTHER_HOST}, and its writer there (pid ${pid}) cannot be checked from here`;
    expect(listed[0]!.verdictReason).toContain(reason);
    const table = await cli(sessions, ['list']);
    expect(table.stdout).toContain(`FAIL (open on ${OTHER_HOST}: its writer cannot be checked from here)`);
    expect(table.stdout).not.toContain('running');

    const shown = (await cliJson(sessions, 'summary', ['show', IN_FLIGHT_SESSION_ID, '--json'])) as {
      status: string;
      openElsewhere: unknown;
      verdict: string;
      markdown: string;
    };
    expect(shown).toMatchObject({
      status: 'aborted',
      openElsewhere: { host: OTHER_HOST, pid },
      verdict: 'FAIL',
    });
    expect(shown.markdown).toContain(
      `- Status: aborted (open on ${OTHER_HOST}: its writer, pid ${pid}, cannot be checked from here);`,
    );
    expect(shown.markdown).not.toContain('still running');
    const page = await cli(sessions, ['report', IN_FLIGHT_SESSION_ID]);
    expect(page.code, page.stderr).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'report.html'), 'utf8')).toContain(
      `This session never ended: its log is still open on ${OTHER_HOST}, where its writer (pid ${pid}) cannot be checked from here`,
    );

    const junit = await cli(sessions, ['junit']);
    expect(junit.code, junit.stderr).toBe(0);
    expect(junit.stdout).not.toContain('<skipped');
    expect(junit.stdout).toContain('failures="1" errors="0" skipped="0"');
    // The pending call's reason first (the recorder died waiting for it), then the one of the end.
    expect(junit.stdout).toContain('<failure type="FAIL" message="call #3 wait-for is still pending');
    expect(junit.stdout).toContain(`; ${reason}">`);
    const xsd = await validateXML({ xml: [{ fileName: 'r.xml', contents: junit.stdout }], schema: [XSD] });
    expect(xsd.errors).toEqual([]);

    const github = await cli(sessions, ['junit', '--format', 'github']);
    expect(github.stdout).toContain(`::error title=FAIL crash while waiting (${IN_FLIGHT_SESSION_ID})::`);
    expect(github.stdout).toContain(reason);
    expect(github.stdout).toContain('1 session: 0 PASS, 1 FAIL or unreadable');
  });

  it('prune keeps it while its log was written within --keep-recent (10 min at least), then removes it', async () => {
    type Pruned = {
      removed: Array<{ dirName: string }>;
      kept: Array<{ dir: string; reason: string; detail: string }>;
    };
    ageLogFiles(dir, 60_000);
    // --keep-recent 0 does not shorten the window of a writer that cannot be checked.
    const fresh = (await cliJson(sessions, 'prune', [
      'prune',
      '--older-than',
      '0',
      '--keep-recent',
      '0',
      '--dry-run',
      '--json',
    ])) as Pruned;
    expect(fresh.removed).toEqual([]);
    expect(fresh.kept).toEqual([
      {
        dir,
        reason: 'unchecked-writer',
        detail: expect.stringContaining(
          `still open on ${OTHER_HOST}, where its writer (pid ${pid}) cannot be checked`,
        ),
      },
    ]);
    ageLogFiles(dir, 11 * 60_000);
    const old = (await cliJson(sessions, 'prune', [
      'prune',
      '--older-than',
      '0',
      '--dry-run',
      '--json',
    ])) as Pruned;
    expect(old.kept).toEqual([]);
    expect(old.removed.map((r) => r.dirName)).toEqual([path.basename(dir)]);
    // A longer --keep-recent keeps it longer.
    const longer = (await cliJson(sessions, 'prune', [
      'prune',
      '--older-than',
      '0',
      '--keep-recent',
      '1h',
      '--dry-run',
      '--json',
    ])) as Pruned;
    expect(longer.kept.map((k) => k.reason)).toEqual(['unchecked-writer']);
  });
});

describe('a writer on another host beside one on this host', () => {
  /** A fixture session with writer rows: [host, pid, closed] each. */
  function withWriters(
    sessions: string,
    writers: Array<[string, number, boolean]>,
    status: 'open' | 'ended' = 'open',
  ) {
    const s = FixtureSession.create(sessions, { status, writerPid: null });
    s.call({ tool: 'windows', result: { windows: [] } });
    const add = s.db.prepare(
      'INSERT INTO writers (token, pid, host, opened_at, closed_at) VALUES (?, ?, ?, ?, ?)',
    );
    writers.forEach(([host, pid, closed], i) => {
      add.run(`t${i}`, pid, host, '2026-11-25T10:15:00.000Z', closed ? '2026-11-25T10:16:00.000Z' : null);
    });
    s.close();
    return s.dir;
  }

  function statusOf(dir: string): [string, string | null] {
    const reader = SessionReader.open(dir);
    try {
      return [reader.session().status, reader.openElsewhere()?.host ?? null];
    } finally {
      reader.close();
    }
  }

  it('is running while a writer here is alive; aborted and open elsewhere once it is gone; closed ones count for nothing', () => {
    const sessions = path.join(root, 'mixed');
    const here = os.hostname();
    expect(
      statusOf(
        withWriters(sessions, [
          [OTHER_HOST, 4242, false],
          [here, process.pid, false],
        ]),
      ),
    ).toEqual(['open', null]);
    expect(
      statusOf(
        withWriters(sessions, [
          [OTHER_HOST, 4242, false],
          [here, deadPid(), false],
        ]),
      ),
    ).toEqual(['aborted', OTHER_HOST]);
    expect(
      statusOf(
        withWriters(sessions, [
          [OTHER_HOST, 4242, true],
          [here, deadPid(), false],
        ]),
      ),
    ).toEqual(['aborted', null]);
    expect(statusOf(withWriters(sessions, [[OTHER_HOST, 4242, false]], 'ended'))).toEqual(['ended', null]);
  });

  it('the catalog reads such a row again on every list: a row read while running here turns open elsewhere, and later writes show', async () => {
    const sessions = path.join(root, 'catalog');
    const dir = withWriters(sessions, [[os.hostname(), process.pid, false]]);
    const first = (await cliJson(sessions, 'session-listing', ['list', '--json'])) as Listing[];
    expect(first.map((l) => [l.status, l.openElsewhere])).toEqual([['open', null]]);
    moveWritersTo(dir, OTHER_HOST);
    const second = (await cliJson(sessions, 'session-listing', ['list', '--json'])) as Listing[];
    expect(second.map((l) => [l.status, l.openElsewhere, l.calls])).toEqual([
      ['aborted', { host: OTHER_HOST }, 1],
    ]);
    // The writer there goes on writing: the dir's time does not move, the row is read again all the same.
    const db = new Database(path.join(dir, LOG_FILE));
    db.prepare(
      `INSERT INTO calls (seq, tool, args, transport, started_at, status, ok)
         VALUES (2, 'windows', '{}', 'wrap', '2026-11-25T10:15:01.000Z', 'ok', 1)`,
    ).run();
    db.close();
    const third = (await cliJson(sessions, 'session-listing', ['list', '--json'])) as Listing[];
    expect(third.map((l) => [l.status, l.calls])).toEqual([['aborted', 2]]);
  });
});
