/**
 * `mcec-bundle triage` over a generated fleet of 2,000 sessions (four scenarios, three recurring failures
 * injected with details that differ in every run, a flaky scenario, recovered failures): each injected
 * failure is one group with the right counts; flaky scenarios and failure rates per tool match what was
 * generated; user rules set or extend fingerprints; a folder of bundle zips triages like the sessions dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet, type InjectedFailure, SCENARIOS } from '../../bench/lib/fleet.js';
import { buildBundle } from '../../src/bundle/build.js';
import { refreshCatalog } from '../../src/fleet/catalog.js';
import { defaultFingerprint, normalizeDetail } from '../../src/fleet/fingerprint.js';
import { type TriageReport, triage } from '../../src/fleet/triage.js';
import { cli, scratchRoot, validator } from './helpers.js';

const SESSIONS = 2000;
const DAY_MS = 86_400_000;
/** The fleet starts at a UTC midnight eight days before this run: "all time" and "--since 1h" mean the same on any date. */
const START_MS = Math.floor(Date.now() / DAY_MS) * DAY_MS - 8 * DAY_MS;

/** What each injected failure must be grouped as: tool, code, category, class, process. */
const EXPECTED: Record<InjectedFailure, [string, string, string, string, string]> = {
  'black-capture': ['capture', 'frame-all-black', 'capture-blank', 'ApplicationFrameWindow', 'Video.UI'],
  'ambiguous-save': ['find', 'selector-matched-3', 'ambiguous-selector', '#32770', 'notepad'],
  'stale-export': ['invoke', 'element-stale', 'stale-element', 'ReportView', 'report'],
};

describe('triage: a generated fleet of 2,000 sessions', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  const fleet = generateFleet(sessionsDir, { sessions: SESSIONS, seed: 11, start: new Date(START_MS) });
  const validate = validator('triage.schema.json');
  let report: TriageReport;
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  beforeAll(() => {
    const res = cli(['triage', '--json', '--sessions', sessionsDir]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    report = JSON.parse(res.stdout) as TriageReport;
  }, 300_000);

  it('groups each injected failure into one fingerprint with its count, sessions and recovery hint', () => {
    expect(validate(report)).toEqual([]);
    expect(report.sessions).toMatchObject({
      total: SESSIONS,
      failed: fleet.sessions.filter((s) => !s.passed).length,
    });
    expect(report.groups).toHaveLength(3);
    for (const [kind, [tool, code, category, className, processName]] of Object.entries(EXPECTED)) {
      const injected = fleet.sessions.filter((s) => s.injected === kind);
      const g = report.groups.find((x) => x.code === code)!;
      expect(g, kind).toBeDefined();
      expect([g.tool, g.category, g.className, g.process]).toEqual([tool, category, className, processName]);
      expect([g.count, g.sessions]).toEqual([injected.length, injected.length]);
      expect(g.firstSeen.slice(0, 19)).toBe(injected[0]!.startedAt.slice(0, 19));
      expect(g.example.dirName).toBe(injected.at(-1)!.dirName);
      expect(g.recovery).toMatch(/\w/);
      expect(g.detail).not.toMatch(/\d/); // numbers, handles, ids, paths and times are gone
      expect(g.trend.buckets.reduce((a, b) => a + b, 0)).toBe(injected.length);
      expect(g.scenarios).toHaveLength(1);
    }
    expect(report.groups.map((g) => g.count)).toEqual(
      [...report.groups.map((g) => g.count)].sort((a, b) => b - a),
    );
  });

  it('names the flaky scenarios with their pass rate and gives the failure rate per tool', () => {
    const flaky = new Map(report.flaky.map((f) => [f.scenario, f]));
    expect([...flaky.keys()].sort()).toEqual([SCENARIOS.export, SCENARIOS.notepad, SCENARIOS.player].sort());
    for (const [scenario, f] of flaky) {
      const runs = fleet.sessions.filter((s) => s.scenario === scenario);
      const passed = runs.filter((s) => s.passed).length;
      expect([f.runs, f.passed, f.failed]).toEqual([runs.length, passed, runs.length - passed]);
      expect(f.passRate).toBeCloseTo(passed / runs.length, 3);
      expect(f.lastFailed.dirName).toBe(runs.filter((s) => !s.passed).at(-1)!.dirName);
    }
    const capture = report.tools.find((t) => t.tool === 'capture')!;
    const players = fleet.sessions.filter((s) => s.scenario === SCENARIOS.player).length;
    expect([capture.calls, capture.failures]).toEqual([players, fleet.injected['black-capture']]);
    expect(report.tools.find((t) => t.tool === 'windows')).toMatchObject({ calls: SESSIONS, failures: 0 });
  });

  it('filters by scenario and time; --include-recovered adds the recovered ambiguous find as its own group', async () => {
    const player = JSON.parse(
      cli(['triage', '--json', '--scenario', SCENARIOS.player, '--sessions', sessionsDir]).stdout,
    ) as TriageReport;
    expect(player.groups.map((g) => g.code)).toEqual(['frame-all-black']);
    // One group is one fingerprint, not "1 fingerprints".
    const playerText = cli(['triage', '--scenario', SCENARIOS.player, '--sessions', sessionsDir]).stdout;
    expect(playerText).toContain('(1 fingerprint):');
    expect(player.flaky.map((f) => f.scenario)).toEqual([SCENARIOS.player]);
    const none = JSON.parse(
      cli(['triage', '--json', '--since', '1h', '--sessions', sessionsDir]).stdout,
    ) as TriageReport;
    expect([none.sessions.total, none.groups.length]).toEqual([0, 0]);

    // The library takes an explicit window: the second day only.
    const { catalog } = await refreshCatalog(sessionsDir);
    try {
      const since = new Date(START_MS + DAY_MS).toISOString();
      const until = new Date(START_MS + 2 * DAY_MS).toISOString();
      const day2 = triage(catalog, { since, until });
      const inDay = fleet.sessions.filter((s) => s.startedAt >= since && s.startedAt < until);
      expect(inDay.length).toBeGreaterThan(0);
      expect(day2.sessions.total).toBe(inDay.length);
      expect(day2.groups.find((g) => g.code === 'element-stale')?.count).toBe(
        inDay.filter((s) => s.injected === 'stale-export').length,
      );
      const all = triage(catalog, { includeRecovered: true });
      const recovered = all.groups.filter((g) => g.code === 'selector-matched-3');
      expect(recovered).toHaveLength(2); // the injected one and the recovered one (no class or process, other detail)
    } finally {
      catalog.close();
    }
  }, 180_000);

  it('user rules set a fingerprint or extend the built-in one', () => {
    const rules = path.join(root, 'rules.json');
    fs.writeFileSync(
      rules,
      JSON.stringify({
        version: 1,
        rules: [
          {
            name: 'black player',
            match: { process: 'video.ui', code: 'frame-all-black' },
            set: 'video-player-black',
          },
          {
            name: 'by scenario',
            match: { tool: 'invoke', detail: { contains: 'went away' } },
            extend: ['scenario'],
          },
        ],
      }),
    );
    expect(validator('fingerprint-rules.schema.json')(JSON.parse(fs.readFileSync(rules, 'utf8')))).toEqual(
      [],
    );
    const res = cli(['triage', '--json', '--rules', rules, '--sessions', sessionsDir]);
    expect(res.code).toBe(0);
    const r = JSON.parse(res.stdout) as TriageReport;
    expect(validate(r)).toEqual([]);
    expect(r.fingerprintRules.userRules).toBe(2);
    const black = r.groups.find((g) => g.code === 'frame-all-black')!;
    expect([black.fingerprint, black.rule, black.count]).toEqual([
      'video-player-black',
      'black player',
      fleet.injected['black-capture'],
    ]);
    const stale = r.groups.find((g) => g.code === 'element-stale')!;
    const plain = report.groups.find((g) => g.code === 'element-stale')!;
    expect(stale.rule).toBe('by scenario');
    expect(stale.fingerprint).not.toBe(plain.fingerprint);
    expect(stale.count).toBe(plain.count);

    // The rules file in the sessions dir is used by default; a broken one is an error that names the rule.
    fs.writeFileSync(
      path.join(sessionsDir, 'fingerprint-rules.json'),
      JSON.stringify({ version: 1, rules: [{ match: {} }] }),
    );
    const bad = cli(['triage', '--sessions', sessionsDir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/rule 1: "match" must name at least one field/);
    // Saved by Windows Notepad or PowerShell 5 (a byte-order mark first): read as the same rules.
    fs.writeFileSync(
      path.join(sessionsDir, 'fingerprint-rules.json'),
      `\uFEFF${fs.readFileSync(rules, 'utf8')}`,
    );
    const marked = cli(['triage', '--json', '--sessions', sessionsDir]);
    expect(marked.stderr).toBe('');
    expect((JSON.parse(marked.stdout) as TriageReport).groups).toEqual(r.groups);
    // Written by Windows PowerShell 5's `>`: UTF-16 LE with its mark.
    const ps5 = `\uFEFF${fs.readFileSync(rules, 'utf8')}`;
    fs.writeFileSync(path.join(sessionsDir, 'fingerprint-rules.json'), Buffer.from(ps5, 'utf16le'));
    const wide = cli(['triage', '--json', '--sessions', sessionsDir]);
    expect(wide.stderr).toBe('');
    expect((JSON.parse(wide.stdout) as TriageReport).groups).toEqual(r.groups);
    fs.rmSync(path.join(sessionsDir, 'fingerprint-rules.json'));
  }, 120_000);

  it('--md is a Markdown report to paste into an issue; the terminal report has the same groups', () => {
    const mdOut = cli(['triage', '--md', '--sessions', sessionsDir]).stdout;
    expect(mdOut).toMatch(/^## Triage/);
    for (const g of report.groups) expect(mdOut).toContain(`| ${g.count} | ${g.sessions} | ${g.tool} |`);
    expect(mdOut).toContain('### Flaky scenarios');
    const text = cli(['triage', '--sessions', sessionsDir]).stdout;
    for (const g of report.groups) expect(text).toContain(`${g.count} x in ${g.sessions} sessions`);
    expect(text).toMatch(/Flaky scenarios/);
  }, 120_000);

  it('a folder of bundle zips from many machines triages like the sessions it came from', async () => {
    const zips = path.join(root, 'zips');
    fs.mkdirSync(zips);
    const picked = fleet.sessions.filter((s) => s.injected).slice(0, 9);
    for (const s of picked) {
      const res = await buildBundle(path.join(sessionsDir, s.dirName), {
        output: path.join(zips, `${s.dirName}.zip`),
        images: false,
      });
      expect(res.bundle).toMatch(/\.zip$/);
    }
    const noDb = fleet.sessions.find((s) => !s.injected)!;
    await buildBundle(path.join(sessionsDir, noDb.dirName), {
      output: path.join(zips, 'no-db.zip'),
      db: false,
    });
    const res = cli(['triage', '--json', '--bundles', zips]);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/skipped .*no-db\.zip: no .*session\.sqlite/);
    const r = JSON.parse(res.stdout) as TriageReport;
    expect(validate(r)).toEqual([]);
    expect(r.source?.kind).toBe('bundles');
    expect(r.sessions.total).toBe(picked.length);
    for (const g of r.groups) {
      expect(g.count).toBe(picked.filter((s) => EXPECTED[s.injected!][1] === g.code).length);
      expect(g.fingerprint).toBe(report.groups.find((x) => x.code === g.code)!.fingerprint);
    }
  }, 120_000);
});

describe('fingerprints', () => {
  it('remove numbers, handles, ids, paths and times, and keep the words', () => {
    expect(
      normalizeDetail(
        'element 3f2a9c1e-1b2c-4d5e-8f90-0123456789ab at C:\\Users\\run7\\tree.json (handle 0x2A3F) went away at 2026-12-02T10:15:02.123Z after 850 ms; see /var/tmp/mcec/run-1',
      ),
    ).toBe('element <id> at <path> (handle <n>) went away at <time> after <n> ms; see <path>');
    const base = {
      tool: 'capture',
      code: 'frame-all-black',
      category: 'capture-blank',
      className: 'ApplicationFrameWindow',
      process: 'Video.UI',
      window: 'Video Player',
      target: 'window=video player',
      status: 'failed',
    };
    const a = defaultFingerprint({ ...base, detail: 'all 921600 pixels black (handle 0x1F)' });
    const b = defaultFingerprint({
      ...base,
      detail: 'all 2073600 pixels black (handle 0xAB3C)',
      process: 'video.ui',
    });
    const c = defaultFingerprint({
      ...base,
      detail: 'all 921600 pixels black (handle 0x1F)',
      className: 'Chrome_WidgetWin_1',
    });
    expect(a.id).toBe(b.id);
    expect(a.id).not.toBe(c.id);
    expect(a.id).toMatch(/^fp1-[0-9a-f]{12}$/);
  });

  it("a plain server's failure is one group whether its log stored the old 'internal' stand-in or no category", () => {
    const plain = {
      tool: 'read',
      code: 'tool-error',
      detail: 'ENOENT: no such file y',
      status: 'failed',
      className: null,
      process: null,
      window: null,
      target: '',
    };
    const before = defaultFingerprint({ ...plain, category: 'internal' });
    const after = defaultFingerprint({ ...plain, category: null });
    expect(before.id).toBe(after.id);
    // MCEC's own 'internal' failures keep their category in the key.
    const mcec = { ...plain, code: 'emergency-stopped' };
    expect(defaultFingerprint({ ...mcec, category: 'internal' }).id).not.toBe(
      defaultFingerprint({ ...mcec, category: null }).id,
    );
  });
});
