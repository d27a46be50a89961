/**
 * prune removes a session in one step or not at all: the dir is moved aside first, so a dir that cannot be
 * moved (on Windows a file in it held open by another program; here a mount point when root, a sessions dir
 * this user cannot write otherwise) is kept whole and said so, and the prune goes on with the others. A dir
 * moved aside by a prune that died before removing it is removed by the next.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calls, deadPid, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, runNodeSync } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';

const undo: Array<() => void> = [];
afterEach(() => {
  for (const f of undo.splice(0).reverse()) f();
});

const AS_ROOT = process.getuid?.() === 0;

const YEAR_AGO = new Date(Date.now() - 365 * 86_400_000);

/** An ended session started a year ago whose files are a year old too. */
function oldSession(sessions: string, sessionId: string): FixtureSession {
  const s = FixtureSession.create(sessions, { sessionId, startedAt: YEAR_AGO });
  s.call(calls.findSave());
  s.end();
  s.close();
  for (const f of fs.readdirSync(s.dir, { recursive: true }) as string[])
    fs.utimesSync(path.join(s.dir, f), YEAR_AGO, YEAR_AGO);
  return s;
}

function prune(sessions: string) {
  const r = runNodeSync([
    BUNDLE_CLI,
    'prune',
    '--older-than',
    '1d',
    '--keep-recent',
    '0',
    '--json',
    '-s',
    sessions,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as {
    removed: Array<{ dirName: string }>;
    kept: Array<{ dir: string; reason: string; detail: string }>;
  };
}

describe('prune moves a session aside before removing it', () => {
  it('a dir that cannot be moved is kept whole and named; the others are removed', () => {
    const root = tempDir('mcec-prune-in-use-');
    undo.push(() => removeDir(root));
    const sessions = path.join(root, 'sessions');
    const held = oldSession(sessions, 'he1d00000001');
    const free = oldSession(sessions, 'f4ee00000002');
    // Every file but the catalog's sidecar (a cache any reader may write) must stay.
    const files = () =>
      (fs.readdirSync(held.dir, { recursive: true }) as string[])
        .filter((f) => f !== 'catalog-entry.json')
        .sort();
    const before = files();
    if (AS_ROOT) {
      // A mount point cannot be renamed (EBUSY), as Windows refuses a dir holding a file open elsewhere.
      expect(spawnSync('mount', ['--bind', held.dir, held.dir]).status).toBe(0);
      undo.push(() => spawnSync('umount', [held.dir]));
    } else {
      // Not root: the sessions dir made read-only refuses every rename (EACCES) and keeps every session.
      fs.chmodSync(sessions, 0o555);
      undo.push(() => fs.chmodSync(sessions, 0o755));
    }
    const r = prune(sessions);
    const kept = r.kept.find((k) => k.dir === held.dir)!;
    if (AS_ROOT) {
      expect(kept.reason).toBe('in-use');
      expect(kept.detail).toMatch(/^a file in it or its zip is open in another program \(.+\): kept whole/);
      expect(r.removed.map((x) => x.dirName)).toEqual([path.basename(free.dir)]);
      expect(fs.existsSync(free.dir)).toBe(false);
    } else {
      expect(kept.reason).toBe('not-removed');
      expect(kept.detail).toMatch(/^it could not be removed \(.+\); nothing was deleted$/);
    }
    expect(r.removed.map((x) => x.dirName)).not.toContain(path.basename(held.dir));
    expect(files()).toEqual(before);
    expect(fs.readdirSync(sessions).filter((n) => n.includes('.pruned-'))).toEqual([]);
  });

  it('a delete that fails part way puts what is left back under its name and says so; its zip stays', () => {
    const root = tempDir('mcec-prune-partly-');
    undo.push(() => removeDir(root));
    const sessions = path.join(root, 'sessions');
    const s = oldSession(sessions, 'ba1f00000006');
    fs.mkdirSync(path.join(s.dir, 'zz-held'));
    const stuck = path.join(s.dir, 'zz-held', 'stuck.png');
    fs.writeFileSync(stuck, 'x');
    const zip = path.join(sessions, `${path.basename(s.dir)}.zip`);
    fs.writeFileSync(zip, 'zip');
    if (AS_ROOT) {
      // An immutable file cannot be deleted even by root (as Windows refuses an open one).
      expect(spawnSync('chattr', ['+i', stuck]).status).toBe(0);
      undo.push(() => spawnSync('chattr', ['-i', stuck]));
    } else {
      fs.chmodSync(path.dirname(stuck), 0o555);
      undo.push(() => fs.chmodSync(path.dirname(stuck), 0o755));
    }
    const r = prune(sessions);
    expect(r.removed).toEqual([]);
    const kept = r.kept.find((k) => k.dir === s.dir)!;
    expect(kept.reason).toBe('not-removed');
    expect(kept.detail).toMatch(/part of it was deleted, what is left is back under its name$/);
    expect(fs.existsSync(stuck)).toBe(true);
    expect(fs.readFileSync(zip, 'utf8')).toBe('zip');
    expect(fs.readdirSync(sessions).filter((n) => n.includes('.pruned-'))).toEqual([]);
  });

  it("a dir a dead prune moved aside and left is removed by the next; a live one's is not", () => {
    const root = tempDir('mcec-prune-aside-');
    undo.push(() => removeDir(root));
    const sessions = path.join(root, 'sessions');
    oldSession(sessions, 'a11ve0000003');
    const dead = path.join(sessions, `.20250101-000000-dead00000004.pruned-${deadPid()}`);
    const live = path.join(sessions, `.20250101-000000-11fe00000005.pruned-${process.pid}`);
    for (const d of [dead, live]) {
      fs.mkdirSync(path.join(d, 'artifacts'), { recursive: true });
      fs.writeFileSync(path.join(d, 'session.sqlite'), 'left');
    }
    const r = prune(sessions);
    expect(r.removed).toHaveLength(1);
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
  });
});
