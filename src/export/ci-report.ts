/**
 * CI outputs over recorded sessions: a JUnit XML report (a testcase per session, in the Ant JUnit schema
 * that Jenkins, GitLab and GitHub test reporters read) and GitHub Actions annotations. Pure: the caller
 * reads the sessions (selectSessions, readCiSessions) and writes the text.
 */
import fs from 'node:fs';
import path from 'node:path';
import { copiesLine, type SessionCopies } from '../paths/naming.js';
import { escapeFormatChars } from '../report/text.js';
import type { SessionSummary } from '../report/types.js';
import { listSessions, type SessionLocation } from '../store/session-reader.js';

/** One session as a CI result. */
export interface CiSession {
  dir: string;
  dirName: string;
  /** The bug bundle beside the session dir, when one was made. */
  bundle: string | null;
  /** Null when the log could not be read (`error` says why). */
  summary: SessionSummary | null;
  /** The failure summary's first lines, for a FAIL. */
  summaryHead: string | null;
  error?: string;
  /**
   * The dir names of this session's copies (other dirs whose logs have the same id and start), left out of
   * the counts: set on the dir counted (`readCiSessions`), absent when there are none.
   */
  copies?: string[];
}

/** Which sessions: started within `sinceMs` of `now`, of one scenario; all by default. */
export interface SessionSelection {
  sinceMs?: number;
  now?: Date;
}

/** Session dirs under `sessionsDir` started within the window (from the dir name's UTC stamp), oldest first. */
export function selectSessions(sessionsDir: string, selection: SessionSelection = {}): SessionLocation[] {
  const all = listSessions(sessionsDir);
  if (selection.sinceMs === undefined) return all;
  const from = (selection.now ?? new Date()).getTime() - selection.sinceMs;
  return all.filter((loc) => stampTime(loc.stamp) >= from);
}

function stampTime(stamp: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(stamp);
  if (!m) return 0;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

/** The zip `mcec-bundle` writes by default for a session dir, when it exists. */
export function bundleBeside(dir: string): string | null {
  const zip = path.join(path.dirname(dir), `${path.basename(dir)}.zip`);
  return fs.existsSync(zip) ? zip : null;
}

// XML 1.0 allows tab, LF, CR and everything from U+0020 except the surrogates and U+FFFE/U+FFFF.
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

function xml(text: string): string {
  return text
    .replace(NOT_XML, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Text inside an element; CDATA would break on `]]>`, so escape instead. */
function xmlText(text: string): string {
  return xml(text).replace(/\r/g, '&#13;');
}

function seconds(ms: number | null | undefined): string {
  return ((ms ?? 0) / 1000).toFixed(3);
}

/** The schema wants `yyyy-mm-ddThh:mm:ss` (no zone, no fraction); the value is UTC. */
function timestamp(iso: string | null | undefined): string {
  const d = iso ? new Date(iso) : new Date(0);
  return (Number.isNaN(d.getTime()) ? new Date(0) : d).toISOString().slice(0, 19);
}

/** The scenario a session is filed under (its testsuite and classname). */
export function scenarioOf(s: CiSession): string {
  return s.summary?.scenario?.trim() || 'mcec-recorder';
}

function failureBody(s: CiSession): string {
  const lines: string[] = [];
  if (s.summaryHead) lines.push(s.summaryHead.trimEnd(), '');
  lines.push(`Session dir: ${s.dir}`);
  lines.push(s.bundle ? `Bundle: ${s.bundle}` : `Bundle: mcec-bundle ${s.summary?.sessionId ?? s.dirName}`);
  const copies = copiesOfCi(s);
  if (copies) lines.push(copiesLine(copies));
  return lines.join('\n');
}

/** A session counted with copies left out: its id and dirs, the counted one first; null without copies. */
export function copiesOfCi(s: CiSession): SessionCopies | null {
  if (!s.copies?.length) return null;
  return { sessionId: s.summary?.sessionId ?? s.dirName, dirNames: [s.dirName, ...s.copies] };
}

function testcase(s: CiSession): string {
  const name = xml(s.dirName);
  const classname = xml(scenarioOf(s));
  const time = seconds(s.summary?.durationMs);
  const open = `    <testcase name="${name}" classname="${classname}" time="${time}"`;
  if (!s.summary) {
    const message = `the session log could not be read: ${s.error ?? 'unknown error'}`;
    return `${open}>\n      <error type="unreadable" message="${xml(message)}">${xmlText(s.dir)}</error>\n    </testcase>`;
  }
  if (s.summary.status === 'open') {
    return `${open}>\n      <skipped message="still recording: no verdict yet"/>\n    </testcase>`;
  }
  if (s.summary.verdict === 'FAIL') {
    return `${open}>\n      <failure type="FAIL" message="${xml(s.summary.verdictReason)}">${xmlText(failureBody(s))}</failure>\n    </testcase>`;
  }
  return `${open}/>`;
}

/** A JUnit XML report: one testsuite per scenario, one testcase per session (FAIL a failure). */
export function junitXml(sessions: CiSession[], options: { hostname: string }): string {
  const groups = new Map<string, CiSession[]>();
  for (const s of sessions) {
    const key = scenarioOf(s);
    const list = groups.get(key);
    if (list) list.push(s);
    else groups.set(key, [s]);
  }
  const suites: string[] = [];
  for (const [scenario, list] of groups) {
    const failures = list.filter(
      (s) => s.summary && s.summary.status !== 'open' && s.summary.verdict === 'FAIL',
    );
    const errors = list.filter((s) => !s.summary);
    const skipped = list.filter((s) => s.summary?.status === 'open');
    const time = list.reduce((sum, s) => sum + (s.summary?.durationMs ?? 0), 0);
    const first = list.map((s) => s.summary?.startedAt).find((t) => t) ?? null;
    // Copies of a session are one testcase: say which dirs were left out where a test reporter shows it.
    const copies = list.map(copiesOfCi).filter((c): c is SessionCopies => c !== null);
    suites.push(
      [
        `  <testsuite name="${xml(scenario)}" package="mcec-recorder" id="${suites.length}" hostname="${xml(options.hostname || 'localhost')}" timestamp="${timestamp(first)}" tests="${list.length}" failures="${failures.length}" errors="${errors.length}" skipped="${skipped.length}" time="${seconds(time)}">`,
        '    <properties>',
        `      <property name="scenario" value="${xml(scenario)}"/>`,
        ...copies.map(
          (c) => `      <property name="mcec.copies" value="${xml(JSON.stringify(c.dirNames))}"/>`,
        ),
        '    </properties>',
        ...list.map(testcase),
        copies.length === 0
          ? '    <system-out/>'
          : `    <system-out>${xmlText(copies.map(copiesLine).join('\n'))}</system-out>`,
        '    <system-err/>',
        '  </testsuite>',
      ].join('\n'),
    );
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n${suites.join('\n')}\n</testsuites>\n`;
}

/**
 * GitHub's workflow-command escaping (data escapes % CR LF, properties also `:` and `,`), after the control
 * and bidi characters a terminal would run (an OSC 52 clipboard write, a screen clear, NUL, U+0085, U+202E)
 * are written as `\uXXXX`, as every other command prints recorded text.
 */
function ghData(text: string): string {
  return escapeFormatChars(text).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
function ghProperty(text: string): string {
  return ghData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** GitHub Actions annotations: an `::error` per FAIL or unreadable session, a `::notice` tally. */
export function githubAnnotations(sessions: CiSession[]): string {
  const lines: string[] = [];
  let failed = 0;
  for (const s of sessions) {
    if (!s.summary) {
      failed += 1;
      lines.push(
        `::error title=${ghProperty(`mcec session ${s.dirName} unreadable`)}::${ghData(s.error ?? s.dir)}`,
      );
      continue;
    }
    if (s.summary.status === 'open' || s.summary.verdict !== 'FAIL') continue;
    failed += 1;
    const title = `FAIL ${scenarioOf(s)} (${s.summary.sessionId})`;
    lines.push(
      `::error title=${ghProperty(title)}::${ghData(`${s.summary.verdictReason}\n${failureBody(s)}`)}`,
    );
  }
  const passed = sessions.filter(
    (s) => s.summary && s.summary.status !== 'open' && s.summary.verdict === 'PASS',
  ).length;
  const copies = sessions.reduce((n, s) => n + (s.copies?.length ?? 0), 0);
  const copiesNote =
    copies === 0
      ? ''
      : ` (${copies} more dir${copies === 1 ? ' was a copy' : 's were copies'}, counted once)`;
  lines.push(
    `::notice title=mcec-recorder::${ghData(`${sessions.length} session${sessions.length === 1 ? '' : 's'}: ${passed} PASS, ${failed} FAIL or unreadable${copiesNote}`)}`,
  );
  return `${lines.join('\n')}\n`;
}
