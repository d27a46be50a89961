/**
 * Names sweeps and full sweeps: when the sessions dir's time moves because names came or went, only those
 * names are read or dropped; every session dir is stat-ed only by a full sweep (index, every 10 minutes, a
 * writer's hand-off, a time moved or not trusted with no name changed). Clocks are the reader's `now`, ahead
 * of real time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../../bench/lib/fleet.js';
import { type RefreshResult, refreshCatalog } from '../../src/fleet/catalog.js';
import { appendSessionEvent } from '../../src/store/append-event.js';
import { Catalog, handSessionToNextReader, SWEEP_REQUEST_FILE } from '../../src/store/catalog.js';
import { scratchRoot } from './helpers.js';

const MINUTE = 60_000;

/** One refresh as the reader sees it at `offsetMs` past real time (5 s: fresh dirs count as settled). */
async function refresh(
  sessionsDir: string,
  offsetMs = 5000,
): Promise<Pick<RefreshResult, 'sweep' | 'indexed' | 'removed'> & { verdicts: Map<string, string | null> }> {
  const res = await refreshCatalog(sessionsDir, { now: () => Date.now() + offsetMs });
  try {
    const verdicts = new Map(res.catalog.sessions().map((s) => [s.dir_name, s.verdict]));
    return { sweep: res.sweep, indexed: res.indexed, removed: res.removed, verdicts };
  } finally {
    res.catalog.close();
  }
}

/**
 * The catalog as a reader within 2 s of a change leaves it: no sessions dir time stored (one cannot be made
 * that fresh from outside: a reader's own catalog open moves the sessions dir's time to the real now).
 */
function forgetRootTime(sessionsDir: string): void {
  const catalog = Catalog.open(sessionsDir);
  try {
    catalog.setMeta({ root_mtime: null });
  } finally {
    catalog.close();
  }
}

/** A passing session's log gets a failing verdict from a writer that does not touch the catalog. */
function failBehindItsBack(dir: string): void {
  appendSessionEvent(dir, 'verdict', { passed: false, via: 'cli' });
}

describe('catalog sweeps', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A fleet indexed (a full sweep at +5 s), and sessions recorded elsewhere, ready to be moved in. */
  async function indexedFleet(name: string) {
    const sessionsDir = path.join(root, name, 'sessions');
    const elsewhere = path.join(root, name, 'elsewhere');
    const fleet = generateFleet(sessionsDir, { sessions: 12, seed: 21 });
    const extra = generateFleet(elsewhere, {
      sessions: 3,
      seed: 22,
      start: new Date('2026-12-01T00:00:00Z'),
    });
    expect((await refresh(sessionsDir)).sweep).toBe('full'); // a new catalog
    const passing = fleet.sessions.filter((s) => s.passed).map((s) => s.dirName);
    const moveIn = (i: number) =>
      fs.renameSync(
        path.join(elsewhere, extra.sessions[i]!.dirName),
        path.join(sessionsDir, extra.sessions[i]!.dirName),
      );
    return { sessionsDir, fleet, extra, passing, moveIn };
  }

  it('a dir moved in is the only one read; a dir removed drops its row; no other dir is stat-ed', async () => {
    const { sessionsDir, fleet, extra, passing, moveIn } = await indexedFleet('names');
    // Changed behind the catalog's back: only a full sweep finds it (a names sweep does not stat the dir).
    failBehindItsBack(path.join(sessionsDir, passing[0]!));
    moveIn(0);
    const gone = fleet.sessions[1]!.dirName;
    fs.rmSync(path.join(sessionsDir, gone), { recursive: true });
    // A link named like a session is not a session dir (none leads outside the sessions dir).
    const linked = extra.sessions[1]!.dirName;
    if (process.platform !== 'win32')
      fs.symlinkSync(path.join(root, 'names', 'elsewhere', linked), path.join(sessionsDir, linked), 'dir');
    const after = await refresh(sessionsDir, MINUTE);
    expect([after.sweep, after.indexed, after.removed]).toEqual(['names', 1, 1]);
    expect(after.verdicts.has(linked)).toBe(false);
    expect(after.verdicts.has(extra.sessions[0]!.dirName)).toBe(true);
    expect(after.verdicts.has(gone)).toBe(false);
    expect(after.verdicts.get(passing[0]!)).toBe('PASS'); // stale until the next full sweep
    // Nothing changed since: the catalog is fresh.
    expect((await refresh(sessionsDir, 2 * MINUTE)).sweep).toBe(null);
    // A names sweep does not put the full one off: due 10 minutes after the index's, not after the names one.
    const due = await refresh(sessionsDir, 10 * MINUTE + 10_000);
    expect([due.sweep, due.verdicts.get(passing[0]!)]).toEqual(['full', 'FAIL']);
  });

  it('a dir replaced under its name: found at once when no name came or went, else by the next full sweep', async () => {
    const { sessionsDir, passing, moveIn } = await indexedFleet('replaced');
    const replace = (name: string) => {
      // A re-downloaded artifact: the same session dir, other content, put where the old one was.
      const copy = path.join(root, 'replaced', `copy-${name}`);
      fs.cpSync(path.join(sessionsDir, name), copy, { recursive: true });
      failBehindItsBack(copy);
      fs.rmSync(path.join(sessionsDir, name), { recursive: true });
      fs.renameSync(copy, path.join(sessionsDir, name));
    };
    // Alone: the sessions dir's time moved, but no name came or went, so every dir is compared.
    replace(passing[0]!);
    const alone = await refresh(sessionsDir, MINUTE);
    expect([alone.sweep, alone.indexed, alone.verdicts.get(passing[0]!)]).toEqual(['full', 1, 'FAIL']);
    // With a dir moved in at the same time: a names sweep, the replaced row stale until the next full sweep.
    replace(passing[1]!);
    moveIn(0);
    const withNames = await refresh(sessionsDir, 2 * MINUTE);
    expect([withNames.sweep, withNames.indexed, withNames.verdicts.get(passing[1]!)]).toEqual([
      'names',
      1,
      'PASS',
    ]);
    const due = await refresh(sessionsDir, 12 * MINUTE);
    expect([due.sweep, due.verdicts.get(passing[1]!)]).toEqual(['full', 'FAIL']);
  });

  it("a writer's hand-off makes the next reader sweep fully, even when a dir came at the same time", async () => {
    const { sessionsDir, passing, moveIn } = await indexedFleet('handoff');
    const dir = path.join(sessionsDir, passing[0]!);
    failBehindItsBack(dir); // the recorder's committed verdict, its catalog touch found the lock busy
    expect(handSessionToNextReader(sessionsDir, dir)).toBe(true);
    moveIn(0);
    expect(fs.existsSync(path.join(sessionsDir, SWEEP_REQUEST_FILE))).toBe(true);
    const after = await refresh(sessionsDir, MINUTE);
    expect([after.sweep, after.verdicts.get(passing[0]!)]).toEqual(['full', 'FAIL']);
    expect(fs.existsSync(path.join(sessionsDir, SWEEP_REQUEST_FILE))).toBe(false);
    // Removing the request moved the sessions dir's time: not trusted, so the next reader compares every dir
    // again (no name came or went: what moved the time is not known), and then the catalog is fresh.
    const next = await refresh(sessionsDir, 2 * MINUTE);
    expect([next.sweep, next.indexed]).toEqual(['full', 0]);
    expect((await refresh(sessionsDir, 3 * MINUTE)).sweep).toBe(null);
  });

  it('after a reader that could not trust the time (within 2 s of a change), a dir replaced alone is read', async () => {
    const { sessionsDir, passing, moveIn } = await indexedFleet('unsettled');
    moveIn(0);
    expect((await refresh(sessionsDir, MINUTE)).sweep).toBe('names');
    forgetRootTime(sessionsDir); // what a reader right after the move stores
    // A dir then replaced alone: no name came or went since, so every dir is compared (not a names sweep).
    const name = passing[0]!;
    const copy = path.join(root, 'unsettled', `copy-${name}`);
    fs.cpSync(path.join(sessionsDir, name), copy, { recursive: true });
    failBehindItsBack(copy);
    fs.rmSync(path.join(sessionsDir, name), { recursive: true });
    fs.renameSync(copy, path.join(sessionsDir, name));
    const replaced = await refresh(sessionsDir, 2 * MINUTE);
    expect([replaced.sweep, replaced.verdicts.get(name)]).toEqual(['full', 'FAIL']);
  });

  it('a dir read while its time was fresh (a copy still being written) is read again by a names sweep', async () => {
    const { sessionsDir, extra, moveIn } = await indexedFleet('copying');
    moveIn(0);
    const copied = extra.sessions[0]!.dirName;
    // Its time as a reader right after the move sees it: too fresh to keep, so its row has no dir time.
    const t = new Date(Date.now() + MINUTE);
    fs.utimesSync(path.join(sessionsDir, copied), t, t);
    expect((await refresh(sessionsDir, MINUTE)).verdicts.has(copied)).toBe(true);
    // The copy goes on (its log gets a verdict), and another dir comes: a names sweep, which reads it again.
    failBehindItsBack(path.join(sessionsDir, copied));
    moveIn(1);
    const after = await refresh(sessionsDir, 2 * MINUTE);
    expect([after.sweep, after.indexed, after.verdicts.get(copied)]).toEqual(['names', 2, 'FAIL']);
    // Its time is settled now: the next names sweep reads only what came.
    moveIn(2);
    const settled = await refresh(sessionsDir, 3 * MINUTE);
    expect([settled.sweep, settled.indexed]).toEqual(['names', 1]);
  });
});
