/**
 * Issue 11's run through the HTTP proxy in front of the simulator: it ends with a successful session-end
 * after four unrecovered failures, and every view (list --failed, show, session.json, report.html) says FAIL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleTexts, issueRunRecordedPerFile, runBundle } from './helpers.js';

const run = issueRunRecordedPerFile();

describe('the issue 11 run through the HTTP proxy', () => {
  it('lists as FAIL in list --failed, with its four failures', async () => {
    const res = await runBundle(['list', '--failed', '--json', '--sessions', run.sessionsDir]);
    expect(res.code).toBe(0);
    const rows = JSON.parse(res.stdout) as Array<{ id: string; verdict: string; failures: number }>;
    const row = rows.find((r) => r.id === run.sid);
    expect(row).toMatchObject({ id: run.sid, verdict: 'FAIL', failures: 4 });

    const table = await runBundle(['list', '--failed', '--sessions', run.sessionsDir]);
    expect(table.stdout.split('\n').find((l) => l.startsWith(run.sid))).toMatch(/\s4\s+FAIL$/);
  });

  it('shows FAIL with the unrecovered failures and the last of them as the failing call', async () => {
    const res = await runBundle(['show', run.sid, '--sessions', run.sessionsDir]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(
      '- Verdict: **FAIL**: 4 failures were not recovered by a later success of the same tool on the same target; ' +
        'the last: call #7 no-such-tool (unknown-tool)',
    );
    expect(res.stdout).toContain('## Failing call');
    expect(res.stdout).toContain('\nCall #7 `no-such-tool` at ');
    for (const code of ['selector-matched-3', 'target-elevated', 'frame-all-black', 'unknown-tool']) {
      expect(res.stdout).toMatch(new RegExp(`\`${code}\`.*\\*\\*not recovered\\*\\*`));
    }
    expect(res.stdout).not.toContain('not the last call');
  });

  it('bundles as FAIL: session.json passed false, report.html FAIL beside its failing call', async () => {
    const zip = path.join(run.root, 'bug.zip');
    const res = await runBundle([run.sid, '-o', zip, '--json', '--sessions', run.sessionsDir]);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ verdict: 'FAIL' });
    const texts = await bundleTexts(zip);
    const session = JSON.parse(texts.get('session.json')!) as Record<string, unknown>;
    expect(session).toMatchObject({ sessionId: run.sid, passed: false, verdict: 'FAIL' });
    expect(String(session.verdictReason)).toContain('4 failures were not recovered');
    const html = texts.get('report.html')!;
    expect(html).toContain('<div class="verdict" id="verdict">FAIL</div>');
    expect(html).toMatch(/<h2>Failing call <a href="#c7">#7 no-such-tool<\/a>/);
    expect(texts.get('failure-summary.md')).toMatch(/^# .*; FAIL\n/);
  });

  it('report (the command) writes the same verdict into the session dir', async () => {
    const res = await runBundle(['report', run.sid, '--sessions', run.sessionsDir]);
    expect(res.code).toBe(0);
    const html = fs.readFileSync(res.stdout.trim(), 'utf8');
    expect(html).toContain('<div class="verdict" id="verdict">FAIL</div>');
  });
});
