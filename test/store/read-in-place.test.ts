/**
 * Reading a session leaves its dir as it was found: no -wal or -shm left beside a closed log, a writer's WAL
 * left to the writer, and a dir this user cannot write (a CI artifact, a colleague's share) read all the same,
 * from a private copy of the log. The read-only case runs the built CLI as another user when this is root
 * (root writes anywhere), else in a dir made read-only.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../../src/store/open.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, ROOT } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) {
    chmodTree(root, 0o755, 0o644);
    removeDir(root);
  }
});

function newRoot(): string {
  const root = tempDir('mcec-read-in-place-');
  roots.push(root);
  return root;
}

/** A closed session of three calls under `<root>/sessions`. */
function closedSession(root: string): FixtureSession {
  const s = FixtureSession.create(path.join(root, 'sessions'), { sessionId: 'c1o5ed000001' });
  s.call(calls.displays());
  s.call(calls.findSave());
  s.call(calls.ambiguousFind());
  s.end();
  s.close();
  return s;
}

/** Every file under `dir` with its size, sorted. */
function listing(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .map((name) => `${name} ${fs.statSync(path.join(dir, name)).size}`)
    .sort();
}

function chmodTree(dir: string, dirMode: number, fileMode: number): void {
  if (!fs.existsSync(dir)) return;
  fs.chmodSync(dir, dirMode);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) chmodTree(file, dirMode, fileMode);
    else fs.chmodSync(file, fileMode);
  }
}

const AS_ROOT = process.getuid?.() === 0;
/** `nobody`: a user who may read the repository and the temp dir but write neither the session dirs. */
const OTHER_USER = 65534;

/** mcec-bundle run by this user, or as `reader`: one who cannot write the sessions (another user when this is root). */
function bundleCli(args: string[], tmp: string, as: 'me' | 'reader' = 'me') {
  const r = spawnSync(process.execPath, [BUNDLE_CLI, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, TMPDIR: tmp, TMP: tmp, TEMP: tmp, MCEC_SESSIONS_DIR: '' },
    ...(as === 'reader' && AS_ROOT ? { uid: OTHER_USER, gid: OTHER_USER } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('a read leaves the session dir as it was found', () => {
  it('a closed log: no -wal or -shm left after a reader or the CLI show', () => {
    const root = newRoot();
    const s = closedSession(root);
    const before = listing(s.dir);
    expect(before.some((f) => f.includes('session.sqlite-'))).toBe(false);

    const reader = SessionReader.open(s.dir);
    expect(reader.callCount()).toBe(3);
    reader.close();
    expect(listing(s.dir)).toEqual(before);

    const sessions = path.join(root, 'sessions');
    const show = bundleCli(['show', s.sessionId, '--sessions', sessions], os.tmpdir());
    expect(show.stderr).toBe('');
    expect(show.code).toBe(0);
    expect(listing(s.dir)).toEqual(before);
  });

  it("a log a writer has open: read through the writer's WAL, which is left to the writer", () => {
    const root = newRoot();
    const s = closedSession(root);
    const writer = openSessionDb(path.join(s.dir, 'session.sqlite'));
    try {
      writer.pragma('wal_autocheckpoint = 0');
      writer.prepare("UPDATE session SET scenario = 'written, not checkpointed' WHERE id = 1").run();
      const wal = fs.statSync(path.join(s.dir, 'session.sqlite-wal')).size;
      expect(wal).toBeGreaterThan(0);

      const reader = SessionReader.open(s.dir);
      expect(reader.session()?.scenario).toBe('written, not checkpointed');
      reader.close();
      expect(fs.statSync(path.join(s.dir, 'session.sqlite-wal')).size).toBe(wal);
      writer.prepare("UPDATE session SET scenario = 'written again' WHERE id = 1").run();
    } finally {
      writer.close();
    }
    const reader = SessionReader.open(s.dir);
    expect(reader.session()?.scenario).toBe('written again');
    reader.close();
  });
});

describe('a log file this user cannot write, in a dir they can', () => {
  it('is read from a copy: show works and nothing is left beside it', () => {
    const root = newRoot();
    const s = closedSession(root);
    const sessions = path.join(root, 'sessions');
    const before = listing(s.dir);
    // The dirs writable by anyone, the log read-only (and another user's when this is root).
    for (const d of [root, sessions, s.dir]) fs.chmodSync(d, 0o777);
    fs.chmodSync(path.join(s.dir, 'session.sqlite'), 0o444);
    const tmp = path.join(root, 'tmp');
    fs.mkdirSync(tmp);
    fs.chmodSync(tmp, 0o777);
    const show = bundleCli(['show', s.sessionId, '--sessions', sessions, '--json'], tmp, 'reader');
    expect(show.code, show.stderr).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ sessionId: s.sessionId, counts: { calls: 3 } });
    expect(listing(s.dir).filter((f) => !f.startsWith('catalog-entry.json'))).toEqual(
      before.filter((f) => !f.startsWith('catalog-entry.json')),
    );
    expect(fs.readdirSync(tmp)).toEqual([]);
  });
});

describe('a session dir this user cannot write', () => {
  /** A closed session, and a crashed writer's (its WAL not checkpointed, no -shm), both made read-only. */
  function readOnlySessions() {
    const root = newRoot();
    const s = closedSession(root);
    const crashed = FixtureSession.create(path.join(root, 'sessions'), { sessionId: 'c4a5ed000002' });
    crashed.call(calls.findSave());
    crashed.end();
    crashed.close();
    // A writer that dies before its checkpoint: the log and its WAL are copied while it is open.
    const writer = openSessionDb(path.join(crashed.dir, 'session.sqlite'));
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare("UPDATE session SET scenario = 'only in the WAL' WHERE id = 1").run();
    const copyDir = `${crashed.dir}.copy`;
    fs.cpSync(crashed.dir, copyDir, { recursive: true });
    writer.close();
    fs.rmSync(crashed.dir, { recursive: true });
    fs.rmSync(path.join(copyDir, 'session.sqlite-shm'), { force: true });
    fs.renameSync(copyDir, crashed.dir);
    expect(fs.statSync(path.join(crashed.dir, 'session.sqlite-wal')).size).toBeGreaterThan(0);

    const tmp = path.join(root, 'tmp');
    const out = path.join(root, 'out');
    for (const dir of [tmp, out]) {
      fs.mkdirSync(dir);
      fs.chmodSync(dir, 0o777);
    }
    const sessions = path.join(root, 'sessions');
    const before = { closed: listing(s.dir), crashed: listing(crashed.dir) };
    chmodTree(sessions, 0o555, 0o444);
    fs.chmodSync(root, 0o755);
    return { s, crashed, sessions, tmp, out, before };
  }

  it('show, bundle and verify work; nothing is written into the session dirs; no copy is left behind', () => {
    const { s, crashed, sessions, tmp, out, before } = readOnlySessions();

    const show = bundleCli(['show', s.sessionId, '--sessions', sessions, '--json'], tmp, 'reader');
    expect(show.stderr).toBe('');
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ sessionId: s.sessionId, counts: { calls: 3 } });

    const crashedShow = bundleCli(
      ['show', crashed.sessionId, '--sessions', sessions, '--json'],
      tmp,
      'reader',
    );
    expect(crashedShow.code).toBe(0);
    expect(JSON.parse(crashedShow.stdout)).toMatchObject({ scenario: 'only in the WAL' });

    const zip = path.join(out, 'bundle.zip');
    const bundle = bundleCli([s.sessionId, '--sessions', sessions, '-o', zip], tmp, 'reader');
    expect(bundle.code).toBe(0);
    const verify = bundleCli(['verify', zip], tmp, 'reader');
    expect(verify.stdout + verify.stderr).toMatch(/ok/i);
    expect(verify.code).toBe(0);

    expect({ closed: listing(s.dir), crashed: listing(crashed.dir) }).toEqual(before);
    expect(fs.readdirSync(tmp)).toEqual([]);
  });
});

describe('a log copied from elsewhere, not whole', () => {
  it('copied without its -wal while the recorder ran: says the WAL is missing, not "no such table"', () => {
    const root = newRoot();
    const sessions = path.join(root, 'sessions');
    const s = FixtureSession.create(path.join(root, 'live'), { sessionId: 'c0b1ed000003' });
    s.call(calls.findSave());
    // The recorder's tables and rows are still in its WAL: copy the dir without it, as a mid-run copy would.
    const copy = path.join(sessions, path.basename(s.dir));
    fs.mkdirSync(copy, { recursive: true });
    fs.copyFileSync(path.join(s.dir, 'session.sqlite'), path.join(copy, 'session.sqlite'));
    s.close();
    const said = `${path.join(copy, 'session.sqlite')}: the log holds no tables: what its recorder wrote is in session.sqlite-wal, which is not beside it`;
    expect(() => SessionReader.open(copy)).toThrow(said);
    const show = bundleCli(['show', s.sessionId, '--sessions', sessions], os.tmpdir());
    expect(show.code).toBe(1);
    expect(show.stderr).toContain(said);
    const list = bundleCli(['list', '--sessions', sessions, '--json'], os.tmpdir());
    expect(JSON.parse(list.stdout)[0].error).toContain('the log holds no tables');
  });

  it('a damaged page the report never reads: the bundle names the log and says --no-db bundles the rest', () => {
    const root = newRoot();
    const sessions = path.join(root, 'sessions');
    const s = closedSession(root);
    const log = path.join(s.dir, 'session.sqlite');
    // log_state is the writer's own table: no report reads it, the bundle's copy of the log does.
    const db = new Database(log, { readonly: true });
    const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'log_state'").get() as {
      rootpage: number;
    };
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const fd = fs.openSync(log, 'r+');
    try {
      fs.writeSync(fd, Buffer.alloc(pageSize), 0, pageSize, (rootpage - 1) * pageSize); // as a bad sector leaves it
    } finally {
      fs.closeSync(fd);
    }
    expect(bundleCli(['show', s.sessionId, '--sessions', sessions], os.tmpdir()).code).toBe(0);
    const out = path.join(root, 'out.zip');
    const bundle = bundleCli([s.sessionId, '--sessions', sessions, '-o', out, '--no-gif'], os.tmpdir());
    expect(bundle.code).toBe(1);
    expect(bundle.stderr).toContain(`${log}: `);
    expect(bundle.stderr).toContain('bundle the rest without the log (--no-db');
    const rest = bundleCli(
      [s.sessionId, '--sessions', sessions, '-o', out, '--no-gif', '--no-db'],
      os.tmpdir(),
    );
    expect(rest.code, rest.stderr).toBe(0);
  });
});
