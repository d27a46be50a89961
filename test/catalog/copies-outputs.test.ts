/**
 * A recorded failing session copied once (`<dir> (2)`, as a file manager copies it) beside a passing one,
 * through the built mcec-bundle: the JUnit report, the GitHub annotations and the OTLP export count the copied
 * session once and name the copy; prune never removes the copy and says it did not consider it; the `list`
 * table tells the copy's row from its original's, and is unchanged without copies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { SessionReader } from '../../src/store/session-reader.js';
import { copyOfDemoSession, recordPassingRun, useDemoSession } from '../support/demo-session.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { CLI, cli, ROOT, runNode, scratchRoot, validator } from './helpers.js';

const XSD = fs.readFileSync(path.join(ROOT, 'test/support/junit/JUnit.xsd'), 'utf8');
const demoSession = useDemoSession();
const root = scratchRoot();
const sessionsDir = path.join(root, 'sessions');
let failedId: string;
let DIR: string;
let COPY: string;
let PASSED: string;

function callsOf(dir: string): number {
  const reader = SessionReader.open(dir);
  try {
    return [...reader.calls()].length;
  } finally {
    reader.close();
  }
}

beforeAll(async () => {
  const demo = copyOfDemoSession(demoSession(), sessionsDir);
  failedId = demo.sessionId;
  DIR = path.basename(demo.sessionDir);
  COPY = `${DIR} (2)`;
  fs.cpSync(demo.sessionDir, path.join(sessionsDir, COPY), { recursive: true });
  PASSED = await recordPassingRun(sessionsDir, 'login');
}, 120_000);

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('a failing session copied once: the CI outputs count it once', () => {
  it('junit: one testcase and one failure, the copy named in the suite and the failure', async () => {
    const out = path.join(root, 'results.xml');
    const res = cli(['junit', '-o', out, '--json', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    const summary = JSON.parse(res.stdout);
    expect(validator('junit-summary.schema.json')(summary)).toEqual([]);
    expect(summary).toMatchObject({ sessions: 2, passed: 1, failed: 1, unreadable: 0 });
    expect(summary.copies).toEqual([{ sessionId: failedId, dirNames: [DIR, COPY] }]);

    const text = fs.readFileSync(out, 'utf8');
    const check = await validateXML({ xml: [{ fileName: 'results.xml', contents: text }], schema: [XSD] });
    expect(check.errors).toEqual([]);
    expect(text.match(/<testcase /g)).toHaveLength(2);
    expect(text.match(/<failure /g)).toHaveLength(1);
    expect(text).toContain(`<testcase name="${DIR}"`);
    expect(text).not.toContain(`<testcase name="${COPY}"`);
    const failedSuite = text.split('<testsuite ').find((s) => s.includes(`<testcase name="${DIR}"`))!;
    expect(failedSuite).toMatch(/tests="1" failures="1"/);
    expect(failedSuite).toContain(
      `<property name="mcec.copies" value="${JSON.stringify([DIR, COPY]).replaceAll('"', '&quot;')}"/>`,
    );
    const line = `session ${failedId} is in 2 dirs (copies of one run), counted once from "${DIR}"; left out: "${COPY}"`;
    const quoted = line.replaceAll('"', '&quot;');
    expect(failedSuite).toContain(`<system-out>${quoted}</system-out>`);
    expect(/<failure [^>]*>([^<]*)<\/failure>/.exec(failedSuite)![1]).toContain(quoted);
    // The suite without copies keeps its empty system-out and no copies property.
    const passedSuite = text.split('<testsuite ').find((s) => s.includes(PASSED))!;
    expect(passedSuite).toContain('<system-out/>');
    expect(passedSuite).not.toContain('mcec.copies');

    const plain = cli(['junit', '--sessions', sessionsDir]);
    expect(plain.stdout.match(/<testcase /g)).toHaveLength(2);
    expect(plain.stderr).toBe(`mcec-bundle: ${line}\n`);
  });

  it('junit --format github: one error annotation, the tally says a dir was a copy', () => {
    const res = cli(['junit', '--format', 'github', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('::error '))).toHaveLength(1);
    expect(lines.at(-1)).toBe(
      '::notice title=mcec-recorder::2 sessions: 1 PASS, 1 FAIL or unreadable (1 more dir was a copy, counted once)',
    );
  });

  it('export: one trace per session, the copy not sent and named', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const args = [CLI, 'export', '--since', '3650d', '--otlp', receiver.url, '--sessions', sessionsDir];
      const res = await runNode([...args, '--json']);
      expect(res.code, res.stderr).toBe(0);
      const result = JSON.parse(res.stdout);
      expect(validator('export.schema.json')(result)).toEqual([]);
      expect(result).toMatchObject({ sessions: 2, dropped: 0, unreadable: [] });
      expect(result.copies).toEqual([{ sessionId: failedId, dirNames: [DIR, COPY] }]);
      const expected = callsOf(path.join(sessionsDir, DIR)) + 1 + callsOf(path.join(sessionsDir, PASSED)) + 1;
      expect(result.spans).toBe(expected);
      expect(receiver.spans).toHaveLength(expected);
      expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(2);

      const text = await runNode(args);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('from 2 sessions');
      expect(text.stderr).toContain(
        `mcec-bundle: session ${failedId} is in 2 dirs (copies of one run), counted once from "${DIR}"; left out: "${COPY}"`,
      );
    } finally {
      await receiver.close();
    }
  });
});

describe('the list table with a copy', () => {
  it("names each copy's dir in a last column; no such column without copies", () => {
    const res = cli(['list', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +SERVER +START \(UTC\) +DURATION +CALLS +FAILURES +VERDICT +DIR$/);
    const copies = lines.filter((l) => l.startsWith(failedId));
    expect(copies.map((l) => l.slice(l.lastIndexOf('  ') + 2)).sort()).toEqual(
      [JSON.stringify(DIR), JSON.stringify(COPY)].sort(),
    );
    // The verdict column is padded to line the dirs up; the other row ends at its verdict.
    expect(copies[0]!.indexOf('"')).toBe(copies[1]!.indexOf('"'));
    expect(lines.find((l) => l.startsWith('pass-1'))).toMatch(/PASS$/);

    const single = path.join(root, 'single');
    fs.cpSync(path.join(sessionsDir, DIR), path.join(single, DIR), { recursive: true });
    fs.cpSync(path.join(sessionsDir, PASSED), path.join(single, PASSED), { recursive: true });
    const plain = cli(['list', '--sessions', single]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.split('\n')[0]).toMatch(
      /^ID +SERVER +START \(UTC\) +DURATION +CALLS +FAILURES +VERDICT$/,
    );
    expect(plain.stdout).not.toContain('"');
  });
});

describe('prune with a copy and a renamed dir', () => {
  const pruneRoot = path.join(root, 'prune');
  const BY_HAND = 'nightly run';
  beforeAll(() => {
    fs.cpSync(sessionsDir, pruneRoot, { recursive: true });
    fs.renameSync(path.join(pruneRoot, PASSED), path.join(pruneRoot, BY_HAND));
  });

  it('removes only the own dirs, says which dirs it did not consider and what to do, keeps them', () => {
    const args = ['prune', '--older-than', '0', '--keep-recent', '0', '--sessions', pruneRoot];
    const dry = cli([...args, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    const report = JSON.parse(dry.stdout);
    expect(validator('prune.schema.json')(report)).toEqual([]);
    expect(report.removed.map((r: { dirName: string }) => r.dirName)).toEqual([DIR]);
    expect(report.skipped).toEqual([
      expect.objectContaining({ dirName: COPY, sessionId: failedId, copyOf: DIR, reason: 'not-own-dir' }),
      expect.objectContaining({ dirName: BY_HAND, sessionId: 'pass-1', copyOf: null, reason: 'not-own-dir' }),
    ]);
    expect(report.skipped[1].detail).toContain(`rename it to "${PASSED}"`);

    const res = cli(args);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`removed ${path.join(pruneRoot, DIR)}`);
    expect(res.stderr).toContain(
      `not considered ${path.join(pruneRoot, COPY)}: a copy of "${DIR}" (session ${failedId}): prune removes only a session's own <stamp>-<id> dir, never a copy; delete it by hand when it is not needed`,
    );
    expect(res.stderr).toContain(`not considered ${path.join(pruneRoot, BY_HAND)}: session pass-1`);
    expect(fs.existsSync(path.join(pruneRoot, DIR))).toBe(false);
    expect(fs.existsSync(path.join(pruneRoot, COPY, 'session.sqlite'))).toBe(true);
    expect(fs.existsSync(path.join(pruneRoot, BY_HAND, 'session.sqlite'))).toBe(true);
    // With its own dir gone, the copy is a renamed dir: prune says the name that lets it judge the copy.
    const again = JSON.parse(cli([...args, '--json']).stdout);
    expect(again.skipped[0]).toMatchObject({ dirName: COPY, copyOf: null });
    expect(again.skipped[0].detail).toContain(`rename it to "${DIR}"`);
  });
});
