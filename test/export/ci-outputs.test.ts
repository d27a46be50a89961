/** `mcec-bundle junit` and `--format github` on real sessions: a passing and a failing run. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { selectSessions } from '../../src/export/ci-report.js';
import { createRecorder } from '../../src/record/index.js';
import { copyOfDemoSession, recordPassingRun, useDemoSession } from '../support/demo-session.js';
import { tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const XSD = fs.readFileSync(path.join(ROOT, 'test/support/junit/JUnit.xsd'), 'utf8');
const demoSession = useDemoSession();
let root: string;
let sessions: string;
let failedId: string;
let passedId: string;

function bundleCli(args: string[]) {
  return spawnSync(
    process.execPath,
    [path.join(ROOT, 'dist/cli/mcec-bundle.js'), ...args, '--sessions', sessions],
    {
      encoding: 'utf8',
    },
  );
}

beforeAll(async () => {
  root = tempDir('mcec-junit-');
  sessions = path.join(root, 'sessions');
  // A copy: a passing run is recorded beside it.
  failedId = copyOfDemoSession(demoSession(), sessions).sessionId;
  // A passing run of another scenario, with characters XML must escape in its name.
  await recordPassingRun(sessions, 'login & "search" <fast>');
  passedId = 'pass-1';
}, 60_000);

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('mcec-bundle junit', () => {
  it('writes JUnit XML that the Ant JUnit schema accepts, naming the failed session', async () => {
    const out = path.join(root, 'results.xml');
    const res = bundleCli(['junit', '-o', out]);
    expect(res.stderr).toContain('wrote');
    expect(res.status).toBe(0);
    const text = fs.readFileSync(out, 'utf8');
    const check = await validateXML({ xml: [{ fileName: 'results.xml', contents: text }], schema: [XSD] });
    expect(check.errors).toEqual([]);
    expect(check.valid).toBe(true);
    // One testsuite per scenario, one testcase per session.
    expect(text.match(/<testsuite /g)).toHaveLength(2);
    expect(text.match(/<testcase /g)).toHaveLength(2);
    const failure =
      /<testcase name="([^"]+)"[^>]*>\s*<failure type="FAIL" message="([^"]*)">([^<]*)<\/failure>/.exec(text);
    expect(failure).not.toBeNull();
    expect(failure![1]).toContain(failedId);
    expect(failure![3]).toContain('Bundle:');
    expect(failure![3]).toContain('# '); // the failure summary's heading
    expect(text).toContain('login &amp; &quot;search&quot; &lt;fast&gt;');
    expect(text).toMatch(new RegExp(`<testcase name="[^"]*${passedId}"[^>]*/>`));
  });

  it('--format github prints an error annotation for the failed session and a tally', () => {
    const res = bundleCli(['junit', '--format', 'github']);
    expect(res.status).toBe(0);
    const lines = res.stdout.trim().split('\n');
    const errors = lines.filter((l) => l.startsWith('::error '));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(failedId);
    // Workflow commands are one line each: newlines inside are escaped.
    expect(errors[0]).toContain('%0A');
    expect(lines.at(-1)).toBe('::notice title=mcec-recorder::2 sessions: 1 PASS, 1 FAIL or unreadable');
  });

  it('--since keeps sessions started within the window, by the UTC stamp of their dir', () => {
    const all = selectSessions(sessions);
    expect(all).toHaveLength(2);
    const started = Date.parse(
      `${all[0]!.stamp.replace(/^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/, '$1-$2-$3T$4:$5:$6')}Z`,
    );
    expect(selectSessions(sessions, { sinceMs: 60_000, now: new Date(started + 30_000) })).toHaveLength(2);
    expect(selectSessions(sessions, { sinceMs: 60_000, now: new Date(started + 3_600_000) })).toHaveLength(0);
    expect(bundleCli(['junit', '--since', '30d', '--format', 'github']).stdout).toContain('2 sessions');
    expect(bundleCli(['junit', '--format', 'tap']).status).toBe(2);
  });
});

describe('mcec-bundle junit --format github with hostile names', () => {
  it('writes no control or bidi character of a scenario name or error to the terminal', async () => {
    const dir = path.join(root, 'hostile-sessions');
    const evil = 'save\x1b]52;c;ZXZpbA==\x07 \x1b[2J\x00 next\u0085line \u202eevil';
    const recorder = createRecorder({ sessionsDir: dir, scenario: evil, stderr: () => {} });
    const envelope = {
      sessionId: 'evil-1',
      ok: false,
      error: { code: 'window-not-found', category: 'not-found', detail: `no window ${evil}` },
    };
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      content: [{ type: 'text', text: JSON.stringify(envelope) }],
      isError: true,
    }));
    await call('find', { sessionId: 'evil-1', window: evil });
    await recorder.end('evil-1', { passed: false });
    await recorder.close();
    const res = spawnSync(
      process.execPath,
      [path.join(ROOT, 'dist/cli/mcec-bundle.js'), 'junit', '--format', 'github', '--sessions', dir],
      { encoding: 'utf8' },
    );
    expect(res.stdout).toContain('::error ');
    // Only printable text and the lines' own breaks.
    expect(res.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    expect(res.stdout).toContain('\\u001b]52;c;ZXZpbA==\\u0007');
    expect(res.stdout).toContain('\\u202eevil');
  });
});
