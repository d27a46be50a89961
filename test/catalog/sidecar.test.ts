/**
 * A session dir's catalog sidecar (catalog-entry.json, src/store/entry-sidecar.ts) on real logs: trusted
 * only while the log is the one it describes, removed by every writer before it writes, never a crash, and
 * the rows it gives identical to the rows read from the logs.
 */
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../../bench/lib/fleet.js';
import { refreshCatalog } from '../../src/fleet/catalog.js';
import { entryOfSessionDir, readCatalogEntry } from '../../src/fleet/catalog-entry.js';
import { createRecorder } from '../../src/index.js';
import { createRecorder as createRecorderOfRecord } from '../../src/record/index.js';
import { appendSessionEvent } from '../../src/store/append-event.js';
import { CATALOG_FILE, type Catalog } from '../../src/store/catalog.js';
import { checkToKeep, ENTRY_SIDECAR_FILE, stampLog } from '../../src/store/entry-sidecar.js';
import { SessionLog } from '../../src/store/session-log.js';
import { post } from '../proxy/helpers.js';
import { sessionIdFrom } from '../proxy/sim-script.js';
import { sessionRow } from '../support/log-rows.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { ROOT, scratchRoot, validator } from './helpers.js';

const validate = validator('catalog-entry.schema.json');
const sidecarOf = (dir: string) => path.join(dir, ENTRY_SIDECAR_FILE);
const readSidecar = (dir: string) =>
  JSON.parse(fs.readFileSync(sidecarOf(dir), 'utf8')) as {
    log: { settled: boolean };
    [key: string]: unknown;
  };
/**
 * An hour before the earlier of this process's clock and the file system's (the time it gives a file written
 * now): the dir's files as a session recorded earlier leaves them (settled times). faketime moves the first
 * and not the second, and the catalog trusts a time only when both call it settled.
 */
function anHourAgo(): Date {
  const probe = path.join(os.tmpdir(), `mcec-clock-${process.pid}`);
  fs.writeFileSync(probe, '');
  const now = fs.statSync(probe).mtimeMs;
  fs.rmSync(probe);
  return new Date(Math.min(now, Date.now()) - 3600_000);
}

function sessionDirs(sessionsDir: string): string[] {
  return fs
    .readdirSync(sessionsDir)
    .filter((n) => n !== CATALOG_FILE && !n.startsWith(`${CATALOG_FILE}-`))
    .map((n) => path.join(sessionsDir, n));
}

/** Every row the catalog holds, without the bookkeeping columns (when and from which dir time it was read). */
function dump(catalog: Catalog): unknown {
  const db = (catalog as unknown as { db: Database.Database }).db;
  return {
    sessions: db
      .prepare('SELECT * FROM sessions ORDER BY dir_name')
      .all()
      .map((r) => ({ ...(r as object), dir_mtime: 0, indexed_at: 0, touched: 0, indexed_touched: 0 })),
    failures: db.prepare('SELECT * FROM failures ORDER BY dir_name, seq').all(),
    tools: db.prepare('SELECT * FROM tool_calls ORDER BY dir_name, tool').all(),
  };
}

/** The sidecar checks the catalog keeps (`log_checks`), by dir name. */
function logChecks(catalog: Catalog): Record<string, { size: number; mtimeMs: number; sha1: string }> {
  const db = (catalog as unknown as { db: Database.Database }).db;
  const rows = db.prepare('SELECT dir_name, size, mtime_ms, sha1 FROM log_checks').all() as Array<{
    dir_name: string;
    size: number;
    mtime_ms: number;
    sha1: string;
  }>;
  return Object.fromEntries(
    rows.map((r) => [r.dir_name, { size: r.size, mtimeMs: r.mtime_ms, sha1: r.sha1 }]),
  );
}

/** Change a log's content in place, its size and times as they were: only its hash can tell. */
function changeKeepingSizeAndTime(file: string): void {
  const st = fs.statSync(file);
  const db = new Database(file);
  db.prepare("UPDATE session SET scenario = 'same size!' WHERE id = 1").run();
  db.close();
  for (const x of ['-wal', '-shm']) fs.rmSync(`${file}${x}`, { force: true });
  fs.utimesSync(file, st.atime, st.mtime);
}

/** Age every file of a session dir (log, sidecar, dir) so its times are settled. */
function age(dir: string): void {
  const t = anHourAgo();
  for (const name of fs.readdirSync(dir)) fs.utimesSync(path.join(dir, name), t, t);
  fs.utimesSync(dir, t, t);
}

describe('catalog sidecars', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('a fleet closed normally carries valid sidecars; index from them gives the rows reading every log gives', async () => {
    const withSidecars = path.join(root, 'with');
    const without = path.join(root, 'without');
    generateFleet(withSidecars, { sessions: 40, seed: 21 });
    generateFleet(without, { sessions: 40, seed: 21, sidecars: false });
    for (const dir of sessionDirs(withSidecars)) {
      expect(validate(readSidecar(dir))).toEqual([]);
      expect(entryOfSessionDir(dir).fromSidecar).toBe(true);
    }
    expect(sessionDirs(without).some((d) => fs.existsSync(sidecarOf(d)))).toBe(false);
    const fromLogs = await refreshCatalog(without, { full: true });
    const fromSidecars = await refreshCatalog(withSidecars, { full: true });
    try {
      expect(dump(fromSidecars.catalog)).toEqual(dump(fromLogs.catalog));
      expect(fromSidecars.indexed).toBe(40);
    } finally {
      fromLogs.catalog.close();
      fromSidecars.catalog.close();
    }
    // The index that read the logs left sidecars, and they give the same rows again.
    for (const dir of sessionDirs(without)) expect(validate(readSidecar(dir))).toEqual([]);
    const again = await refreshCatalog(without, { full: true });
    const reference = await refreshCatalog(withSidecars, { full: true });
    try {
      expect(dump(again.catalog)).toEqual(dump(reference.catalog));
    } finally {
      again.catalog.close();
      reference.catalog.close();
    }
  });

  it('a sidecar that is a FIFO, a symlink or over 16 MiB is no sidecar: the log is read, nothing waits', () => {
    const sessionsDir = path.join(root, 'odd');
    const dirs = generateFleet(sessionsDir, { sessions: 3, seed: 23 }).sessions.map((s) =>
      path.join(sessionsDir, s.dirName),
    );
    const scenarios = dirs.map((d) => entryOfSessionDir(d).entry.session.scenario);
    for (const d of dirs) expect(entryOfSessionDir(d).fromSidecar).toBe(true);
    // A true sidecar grown to 20 MiB: before, read whole (and its buffer kept for the process's life).
    const big = readSidecar(dirs[0]!) as unknown as { entry: { session: { scenario: string } } };
    big.entry.session.scenario = 'x'.repeat(20 * 1024 * 1024);
    fs.writeFileSync(sidecarOf(dirs[0]!), JSON.stringify(big));
    // A true sidecar moved out of the sessions dir and linked to: not followed.
    const outside = path.join(root, 'outside-entry.json');
    fs.renameSync(sidecarOf(dirs[1]!), outside);
    fs.symlinkSync(outside, sidecarOf(dirs[1]!));
    // A FIFO: before, its open blocked the reader for ever (the test's timeout is the check).
    const fifo = process.platform !== 'win32';
    if (fifo) {
      fs.rmSync(sidecarOf(dirs[2]!));
      expect(spawnSync('mkfifo', [sidecarOf(dirs[2]!)]).status).toBe(0);
    }
    dirs.forEach((d, i) => {
      const read = entryOfSessionDir(d, { restamp: false });
      expect(read.fromSidecar, d).toBe(i === 2 && !fifo);
      expect(read.entry.session.scenario, d).toBe(scenarios[i]);
    });
  });

  it('trusts a settled sidecar on its times; a write after it, by any writer, makes the log be read', () => {
    const sessionsDir = path.join(root, 'stale');
    const [first, second, third] = generateFleet(sessionsDir, { sessions: 3, seed: 22 }).sessions.map((s) =>
      path.join(sessionsDir, s.dirName),
    );
    for (const dir of [first!, second!, third!]) {
      for (const s of ['-wal', '-shm']) fs.rmSync(path.join(dir, `session.sqlite${s}`), { force: true });
      age(dir);
      fs.rmSync(sidecarOf(dir));
      expect(entryOfSessionDir(dir)).toMatchObject({ fromSidecar: false, wroteSidecar: true });
      expect(readSidecar(dir).log.settled).toBe(true);
      expect(entryOfSessionDir(dir)).toMatchObject({ fromSidecar: true, wroteSidecar: false });
    }

    // Our writers remove it before they write: mcec-bundle verdict's event, and SessionLog's open.
    appendSessionEvent(first!, 'verdict', { verdict: 'FAIL', reason: 'checked by hand' });
    expect(fs.existsSync(sidecarOf(first!))).toBe(false);
    const stored = new Database(path.join(second!, 'session.sqlite'), { readonly: true });
    const id = (stored.prepare('SELECT session_id FROM session').get() as { session_id: string }).session_id;
    stored.close();
    const log = SessionLog.open({ dir: second!, session: sessionRow(id, { status: 'ended' }) });
    expect(fs.existsSync(sidecarOf(second!))).toBe(false);
    log.close();

    // A writer that knows nothing of sidecars (an older recorder, a SQLite shell): the log's time moved.
    const before = readCatalogEntry(third!);
    const db = new Database(path.join(third!, 'session.sqlite'));
    db.prepare("UPDATE session SET scenario = 'renamed by hand' WHERE id = 1").run();
    db.close();
    const read = entryOfSessionDir(third!);
    expect(read.fromSidecar).toBe(false);
    expect(read.entry.session.scenario).toBe('renamed by hand');
    expect(read.entry).toEqual(readCatalogEntry(third!));
    expect(read.entry).not.toEqual(before);
  });

  it('a log verdict refuses (a trigger, a newer version, not a database) keeps its sidecar and its bytes', () => {
    const sessionsDir = path.join(root, 'refused');
    const dirs = generateFleet(sessionsDir, { sessions: 4, seed: 24 }).sessions.map((s) =>
      path.join(sessionsDir, s.dirName),
    );
    const sha1 = (file: string) => crypto.createHash('sha1').update(fs.readFileSync(file)).digest('hex');
    const tampers: Array<[string, (file: string) => void, RegExp]> = [
      [
        'a trigger',
        (file) => {
          const db = new Database(file);
          db.exec('CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM calls; END');
          db.close();
        },
        /not a session log this recorder wrote, so it is not read: it has a trigger "t"/,
      ],
      [
        'a newer version',
        (file) => {
          const db = new Database(file);
          db.pragma('user_version = 99');
          db.close();
        },
        /log schema version 99 is not one this recorder writes/,
      ],
      ['not a database', (file) => fs.writeFileSync(file, 'x'.repeat(8192)), /SQLITE_NOTADB/],
    ];
    tampers.forEach(([what, tamper, refusal], i) => {
      const dir = dirs[i]!;
      const log = path.join(dir, 'session.sqlite');
      tamper(log);
      for (const s of ['-wal', '-shm']) fs.rmSync(`${log}${s}`, { force: true });
      const sidecar = fs.readFileSync(sidecarOf(dir));
      const logSha1 = sha1(log);
      expect(() => appendSessionEvent(dir, 'verdict', { verdict: 'FAIL' }), what).toThrow(refusal);
      // Before, the sidecar was removed before the log was checked: a refused log lost it.
      expect(fs.existsSync(sidecarOf(dir)), what).toBe(true);
      expect(fs.readFileSync(sidecarOf(dir)), what).toEqual(sidecar);
      expect(sha1(log), what).toBe(logSha1);
    });
    // A log of ours: the event is written, and the sidecar (no longer true to it) removed before.
    const ours = dirs[3]!;
    expect(appendSessionEvent(ours, 'verdict', { verdict: 'FAIL' })).toBeGreaterThan(0);
    expect(fs.existsSync(sidecarOf(ours))).toBe(false);
  });

  it('a sidecar written before the catalog had unchecked_host is still trusted, with it null', () => {
    const sessionsDir = path.join(root, 'before-unchecked-host');
    const [dir] = generateFleet(sessionsDir, { sessions: 1, seed: 23 }).sessions.map((s) =>
      path.join(sessionsDir, s.dirName),
    );
    for (const s of ['-wal', '-shm']) fs.rmSync(path.join(dir!, `session.sqlite${s}`), { force: true });
    age(dir!);
    fs.rmSync(sidecarOf(dir!));
    expect(entryOfSessionDir(dir!)).toMatchObject({ fromSidecar: false, wroteSidecar: true });
    const old = readSidecar(dir!) as unknown as { entry: { session: Record<string, unknown> } };
    expect(old.entry.session.unchecked_host).toBeNull();
    delete old.entry.session.unchecked_host;
    fs.writeFileSync(sidecarOf(dir!), JSON.stringify(old));
    const read = entryOfSessionDir(dir!);
    expect(read.fromSidecar).toBe(true);
    expect(read.entry).toEqual(readCatalogEntry(dir!));
  });

  it('a fresh sidecar is checked by the log hash: same size and time put back after a write do not fool it', () => {
    const sessionsDir = path.join(root, 'fresh');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 23 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    const file = path.join(dir, 'session.sqlite');
    expect(readSidecar(dir).log.settled).toBe(false);
    const st = fs.statSync(file);
    changeKeepingSizeAndTime(file);
    expect(fs.statSync(file).size).toBe(st.size);
    const read = entryOfSessionDir(dir);
    expect(read.fromSidecar).toBe(false);
    expect(read.entry.session.scenario).toBe('same size!');
  });

  it('index keeps the checks of hash-checked sidecars in the catalog, not in the dirs; the next index trusts them on times', async () => {
    const sessionsDir = path.join(root, 'checks');
    const fleet = generateFleet(sessionsDir, { sessions: 6, seed: 27 }).sessions.map((s) => s.dirName);
    for (const dir of sessionDirs(sessionsDir)) age(dir); // sidecars from close: not settled
    const swept = await refreshCatalog(sessionsDir); // the first list: every dir read, no check kept
    expect(logChecks(swept.catalog)).toEqual({});
    swept.catalog.close();
    const sidecarsBefore = Object.fromEntries(
      sessionDirs(sessionsDir).map((dir) => [dir, fs.readFileSync(sidecarOf(dir), 'utf8')]),
    );
    for (const full of [1, 2]) {
      const indexed = await refreshCatalog(sessionsDir, { full: true });
      const states = indexed.catalog.rowStates();
      const checks = logChecks(indexed.catalog);
      indexed.catalog.close();
      for (const dir of sessionDirs(sessionsDir)) {
        // The sidecar as the recorder wrote it (not written again), its check in the catalog.
        expect(fs.readFileSync(sidecarOf(dir), 'utf8'), `index ${full}`).toBe(sidecarsBefore[dir]);
        const log = fs.statSync(path.join(dir, 'session.sqlite'));
        const { sha1 } = (readSidecar(dir) as unknown as { log: { sha1: string } }).log;
        expect(checks[path.basename(dir)], `index ${full}`).toEqual({
          size: log.size,
          mtimeMs: log.mtimeMs,
          sha1,
        });
        expect(states.get(path.basename(dir))?.dirMtime, `index ${full}`).toBe(fs.statSync(dir).mtimeMs);
      }
    }
    // Trusted on times, as a settled sidecar is: a log changed keeping its size and time is not read again...
    const changed = path.join(sessionsDir, fleet[2]!);
    changeKeepingSizeAndTime(path.join(changed, 'session.sqlite'));
    const scenarioOf = async (options: { full?: boolean } = {}) => {
      const res = await refreshCatalog(sessionsDir, { full: true, ...options });
      try {
        return {
          scenario: (res.catalog as unknown as { db: Database.Database }).db
            .prepare('SELECT scenario FROM sessions WHERE dir_name = ?')
            .pluck()
            .get(fleet[2]),
          checks: logChecks(res.catalog),
        };
      } finally {
        res.catalog.close();
      }
    };
    expect((await scenarioOf()).scenario).not.toBe('same size!');
    // ...while without the catalog's check (a new catalog) only the hash vouches, and it tells.
    for (const suffix of ['', '-wal', '-shm'])
      fs.rmSync(path.join(sessionsDir, CATALOG_FILE + suffix), { force: true });
    const rebuilt = await scenarioOf();
    expect(rebuilt.scenario).toBe('same size!');
    // That dir's log was read (its sidecar written again, settled): no check kept for it, the others' kept.
    expect(rebuilt.checks[fleet[2]!]).toBeUndefined();
    expect(readSidecar(changed).log.settled).toBe(true);
    expect(Object.keys(rebuilt.checks).sort()).toEqual(fleet.filter((n) => n !== fleet[2]).sort());
    // A row dropped with its dir drops its check.
    fs.rmSync(path.join(sessionsDir, fleet[0]!), { recursive: true });
    expect((await scenarioOf()).checks[fleet[0]!]).toBeUndefined();
  });

  it('an index of more than 512 dirs reads the checks at once and writes every row (batches of 256)', async () => {
    const sessionsDir = path.join(root, 'many-checks');
    const fleet = generateFleet(sessionsDir, { sessions: 530, seed: 30 }).sessions.map((s) => s.dirName);
    for (const dir of sessionDirs(sessionsDir)) age(dir);
    const first = await refreshCatalog(sessionsDir, { full: true });
    try {
      expect(first.indexed).toBe(530);
      expect(first.catalog.sessionCount()).toBe(530);
      expect(Object.keys(logChecks(first.catalog)).sort()).toEqual([...fleet].sort());
    } finally {
      first.catalog.close();
    }
    changeKeepingSizeAndTime(path.join(sessionsDir, fleet[500]!, 'session.sqlite'));
    const again = await refreshCatalog(sessionsDir, { full: true });
    try {
      const db = (again.catalog as unknown as { db: Database.Database }).db;
      const scenario = db.prepare('SELECT scenario FROM sessions WHERE dir_name = ?').pluck();
      expect(scenario.get(fleet[500])).not.toBe('same size!'); // trusted on times by its check
      expect(Object.keys(logChecks(again.catalog))).toHaveLength(530);
    } finally {
      again.catalog.close();
    }
  });

  it('index keeps no check of a log whose time was not settled before its hash', async () => {
    const sessionsDir = path.join(root, 'fresh-checks');
    generateFleet(sessionsDir, { sessions: 2, seed: 28 });
    // Times just now: the logs were closed less than 2 s ago (by both clocks).
    const now = new Date();
    for (const dir of sessionDirs(sessionsDir)) fs.utimesSync(path.join(dir, 'session.sqlite'), now, now);
    const indexed = await refreshCatalog(sessionsDir, { full: true });
    try {
      expect(indexed.indexed).toBe(0 + sessionDirs(sessionsDir).length);
      expect(logChecks(indexed.catalog)).toEqual({});
    } finally {
      indexed.catalog.close();
    }
  });

  it("a check is kept only when the log was settled by both clocks, on the catalog's device", () => {
    const stamp = { size: 10, mtimeMs: 100_000, settled: false, sha1: 'a'.repeat(40), hashedAtMs: 102_000 };
    const trust = { stamp, by: 'hash' as const, dev: 7 };
    const check = { size: 10, mtimeMs: 100_000, sha1: 'a'.repeat(40) };
    expect(checkToKeep(trust, { ms: 102_000, dev: 7 })).toEqual(check);
    expect(checkToKeep(trust, { ms: 101_999, dev: 7 })).toBeNull(); // the file system's clock: too fresh
    expect(checkToKeep(trust, { ms: 102_000, dev: 8 })).toBeNull(); // another device's clock
    expect(checkToKeep(trust, null)).toBeNull(); // no clock: a sweep keeps none
    expect(
      checkToKeep({ ...trust, stamp: { ...stamp, hashedAtMs: 101_999 } }, { ms: 200_000, dev: 7 }),
    ).toBeNull();
    expect(checkToKeep({ ...trust, stamp: { ...stamp, sha1: null } }, { ms: 200_000, dev: 7 })).toBeNull();
    // Trusted by the catalog's check: kept as it was (whatever the clock); by its own settled stamp: none needed.
    expect(checkToKeep({ ...trust, by: 'checked' }, null)).toEqual(check);
    expect(checkToKeep({ ...trust, by: 'settled' }, { ms: 200_000, dev: 7 })).toBeNull();
  });

  it("a log's stamped sha1 is the sha1 of its bytes, at sizes below, at and past the 1 MiB read", () => {
    // The hash reads into a buffer at an offset (off its page boundary), a chunk at a time past 1 MiB.
    const dir = path.join(root, 'hash-sizes');
    fs.mkdirSync(dir, { recursive: true });
    const log = path.join(dir, 'session.sqlite');
    for (const size of [0, 1, 77_824, 1024 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 12_345]) {
      const bytes = crypto.randomBytes(size);
      fs.writeFileSync(log, bytes);
      const stamp = stampLog(dir);
      expect(stamp?.size).toBe(size);
      expect(stamp?.sha1).toBe(crypto.createHash('sha1').update(bytes).digest('hex'));
    }
  });

  it('a sidecar larger than the read buffer (64 KiB) is read whole', () => {
    const sessionsDir = path.join(root, 'large-sidecar');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 29 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    const sidecar = readSidecar(dir);
    // The same object, 200 KB of JSON whitespace: only a whole read parses.
    fs.writeFileSync(sidecarOf(dir), `${JSON.stringify(sidecar).slice(0, -1)}${' '.repeat(200_000)}}`);
    const read = entryOfSessionDir(dir, { restamp: false });
    expect(read.fromSidecar).toBe(true);
    expect(read.entry).toEqual(readCatalogEntry(dir));
  });

  it('index on two threads (built code) gives the rows of one; a log changed under its fresh sidecar is read', async () => {
    type CatalogModule = typeof import('../../src/fleet/catalog.js');
    type WorkerModule = typeof import('../../src/fleet/sidecar-worker.js');
    const built = (m: string) => path.resolve(import.meta.dirname, '../../dist/fleet', m);
    const { refreshCatalog: refreshBuilt, ENTRY_VERSION } = (await import(
      built('catalog.js')
    )) as CatalogModule;
    const { stepSessionDirs } = (await import(built('sidecar-worker.js'))) as WorkerModule;
    const one = path.join(root, 'threads-one');
    const two = path.join(root, 'threads-two');
    const fleet = generateFleet(one, { sessions: 40, seed: 31 }).sessions.map((s) => s.dirName);
    for (const dir of sessionDirs(one)) age(dir); // sidecars from close: checked by hash, then kept as checked
    // Changed under its sidecar, same size and time: only the hash tells. Another without a sidecar, one without a log.
    const changed = path.join(one, fleet[3]!, 'session.sqlite');
    changeKeepingSizeAndTime(changed);
    fs.rmSync(sidecarOf(path.join(one, fleet[5]!)));
    fs.rmSync(path.join(one, fleet[7]!, 'session.sqlite'));
    fs.cpSync(one, two, { recursive: true, preserveTimestamps: true });

    // The steps themselves: every chunk finished once, the worker's steps those of this thread.
    const chunks = Array.from({ length: 10 }, (_, i) =>
      fleet.slice(i * 4, i * 4 + 4).map((name) => ({ name })),
    );
    const steps = new Map<string, unknown>();
    // When a log was hashed differs between two runs; what was found may not.
    const withoutHashTime = (step: unknown) =>
      JSON.parse(JSON.stringify(step, (k, v) => (k === 'hashedAtMs' ? 0 : v))) as unknown;
    const stepped = async (worker: boolean) => {
      steps.clear();
      const done = await stepSessionDirs(
        two,
        chunks,
        ENTRY_VERSION,
        {
          prepare: () => {},
          finish: (chunk, s) => {
            for (const [k, item] of chunk.entries()) steps.set(item.name, withoutHashTime(s[k]));
          },
        },
        worker,
      );
      return { done, steps: Object.fromEntries([...steps].sort()) };
    };
    const here = await stepped(false);
    const both = await stepped(true);
    expect(here.done).toBe(0);
    expect(both.done).toBeGreaterThan(0);
    expect(Object.keys(both.steps)).toHaveLength(40);
    expect(both.steps).toEqual(here.steps);

    // The copy's dirs are new (their files came just now): the dir times are checked on the original.
    const a = await refreshBuilt(two, { full: true, sidecarWorker: false });
    const b = await refreshBuilt(one, { full: true, sidecarWorker: true });
    try {
      expect(b.indexed).toBe(39);
      expect(dump(b.catalog)).toEqual(dump(a.catalog));
      const scenario = (c: Catalog) =>
        (c as unknown as { db: Database.Database }).db
          .prepare('SELECT scenario FROM sessions WHERE dir_name = ?')
          .pluck()
          .get(fleet[3]);
      expect(scenario(b.catalog)).toBe('same size!');
      const states = b.catalog.rowStates();
      const checks = logChecks(b.catalog);
      expect(logChecks(a.catalog)).toEqual(checks); // the same checks from one thread as from two
      for (const name of fleet.filter((n) => n !== fleet[7])) {
        const dir = path.join(one, name);
        // The dirs whose log was read got a settled sidecar; the others' checks are in the catalog.
        const read = name === fleet[3] || name === fleet[5];
        expect(readSidecar(dir).log.settled, name).toBe(read);
        expect(checks[name] !== undefined, name).toBe(!read);
        if (!read) expect(states.get(name)?.dirMtime, name).toBe(fs.statSync(dir).mtimeMs);
      }
    } finally {
      a.catalog.close();
      b.catalog.close();
    }
  });

  it('a sidecar never vouches for a log that is a symlink; index counts such a dir as no session', async () => {
    const sessionsDir = path.join(root, 'linked-log');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 33 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    const log = path.join(dir, 'session.sqlite');
    fs.renameSync(log, path.join(root, 'linked-log.sqlite'));
    fs.symlinkSync(path.join(root, 'linked-log.sqlite'), log);
    expect(entryOfSessionDir(dir, { restamp: false }).fromSidecar).toBe(false);
    const indexed = await refreshCatalog(sessionsDir, { full: true });
    try {
      expect(indexed.catalog.sessionCount()).toBe(0);
    } finally {
      indexed.catalog.close();
    }
  });

  it('a log with WAL content is read, whatever its sidecar says', () => {
    const sessionsDir = path.join(root, 'wal');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 24 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    const holder = new Database(path.join(dir, 'session.sqlite'));
    try {
      holder.prepare("UPDATE session SET scenario = 'in the wal' WHERE id = 1").run();
      const read = entryOfSessionDir(dir);
      expect(read).toMatchObject({ fromSidecar: false, wroteSidecar: false });
      expect(read.entry.session.scenario).toBe('in the wal');
    } finally {
      holder.close();
    }
  });

  it('a dir copied without its times is trusted by hash; under another name, the log is read', () => {
    const sessionsDir = path.join(root, 'copied-from');
    const elsewhere = path.join(root, 'copied-to');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 25 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    age(dir);
    fs.rmSync(sidecarOf(dir));
    entryOfSessionDir(dir); // settled sidecar
    const copy = path.join(elsewhere, s!.dirName);
    fs.cpSync(dir, copy, { recursive: true }); // times not kept: every file is new
    expect(fs.statSync(path.join(copy, 'session.sqlite')).mtimeMs).not.toBe(
      fs.statSync(path.join(dir, 'session.sqlite')).mtimeMs,
    );
    const read = entryOfSessionDir(copy);
    expect(read.fromSidecar).toBe(true);
    expect(read.entry).toEqual(readCatalogEntry(copy));
    const renamed = path.join(elsewhere, s!.dirName.replace(/-f/, '-g'));
    fs.cpSync(dir, renamed, { recursive: true });
    const other = entryOfSessionDir(renamed);
    expect(other.fromSidecar).toBe(false);
    expect(other.entry.session.dir_name).toBe(path.basename(renamed));
  });

  it('a corrupt, foreign or truncated sidecar is read past (the log is read, the sidecar written again)', () => {
    const sessionsDir = path.join(root, 'corrupt');
    const [s] = generateFleet(sessionsDir, { sessions: 1, seed: 26 }).sessions;
    const dir = path.join(sessionsDir, s!.dirName);
    const good = fs.readFileSync(sidecarOf(dir), 'utf8');
    const expected = readCatalogEntry(dir);
    const wrongType = JSON.parse(good);
    wrongType.entry.session.calls = 'many';
    const extraField = JSON.parse(good);
    extraField.entry.tools.push({ dir_name: s!.dirName, tool: 'x', calls: 1, failures: 0, more: 1 });
    const otherVersion = JSON.parse(good);
    otherVersion.entry_version = 'entry0';
    for (const bad of [
      '\u0000\u0001garbage',
      good.slice(0, good.length / 2),
      '[]',
      'null',
      JSON.stringify({ format: 'something else' }),
      JSON.stringify(wrongType),
      JSON.stringify(extraField),
      JSON.stringify(otherVersion),
    ]) {
      fs.writeFileSync(sidecarOf(dir), bad);
      const read = entryOfSessionDir(dir);
      expect(read.fromSidecar).toBe(false);
      expect(read.entry).toEqual(expected);
      expect(validate(readSidecar(dir))).toEqual([]);
    }
    fs.rmSync(sidecarOf(dir));
    fs.mkdirSync(sidecarOf(dir)); // not even a file
    expect(entryOfSessionDir(dir).entry).toEqual(expected);
  });

  /** The one session dir under `sessionsDir` has a sidecar true to its ended log. */
  function expectTrueSidecar(sessionsDir: string): void {
    const dirs = sessionDirs(sessionsDir);
    expect(dirs).toHaveLength(1);
    const dir = dirs[0]!;
    expect(validate(readSidecar(dir))).toEqual([]);
    const read = entryOfSessionDir(dir);
    expect(read.fromSidecar).toBe(true);
    expect(read.entry).toEqual(readCatalogEntry(dir));
    expect(read.entry.session.status).toBe('ended');
  }

  it("the package's createRecorder writes the sidecar of each session it closes", async () => {
    const sessionsDir = path.join(root, 'recorded');
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      ok: true,
      sessionId: 'sidecar00001',
      result: { found: true },
    }));
    await call('find', { sessionId: 'sidecar00001', window: 'Notepad' });
    await recorder.end('sidecar00001');
    await recorder.close();
    expectTrueSidecar(sessionsDir);
  });

  it("record's own createRecorder hands the closed sessions' dirs to its handler and writes no sidecar", async () => {
    const sessionsDir = path.join(root, 'handler');
    const handed: string[][] = [];
    // The handler finishes after a timer: close() must have waited for it (a sync push would not tell).
    const recorder = createRecorderOfRecord({ sessionsDir, stderr: () => {} }, async (dirs) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      handed.push(dirs);
    });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      ok: true,
      sessionId: 'handler00001',
      result: { found: true },
    }));
    await call('find', { sessionId: 'handler00001', window: 'Notepad' });
    await recorder.close();
    expect(handed).toEqual([sessionDirs(sessionsDir)]); // checked as soon as close() resolved
    expect(fs.existsSync(sidecarOf(handed[0]![0]!))).toBe(false);
  });

  // SIGHUP: the terminal closed (on Windows also the console window's close button); SIGINT: Ctrl-C.
  it.each(['SIGINT', 'SIGHUP'] as const)(
    'mcec-record http on %s writes the sidecar of each session it closes (its recorder in a worker thread)',
    async (signal) => {
      const { listener: upstream } = await simOnHttp(path.join(root, `http-sim-${signal}`), { seed: 5 });
      const sessionsDir = path.join(root, `http-recorded-${signal}`);
      const record = path.join(ROOT, 'dist', 'cli', 'mcec-record.js');
      const args = ['http', '--listen', '127.0.0.1:0', '--target', upstream.url, '--sessions', sessionsDir];
      const child = spawn(process.execPath, [record, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (text: string) => {
        stderr += text;
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      try {
        while (!/recording (http:\/\/\S+) ->/.test(stderr)) {
          if (child.exitCode !== null) throw new Error(`mcec-record exited: ${stderr}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const url = /recording (http:\/\/\S+) ->/.exec(stderr)![1]!;
        const rpc = (id: number, name: string, args: object) =>
          post(
            url,
            JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
          );
        const started = await rpc(1, 'session-start', {});
        const sessionId = sessionIdFrom(started.body.toString('utf8'));
        expect((await rpc(2, 'windows', { sessionId })).status).toBe(200);
        child.kill(signal);
        expect(await exited, stderr).toBe(0);
        expect(stderr).toContain(`mcec-record: ${signal}: closing sessions`);
      } finally {
        child.kill();
        await upstream.close();
      }
      expectTrueSidecar(sessionsDir);
    },
  );
});
