/**
 * Triage across runs (`mcec-bundle triage`): from a sessions catalog, the recurring failures grouped by
 * fingerprint (count, sessions, first and last seen, an example, the recovery hint, a trend), the flaky
 * scenarios (both PASS and FAIL in the window) with their pass rate, and the failure rate per tool. Reads
 * only the catalog (`triage.schema.json` describes the report); renders it as text or Markdown.
 */
import fs from 'node:fs';
import { serverCategory } from '../contract/read-tool-output.js';
import { copiesLine, oneDirPerSession, type SessionCopies } from '../paths/naming.js';
import { recoveryFor } from '../report/recovery.js';
import { clip, oneLine } from '../report/text.js';
import type { Catalog, CatalogFailure, CatalogSession } from '../store/catalog.js';
import { NotARegularFileError, readRegularFile } from '../util/file-stat.js';
import { decodeTextBytes, readTextFile } from '../util/text-file.js';
import {
  type CompiledRule,
  compileRules,
  FINGERPRINT_RULES_VERSION,
  type Fingerprint,
  type FingerprintInput,
  fingerprintOf,
  normalizeDetail,
  parseFingerprintRules,
  primeRuleRegexes,
  primeRuleRegexesAsync,
} from './fingerprint.js';

/** Time slices of the window a group's trend is counted in. */
const TREND_BUCKETS = 7;

export interface TriageOptions {
  /** ISO time: sessions that started at or after it (default: every session). */
  since?: string;
  /** ISO time: sessions that started before it (default: now). */
  until?: string;
  scenario?: string;
  /** User fingerprint rules (compiled); the built-in rules decide for failures none matches. */
  rules?: CompiledRule[];
  /** Group recovered failures too (default: only those that were not recovered, which fail a run). */
  includeRecovered?: boolean;
  /** What the report says it was read from. */
  source?: { kind: 'sessions' | 'bundles'; path: string };
  now?: Date;
}

export type TrendDirection = 'new' | 'rising' | 'falling' | 'steady' | 'once';

/** One group of failures sharing a fingerprint. */
export interface TriageGroup {
  fingerprint: string;
  /** The key in words (tool, code, category, normalized detail, class, process). */
  key: string;
  /** The user rule that decided the fingerprint, or null for the built-in rules. */
  rule: string | null;
  tool: string;
  code: string | null;
  category: string | null;
  detail: string;
  className: string | null;
  process: string | null;
  /** Failures in the group, and the distinct sessions they happened in. */
  count: number;
  sessions: number;
  scenarios: string[];
  firstSeen: string;
  lastSeen: string;
  /** The newest occurrence: where to look first. */
  example: { sessionId: string; dirName: string; seq: number; detail: string | null };
  recovery: string | null;
  trend: {
    /**
     * Failures per slice of the trend's span (the first run in the window to the last, so `--since` does not
     * change it for the same runs), oldest first.
     */
    buckets: number[];
    /** Runs that started in each slice: the sparkline shows failures per run, as the direction counts them. */
    runs: number[];
    /**
     * new: only runs that started in the span's last quarter had it, runs before did not; once: a single
     * failure, not new; rising/falling: its rate per run grew or shrank by half or more from the first half
     * to the second, and by more than one failure against what the first half's rate predicts (failures
     * counted where their run started); else steady.
     */
    direction: TrendDirection;
  };
}

/** A scenario with both PASS and FAIL runs in the window. */
export interface FlakyScenario {
  scenario: string;
  runs: number;
  passed: number;
  failed: number;
  passRate: number;
  /** The newest failed run. */
  lastFailed: { sessionId: string; dirName: string; startedAt: string | null };
}

/** Calls and failures of one tool across the window's sessions. */
export interface ToolRate {
  tool: string;
  calls: number;
  failures: number;
  failureRate: number;
  sessions: number;
}

/** What `mcec-bundle triage --json` prints. */
export interface TriageReport {
  version: 1;
  generatedAt: string;
  source: { kind: 'sessions' | 'bundles'; path: string } | null;
  window: { since: string | null; until: string };
  scenario: string | null;
  fingerprintRules: { version: number; userRules: number };
  includeRecovered: boolean;
  sessions: { total: number; passed: number; failed: number; running: number; unreadable: number };
  groups: TriageGroup[];
  flaky: FlakyScenario[];
  tools: ToolRate[];
  /**
   * Sessions more than one dir (or bundle) held, copies of one run (the same log id and start): counted once,
   * from the first dir named (its standard `<stamp>-<id>` dir when there is one), the others left out.
   */
  copies: SessionCopies[];
}

function ratio(a: number, b: number): number {
  return b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000;
}

/** Triage the sessions of a catalog (refreshed by the caller) within a window. */
export function triage(catalog: Catalog, options: TriageOptions = {}): TriageReport {
  const steps = triageSteps(catalog, options);
  // User regexes over every value at once, on a thread with a deadline (src/fleet/rule-regex.ts).
  primeRuleRegexes(steps.rules, steps.inputs);
  return steps.report();
}

/**
 * `triage` that awaits the user regexes' thread instead of blocking on it: the MCP server goes on serving
 * while a slow regex runs out its budget (up to 30 s a triage). The same report.
 */
export async function triageAsync(catalog: Catalog, options: TriageOptions = {}): Promise<TriageReport> {
  const steps = triageSteps(catalog, options);
  await primeRuleRegexesAsync(steps.rules, steps.inputs);
  return steps.report();
}

/**
 * What triage reads from the catalog, all of it before the user regexes run (their inputs), and the report
 * made once they ran.
 */
function triageSteps(
  catalog: Catalog,
  options: TriageOptions,
): { rules: CompiledRule[]; inputs: FingerprintInput[]; report: () => TriageReport } {
  const now = options.now ?? new Date();
  const until = options.until ?? now.toISOString();
  // A copy of a session dir (`... (2)`, a renamed dir) is the same run, not another: counted once.
  const { kept: sessions, copies } = oneDirPerSession(
    catalog
      .sessions({ since: options.since, until, scenario: options.scenario })
      .filter((s) => s.calls > 0 || s.error !== null),
    (s) => ({ dirName: s.dir_name, sessionId: s.session_id, startedAt: s.started_at }),
  );
  const names = sessions.map((s) => s.dir_name);
  const rules = options.rules ?? [];
  const failures = windowFailures(catalog, sessions, options.includeRecovered === true);
  // Read now: nothing reads the catalog while the regexes run (another request may write it meanwhile).
  const tools = toolRates(catalog, names);
  const report = (): TriageReport => {
    const window = trendWindow(sessions, until);
    return {
      version: 1,
      generatedAt: now.toISOString(),
      source: options.source ?? null,
      window: { since: options.since ?? null, until },
      scenario: options.scenario ?? null,
      fingerprintRules: { version: FINGERPRINT_RULES_VERSION, userRules: rules.length },
      includeRecovered: options.includeRecovered === true,
      sessions: {
        total: sessions.length,
        passed: sessions.filter((s) => s.verdict === 'PASS').length,
        failed: sessions.filter((s) => s.verdict === 'FAIL').length,
        running: sessions.filter((s) => s.status === 'open').length,
        unreadable: sessions.filter((s) => s.error !== null).length,
      },
      groups: groupFailures(failures, window, rules),
      flaky: flakyScenarios(sessions),
      tools,
      copies,
    };
  };
  return { rules, inputs: failures.map((x) => x.facts), report };
}

/**
 * The span trends are counted in: from the first run in the window to the last one's last activity, so the
 * same runs get the same trend whatever `--since` or the clock says (a window reaching back before the first
 * run would call every group "new"). Its halves and slices, and the runs in each.
 */
interface TrendWindow {
  startMs: number;
  /** The window's end (ISO), the time of a failure and a session that have none. */
  until: string;
  span: number;
  /** Where the second half starts. */
  half: number;
  /** Runs per half, for rates: a group failing as often per run is steady however busy a day was. */
  runsIn: [number, number];
  /** Runs that started in each slice. */
  runsPerBucket: number[];
  /** Runs that started before the span's last quarter (a group first seen in runs after them is new). */
  runsBeforeLastQuarter: number;
  /** The trend bucket a time falls in (the last one for an unreadable time). */
  bucketOf(at: string | null): number;
}

function trendWindow(all: CatalogSession[], until: string): TrendWindow {
  // A log that cannot be read is no run here: its failures are unknown, not none (counted, it would lower
  // its slice's rate and make a steady group "rising").
  const sessions = all.filter((s) => s.error === null);
  const untilMs = Date.parse(until);
  const starts = sessions.map((s) => Date.parse(s.started_at ?? '')).filter((t) => Number.isFinite(t));
  // A loop, not Math.min(...starts): spreading 100,000 arguments overflows the stack.
  let startMs = starts.length > 0 ? Number.POSITIVE_INFINITY : untilMs;
  let endMs = starts.length > 0 ? Number.NEGATIVE_INFINITY : untilMs;
  for (const t of starts) {
    if (t < startMs) startMs = t;
    if (t > endMs) endMs = t;
  }
  for (const s of sessions) {
    const t = Date.parse(s.last_activity_at ?? s.ended_at ?? '');
    if (Number.isFinite(t) && t > endMs) endMs = t;
  }
  const span = Math.max(1, Math.min(endMs, Math.max(untilMs, startMs)) - startMs + 1);
  const half = startMs + span / 2;
  const bucketOf = (at: string | null) => {
    const t = at ? Date.parse(at) : Number.NaN;
    if (!Number.isFinite(t)) return TREND_BUCKETS - 1;
    return Math.min(TREND_BUCKETS - 1, Math.max(0, Math.floor(((t - startMs) / span) * TREND_BUCKETS)));
  };
  const runsIn: [number, number] = [0, 0];
  const runsPerBucket: number[] = new Array(TREND_BUCKETS).fill(0);
  let runsBeforeLastQuarter = 0;
  for (const s of sessions) {
    const at = s.started_at ?? until;
    runsIn[Date.parse(at) < half ? 0 : 1] += 1;
    runsPerBucket[bucketOf(at)]! += 1;
    if (Date.parse(at) < startMs + span * 0.75) runsBeforeLastQuarter += 1;
  }
  return { startMs, until, span, half, runsIn, runsPerBucket, runsBeforeLastQuarter, bucketOf };
}

/** A group while failures are added to it. */
interface GroupAccumulator {
  group: TriageGroup;
  sessionSet: Set<string>;
  scenarioSet: Set<string>;
  halves: [number, number];
  /** When the first run with this failure started (ms). */
  firstRunStart: number;
  newest: CatalogFailure;
}

/** A failure of the window, its session and what its fingerprint is made of. */
interface WindowFailure {
  f: CatalogFailure;
  s: CatalogSession;
  facts: FingerprintInput;
}

/** The failures of `sessions` that triage groups (unrecovered only, unless `includeRecovered`). */
function windowFailures(
  catalog: Catalog,
  sessions: CatalogSession[],
  includeRecovered: boolean,
): WindowFailure[] {
  const byDir = new Map(sessions.map((s) => [s.dir_name, s]));
  return catalog
    .failures(sessions.map((s) => s.dir_name))
    .filter((f) => includeRecovered || !f.recovered)
    .map((f) => ({ f, s: byDir.get(f.dir_name)!, facts: failureFacts(f, byDir.get(f.dir_name)!) }));
}

/**
 * The failures grouped by fingerprint, most frequent first. Their user regexes were primed (triage), so
 * `fingerprintOf` runs none here.
 */
function groupFailures(failures: WindowFailure[], window: TrendWindow, rules: CompiledRule[]): TriageGroup[] {
  const groups = new Map<string, GroupAccumulator>();
  for (const { f, s, facts } of failures) {
    const fp = fingerprintOf(facts, rules);
    const at = f.at ?? s.started_at ?? window.until;
    let acc = groups.get(fp.id);
    if (!acc) {
      acc = newGroup(fp, f, s, at);
      groups.set(fp.id, acc);
    }
    addFailure(acc, f, s, at, window);
  }
  const out = [...groups.values()].map((acc) => finishGroup(acc, window));
  return out.sort(
    (a, b) => b.count - a.count || b.sessions - a.sessions || a.fingerprint.localeCompare(b.fingerprint),
  );
}

function failureFacts(f: CatalogFailure, s: CatalogSession): FingerprintInput {
  return {
    tool: f.tool,
    code: f.code,
    category: f.category,
    detail: f.detail,
    className: f.class_name,
    process: f.process,
    window: f.window,
    target: f.target,
    status: f.status,
    scenario: s.scenario,
    host: s.host,
  };
}

function newGroup(fp: Fingerprint, f: CatalogFailure, s: CatalogSession, at: string): GroupAccumulator {
  return {
    group: {
      fingerprint: fp.id,
      key: clip(fp.key, 600),
      rule: fp.rule,
      tool: f.tool,
      code: f.code,
      // As the group key has it: a plain tool result has none (old logs stored the stand-in 'internal').
      category: serverCategory(f.code, f.category),
      detail: clip(normalizeDetail(f.detail), 300),
      className: f.class_name,
      process: f.process,
      count: 0,
      sessions: 0,
      scenarios: [],
      firstSeen: at,
      lastSeen: at,
      example: { sessionId: s.session_id, dirName: s.dir_name, seq: f.seq, detail: null },
      recovery: recoveryFor(serverCategory(f.code, f.category), f.code),
      trend: { buckets: new Array(TREND_BUCKETS).fill(0), runs: [], direction: 'steady' },
    },
    sessionSet: new Set(),
    scenarioSet: new Set(),
    halves: [0, 0],
    firstRunStart: Number.POSITIVE_INFINITY,
    newest: f,
  };
}

function addFailure(
  acc: GroupAccumulator,
  f: CatalogFailure,
  s: CatalogSession,
  at: string,
  window: TrendWindow,
): void {
  const g = acc.group;
  g.count += 1;
  acc.sessionSet.add(f.dir_name);
  if (s.scenario) acc.scenarioSet.add(s.scenario);
  if (Date.parse(at) < Date.parse(g.firstSeen)) g.firstSeen = at;
  if (Date.parse(at) >= Date.parse(g.lastSeen)) {
    g.lastSeen = at;
    acc.newest = f;
    g.example = { sessionId: s.session_id, dirName: s.dir_name, seq: f.seq, detail: null };
  }
  // Counted where its run started, as the runs are: the rates per run are then exact.
  const runStart = s.started_at ?? at;
  g.trend.buckets[window.bucketOf(runStart)]! += 1;
  acc.halves[Date.parse(runStart) < window.half ? 0 : 1] += 1;
  if (Date.parse(runStart) < acc.firstRunStart) acc.firstRunStart = Date.parse(runStart);
}

/** The group as reported: its distinct sessions and scenarios, the newest example's detail, its direction. */
function finishGroup(acc: GroupAccumulator, window: TrendWindow): TriageGroup {
  const g = acc.group;
  g.sessions = acc.sessionSet.size;
  g.scenarios = [...acc.scenarioSet].sort().map((x) => oneLine(x, 200));
  g.example.detail = acc.newest.detail === null ? null : clip(acc.newest.detail, 500);
  g.trend.runs = [...window.runsPerBucket];
  g.trend.direction = trendDirection(acc, window);
  return g;
}

/** The direction the sparkline shows: by failures per run, never by a window the runs do not fill. */
function trendDirection(acc: GroupAccumulator, window: TrendWindow): TrendDirection {
  const g = acc.group;
  // Runs before the last quarter all went without it (the first of them is the span's start).
  if (acc.firstRunStart >= window.startMs + window.span * 0.75 && window.runsBeforeLastQuarter > 0)
    return 'new';
  if (g.count === 1) return 'once';
  // Both halves hold a run (the span runs from the first to the last); a rate is failures per run.
  const [r0, r1] = [ratio(acc.halves[0], window.runsIn[0]), ratio(acc.halves[1], window.runsIn[1])];
  if (window.runsIn[0] === 0 || window.runsIn[1] === 0) return 'steady';
  // One failure more or less than the first half's rate predicts is noise (1 then 2 in as many runs), not a trend.
  const excess = acc.halves[1] - r0 * window.runsIn[1];
  if (r1 >= r0 * 1.5 && excess > 1) return 'rising';
  if (r1 <= r0 / 1.5 && excess < -1) return 'falling';
  return 'steady';
}

function flakyScenarios(sessions: CatalogSession[]): FlakyScenario[] {
  const by = new Map<string, CatalogSession[]>();
  for (const s of sessions) {
    if (!s.scenario || s.verdict === null) continue;
    by.set(s.scenario, [...(by.get(s.scenario) ?? []), s]);
  }
  const out: FlakyScenario[] = [];
  for (const [scenario, runs] of by) {
    const passed = runs.filter((r) => r.verdict === 'PASS').length;
    const failed = runs.length - passed;
    if (passed === 0 || failed === 0) continue;
    const last = runs.filter((r) => r.verdict === 'FAIL').at(-1)!;
    out.push({
      scenario: oneLine(scenario, 200),
      runs: runs.length,
      passed,
      failed,
      passRate: ratio(passed, runs.length),
      lastFailed: { sessionId: last.session_id, dirName: last.dir_name, startedAt: last.started_at },
    });
  }
  return out.sort((a, b) => b.failed - a.failed || a.scenario.localeCompare(b.scenario));
}

function toolRates(catalog: Catalog, names: string[]): ToolRate[] {
  const by = new Map<string, ToolRate>();
  for (const t of catalog.toolCounts(names)) {
    const r = by.get(t.tool) ?? {
      tool: oneLine(t.tool, 120),
      calls: 0,
      failures: 0,
      failureRate: 0,
      sessions: 0,
    };
    r.calls += t.calls;
    r.failures += t.failures;
    r.sessions += 1;
    by.set(t.tool, r);
  }
  const out = [...by.values()];
  for (const r of out) r.failureRate = ratio(r.failures, r.calls);
  return out.sort(
    (a, b) => b.failureRate - a.failureRate || b.calls - a.calls || a.tool.localeCompare(b.tool),
  );
}

function pct(x: number): string {
  return `${(x * 100).toFixed(x < 0.1 && x > 0 ? 1 : 0)}%`;
}

const SPARK = ' ▁▂▃▄▅▆▇█';

/**
 * A group's trend as a small bar per time slice: its failures per run there (the measure its direction is
 * decided by), '·' where it did not fail.
 */
export function sparkline(trend: { buckets: number[]; runs?: number[] }): string {
  const rates = trend.buckets.map((n, i) => {
    const runs = trend.runs?.[i] ?? 0;
    return runs > 0 ? n / runs : n;
  });
  const max = Math.max(...rates);
  return rates.map((r) => (r === 0 ? '·' : SPARK[Math.max(1, Math.round((r / max) * 8))]!)).join('');
}

function windowLine(r: TriageReport): string {
  const since = r.window.since ? `since ${utcMinute(r.window.since)}` : 'all time';
  const scen = r.scenario ? `, scenario ${JSON.stringify(r.scenario)}` : '';
  const s = r.sessions;
  return `${s.total} session${s.total === 1 ? '' : 's'} (${since}${scen}): ${s.passed} PASS, ${s.failed} FAIL${s.running ? `, ${s.running} running` : ''}${s.unreadable ? `, ${s.unreadable} unreadable` : ''}`;
}

/** A line per session held by more than one dir: counted once, from the first dir named. */
function copiesLines(r: TriageReport): string[] {
  return r.copies.map(copiesLine);
}

/** The report for a terminal. */
export function renderTriageText(r: TriageReport, options: { maxGroups?: number } = {}): string {
  const lines: string[] = [windowLine(r), ...copiesLines(r), ''];
  const groups = r.groups.slice(0, options.maxGroups ?? 20);
  lines.push(
    groups.length === 0
      ? `No ${r.includeRecovered ? '' : 'unrecovered '}failures.`
      : `Recurring ${r.includeRecovered ? '' : 'unrecovered '}failures (${r.groups.length} ${r.groups.length === 1 ? 'fingerprint' : 'fingerprints'}):`,
  );
  for (const g of groups) {
    lines.push(
      '',
      `  ${g.count} x in ${g.sessions} session${g.sessions === 1 ? '' : 's'}  ${sparkline(g.trend)} ${g.trend.direction}  ${g.fingerprint}${g.rule ? ` (${g.rule})` : ''}`,
      `    ${oneLine(g.tool, 40)} ${g.code ?? '-'}${g.category ? ` (${g.category})` : ''}${g.className || g.process ? ` on ${[g.className, g.process].filter(Boolean).join(', ')}` : ''}`,
      `    ${oneLine(g.detail, 160)}`,
      `    first ${g.firstSeen.slice(0, 19)}Z, last ${g.lastSeen.slice(0, 19)}Z; example ${g.example.sessionId} call #${g.example.seq}`,
    );
    if (g.recovery) lines.push(`    next: ${g.recovery}`);
  }
  if (r.groups.length > groups.length)
    lines.push('', `  ... and ${r.groups.length - groups.length} more (--json lists all)`);
  lines.push('');
  if (r.flaky.length === 0) lines.push('No flaky scenarios (none both passed and failed).');
  else {
    lines.push('Flaky scenarios (both PASS and FAIL):');
    for (const f of r.flaky) {
      lines.push(
        `  ${pct(f.passRate).padStart(4)} pass  ${f.passed}/${f.runs}  ${oneLine(f.scenario, 80)}  (last FAIL ${f.lastFailed.sessionId})`,
      );
    }
  }
  const failing = r.tools.filter((t) => t.failures > 0);
  if (failing.length > 0) {
    lines.push('', 'Failure rate per tool:');
    for (const t of failing.slice(0, 15)) {
      lines.push(
        `  ${pct(t.failureRate).padStart(5)}  ${String(t.failures).padStart(6)} of ${String(t.calls).padEnd(7)} ${oneLine(t.tool, 40)}`,
      );
    }
  }
  return lines.join('\n');
}

/** An ISO time to the minute, marked UTC ("2026-12-07 22:07Z"): a pasted report is read in other zones. */
function utcMinute(iso: string): string {
  return `${iso.slice(0, 16).replace('T', ' ')}Z`;
}

function md(text: string): string {
  return text.replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

/** The report as Markdown, to paste into an issue. */
export function renderTriageMarkdown(r: TriageReport, options: { maxGroups?: number } = {}): string {
  const out: string[] = ['## Triage', '', md(windowLine(r)), ...copiesLines(r).map((l) => `- ${md(l)}`), ''];
  const groups = r.groups.slice(0, options.maxGroups ?? 20);
  out.push(`### Recurring ${r.includeRecovered ? '' : 'unrecovered '}failures`, '');
  if (groups.length === 0) out.push('None.', '');
  else {
    out.push(
      '| count | sessions | tool | code (category) | target | detail | first seen | last seen | trend | example |',
    );
    out.push('|---:|---:|---|---|---|---|---|---|---|---|');
    for (const g of groups) {
      out.push(
        `| ${g.count} | ${g.sessions} | ${md(g.tool)} | ${md(g.code ?? '-')}${g.category ? ` (${md(g.category)})` : ''} | ${md([g.className, g.process].filter(Boolean).join(', ') || '-')} | ${md(clip(g.detail, 120))} | ${utcMinute(g.firstSeen)} | ${utcMinute(g.lastSeen)} | ${sparkline(g.trend).replaceAll('·', '.')} ${g.trend.direction} | ${md(g.example.sessionId)} #${g.example.seq} |`,
      );
    }
    out.push('');
    for (const g of groups.filter((x) => x.recovery))
      out.push(`- \`${g.fingerprint}\` next: ${md(g.recovery!)}`);
    if (r.groups.length > groups.length)
      out.push(
        `- ... and ${r.groups.length - groups.length} more ${r.groups.length - groups.length === 1 ? 'fingerprint' : 'fingerprints'}`,
      );
    out.push('');
  }
  out.push('### Flaky scenarios', '');
  if (r.flaky.length === 0) out.push('None.', '');
  else {
    out.push('| scenario | pass rate | passed | runs | last FAIL |', '|---|---:|---:|---:|---|');
    for (const f of r.flaky)
      out.push(
        `| ${md(f.scenario)} | ${pct(f.passRate)} | ${f.passed} | ${f.runs} | ${md(f.lastFailed.sessionId)} |`,
      );
    out.push('');
  }
  const failing = r.tools.filter((t) => t.failures > 0);
  out.push('### Failure rate per tool', '');
  if (failing.length === 0) out.push('No failed calls.');
  else {
    out.push('| tool | failure rate | failures | calls |', '|---|---:|---:|---:|');
    for (const t of failing)
      out.push(`| ${md(t.tool)} | ${pct(t.failureRate)} | ${t.failures} | ${t.calls} |`);
  }
  return `${out.join('\n')}\n`;
}

/** The largest fingerprint rules file read (a thousand rules take a few dozen KB). */
const MAX_RULES_FILE_BYTES = 1024 * 1024;

/** The name of the user rules file looked for in the sessions dir when `--rules` is not given. */
export const RULES_FILE = 'fingerprint-rules.json';

/**
 * Read and check a fingerprint rules file (`schema/fingerprint-rules.schema.json`); throws with every
 * problem found. `optional`: a missing file gives no rules.
 */
export function loadFingerprintRules(file: string, options: { optional?: boolean } = {}): CompiledRule[] {
  let text: string;
  if (options.optional) {
    // The sessions dir's own file came with the sessions (a CI artifact, a colleague's copy): a regular file
    // only (a FIFO there blocked every triage for ever, a symlink read a file from anywhere), and small.
    try {
      text = decodeTextBytes(readRegularFile(file, MAX_RULES_FILE_BYTES));
    } catch (err) {
      if (!(err instanceof NotARegularFileError)) throw err;
      if (err.reason === 'missing') return [];
      throw new Error(
        `${file}: ${err.reason === 'too-big' ? `over ${MAX_RULES_FILE_BYTES} bytes` : 'not a regular file (a symlink, FIFO or device)'}; rules files are small JSON files`,
      );
    }
  } else {
    const st = fs.statSync(file);
    if (!st.isFile()) throw new Error(`${file}: not a regular file`);
    if (st.size > MAX_RULES_FILE_BYTES)
      throw new Error(`${file}: over ${MAX_RULES_FILE_BYTES} bytes; rules files are small JSON files`);
    text = readTextFile(file);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not JSON: ${(err as Error).message}`);
  }
  const parsed = parseFingerprintRules(value);
  if (!parsed.ok) throw new Error(`${file}: ${parsed.problems.join('; ')}`);
  return compileRules(parsed.rules);
}
