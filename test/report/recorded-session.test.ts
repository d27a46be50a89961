// Names and times are UTC: run this suite in a zone far from it.
process.env.TZ = 'America/New_York';

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { renderBugReport, renderFailureSummary } from '../../src/report/index.js';
import type { SessionSummary } from '../../src/report/types.js';
import { createSimulator } from '../../src/sim/index.js';
import { resolveSession } from '../../src/store/session-reader.js';
import { killWhenReady } from '../support/crash.js';
import { makeSessionsDir, removeDir, summaryOfSession } from '../support/fixture-session.js';

let root: string;
let sessionsDir: string;
beforeEach(() => {
  root = makeSessionsDir();
  sessionsDir = path.join(root, 'sessions');
});
afterEach(() => removeDir(root));

type Call = (tool: string, args?: Record<string, unknown>) => Promise<unknown>;

/** A recorder around a simulated MCEC server, with a session started through session-start. */
async function recordedSession(scenario = 'save in Notepad') {
  const sim = createSimulator({
    seed: 7,
    sessionsRoot: path.join(root, 'sim'),
    modalGraceMs: 10,
    pollMs: 10,
  });
  const recorder = createRecorder({ sessionsDir, scenario, stderr: () => {} });
  const dispatch = recorder.wrap((tool, args) => sim.callTool(tool, args));
  const start = (await dispatch('session-start', {})) as { content: Array<{ text?: string }> };
  const sessionId = JSON.parse(start.content.at(-1)!.text!).result.sessionId as string;
  const call: Call = (tool, args = {}) => dispatch(tool, { ...args, sessionId });
  return { recorder, call, sessionId };
}

async function summarize(sessionId: string): Promise<{ summary: SessionSummary; dir: string }> {
  const found = resolveSession(sessionsDir, sessionId);
  if (!found.ok) throw new Error(found.message);
  return { summary: await summaryOfSession(found.session.dir), dir: found.session.dir };
}

function sha256File(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function imageTargets(text: string): string[] {
  return [...text.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]!);
}

describe('summaries of sessions recorded by the recorder', () => {
  it('names the failing call, its recovery, the last good observation and the last image', async () => {
    const { recorder, call, sessionId } = await recordedSession();
    await call('displays');
    await call('capture', { window: 'Notepad' });
    await call('find', { window: 'Save As', value: 'Save' }); // selector-matched-3
    await call('find', { window: 'Save As', by: 'automationid', value: '1' }); // recovers it
    await call('query', { window: 'Save As' });
    await call('capture', { window: 'Video Player' }); // frame-all-black, suspect PNG in partialResult
    await call('wait-for', { window: 'Notepad', value: 'Saved', timeout: 50 }); // times out: the failing call
    recorder.step(sessionId, 'save the file', 'failed', 'Saved never appeared');
    await recorder.end(sessionId);
    await recorder.close();

    const { summary, dir } = await summarize(sessionId);
    expect(summary.sessionId).toBe(sessionId);
    expect(summary.status).toBe('ended');
    expect(summary.verdict).toBe('FAIL');
    expect(summary.failingCall).toMatchObject({
      tool: 'wait-for',
      code: 'wait-condition-timeout',
      category: 'timeout',
    });
    expect(summary.failingCall?.recovery).toMatch(/^re-observe/);
    expect(summary.failures.map((f) => [f.tool, f.code, f.recovered])).toEqual([
      ['find', 'selector-matched-3', true],
      ['capture', 'frame-all-black', false],
      ['wait-for', 'wait-condition-timeout', false],
    ]);
    expect(summary.lastGoodObservation).toMatchObject({
      tool: 'query',
      oneLine: "query 'Save As': 20 nodes",
    });
    // The last image before the failing call is the blank frame of the failed capture (its partialResult).
    const blankCapture = summary.failures[1]!;
    expect(summary.lastImage).toMatchObject({ seq: blankCapture.seq, role: 'partialResult', format: 'png' });
    expect(sha256File(path.join(dir, summary.lastImage!.artifact))).toBe(summary.lastImage!.sha256);
    expect(summary.suspectImage).toBeNull();
    expect(summary.environment).toMatchObject({
      display: '1920x1080',
      dpi: 96,
      recorder: expect.any(String),
    });
    expect(summary.timeline.lines.map((l) => l.line)).toContain(
      "find name='Save' window='Save As': selector-matched-3",
    );
    expect(
      summary.timeline.lines.some((l) => /^capture 800x600 png \d+ KB of 'Untitled - Notepad'$/.test(l.line)),
    ).toBe(true);
    expect(summary.startedAt).toMatch(/Z$/);

    const text = await renderFailureSummary(summary);
    expect(text.split('\n')[0]).toBe('# save in Notepad; FAIL');
    expect(text).toContain('- Failing step: **save the file**\n');
    for (const target of imageTargets(text)) expect(fs.existsSync(path.join(dir, target))).toBe(true);
    const report = await renderBugReport(summary);
    expect(report.trimEnd().endsWith(`Attach: **${path.basename(dir)}.zip**`)).toBe(true);
    for (const doc of [text, report]) {
      expect(doc).not.toContain('iVBORw0KGgo');
      expect(doc.length).toBeLessThanOrEqual(65_536);
    }
  });

  it('shows the suspect image when the failing call is a blank capture', async () => {
    const { recorder, call, sessionId } = await recordedSession();
    await call('capture', { window: 'Notepad' });
    await call('capture', { window: 'Video Player' });
    await recorder.close();
    const { summary, dir } = await summarize(sessionId);
    expect(summary.failingCall).toMatchObject({
      tool: 'capture',
      code: 'frame-all-black',
      category: 'capture-blank',
    });
    expect(summary.suspectImage).toMatchObject({ seq: summary.failingCall!.seq, role: 'partialResult' });
    expect(summary.lastGoodObservation?.image).not.toBeNull();
    expect(summary.lastImage?.artifact).toBe(summary.lastGoodObservation?.image?.artifact);
    expect(summary.lastImage?.artifact).not.toBe(summary.suspectImage?.artifact);
    const text = await renderFailureSummary(summary);
    const targets = imageTargets(text);
    // The observation's image is the last image: linked once.
    expect(targets).toEqual([summary.lastImage!.artifact, summary.suspectImage!.artifact]);
    for (const target of targets) expect(fs.existsSync(path.join(dir, target))).toBe(true);
    expect(text).toContain('Next step: restore or foreground the window and capture again');
  });

  it('takes a declared verdict from end() and reads a still-running session', async () => {
    const { recorder, call, sessionId } = await recordedSession();
    await call('find', { window: 'Save As', value: 'Save' });
    await recorder.flush();
    const running = await summarize(sessionId);
    expect(running.summary.status).toBe('open');
    expect(running.summary.verdict).toBe('FAIL');
    expect(running.summary.endedAt).toBeNull();
    // Reading did not get in the writer's way.
    await call('find', { window: 'Save As', by: 'automationid', value: '1' });
    await recorder.end(sessionId, { passed: true, reason: 'retried with automationid' });
    await recorder.close();
    const { summary } = await summarize(sessionId);
    expect(summary).toMatchObject({
      status: 'ended',
      verdict: 'PASS',
      passedExplicit: true,
      verdictReason: 'declared passed by the runner: retried with automationid',
    });
    expect(summary.counts).toMatchObject({ failures: 1, recovered: 1 });
    expect(summary.endedAt).toMatch(/Z$/);
  });

  it('summarizes a recorder killed with SIGKILL mid-call as FAIL, naming the pending call', async () => {
    await killWhenReady('in-flight', sessionsDir);
    const sessions = fs.readdirSync(sessionsDir);
    expect(sessions).toHaveLength(1);
    const { summary } = await summarize(sessions[0]!);
    expect(summary.status).toBe('aborted');
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReason).toContain('call #3 wait-for is still pending');
    expect(summary.verdictReason).toContain('aborted');
    expect(summary.failingCall).toMatchObject({ seq: 3, tool: 'wait-for', status: 'pending' });
    const text = await renderFailureSummary(summary);
    expect(text).toContain('- Failing step: none (no step declared)\n');
    expect(text).toMatch(/\nCall #3 `wait-for` at \S+ never returned\.\n/);
    expect(text).toContain('- Status: aborted;');
  });
});
