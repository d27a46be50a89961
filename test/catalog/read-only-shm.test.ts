/**
 * A catalog SQLite can open only read-only, though the checks of the file and its dir pass: its `-shm` left
 * by a writer elsewhere and not writable here (root: a read-only bind mount over it; otherwise its mode), as
 * on a read-only Windows share, where `fs.access` reads only the read-only attribute. A reader that has to
 * update it says once that it cannot, and lists from a catalog in memory; before, the first write failed the
 * command with "attempt to write a readonly database", naming no file.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listSessionSummaries } from '../../src/sessions/list.js';
import {
  CATALOG_FILE,
  Catalog,
  handSessionToNextReader,
  SWEEP_REQUEST_FILE,
  touchCatalogSession,
} from '../../src/store/catalog.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { removeDir, tempDir } from '../support/temp.js';

const AS_ROOT = process.getuid?.() === 0;
const undo: Array<() => void> = [];
afterEach(() => {
  for (const f of undo.splice(0).reverse()) f();
});

function ended(sessionsDir: string, sessionId: string): FixtureSession {
  const s = FixtureSession.create(sessionsDir, { sessionId });
  s.call(calls.displays());
  s.end();
  s.close();
  return s;
}

/** Make `file` one this process can open for reading only. */
function readOnlyFile(file: string): void {
  if (AS_ROOT) {
    expect(spawnSync('mount', ['--bind', file, file]).status).toBe(0);
    undo.push(() => spawnSync('umount', [file]));
    expect(spawnSync('mount', ['-o', 'remount,bind,ro', file]).status).toBe(0);
  } else {
    fs.chmodSync(file, 0o444);
    undo.push(() => fs.chmodSync(file, 0o644));
  }
}

describe('a catalog whose -shm cannot be written here', () => {
  it('list says once that it cannot update the catalog, and lists every session', async () => {
    const root = tempDir('mcec-ro-shm-');
    undo.push(() => removeDir(root));
    const sessionsDir = path.join(root, 'sessions');
    ended(sessionsDir, 'a11ce0000001');
    expect(await listSessionSummaries(sessionsDir)).toHaveLength(1);
    // A writer's close keeps the WAL files (Catalog: its guard connection), as a recorder elsewhere leaves them.
    Catalog.open(sessionsDir).close();
    const shm = path.join(sessionsDir, `${CATALOG_FILE}-shm`);
    expect(fs.existsSync(shm)).toBe(true);
    ended(sessionsDir, 'b0b000000002'); // a new session: the catalog must be updated
    readOnlyFile(shm);

    const warnings: string[] = [];
    const listed = await listSessionSummaries(sessionsDir, { onWarning: (w) => warnings.push(w) });
    expect(listed.map((l) => l.id).sort()).toEqual(['a11ce0000001', 'b0b000000002']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toBe(
      `the catalog ${path.join(sessionsDir, CATALOG_FILE)} cannot be written (SQLite opens ${CATALOG_FILE} read-only: ` +
        'a read-only share, or its -wal or -shm file not writable by this user (attempt to write a readonly database)); ' +
        'read every session instead',
    );
    // A recorder ending a session there is told so at once (not at its write), and never throws.
    expect(touchCatalogSession(sessionsDir, path.join(sessionsDir, listed[0]!.dirName))).toBe('failed');
  });
});

describe('a catalog.sqlite (or its -wal) that is not a regular file, in a sessions dir copied from elsewhere', () => {
  it('a symlink is never opened (nothing is created outside), a FIFO never waited on, a dir never used', async () => {
    const root = tempDir('mcec-odd-catalog-');
    undo.push(() => removeDir(root));
    const sessionsDir = path.join(root, 'sessions');
    const dirName = path.basename(ended(sessionsDir, 'a11ce0000001').dir);
    const file = path.join(sessionsDir, CATALOG_FILE);
    const outside = path.join(root, 'outside.db');
    const kinds: Array<[string, string, () => void]> = [
      ['a symbolic link', CATALOG_FILE, () => fs.symlinkSync(outside, file)],
      ['a symbolic link', `${CATALOG_FILE}-wal`, () => fs.symlinkSync(outside, `${file}-wal`)],
      ['a directory', CATALOG_FILE, () => fs.mkdirSync(file)],
    ];
    // Before, SQLite's first read of a FIFO blocked for ever: the test's timeout is the check.
    if (process.platform !== 'win32') kinds.push(['a FIFO', CATALOG_FILE, () => spawnSync('mkfifo', [file])]);
    for (const [kind, name, make] of kinds) {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { recursive: true, force: true });
      make();
      const warnings: string[] = [];
      const listed = await listSessionSummaries(sessionsDir, { onWarning: (w) => warnings.push(w) });
      expect(
        listed.map((l) => l.id),
        kind,
      ).toEqual(['a11ce0000001']);
      expect(warnings, kind).toEqual([
        `the catalog ${file} cannot be written (${name} is ${kind}, not a file SQLite may open); read every session instead`,
      ]);
      // The recorder's touch at a session's end opens nothing there either (no catalog yet, or refused).
      expect(touchCatalogSession(sessionsDir, path.join(sessionsDir, dirName)), kind).not.toBe('busy');
      expect(fs.existsSync(outside), kind).toBe(false);
    }
  });

  it("a symlink under the sweep request's name is never written through", () => {
    const root = tempDir('mcec-odd-catalog-');
    undo.push(() => removeDir(root));
    const sessionsDir = path.join(root, 'sessions');
    const session = ended(sessionsDir, 'a11ce0000001');
    const outside = path.join(root, 'notes.txt');
    fs.writeFileSync(outside, 'a file of this machine\n');
    fs.symlinkSync(outside, path.join(sessionsDir, SWEEP_REQUEST_FILE));
    // Before, the request was written through the link: the file outside the sessions dir was emptied.
    expect(handSessionToNextReader(sessionsDir, session.dir)).toBe(true);
    expect(fs.readFileSync(outside, 'utf8')).toBe('a file of this machine\n');
  });
});
