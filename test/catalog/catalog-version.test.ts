/**
 * The catalog's schema versions on real files: version 6's partial indexes (the rows stored without a dir
 * time, the unreadable rows) are what their queries use, a version 5 catalog is migrated by `list` (built CLI)
 * without reading a session again, and a catalog of a newer version than the build's (what an older build
 * meets after a newer one ran) is never changed: the build lists from memory and says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../../bench/lib/fleet.js';
import {
  CATALOG_FILE,
  CATALOG_SCHEMA_VERSION,
  Catalog,
  type CatalogSession,
  touchCatalogSession,
} from '../../src/store/catalog.js';
import { catalogSession, cli, scratchRoot } from './helpers.js';

const root = scratchRoot();
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A fleet of `n` sessions whose files and dirs all date from an hour ago (settled times), listed once. */
function listedFleet(name: string, n: number): { sessionsDir: string; dirNames: string[] } {
  const sessionsDir = path.join(root, name);
  const fleet = generateFleet(sessionsDir, { sessions: n, seed: 31 });
  const t = new Date(Date.now() - 3600_000);
  for (const s of fleet.sessions) {
    const dir = path.join(sessionsDir, s.dirName);
    for (const f of fs.readdirSync(dir)) fs.utimesSync(path.join(dir, f), t, t);
    fs.utimesSync(dir, t, t);
  }
  const first = cli(['list', '--sessions', sessionsDir]);
  expect(first.code, first.stderr).toBe(0);
  return { sessionsDir, dirNames: fleet.sessions.map((s) => s.dirName) };
}

/** The catalog file's version, its index names and each row's dir name and read time. */
function inspect(sessionsDir: string): { version: number; indexes: string[]; reads: unknown[] } {
  const db = new Database(path.join(sessionsDir, CATALOG_FILE), { readonly: true });
  try {
    return {
      version: db.pragma('user_version', { simple: true }) as number,
      indexes: db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        .pluck()
        .all() as string[],
      reads: db.prepare('SELECT dir_name, indexed_at, dir_mtime FROM sessions ORDER BY dir_name').all(),
    };
  } finally {
    db.close();
  }
}

/** The SQL each call of `use` prepares on the catalog's connection, and that connection. */
function preparedBy(catalog: Catalog, use: () => void): { sql: string[]; db: Database.Database } {
  const db = (catalog as unknown as { db: Database.Database }).db;
  const sql: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    sql.push(source);
    return prepare(source);
  }) as typeof db.prepare;
  try {
    use();
  } finally {
    db.prepare = prepare;
  }
  return { sql, db };
}

/** SQLite's plan of `sql`, one line per step. */
function planOf(db: Database.Database, sql: string): string[] {
  const params = (sql.match(/\?/g) ?? []).map(() => '2026-01-01');
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map(
    (r) => r.detail,
  );
}

describe('catalog schema versions', () => {
  it('version 6: the unsettled and unreadable rows are found through their partial indexes, not a scan', () => {
    const sessionsDir = path.join(root, 'plans');
    fs.mkdirSync(sessionsDir, { recursive: true });
    const catalog = Catalog.open(sessionsDir);
    try {
      const row = (name: string, over: Partial<CatalogSession> = {}) => ({
        entry: {
          session: catalogSession({ dir_name: name, session_id: name, ...over }),
          failures: [],
          tools: [],
        },
        touched: 0,
        dirMtime: name.endsWith('-fresh') ? null : 1_700_000_000_000,
      });
      catalog.put([
        row('a'),
        row('b-fresh'),
        row('c', { error: 'not a database' }),
        row('d-fresh', { error: 'locked' }),
        row('e'),
      ]);
      let unsettled: string[] = [];
      let unreadable: unknown[] = [];
      const { sql, db } = preparedBy(catalog, () => {
        unsettled = catalog.unsettledRows();
        unreadable = [...catalog.unreadable(), ...catalog.unreadable({ since: '2026-01-01' })];
      });
      expect(unsettled.sort()).toEqual(['b-fresh', 'd-fresh']);
      expect(unreadable).toEqual([
        { session_id: 'd-fresh', error: 'locked' },
        { session_id: 'c', error: 'not a database' },
        { session_id: 'd-fresh', error: 'locked' },
        { session_id: 'c', error: 'not a database' },
      ]);
      expect(sql).toHaveLength(3);
      // Before version 6 each was `SCAN sessions` (every row read: 6-11 ms at 10,000 sessions).
      expect(planOf(db, sql[0]!)).toEqual(['SCAN sessions USING INDEX sessions_unsettled']);
      expect(planOf(db, sql[1]!)).toEqual(['SCAN sessions USING INDEX sessions_unreadable']);
      expect(planOf(db, sql[2]!)).toEqual(['SCAN sessions USING INDEX sessions_unreadable']);
    } finally {
      catalog.close();
    }
  });

  it("compareNames: the names without a row and the rows without a name, each name looked up by the rows' key", () => {
    const sessionsDir = path.join(root, 'names');
    fs.mkdirSync(sessionsDir, { recursive: true });
    const catalog = Catalog.open(sessionsDir);
    try {
      const names = ['20261125-000000-a', '20261125-000100-b', 'copy (2)', 'x.zip'];
      catalog.put(
        names.slice(0, 3).map((name) => ({
          entry: { session: catalogSession({ dir_name: name, session_id: name }), failures: [], tools: [] },
          touched: 0,
          dirMtime: 1,
        })),
      );
      const sorted = (r: { added: string[]; gone: string[] }) => ({
        added: r.added.sort(),
        gone: r.gone.sort(),
      });
      expect(sorted(catalog.compareNames(names))).toEqual({ added: ['x.zip'], gone: [] });
      // As many names as rows, one of each side changed: the count alone cannot tell.
      expect(sorted(catalog.compareNames(['20261125-000000-a', 'copy (2)', 'new']))).toEqual({
        added: ['new'],
        gone: ['20261125-000100-b'],
      });
      expect(sorted(catalog.compareNames([]))).toEqual({
        added: [],
        gone: ['20261125-000000-a', '20261125-000100-b', 'copy (2)'],
      });
      // Names SQLite's JSON must carry as they are: quotes, backslashes, control and non-BMP characters.
      const odd = ['a"b\\c', 'tab\there', 'emoji 😀 (2)', 'ünï'];
      expect(sorted(catalog.compareNames([...names.slice(0, 3), ...odd]))).toEqual({
        added: [...odd].sort(),
        gone: [],
      });
      const { sql, db } = preparedBy(catalog, () => catalog.compareNames(['new']));
      expect(planOf(db, sql[0]!)).toContain('USING INDEX sqlite_autoindex_sessions_1 FOR IN-OPERATOR');
    } finally {
      catalog.close();
    }
  });

  it('a version 5 catalog is migrated by list (built CLI): both indexes made, no session read again', () => {
    const { sessionsDir, dirNames } = listedFleet('migrate', 6);
    const before = inspect(sessionsDir);
    expect(before.version).toBe(CATALOG_SCHEMA_VERSION);
    expect(before.indexes).toEqual(expect.arrayContaining(['sessions_unreadable', 'sessions_unsettled']));
    const listing = cli(['list', '--json', '--sessions', sessionsDir]).stdout;
    // The catalog as version 5 left it.
    const db = new Database(path.join(sessionsDir, CATALOG_FILE));
    db.exec('DROP INDEX sessions_unsettled; DROP INDEX sessions_unreadable');
    db.pragma('user_version = 5');
    db.close();
    const res = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe('');
    expect(res.stdout).toBe(listing);
    const after = inspect(sessionsDir);
    expect(after.version).toBe(6);
    expect(after.indexes).toEqual(before.indexes);
    // Every row as it was: the migration adds indexes, it reads no session again.
    expect(after.reads).toEqual(before.reads);
    expect((after.reads as unknown[]).length).toBe(dirNames.length);
  });

  it('a catalog of a newer version (what an older build meets) is listed from memory and left as it is', () => {
    const { sessionsDir, dirNames } = listedFleet('newer', 4);
    const db = new Database(path.join(sessionsDir, CATALOG_FILE));
    db.pragma(`user_version = ${CATALOG_SCHEMA_VERSION + 1}`);
    db.close();
    const before = inspect(sessionsDir);
    const res = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(
      new RegExp(
        `catalog .* cannot be written \\(catalog schema version ${CATALOG_SCHEMA_VERSION + 1} is newer than this recorder's \\(${CATALOG_SCHEMA_VERSION}\\)\\); read every session instead`,
      ),
    );
    expect((JSON.parse(res.stdout) as Array<{ dirName: string }>).map((l) => l.dirName).sort()).toEqual(
      [...dirNames].sort(),
    );
    expect(inspect(sessionsDir)).toEqual(before);
    expect(Catalog.open(sessionsDir, { readonly: true })).toBeNull();
    // A writer's touch fails (the recorder counts it); the catalog is not changed by it either.
    expect(touchCatalogSession(sessionsDir, path.join(sessionsDir, dirNames[0]!))).toBe('failed');
    expect(inspect(sessionsDir)).toEqual(before);
  });
});
