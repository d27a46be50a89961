/**
 * Declaring a verdict after the fact: `mcec-bundle verdict` (the built CLI) on a finished run and beside a
 * recorder that is still writing, `declareVerdict` from TypeScript, and `recorder.verdict()`. Every view
 * agrees afterwards.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { declareVerdict } from '../../src/sessions/verdict.js';
import { envelopeOf } from '../../src/sim/index.js';
import { events, expectEventsValid } from '../record/helpers.js';
import { simulatorAt } from '../support/sim-http-proxy.js';
import { bundleTexts, issueRunRecordedPerFile, runBundle, sessionDirOf } from './helpers.js';

const run = issueRunRecordedPerFile();

describe('mcec-bundle verdict', () => {
  it('declares a proxied run passed, then failed again: show, list, session.json and report.html agree', async () => {
    const s = ['--sessions', run.sessionsDir];
    const pass = await runBundle([
      'verdict',
      run.sid.slice(0, 6),
      'pass',
      '--reason',
      'the elevated console is expected here',
      ...s,
    ]);
    expect(pass.code).toBe(0);
    expect(pass.stdout).toMatch(
      new RegExp(
        `^${run.sid}: PASS: declared passed with mcec-bundle verdict: the elevated console is expected here; overriding: 4 failures`,
      ),
    );

    const show = await runBundle(['show', run.sid, ...s]);
    expect(show.stdout).toContain(
      '- Verdict: **PASS**: declared passed with mcec-bundle verdict: the elevated console is expected here',
    );
    expect(show.stdout).not.toContain('## Failing call');
    expect(show.stdout).toContain('**not recovered**'); // the failures are still listed as they were

    const list = JSON.parse((await runBundle(['list', '--json', ...s])).stdout) as Array<{
      id: string;
      verdict: string;
    }>;
    expect(list.find((r) => r.id === run.sid)?.verdict).toBe('PASS');
    const failed = JSON.parse((await runBundle(['list', '--failed', '--json', ...s])).stdout) as Array<{
      id: string;
    }>;
    expect(failed.map((r) => r.id)).not.toContain(run.sid);

    const zip = path.join(run.root, 'pass.zip');
    expect((await runBundle([run.sid, '-o', zip, ...s])).code).toBe(0);
    const texts = await bundleTexts(zip);
    expect(JSON.parse(texts.get('session.json')!)).toMatchObject({ passed: true, verdict: 'PASS' });
    const html = texts.get('report.html')!;
    expect(html).toContain('<div class="verdict" id="verdict">PASS</div>');
    // Never PASS beside a failing call: no failing-call card and no row tagged as the failing call.
    expect(html).not.toContain('<h2>Failing call');
    expect(html).not.toContain('class="tag t-fail"');

    const fail = await runBundle(['verdict', run.sid, 'FAIL', '-r', 'wrong total', '--json', ...s]);
    expect(fail.code).toBe(0);
    expect(JSON.parse(fail.stdout)).toEqual({
      sessionId: run.sid,
      passed: false,
      reason: 'wrong total',
      verdict: 'FAIL',
      verdictReason: expect.stringMatching(
        /^declared failed with mcec-bundle verdict: wrong total; 4 failures/,
      ),
    });
    const again = JSON.parse((await runBundle(['list', '--failed', '--json', ...s])).stdout) as Array<{
      id: string;
    }>;
    expect(again.map((r) => r.id)).toContain(run.sid);

    const dir = sessionDirOf(run.sessionsDir, run.sid);
    expect(events(dir, 'verdict').map((e) => e.data)).toEqual([
      { passed: true, reason: 'the elevated console is expected here', via: 'cli' },
      { passed: false, reason: 'wrong total', via: 'cli' },
    ]);
    expectEventsValid(dir);
  });

  it('answers bad usage with 2, an unknown session with 1, and teaches in --help', async () => {
    const s = ['--sessions', run.sessionsDir];
    const [maybe, missing, unknown, hostile, help] = await Promise.all([
      runBundle(['verdict', run.sid, 'maybe', ...s]),
      runBundle(['verdict', run.sid, ...s]),
      runBundle(['verdict', 'ffffffffffff', 'fail', ...s]),
      runBundle(['verdict', '../x', 'fail', ...s]),
      runBundle(['verdict', '--help']),
    ]);
    expect(maybe.code).toBe(2);
    expect(maybe.stderr).toContain('the verdict must be pass or fail, not "maybe"');
    expect(missing.code).toBe(2);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no session matching "ffffffffffff"');
    expect(hostile.code).toBe(1); // a path, and no session dir there
    expect(hostile.stderr).toMatch(/x: no such directory/);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('mcec-bundle verdict [options] <sessionId> <pass|fail>');
    expect(help.stdout).toContain('--reason <text>');
    expect(help.stdout).toContain('declaring again replaces it');
    expect(help.stdout).toMatch(/mcec-bundle verdict "\$sid" fail --reason/);
  });

  it('writes beside a recorder that is still recording the session, losing nothing', async () => {
    const sessionsDir = path.join(run.root, 'live');
    const sim = simulatorAt(path.join(run.root, 'live-sim'));
    const recorder = createRecorder({ sessionsDir, scenario: 'live verdict' });
    const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const id = envelopeOf((await call('session-start', {})) as never).sessionId!;
    await call('windows', { sessionId: id });
    await recorder.flush();

    // The CLI declares while calls keep coming (the recorder commits every few ms) until it is done.
    let done = false;
    let made = 0;
    const running = (async () => {
      while (!done) {
        await call(made % 2 ? 'windows' : 'displays', { sessionId: id });
        made += 1;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const cli = await runBundle(['verdict', id, 'fail', '-r', 'declared mid-run', '--sessions', sessionsDir]);
    done = true;
    await running;
    expect(made).toBeGreaterThan(5);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`${id}: FAIL: declared failed with mcec-bundle verdict: declared mid-run`);
    expect(cli.stdout).toContain('the session is still running');
    await call('session-end', { sessionId: id });
    await recorder.close();

    const dir = sessionDirOf(sessionsDir, id);
    const summary = await summarizeSession(dir);
    expect(summary.counts).toMatchObject({ calls: made + 3, failures: 0, recordFailures: 0, lostCalls: 0 });
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReason).toBe('declared failed with mcec-bundle verdict: declared mid-run');
    expect(events(dir, 'record-failure')).toEqual([]);
    expectEventsValid(dir);
  });

  it('is a library call too (declareVerdict), scrubbing secrets from the reason', async () => {
    const dir = sessionDirOf(run.sessionsDir, run.sid);
    const res = await declareVerdict(dir, {
      passed: false,
      reason: '  login failed with password=hunter2  ',
    });
    expect(res).toMatchObject({ sessionId: run.sid, passed: false, verdict: 'FAIL' });
    expect(res.reason).not.toContain('hunter2');
    expect(events(dir, 'verdict').at(-1)?.data).toEqual({ passed: false, reason: res.reason, via: 'cli' });
    await expect(declareVerdict(dir, { passed: 'yes' as never })).rejects.toThrow(
      new TypeError('Expected verdict.passed to be a boolean'),
    );
    await expect(declareVerdict(path.join(run.root, 'nowhere'), { passed: true })).rejects.toThrow(
      /no session.sqlite/,
    );
  });
});

describe('recorder.verdict()', () => {
  it('declares a verdict without ending the session; a later end() without one keeps it', async () => {
    const sessionsDir = path.join(run.root, 'api');
    const sim = simulatorAt(path.join(run.root, 'api-sim'));
    const recorder = createRecorder({ sessionsDir });
    const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const id = envelopeOf((await call('session-start', {})) as never).sessionId!;
    await call('windows', { sessionId: id });
    await recorder.verdict(id, { passed: false, reason: 'the saved file was empty' });
    const dir = sessionDirOf(sessionsDir, id);
    expect((await summarizeSession(dir)).verdictReason).toBe(
      'declared failed by the runner: the saved file was empty; the session is still running',
    );
    await recorder.end(id);
    await recorder.close();
    const summary = await summarizeSession(dir);
    expect(summary).toMatchObject({ verdict: 'FAIL', passedExplicit: false, status: 'ended' });
    expect(events(dir, 'verdict').map((e) => e.data)).toEqual([
      { passed: false, reason: 'the saved file was empty', via: 'recorder' },
    ]);
    expectEventsValid(dir);
  });
});
