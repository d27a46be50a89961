/**
 * The sessions catalog: built from a generated fleet (written through SessionLog), read by `list` instead
 * of every log, kept true when sessions come, go, end, get a verdict or are changed behind its back, and
 * written by several recording processes at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet, SCENARIOS } from '../../bench/lib/fleet.js';
import { refreshCatalog } from '../../src/fleet/catalog.js';
import { readCatalogEntry } from '../../src/fleet/catalog-entry.js';
import { createRecorder } from '../../src/record/index.js';
import { listSessionSummaries } from '../../src/sessions/list.js';
import { pruneSessions } from '../../src/sessions/prune.js';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { appendSessionEvent } from '../../src/store/append-event.js';
import { CATALOG_FILE, CATALOG_SCHEMA_VERSION, Catalog } from '../../src/store/catalog.js';
import { cli, runNode, scratchRoot, validator } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/record-child.mjs', import.meta.url));
/** Readers in these tests see time a little ahead, so fresh dirs count as settled (no waiting). */
const later = () => Date.now() + 5000;

describe('catalog: a generated fleet', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  const fleet = generateFleet(sessionsDir, { sessions: 240, seed: 7 });
  const validate = validator('session-listing.schema.json');
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('list builds catalog.sqlite and gives every session the verdict its own summary gives', async () => {
    expect(fs.existsSync(path.join(sessionsDir, CATALOG_FILE))).toBe(false);
    const res = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const listed = JSON.parse(res.stdout) as Array<Record<string, unknown>>;
    expect(validate(listed)).toEqual([]);
    expect(fs.existsSync(path.join(sessionsDir, CATALOG_FILE))).toBe(true);
    expect(listed.map((l) => l.dirName)).toEqual(fleet.sessions.map((s) => s.dirName).reverse()); // newest first
    for (const s of fleet.sessions) {
      const row = listed.find((l) => l.dirName === s.dirName)!;
      expect(row.verdict).toBe(s.passed ? 'PASS' : 'FAIL');
      expect(row.scenario).toBe(s.scenario);
      expect((row.fingerprints as string[]).length).toBe(s.injected ? 1 : 0);
    }
    // The one rule: the same verdict and reason as the session's own summary.
    for (const s of fleet.sessions.filter((_, i) => i % 12 === 0)) {
      const summary = await summarizeSession(path.join(sessionsDir, s.dirName));
      const row = listed.find((l) => l.dirName === s.dirName)!;
      expect([row.verdict, row.verdictReason]).toEqual([summary.verdict, summary.verdictReason]);
      expect([row.calls, row.failures, row.duration]).toEqual([
        summary.counts.calls,
        summary.counts.failures,
        summary.duration,
      ]);
    }
    // Recurring injected failures share one fingerprint each, whatever their volatile details.
    const byKind = new Map<string, Set<string>>();
    for (const s of fleet.sessions.filter((x) => x.injected)) {
      const fp = (listed.find((l) => l.dirName === s.dirName)!.fingerprints as string[])[0]!;
      byKind.set(s.injected!, (byKind.get(s.injected!) ?? new Set()).add(fp));
    }
    expect([...byKind.values()].map((v) => v.size)).toEqual([1, 1, 1]);
    expect(new Set([...byKind.values()].map((v) => [...v][0])).size).toBe(3);
  });

  it('a second read opens no session log; a removed or added session is seen', async () => {
    await refreshCatalog(sessionsDir, { now: later }).then((r) => r.catalog.close());
    const again = await refreshCatalog(sessionsDir, { now: later });
    again.catalog.close();
    expect(again.indexed).toBe(0);

    const gone = fleet.sessions[3]!;
    fs.rmSync(path.join(sessionsDir, gone.dirName), { recursive: true });
    const extra = generateFleet(path.join(root, 'more'), {
      sessions: 1,
      seed: 99,
      start: new Date('2026-12-01T00:00:00.000Z'),
    }).sessions[0]!;
    fs.renameSync(path.join(root, 'more', extra.dirName), path.join(sessionsDir, extra.dirName));
    const after = await refreshCatalog(sessionsDir, { now: later });
    after.catalog.close();
    expect([after.sweep, after.indexed, after.removed]).toEqual(['names', 1, 1]);
    const names = (await listSessionSummaries(sessionsDir)).map((l) => l.dirName);
    expect(names).not.toContain(gone.dirName);
    expect(names[0]).toBe(extra.dirName); // newest first
  });

  it('mcec-bundle verdict updates the row at once; a change behind its back is found by index or the next sweep', async () => {
    const smoke = fleet.sessions.filter((s, i) => i !== 3 && s.passed && s.scenario === SCENARIOS.smoke);
    const passing = smoke[0]!;
    const res = cli(['verdict', passing.sessionId, 'fail', '-r', 'wrong total', '--sessions', sessionsDir]);
    expect(res.code).toBe(0);
    const listed = JSON.parse(
      cli(['list', '--json', '--failed', '--sessions', sessionsDir]).stdout,
    ) as Array<{
      dirName: string;
      verdictReason: string;
    }>;
    expect(listed.find((l) => l.dirName === passing.dirName)?.verdictReason).toMatch(/wrong total/);

    // A writer that does not know the catalog (an older version): the row is stale until a sweep.
    const other = smoke[1]!;
    const verdictOf = async (now?: () => number) => {
      const r = await refreshCatalog(sessionsDir, now ? { now } : {});
      try {
        return r.catalog.session(other.dirName)?.verdict;
      } finally {
        r.catalog.close();
      }
    };
    expect(await verdictOf(later)).toBe('PASS'); // a sweep now: the next one is due in 10 minutes
    appendSessionEvent(path.join(sessionsDir, other.dirName), 'verdict', { passed: false, via: 'cli' });
    expect(await verdictOf(later)).toBe('PASS');
    expect(await verdictOf(() => Date.now() + 11 * 60_000)).toBe('FAIL');
    appendSessionEvent(path.join(sessionsDir, other.dirName), 'verdict', { passed: true, via: 'cli' });
    expect(cli(['index', '--sessions', sessionsDir]).code).toBe(0);
    expect(await verdictOf(later)).toBe('PASS');
  });

  it('a deleted or damaged catalog is rebuilt; a sessions dir that cannot hold one still lists', async () => {
    const count = (await listSessionSummaries(sessionsDir)).length;
    for (const f of fs.readdirSync(sessionsDir).filter((n) => n.startsWith(CATALOG_FILE))) {
      fs.rmSync(path.join(sessionsDir, f));
    }
    fs.writeFileSync(path.join(sessionsDir, CATALOG_FILE), 'not a database, just bytes '.repeat(200));
    expect((await listSessionSummaries(sessionsDir)).length).toBe(count);
    const db = new Database(path.join(sessionsDir, CATALOG_FILE), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();

    const blocked = path.join(root, 'blocked');
    fs.cpSync(
      path.join(sessionsDir, fleet.sessions[5]!.dirName),
      path.join(blocked, fleet.sessions[5]!.dirName),
      {
        recursive: true,
      },
    );
    fs.mkdirSync(path.join(blocked, CATALOG_FILE)); // a dir where the file would go: nothing can be written
    const warnings: string[] = [];
    const listed = await listSessionSummaries(blocked, { onWarning: (w) => warnings.push(w) });
    expect(listed.map((l) => l.verdict)).toEqual([fleet.sessions[5]!.passed ? 'PASS' : 'FAIL']);
    expect(warnings.join('\n')).toMatch(/cannot be written/);
  });

  it('a damaged page or a catalog of other tables is rebuilt by the next command, each command (built CLI)', () => {
    const file = path.join(sessionsDir, CATALOG_FILE);
    const expected = JSON.parse(cli(['list', '--json', '--sessions', sessionsDir]).stdout).length as number;
    /** One page of the sessions table overwritten with garbage (the WAL checkpointed first). */
    const damagePage = () => {
      const db = new Database(file);
      db.pragma('wal_checkpoint(TRUNCATE)');
      const root = db
        .prepare("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'")
        .pluck()
        .get() as number;
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.close();
      const fd = fs.openSync(file, 'r+');
      fs.writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (root - 1) * pageSize);
      fs.closeSync(fd);
    };
    const commands: string[][] = [
      ['list', '--json'],
      ['index'],
      ['triage', '--json'],
      ['prune', '--older-than', '36500d', '--dry-run'],
      ['report', '--all'],
    ];
    for (const args of commands) {
      damagePage();
      const first = cli([...args, '--sessions', sessionsDir]);
      expect(first.code, `${args[0]}: ${first.stderr}`).toBe(0);
      expect(first.stderr).toMatch(/damaged .*rebuilt from the session logs/);
      const again = cli([...args, '--sessions', sessionsDir]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).not.toMatch(/damaged/);
    }
    // The right version number, other tables.
    for (const f of fs.readdirSync(sessionsDir).filter((n) => n.startsWith(CATALOG_FILE))) {
      fs.rmSync(path.join(sessionsDir, f));
    }
    const other = new Database(file);
    other.exec('CREATE TABLE meta (k); CREATE TABLE sessions (x); INSERT INTO sessions VALUES (1)');
    other.pragma(`user_version = ${CATALOG_SCHEMA_VERSION}`);
    other.close();
    for (const args of commands) {
      const res = cli([...args, '--sessions', sessionsDir]);
      expect(res.code, `${args[0]}: ${res.stderr}`).toBe(0);
    }
    expect(JSON.parse(cli(['list', '--json', '--sessions', sessionsDir]).stdout).length).toBe(expected);
  }, 300_000);

  it('prune picks its candidates from the catalog and drops the rows of what it removed', async () => {
    const cutoff = Date.parse('2026-11-25T00:59:00.000Z');
    const touchedByVerdicts = fleet.sessions
      .filter((s, i) => i !== 3 && s.passed && s.scenario === SCENARIOS.smoke)
      .slice(0, 2)
      .map((s) => s.dirName);
    const declared = new Set(
      (await listSessionSummaries(sessionsDir)).filter((l) => l.verdict === 'PASS').map((l) => l.dirName),
    );
    const pruned = await pruneSessions(sessionsDir, {
      olderThanMs: Date.now() - cutoff,
      recentMs: 0,
      keepFailed: true,
    });
    const expected = fleet.sessions
      .filter((s) => Date.parse(s.startedAt) < cutoff - 1000 && s.dirName !== fleet.sessions[3]!.dirName)
      .filter((s) => declared.has(s.dirName))
      // The two sessions the previous test declared verdicts for were active just now.
      .filter((s) => !touchedByVerdicts.includes(s.dirName))
      .map((s) => s.dirName);
    expect(expected.length).toBeGreaterThan(30);
    expect(pruned.map((p) => p.dirName)).toEqual(expected);
    const catalog = Catalog.open(sessionsDir, { readonly: true })!;
    try {
      for (const name of expected) expect(catalog.session(name)).toBeUndefined();
    } finally {
      catalog.close();
    }
  });
});

describe('catalog: several recording processes at once', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('every ended session of four recorders lands in the catalog, none lost, none counted as failed', async () => {
    const sessionsDir = path.join(root, 'sessions');
    fs.mkdirSync(sessionsDir);
    expect(cli(['list', '--sessions', sessionsDir]).code).toBe(0); // creates the (empty) catalog
    const go = path.join(root, 'go');
    const children = ['a', 'b', 'c', 'd'].map((prefix) => runNode([CHILD, sessionsDir, prefix, '15', go]));
    // Let them all reach the barrier (their sessions are recorded) before they end together.
    await waitFor(() => fs.readdirSync(sessionsDir).filter((n) => /-[abcd]\d{4}$/.test(n)).length === 60);
    fs.writeFileSync(go, '');
    const results = await Promise.all(children);
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    for (const r of results) {
      const { counts } = JSON.parse(r.stdout) as {
        counts: Record<string, { recordFailures: number } | null>;
      };
      for (const c of Object.values(counts)) expect(c?.recordFailures).toBe(0);
    }
    // Each end touched its catalog row, unless another writer held the lock past the retries: the recorder
    // then said on stderr that it left sessions to the catalog's next reader, which the list below is.
    const leftSome = results.some((r) => /left for the catalog's next reader/.test(r.stderr));
    const db = new Database(path.join(sessionsDir, CATALOG_FILE), { readonly: true });
    const touched = db.prepare('SELECT count(*) AS n FROM sessions WHERE touched > 0').get() as { n: number };
    if (leftSome) expect(touched.n).toBeLessThan(60);
    else expect(touched.n).toBe(60);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    const listed = await listSessionSummaries(sessionsDir);
    expect(listed).toHaveLength(60);
    for (const l of listed) {
      const n = Number(l.id.slice(1));
      expect([l.id, l.status, l.verdict]).toEqual([l.id, 'ended', n % 3 === 0 ? 'FAIL' : 'PASS']);
    }
  });

  it("a catalog that cannot be written never breaks the agent's call: the failure is counted", async () => {
    const sessionsDir = path.join(root, 'no-catalog');
    fs.mkdirSync(path.join(sessionsDir, CATALOG_FILE), { recursive: true });
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      ok: true,
      sessionId: 'nocat0000001',
      result: { found: true },
    }));
    const out = await call('find', { sessionId: 'nocat0000001', window: 'Notepad' });
    expect(out).toEqual({ ok: true, sessionId: 'nocat0000001', result: { found: true } });
    await recorder.end('nocat0000001');
    await recorder.close();
    expect(recorder.session('nocat0000001')?.counts.recordFailures).toBe(1);
    expect(recorder.session('nocat0000001')?.status).toBe('ended');
  });
});

beforeAll(() => {
  expect(fs.existsSync(CHILD)).toBe(true);
});

/** Wait until `ready` holds, checking as the children write (a barrier on their progress, not a timer). */
async function waitFor(ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error('the children never got ready');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('catalog: index, then dirs moved in', () => {
  it("index's rows are each session's own entry; the next sweep reads only the dirs moved in", async () => {
    const root = scratchRoot();
    try {
      const sessionsDir = path.join(root, 'sessions');
      const elsewhere = path.join(root, 'elsewhere');
      generateFleet(sessionsDir, { sessions: 24, seed: 11 });
      const moved = generateFleet(elsewhere, {
        sessions: 2,
        seed: 12,
        start: new Date('2026-12-01T00:00:00Z'),
      });
      // Each session's own entry, read before the dirs are aged: a read adds the log's -wal, -shm, which
      // moves its dir's time (the index reads the sidecars, not the logs).
      const own = new Map(
        fs.readdirSync(sessionsDir).map((name) => [name, readCatalogEntry(path.join(sessionsDir, name))]),
      );
      // Logs as a finished recorder leaves them (no -wal, -shm), dirs recorded a while ago.
      const old = new Date(Date.now() - 60_000);
      for (const base of [sessionsDir, elsewhere]) {
        for (const name of fs.readdirSync(base)) {
          const dir = path.join(base, name);
          for (const suffix of ['-wal', '-shm'])
            fs.rmSync(path.join(dir, `session.sqlite${suffix}`), { force: true });
          fs.utimesSync(dir, old, old);
        }
      }
      const indexed = await refreshCatalog(sessionsDir, { full: true });
      try {
        expect(indexed.indexed).toBe(24);
        for (const name of fs
          .readdirSync(sessionsDir)
          .filter((n) => n !== CATALOG_FILE && !n.startsWith(`${CATALOG_FILE}-`))) {
          const entry = own.get(name)!;
          expect(indexed.catalog.session(name)).toEqual(entry.session);
          expect(indexed.catalog.failures([name])).toEqual(entry.failures);
          expect(indexed.catalog.toolCounts([name])).toEqual(entry.tools);
        }
      } finally {
        indexed.catalog.close();
      }
      for (const s of moved.sessions)
        fs.renameSync(path.join(elsewhere, s.dirName), path.join(sessionsDir, s.dirName));
      const next = await refreshCatalog(sessionsDir, { now: later });
      try {
        expect([next.sweep, next.indexed]).toEqual(['names', 2]);
      } finally {
        next.catalog.close();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('catalog: index counts what it removed', () => {
  it('a dir named like a session but holding no log is no row removed, at each index', async () => {
    const root = scratchRoot();
    try {
      const sessionsDir = path.join(root, 'sessions');
      const fleet = generateFleet(sessionsDir, { sessions: 2, seed: 21 });
      // An empty dir of a session's name (a recorder that died before its log, a dir made by hand).
      fs.mkdirSync(path.join(sessionsDir, '20261201-100000-0123456789ab'));
      for (let i = 0; i < 2; i++) {
        const r = await refreshCatalog(sessionsDir, { full: true });
        r.catalog.close();
        expect([r.indexed, r.removed]).toEqual([2, 0]);
      }
      fs.rmSync(path.join(sessionsDir, fleet.sessions[0]!.dirName), { recursive: true });
      const after = await refreshCatalog(sessionsDir, { full: true });
      after.catalog.close();
      expect([after.indexed, after.removed]).toEqual([1, 1]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
