/**
 * A triage group's trend says what its sparkline shows: both count failures per run, over the span from the
 * first run in the window to the last, so the same runs get the same label with `--since 7d`, with no
 * window, as text, Markdown or JSON, whenever triage runs.
 */
import { describe, expect, it } from 'vitest';
import {
  renderTriageMarkdown,
  renderTriageText,
  sparkline,
  type TriageGroup,
  triage,
} from '../../src/fleet/triage.js';
import { Catalog, type CatalogFailure } from '../../src/store/catalog.js';
import { catalogSession } from './helpers.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-20T08:00:00.000Z');

/** A run `day` days after T0 (plus `n` minutes), failing with `codes`. */
interface Run {
  day: number;
  n?: number;
  fails?: string[];
  /** A log that cannot be read: its row holds only the dir's stamp and the error. */
  unreadable?: boolean;
}

function catalogOf(runs: Run[]): Catalog {
  const catalog = Catalog.memory();
  catalog.put(
    runs.map((r, i) => {
      const start = new Date(T0 + r.day * DAY + (r.n ?? 0) * 60_000);
      const id = `r${String(i).padStart(11, '0')}`;
      const dir = `${start.toISOString().slice(0, 10).replaceAll('-', '')}-${start.toISOString().slice(11, 19).replaceAll(':', '')}-${id}`;
      const fails = r.fails ?? [];
      const session = catalogSession({
        dir_name: dir,
        session_id: id,
        scenario: 'nightly',
        started_at: start.toISOString(),
        ended_at: new Date(start.getTime() + 30_000).toISOString(),
        duration_ms: 30_000,
        duration: '30 s',
        last_activity_at: new Date(start.getTime() + 30_000).toISOString(),
        verdict: fails.length > 0 ? 'FAIL' : 'PASS',
        failures: fails.length,
        ...(r.unreadable
          ? {
              ended_at: null,
              duration_ms: null,
              duration: '',
              last_activity_at: null,
              status: null,
              verdict: null,
            }
          : {}),
        ...(r.unreadable
          ? { calls: 0, error: 'session.sqlite: file is not a database (SQLITE_NOTADB)' }
          : {}),
      });
      const failures: CatalogFailure[] = fails.map((code, k) => ({
        dir_name: dir,
        seq: k + 1,
        at: new Date(start.getTime() + 1000 * (k + 1)).toISOString(),
        tool: 'find',
        status: 'failed',
        code,
        category: 'not-found',
        detail: `no element matched (${code})`,
        target: '',
        window: null,
        class_name: 'Notepad',
        process: 'notepad',
        recovered: 0,
        fingerprint: '',
      }));
      return { entry: { session, failures, tools: [] }, touched: 0, dirMtime: null };
    }),
  );
  return catalog;
}

function groupsOf(catalog: Catalog, since?: number, now = Date.parse('2026-12-02T12:00:00Z')): TriageGroup[] {
  return triage(catalog, {
    since: since === undefined ? undefined : new Date(now - since).toISOString(),
    now: new Date(now),
  }).groups;
}

const byCode = (groups: TriageGroup[], code: string) => groups.find((g) => g.code === code)!;

describe('triage trends', () => {
  // Ten nightly runs on days 2..11; "late" fails only in the last two, "always" in every run.
  const runs: Run[] = Array.from({ length: 10 }, (_, i) => ({
    day: 2 + i,
    fails: ['always', ...(i >= 8 ? ['late'] : [])],
  }));

  it('gives the same runs the same labels with --since 7d, --since 30d or no window, whenever it runs', () => {
    const catalog = catalogOf(runs);
    try {
      const now = T0 + 12 * DAY;
      const all = groupsOf(catalog, undefined, now);
      expect(byCode(all, 'late').trend.direction).toBe('new');
      expect(byCode(all, 'always').trend.direction).toBe('steady');
      const labels = (gs: TriageGroup[]) => gs.map((g) => [g.code, g.trend.direction, sparkline(g.trend)]);
      expect(labels(groupsOf(catalog, 30 * DAY, now))).toEqual(labels(all));
      expect(labels(groupsOf(catalog, 30 * DAY, now + 5 * DAY))).toEqual(labels(all)); // a week later
      // --since 7d selects runs of days 5..11: fewer runs, still a window they fill.
      const week = groupsOf(catalog, 7 * DAY, now);
      expect(byCode(week, 'late').trend.direction).toBe('new');
      expect(byCode(week, 'always').trend.direction).toBe('steady');
    } finally {
      catalog.close();
    }
  });

  it('text, Markdown and JSON say the same label', () => {
    const catalog = catalogOf(runs);
    try {
      const report = triage(catalog, { now: new Date(T0 + 12 * DAY) });
      const late = byCode(report.groups, 'late');
      const spark = sparkline(late.trend);
      expect(renderTriageText(report)).toContain(`${spark} new`);
      expect(renderTriageMarkdown(report)).toContain(`${spark.replaceAll('·', '.')} new`);
      expect(renderTriageText(report)).toContain('(2 fingerprints)');
    } finally {
      catalog.close();
    }
  });

  it('Markdown marks first and last seen as UTC, as its window line and the text do', () => {
    const catalog = catalogOf(runs);
    try {
      const report = triage(catalog, { since: '2026-11-21T00:00:00.000Z', now: new Date(T0 + 12 * DAY) });
      const md = renderTriageMarkdown(report);
      expect(md).toContain('since 2026-11-21 00:00Z');
      // "late" failed in the runs of days 10 and 11, two seconds after each started (08:00 UTC).
      expect(md).toContain('| 2026-11-30 08:00Z | 2026-12-01 08:00Z |');
      expect(renderTriageText(report)).toContain('first 2026-11-30T08:00:02Z, last 2026-12-01T08:00:02Z;');
    } finally {
      catalog.close();
    }
  });

  it('draws failures per run, so a busy last day that failed as often per run is not a rising bar', () => {
    // Day 0: one run, it fails. Day 6: ten runs, eight fail. Per run: 1 then 0.8, steady (not "▁·····█").
    const steady: Run[] = [
      { day: 0, fails: ['x'] },
      ...Array.from({ length: 10 }, (_, i) => ({ day: 6, n: i, fails: i < 8 ? ['x'] : [] })),
    ];
    const c1 = catalogOf(steady);
    try {
      const g = byCode(groupsOf(c1), 'x');
      expect(g.trend.buckets).toEqual([1, 0, 0, 0, 0, 0, 8]);
      expect(g.trend.runs).toEqual([1, 0, 0, 0, 0, 0, 10]);
      expect(sparkline(g.trend)).toBe('█·····▆');
      expect(g.trend.direction).toBe('steady');
    } finally {
      c1.close();
    }
    // Day 0: ten runs, one fails. Day 6: two runs, both fail. "▁·····█" is rising, never steady.
    const rising: Run[] = [
      ...Array.from({ length: 10 }, (_, i) => ({ day: 0, n: i, fails: i === 0 ? ['x'] : [] })),
      { day: 6, fails: ['x'] },
      { day: 6, n: 1, fails: ['x'] },
    ];
    const c2 = catalogOf(rising);
    try {
      const g = byCode(groupsOf(c2), 'x');
      expect(sparkline(g.trend)).toBe('▁·····█');
      expect(g.trend.direction).toBe('rising');
    } finally {
      c2.close();
    }
  });

  it('one failure more in as many runs is steady, not rising; two more is rising', () => {
    const runsWith = (before: number, after: number): Run[] => [
      ...Array.from({ length: 5 }, (_, i) => ({ day: 0, n: i, fails: i < before ? ['x'] : [] })),
      ...Array.from({ length: 5 }, (_, i) => ({ day: 6, n: i, fails: i < after ? ['x'] : [] })),
    ];
    for (const [before, after, direction] of [
      [1, 2, 'steady'],
      [2, 1, 'steady'],
      [1, 3, 'rising'],
      [3, 1, 'falling'],
    ] as const) {
      const c = catalogOf(runsWith(before, after));
      try {
        expect([before, after, byCode(groupsOf(c), 'x').trend.direction]).toEqual([before, after, direction]);
      } finally {
        c.close();
      }
    }
  });

  it('a single failure is "once", or "new" when it came after runs without it', () => {
    const c = catalogOf([
      { day: 0 },
      { day: 1, fails: ['mid'] },
      { day: 2 },
      { day: 3 },
      { day: 8, fails: ['end'] },
    ]);
    try {
      const gs = groupsOf(c);
      expect(byCode(gs, 'mid').trend.direction).toBe('once');
      expect(byCode(gs, 'end').trend.direction).toBe('new');
      expect(renderTriageText(triage(c, { now: new Date(T0 + 20 * DAY) }))).toMatch(
        /1 x in 1 session {2}[·█]{7} once/,
      );
    } finally {
      c.close();
    }
  });

  it('counts no unreadable log as a run: its failures are unknown, not none', () => {
    // Day 0: one run that fails, then two logs that cannot be read; day 6: four runs, each failing once.
    // Every run that can be read failed once: steady, however many damaged logs lie in the first half.
    const c = catalogOf([
      { day: 0, fails: ['x'] },
      { day: 0, n: 1, unreadable: true },
      { day: 0, n: 2, unreadable: true },
      ...Array.from({ length: 4 }, (_, i) => ({ day: 6, n: i, fails: ['x'] })),
    ]);
    try {
      const report = triage(c, { now: new Date(T0 + 20 * DAY) });
      expect(report.sessions.unreadable).toBe(2);
      const g = byCode(report.groups, 'x');
      expect(g.trend.runs).toEqual([1, 0, 0, 0, 0, 0, 4]);
      expect(sparkline(g.trend)).toBe('█·····█');
      expect(g.trend.direction).toBe('steady');
    } finally {
      c.close();
    }
  });
});
