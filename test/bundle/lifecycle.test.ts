/** The same ended session bundles to the same bytes across its life: writer alive or long gone. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let root: string | undefined;
afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('bundles across the session life', () => {
  it('the demo’s own bundle (its writer alive) equals a later mcec-bundle of the same session', () => {
    root = tempDir();
    const sessions = path.join(root, 'sessions');
    const demo = spawnSync(
      process.execPath,
      [path.join(ROOT, 'dist/cli/demo.js'), '--sessions', sessions, '--json'],
      {
        encoding: 'utf8',
      },
    );
    expect(demo.status).toBe(0);
    const result = JSON.parse(demo.stdout.trim().split('\n').at(-1)!) as {
      sessionId: string;
      sessionDir: string;
      bundle: string;
    };
    // The demo has exited. Later someone opens the log with any SQLite client, which checkpoints it: the
    // main file holds every row and the WAL is empty, so the file's bytes are its history, not just its rows.
    const db = new Database(path.join(result.sessionDir, 'session.sqlite'));
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();

    const later = path.join(root, 'later.zip');
    const res = spawnSync(
      process.execPath,
      [path.join(ROOT, 'dist/cli/mcec-bundle.js'), result.sessionId, '-s', sessions, '-o', later],
      { encoding: 'utf8', env: { ...process.env, TZ: 'America/Sao_Paulo' } },
    );
    expect(res.stderr).toBe(
      `report.html (open it in a browser): ${path.join(result.sessionDir, 'report.html')}\n`,
    );
    expect(res.status).toBe(0);
    expect(fs.readFileSync(later).equals(fs.readFileSync(result.bundle))).toBe(true);
  });
});
