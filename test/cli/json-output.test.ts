/**
 * `--json` on every mcec-bundle command that prints results: the built CLI run on sessions made by the
 * recorder and the demo, each output validated against its schema file (strict Ajv2020, every schema file
 * loaded so cross-file references resolve).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDemoSessions, schemaValidator } from '../mcp-server/helpers.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { fileTimesMatchClock, removeDir, tempDir } from '../support/temp.js';

const validate = schemaValidator();
let root: string;
let sessions: string;
let failId: string;
let passName: string;

beforeAll(async () => {
  root = tempDir('mcec-json-');
  sessions = path.join(root, 'sessions');
  const made = await recordDemoSessions(sessions);
  failId = made.failId;
  passName = path.basename(made.passDir);
}, 120_000);

afterAll(() => removeDir(root));

/** Run `mcec-bundle <args> --sessions DIR`; returns the exit code and the parsed stdout. */
async function json(args: string[]): Promise<{ code: number | null; value: unknown; stderr: string }> {
  // verify reads a zip, not the sessions dir: it has no --sessions.
  const run = await runNode([BUNDLE_CLI, ...args, ...(args[0] === 'verify' ? [] : ['--sessions', sessions])]);
  let value: unknown;
  try {
    value = JSON.parse(run.stdout);
  } catch {
    throw new Error(`not JSON (rc ${run.code}): ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
  }
  return { code: run.code, value, stderr: run.stderr };
}

async function expectValid(schema: string, args: string[], code = 0): Promise<unknown> {
  const res = await json(args);
  expect(res.code, res.stderr).toBe(code);
  expect(validate(schema, res.value), `${args.join(' ')} against ${schema}`).toEqual([]);
  return res.value;
}

describe('--json output follows its schema', () => {
  it('bundle and verify (a good zip, and a damaged one: ok false, exit 1)', async () => {
    const bundle = (await expectValid('bundle-result', [failId, '--json'])) as {
      bundle: string;
      sessionId: string;
    };
    expect(bundle.sessionId).toBe(failId);
    const ok = (await expectValid('verify', ['verify', bundle.bundle, '--json'])) as { ok: boolean };
    expect(ok.ok).toBe(true);
    const bad = path.join(root, 'bad.zip');
    const bytes = fs.readFileSync(bundle.bundle);
    const at = Math.floor(bytes.length / 3);
    bytes[at] = bytes[at]! ^ 0xff;
    fs.writeFileSync(bad, bytes);
    const broken = (await expectValid('verify', ['verify', bad, '--json'], 1)) as {
      ok: boolean;
      problems: string[];
    };
    expect(broken.ok).toBe(false);
    expect(broken.problems.length).toBeGreaterThan(0);
  });

  it('list, index and triage', async () => {
    const list = (await expectValid('session-listing', ['list', '--json'])) as unknown[];
    expect(list).toHaveLength(2);
    const index = (await expectValid('index', ['index', '--json'])) as { sessions: number; indexed: number };
    expect(index).toMatchObject({ sessions: 2, indexed: 2 });
    await expectValid('triage', ['triage', '--json']);
  });

  it('show, summary, report and report --all', async () => {
    const facts = (await expectValid('summary', ['show', failId, '--json'])) as {
      markdown: string;
      note: null;
    };
    expect(facts.markdown).toContain('frame-all-black');
    expect(facts.note).toBeNull();
    const summary = (await expectValid('written-file', ['summary', failId, '--json'])) as { path: string };
    expect(fs.existsSync(summary.path)).toBe(true);
    const report = (await expectValid('written-file', ['report', failId, '--json'])) as { kind: string };
    expect(report.kind).toBe('report-html');
    const index = (await expectValid('written-file', ['report', '--all', '--json'])) as {
      kind: string;
      path: string;
    };
    expect(index).toMatchObject({ kind: 'index-html', path: path.join(sessions, 'index.html') });
  });

  it('diff --last-pass and verdict', async () => {
    const out = path.join(root, 'diff-out');
    fs.mkdirSync(out);
    const diff = (await expectValid('diff', ['diff', failId, '--last-pass', '--json', '-o', out])) as {
      a: { dirName: string };
    };
    expect(diff.a.dirName).toBe(passName);
    const verdict = (await expectValid('verdict', [
      'verdict',
      passName,
      'pass',
      '-r',
      'checked',
      '--json',
    ])) as {
      verdict: string;
    };
    expect(verdict.verdict).toBe('PASS');
  });

  // "Written within --keep-recent" is told by file times, which must agree with the clock (not under faketime).
  const withFileClock = it.skipIf(!fileTimesMatchClock());
  withFileClock('prune --dry-run: kept (written within --keep-recent) and removed', async () => {
    const kept = (await expectValid('prune', ['prune', '--older-than', '1ms', '--dry-run', '--json'])) as {
      kept: unknown[];
      removed: unknown[];
    };
    expect(kept.removed).toEqual([]);
    expect(kept.kept).toHaveLength(2);
    const removed = (await expectValid('prune', [
      'prune',
      '--older-than',
      '1ms',
      '--keep-recent',
      '0',
      '--dry-run',
      '--json',
    ])) as { removed: unknown[]; dryRun: boolean };
    expect(removed).toMatchObject({ dryRun: true });
    expect(removed.removed).toHaveLength(2);
    expect(fs.readdirSync(sessions).filter((n) => /^\d{8}-\d{6}-[^.]+$/.test(n))).toHaveLength(2);
  });

  it('junit -o FILE --json (and --json without -o is bad usage), export --json', async () => {
    const file = path.join(root, 'results.xml');
    const junit = (await expectValid('junit-summary', ['junit', '-o', file, '--json'])) as {
      passed: number;
      failed: number;
    };
    expect(junit).toMatchObject({ passed: 1, failed: 1 });
    expect(fs.readFileSync(file, 'utf8')).toContain('<testsuite');
    const usage = await runNode([BUNDLE_CLI, 'junit', '--json', '--sessions', sessions]);
    expect(usage.code).toBe(2);

    const receiver = await startOtlpReceiver();
    try {
      const exported = (await expectValid('export', [
        'export',
        failId,
        '--otlp',
        receiver.url,
        '--json',
      ])) as {
        exported: number;
        spans: number;
      };
      expect(exported.exported).toBe(exported.spans);
    } finally {
      await receiver.close();
    }
  });
});
