/**
 * A recorded failing session copied once (`<dir> (2)`, as a file manager copies it) beside a passing one,
 * through the built mcec-bundle: the JUnit report, the GitHub annotations and the OTLP export count the copied
 * session once and name the copy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { createRecorder } from '../../src/record/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { copyOfDemoSession, useDemoSession } from '../support/demo-session.js';
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

/** A passing run recorded by the recorder (one call, declared passed), its dir's name. */
async function recordPassingRun(dir: string): Promise<string> {
  const recorder = createRecorder({ sessionsDir: dir, scenario: 'login', stderr: () => {} });
  const envelope = { sessionId: 'pass-1', ok: true, result: { windows: [] } };
  const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    content: [{ type: 'text', text: JSON.stringify(envelope) }],
  }));
  await call('windows', { sessionId: 'pass-1' });
  await recorder.end('pass-1', { passed: true });
  await recorder.close();
  return fs.readdirSync(dir).find((n) => n.endsWith('-pass-1'))!;
}

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
  PASSED = await recordPassingRun(sessionsDir);
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
