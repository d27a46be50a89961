import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderBugReport, renderFailureSummary } from '../../src/report/render.js';
import { buildSummary } from '../../src/report/summary.js';
import type { CallRow } from '../../src/store/schema.js';
import { SessionLog } from '../../src/store/session-log.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { calls, deadPid, FixtureSession, NOTEPAD, summaryOfSession } from '../support/fixture-session.js';
import { callRow, oldPlainFailure, sessionRow } from '../support/log-rows.js';
import { tempDirPerTest } from '../support/per-test-temp.js';

const temp = tempDirPerTest();

describe('verdict', () => {
  it('takes a declared verdict from end() over everything else, still saying what it overrides', async () => {
    const pass = FixtureSession.create(temp.dir);
    pass.call(calls.waitForTimeout());
    pass.end({ passed: true, reason: 'timeout expected in this scenario' });
    const s = await summaryOfSession(pass.dir);
    expect(s.verdict).toBe('PASS');
    expect(s.passedExplicit).toBe(true);
    expect(s.verdictReasons).toEqual([
      'declared passed by the runner: timeout expected in this scenario',
      'overriding: call #1 wait-for failed (wait-condition-timeout) and no later wait-for call without a target succeeded',
    ]);
    // A PASS never names a failing call, even when a failure is left unrecovered.
    expect(s.failingCall).toBeNull();
    expect(s.failures.map((x) => [x.seq, x.recovered])).toEqual([[1, false]]);

    const fail = FixtureSession.create(temp.dir);
    fail.call(calls.findSave());
    fail.end({ passed: false });
    const t = await summaryOfSession(fail.dir);
    expect(t.verdict).toBe('FAIL');
    expect(t.passedExplicit).toBe(false);
    expect(t.verdictReason).toBe('declared failed by the runner (no reason given)');
  });

  it('is FAIL when a failure was not recovered, even when later calls (session-end) succeeded', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    f.call(calls.waitForTimeout());
    f.call({ tool: 'session-end', args: {}, result: { ended: true } });
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.verdict).toBe('FAIL');
    expect(s.passedExplicit).toBeNull();
    expect(s.verdictReason).toBe(
      'call #2 wait-for failed (wait-condition-timeout) and no later wait-for call without a target succeeded',
    );
    expect(s.failingCall?.seq).toBe(2);
  });

  it('lets the newest declared verdict win: a verdict event after end(), and end() after one', async () => {
    const a = FixtureSession.create(temp.dir);
    a.call(calls.findSave());
    a.end({ passed: true });
    a.event('verdict', { passed: false, reason: 'the invoice was not saved', via: 'cli' });
    const s = await summaryOfSession(a.dir);
    expect(s.verdict).toBe('FAIL');
    expect(s.passedExplicit).toBe(false);
    expect(s.verdictReason).toBe('declared failed with mcec-bundle verdict: the invoice was not saved');

    const b = FixtureSession.create(temp.dir);
    b.call(calls.waitForTimeout());
    b.event('verdict', { passed: false, via: 'notification' });
    b.end({ passed: true, reason: 'rerun passed' });
    const t = await summaryOfSession(b.dir);
    expect(t.verdict).toBe('PASS');
    expect(t.verdictReasons[0]).toBe('declared passed by the runner: rerun passed');

    const c = FixtureSession.create(temp.dir);
    c.call(calls.findSave());
    c.event('verdict', { passed: false, reason: 'wrong text typed', via: 'notification' });
    c.end(); // an end() without a verdict declares nothing
    const u = await summaryOfSession(c.dir);
    expect(u.verdict).toBe('FAIL');
    expect(u.verdictReason).toBe('declared failed by the client: wrong text typed');
    // No failing call to show: the page's card says so beside the FAIL.
    expect(u.failingCall).toBeNull();
  });

  it('is FAIL while a call is pending, naming the pending call as the failing one', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.ambiguousFind());
    f.call(calls.findSave());
    f.call({ tool: 'invoke', args: { name: 'Save' }, status: 'pending' });
    const s = await summaryOfSession(f.dir);
    expect(s.status).toBe('open');
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toContain('call #3 invoke is still pending');
    expect(s.failingCall).toMatchObject({ seq: 3, tool: 'invoke', status: 'pending', code: null });
    expect(s.failingCall?.line).toBe("invoke name='Save': pending (no response recorded)");
    expect(s.failingCall?.recovery).toMatch(/never returned/);
    expect(s.counts.pending).toBe(1);
  });

  it('is FAIL for a crashed session (open, writer pid dead) even when every call succeeded', async () => {
    const f = FixtureSession.create(temp.dir, { writerPid: deadPid() });
    f.call(calls.findSave());
    f.close();
    const s = await summaryOfSession(f.dir);
    expect(s.status).toBe('aborted');
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toMatch(/aborted: it never ended and its writer process \(pid \d+\) is gone/);
    expect(s.endedAt).toBeNull();
    expect(s.failingCall).toBeNull();
  });

  it('is FAIL for a session stored as aborted', async () => {
    const f = FixtureSession.create(temp.dir, { status: 'aborted', writerPid: null });
    f.call(calls.findSave());
    const s = await summaryOfSession(f.dir);
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toContain('aborted');
  });

  it('is FAIL after an emergency stop, from the event or from the error code', async () => {
    const a = FixtureSession.create(temp.dir);
    a.call(calls.findSave());
    a.event('emergency-stop', { code: 'emergency-stopped', detail: 'operator pressed the stop hotkey' });
    a.call(calls.findSave());
    a.end();
    const s = await summaryOfSession(a.dir);
    expect(s.verdict).toBe('FAIL');
    expect(s.events.emergencyStop).toBe(true);
    expect(s.verdictReason).toBe('an emergency stop happened');

    const b = FixtureSession.create(temp.dir);
    b.call({ tool: 'click', error: { code: 'emergency-stopped', category: 'internal', detail: 'stopped' } });
    b.call(calls.findSave());
    b.end();
    const t = await summaryOfSession(b.dir);
    expect(t.verdict).toBe('FAIL');
    expect(t.events.emergencyStop).toBe(true);
    expect(t.failingCall?.recovery).toMatch(/stop and tell the user/);
  });

  it('is PASS when every failure was recovered, saying how many', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.ambiguousFind());
    f.call(calls.findSave());
    f.call(calls.waitForTimeout());
    f.call({
      tool: 'wait-for',
      args: { name: 'Saved' },
      result: { found: true, element: { controlType: 'Text', name: 'Saved' } },
    });
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.verdict).toBe('PASS');
    expect(s.verdictReason).toBe(
      '2 of 2 failures were recovered by a later success of the same tool on the same target',
    );
    expect(s.counts).toMatchObject({ calls: 4, failures: 2, recovered: 2, pending: 0 });
    expect(s.failures.map((x) => [x.seq, x.recovered])).toEqual([
      [1, true],
      [3, true],
    ]);
    expect(s.failingCall).toBeNull();
  });

  it('is PASS for a clean running session and says it is still running', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    const s = await summaryOfSession(f.dir);
    expect(s.verdict).toBe('PASS');
    expect(s.verdictReason).toBe('its one call succeeded; the session is still running');
    expect(s.endedAt).toBeNull();
    expect(s.durationMs).toBeGreaterThan(0);
  });
});

describe('failures and the failing call', () => {
  it('marks a failure recovered only when a later call of the same tool (same target) succeeded', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.ambiguousFind()); // 1: find fails
    f.call(calls.query()); // 2: a different tool succeeds: not a recovery
    f.call(calls.waitForTimeout()); // 3: wait-for fails, never recovered
    f.call(calls.findSave()); // 4: find succeeds: recovers 1
    f.call(calls.ambiguousFind()); // 5: find fails again, not recovered
    f.call(calls.invokeSave()); // 6: last call ok
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.failures.map((x) => [x.seq, x.recovered])).toEqual([
      [1, true],
      [3, false],
      [5, false],
    ]);
    // The last unrecovered failure, not the recovered one and not the last call.
    expect(s.failingCall).toMatchObject({
      seq: 5,
      code: 'selector-matched-3',
      category: 'ambiguous-selector',
    });
    expect(s.failingCall?.recovery).toMatch(/narrow the selector/);
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toBe(
      '2 failures were not recovered by a later success of the same tool on the same target; the last: call #5 find (selector-matched-3)',
    );
  });

  it('recovers a failure only on the same target: the window MCEC would resolve', async () => {
    const blank = { code: 'frame-all-black', category: 'capture-blank', detail: 'black' };
    const elevated = { code: 'target-elevated', category: 'elevation', detail: 'elevated' };
    const ambiguous = { code: 'selector-matched-3', category: 'ambiguous-selector', detail: '3 matches' };
    const f = FixtureSession.create(temp.dir);
    // 1: a black capture of the player; 2: Notepad captures fine: another target, no recovery.
    f.call({ tool: 'capture', args: { window: 'Video Player' }, error: blank });
    f.call({ tool: 'capture', args: { window: 'Untitled - Notepad' }, result: { width: 800 } });
    // 3: the demo's ambiguous find, 4: narrowed to an automation id on the same window: recovered.
    f.call({ tool: 'find', args: { window: 'Save As', value: 'Save' }, error: ambiguous });
    f.call({ tool: 'find', args: { window: 'save as', by: 'automationid', value: '1' }, result: {} });
    // 5: by handle; 6: the same title by name is another target (MCEC does not know they are one window).
    f.call({ tool: 'invoke', args: { handle: 131300, value: 'Close' }, error: elevated });
    f.call({ tool: 'invoke', args: { window: 'Save As', value: 'Close' }, result: { invoked: true } });
    // 7: the handle wins over a title (WindowResolver's order), so 8 recovers 7.
    f.call({ tool: 'click', args: { handle: 42, window: 'A' }, error: elevated });
    f.call({ tool: 'click', args: { handle: 42, window: 'B' }, result: { clicked: true } });
    // 9: no target (send_command): any later send_command success recovers it; 10 does.
    f.call({ tool: 'send_command', args: { command: 'mouse:1,1' }, error: blank });
    f.call({ tool: 'send_command', args: { command: 'mouse:2,2' }, result: { output: '' } });
    // 11: the same window by process and class; 12 differs in class only.
    f.call({ tool: 'focus', args: { process: 'Notepad', className: 'Notepad' }, error: elevated });
    f.call({ tool: 'focus', args: { process: 'notepad', className: 'Edit' }, result: { focused: true } });
    f.call({ tool: 'session-end', args: {}, result: { ended: true } });
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.failures.map((x) => [x.seq, x.tool, x.recovered])).toEqual([
      [1, 'capture', false],
      [3, 'find', true],
      [5, 'invoke', false],
      [7, 'click', true],
      [9, 'send_command', true],
      [11, 'focus', false],
    ]);
    expect(s.counts).toMatchObject({ failures: 6, recovered: 3 });
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toBe(
      '3 failures were not recovered by a later success of the same tool on the same target; the last: ' +
        'call #11 focus (target-elevated) on process=notepad class=Notepad',
    );
    expect(s.failingCall?.seq).toBe(11);

    // The reader names each failure's target the way the reason does.
    const reader = SessionReader.open(f.dir);
    try {
      expect(reader.failuresAndOutcome(-1).failures.map((x) => x.target)).toEqual([
        'process=notepad class=Notepad',
        '',
        'handle=42',
        'handle=131300',
        'window=save as',
        'window=video player',
      ]);
    } finally {
      reader.close();
    }
  });

  it('is FAIL when a protocol or proxy error hit a tools/call, even when a retry succeeded', async () => {
    const a = FixtureSession.create(temp.dir);
    a.call({
      tool: 'capture',
      args: { window: 'Notepad' },
      status: 'fault',
      error: { code: 'proxy-error', category: 'internal', detail: 'proxy-error 504: target did not answer' },
    });
    a.call({ tool: 'capture', args: { window: 'Notepad' }, result: { width: 800 } });
    a.end();
    const s = await summaryOfSession(a.dir);
    expect(s.verdict).toBe('FAIL');
    expect(s.verdictReason).toBe('call #1 capture hit a proxy error: proxy-error 504: target did not answer');
    expect(s.failures.map((x) => [x.seq, x.recovered])).toEqual([[1, false]]);
    expect(s.failingCall?.seq).toBe(1);

    const b = FixtureSession.create(temp.dir);
    b.call({ tool: 'find', status: 'fault', error: { code: '-32602', category: 'internal', detail: 'bad' } });
    b.call({ tool: 'find', status: 'fault', error: { code: '-32603', category: 'internal', detail: 'x' } });
    b.call(calls.findSave());
    b.end();
    const t = await summaryOfSession(b.dir);
    expect(t.verdict).toBe('FAIL');
    expect(t.verdictReason).toBe(
      'call #2 find got a protocol error (-32603) instead of an answer (2 calls in all)',
    );
  });

  it('picks whichever came later of the last unrecovered failure and the pending call', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call({ tool: 'invoke', status: 'pending' });
    f.call(calls.waitForTimeout());
    const s = await summaryOfSession(f.dir);
    expect(s.failingCall?.seq).toBe(2);
    expect(s.verdictReason).toContain('call #2 wait-for failed');
    expect(s.verdictReason).toContain('call #1 invoke is still pending');
  });

  it('lists at most maxFailures failures and counts the rest', async () => {
    const f = FixtureSession.create(temp.dir);
    f.manyCalls(30, () => calls.waitForTimeout());
    const s = await summaryOfSession(f.dir, { maxFailures: 5 });
    expect(s.failures.map((x) => x.seq)).toEqual([26, 27, 28, 29, 30]);
    expect(s.failuresOmitted).toBe(25);
    expect(s.counts.failures).toBe(30);
  });

  it('groups warnings by code with a count and an example, and counts recording losses', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.query(1000, true));
    f.call(calls.query(1000, true));
    f.call({
      tool: 'get-text',
      result: { text: '' },
      warnings: [{ code: 'ocr-fallback', detail: 'fell back to Tesseract' }],
    });
    f.call({ ...calls.findSave(), violations: [{ path: '/result/found', message: 'must be boolean' }] });
    f.call({ tool: 'capture', payloadDropped: true });
    f.event('record-failure', { stage: 'commit', message: 'SQLITE_FULL', lost: 2 });
    f.event('truncation', { omittedCalls: 1, omittedBytes: 9_000_000 });
    f.event('artifact-limit', { omittedImages: 4, omittedBytes: 600_000_000 });
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.warningsByCode).toEqual([
      { code: 'tree-truncated', count: 2, example: 'UIA tree clipped at 1000 nodes' },
      { code: 'ocr-fallback', count: 1, example: 'fell back to Tesseract' },
    ]);
    expect(s.counts).toMatchObject({
      warnings: 3,
      violations: 1,
      droppedPayloads: 1,
      recordFailures: 1,
      lostCalls: 2,
    });
    expect(s.events.truncation).toEqual({
      omittedCalls: 1,
      omittedBytes: 9_000_000,
      omittedEvents: 0,
      omittedEventBytes: 0,
    });
    expect(s.events.artifactLimit).toEqual({ omittedImages: 4, omittedBytes: 600_000_000 });
  });
});

describe('observations and images', () => {
  it('separates the last good observation, the last image seen and the suspect image', async () => {
    const f = FixtureSession.create(temp.dir);
    const shot = await f.capture(); // 1: image A
    f.call(calls.query(14, true)); // 2: last good observation, no image
    f.call(calls.invokeSave()); // 3: actuation: not an observation
    const blank = await f.blankCapture(shot.summary as unknown as Record<string, unknown>); // 4: fails, suspect image B
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.failingCall?.seq).toBe(4);
    expect(s.failingCall).toMatchObject({ code: 'frame-all-black', category: 'capture-blank' });
    expect(s.failingCall?.recovery).toMatch(/suspect image is in partialResult/);
    // The query (2) is of 'Save As'; the failing capture is of Notepad: its own window's capture (1) wins.
    expect(s.lastGoodObservation).toMatchObject({ seq: 1, tool: 'capture' });
    expect(s.lastGoodObservation?.image).toMatchObject({
      artifact: shot.image.artifact,
      window: 'Untitled - Notepad',
    });
    expect(s.lastImage).toMatchObject({
      seq: 1,
      artifact: shot.image.artifact,
      width: 800,
      height: 600,
      role: 'result',
    });
    expect(s.suspectImage).toMatchObject({
      seq: 4,
      artifact: blank.image.artifact,
      role: 'partialResult',
      tool: 'capture',
    });
    expect(s.suspectImage?.sha256).toBe(blank.image.sha256);
    // Both links resolve relative to the session dir.
    expect(fs.existsSync(path.join(f.dir, s.lastImage!.artifact))).toBe(true);
    expect(fs.existsSync(path.join(f.dir, s.suspectImage!.artifact))).toBe(true);
  });

  it('uses the capture itself as the last good observation when it was the last observation', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    const shot = await f.capture();
    f.call({
      tool: 'click',
      args: { name: 'Save' },
      error: { code: 'focus-not-set', category: 'focus', detail: 'no focus' },
    });
    const s = await summaryOfSession(f.dir);
    expect(s.lastGoodObservation?.seq).toBe(shot.seq);
    expect(s.lastGoodObservation?.oneLine).toMatch(/^capture 800x600 png \d+ KB of 'Untitled - Notepad'$/);
    expect(s.lastGoodObservation?.image?.artifact).toBe(shot.image.artifact);
    expect(s.suspectImage).toBeNull();
    expect(s.failingCall?.recovery).toMatch(/click the exact control/);
  });

  it('ignores images and observations after the failing call', async () => {
    const f = FixtureSession.create(temp.dir);
    const first = await f.capture();
    f.call(calls.waitForTimeout()); // failing: never recovered
    await f.capture(); // later image, a later observation
    f.call(calls.findSave());
    f.end();
    const s = await summaryOfSession(f.dir);
    expect(s.failingCall?.seq).toBe(2);
    expect(s.lastImage?.seq).toBe(first.seq);
    expect(s.lastGoodObservation?.seq).toBe(first.seq);
  });

  it("falls back to the server's lastObservation when the log holds no earlier observation", async () => {
    const f = FixtureSession.create(temp.dir);
    f.call({
      tool: 'invoke',
      args: { name: 'Save' },
      error: {
        code: 'element-not-found',
        category: 'no-target',
        detail: 'no element',
        lastObservation: { found: true, element: { controlType: 'Button', name: 'Open' }, window: NOTEPAD },
      },
    });
    const s = await summaryOfSession(f.dir);
    expect(s.lastGoodObservation).toMatchObject({ seq: 1, tool: 'lastObservation' });
    expect(s.lastGoodObservation?.oneLine).toBe(
      "server's lastObservation (observation) of 'Untitled - Notepad'",
    );
  });

  it("names the failing call's window from an earlier wait-for result (every tool whose result names a window)", async () => {
    const f = FixtureSession.create(temp.dir);
    f.call({
      tool: 'wait-for',
      args: { window: NOTEPAD.title, name: 'Text Editor' },
      result: { found: true, element: { controlType: 'Document', name: 'Text Editor' }, window: NOTEPAD },
    });
    f.call({
      tool: 'invoke',
      args: { window: NOTEPAD.title, name: 'Save' },
      error: { code: 'element-not-found', category: 'no-target', detail: 'no element named Save' },
    });
    const s = await summaryOfSession(f.dir);
    expect(s.failingCall?.seq).toBe(2);
    expect(s.failingCall?.target).toMatchObject({
      title: NOTEPAD.title,
      className: 'Notepad',
      process: 'notepad',
      rect: { x: 100, y: 100, width: 800, height: 600 },
      source: 'call #1 wait-for',
    });
  });

  it('never links an artifact path that leaves the session dir', async () => {
    const f = FixtureSession.create(temp.dir);
    const seq = f.call({
      tool: 'capture',
      result: { kind: 'capture-summary', width: 1, height: 1, encoding: 'png', bytes: 1 },
    });
    f.artifactRow(seq, 'result', {
      artifact: '../../etc/passwd',
      sha256: 'x',
      bytes: 1,
      width: 1,
      height: 1,
    });
    f.call(calls.waitForTimeout());
    const s = await summaryOfSession(f.dir);
    expect(s.lastImage).toBeNull();
  });
});

describe('timeline, steps, environment and times', () => {
  it('keeps the last N calls and counts the omitted ones', async () => {
    const f = FixtureSession.create(temp.dir);
    f.manyCalls(30, (i) => (i % 3 === 0 ? calls.query() : calls.findSave()));
    const s = await summaryOfSession(f.dir);
    expect(s.timeline.lines).toHaveLength(20);
    expect(s.timeline.omitted).toBe(10);
    expect(s.timeline.lines[0]?.seq).toBe(11);
    expect(s.timeline.lines[19]).toMatchObject({
      seq: 30,
      tool: 'find',
      status: 'ok',
      duration: '100 ms',
      line: "find name='Save' controlType='Button': found Button 'Save'",
    });
    const short = await summaryOfSession(f.dir, { timelineLength: 5 });
    expect(short.timeline.lines.map((l) => l.seq)).toEqual([26, 27, 28, 29, 30]);
    expect(short.timeline.omitted).toBe(25);
  });

  it('builds a 10,000-call summary from the tail and SQL aggregates', async () => {
    const f = FixtureSession.create(temp.dir);
    f.manyCalls(10_000, (i) =>
      i % 100 === 99 ? calls.ambiguousFind() : i % 2 ? calls.findSave() : calls.query(500),
    );
    f.call(calls.waitForTimeout());
    const s = await summaryOfSession(f.dir);
    expect(s.counts.calls).toBe(10_001);
    expect(s.counts.failures).toBe(101);
    expect(s.counts.recovered).toBe(99); // the find failures except the last one (seq 10,000) recovered
    expect(s.timeline.lines).toHaveLength(20);
    expect(s.timeline.omitted).toBe(9_981);
    expect(s.failingCall?.seq).toBe(10_001);
  });

  it('reads steps, environment, display and DPI from the last displays call', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.displays());
    f.step('open Notepad', 'passed');
    f.step('save', 'failed', 'dialog never closed');
    f.call(calls.waitForTimeout());
    const s = await summaryOfSession(f.dir);
    expect(s.steps.map((x) => [x.name, x.status, x.detail])).toEqual([
      ['open Notepad', 'passed', null],
      ['save', 'failed', 'dialog never closed'],
    ]);
    expect(s.lastFailedStep?.name).toBe('save');
    expect(s.environment).toMatchObject({
      os: 'Windows 11 Pro 10.0.26100 (x64)',
      node: 'v20.20.0',
      recorder: '0.1.0',
      server: { name: 'MCEC', version: '3.0.4' },
      display: '1920x1080',
      dpi: 144,
    });
  });

  it('takes the server from the initialize exchange when the environment lacks it', async () => {
    const f = FixtureSession.create(temp.dir, { environment: { os: 'linux', node: 'v20' } });
    f.event('exchange', {
      method: 'initialize',
      request: { jsonrpc: '2.0', id: 0, method: 'initialize' },
      response: {
        jsonrpc: '2.0',
        id: 0,
        result: { protocolVersion: '2025-06-18', serverInfo: { name: 'MCEC', version: '3.1.0' } },
      },
    });
    const s = await summaryOfSession(f.dir);
    expect(s.environment.server).toEqual({ name: 'MCEC', version: '3.1.0', protocolVersion: '2025-06-18' });
    expect(s.environment.display).toBeNull();
  });

  it('gives the same UTC times whatever the local time zone', async () => {
    const f = FixtureSession.create(temp.dir, { startedAt: new Date('2026-12-31T23:59:59.500Z') });
    f.call({ ...calls.findSave(), durationMs: 2300 });
    f.call({ ...calls.findSave(), durationMs: 64_000 });
    f.end();
    const saved = process.env.TZ;
    try {
      process.env.TZ = 'UTC';
      const utc = await summaryOfSession(f.dir);
      process.env.TZ = 'America/New_York';
      expect(new Date('2026-12-31T23:59:59.500Z').getHours()).toBe(18); // the zone is really in effect
      const ny = await summaryOfSession(f.dir);
      process.env.TZ = 'Asia/Kolkata';
      const kolkata = await summaryOfSession(f.dir);
      expect(ny).toEqual(utc);
      expect(kolkata).toEqual(utc);
      expect(ny.startedAt).toBe('2026-12-31T23:59:59.500Z');
      expect(ny.timeline.lines.map((l) => [l.at, l.duration])).toEqual([
        ['2026-12-31T23:59:59.510Z', '2.3 s'],
        ['2027-01-01T00:00:01.860Z', '1 min 4 s'],
      ]);
      expect(ny.endedAt).toBe('2027-01-01T00:01:05.930Z');
      expect(ny.duration).toBe('1 min 6 s');
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe("another MCP server's failures", () => {
  /** A log of a plain server written directly: its rows as `fields` say, the server named in the environment. */
  function plainLog(name: string, rows: Array<Partial<CallRow>>): string {
    const dir = path.join(temp.dir, `20261202-101502-${name}`);
    const server = JSON.stringify({ server: { name: 'example-servers/everything', version: '1.0.0' } });
    const log = SessionLog.open({
      dir,
      session: sessionRow(name, {
        status: 'ended',
        ended_at: '2026-12-02T10:16:00.000Z',
        environment: server,
      }),
    });
    rows.forEach((fields, i) => {
      log.beginCall(callRow(i + 1, { transport: 'http', ...fields }));
    });
    log.close();
    return dir;
  }
  const ended = { status: 'ok', ok: 1, ended_at: '2026-12-02T10:15:03.010Z', duration_ms: 10 } as const;
  it('a target-less call is not said to have a target; a stored stand-in (internal) is not shown', async () => {
    const dir = plainLog('a1b2c3d4e5f6', [
      oldPlainFailure('echo'),
      { ...ended, tool: 'add', args: '{"a":1}' },
    ]);
    const s = await summaryOfSession(dir);
    expect(s.verdictReason).toBe('call #1 echo failed (tool-error) and no later echo call succeeded');
    expect(s.failures.map((f) => [f.seq, f.code, f.category])).toEqual([[1, 'tool-error', null]]);
    expect(s.failingCall).toMatchObject({ seq: 1, code: 'tool-error', category: null });
    for (const text of [await renderFailureSummary(s), await renderBugReport(s)]) {
      expect(text).not.toContain('(internal)');
      expect(text).not.toContain('that target');
      expect(text).toContain('no later echo call succeeded');
    }
  });

  it('recovery and its words: the same tool, no target spoken of', async () => {
    const dir = plainLog('a1b2c3d4e5f7', [
      oldPlainFailure('echo'),
      oldPlainFailure('echo'),
      { ...ended, tool: 'echo', args: '{"message":"again"}' },
      oldPlainFailure('add'),
      oldPlainFailure('add'),
    ]);
    const s = await summaryOfSession(dir);
    expect(s.verdictReason).toBe(
      '2 failures were not recovered by a later success of the same tool; the last: call #5 add (tool-error)',
    );
    const recovered = plainLog('a1b2c3d4e5f8', [
      oldPlainFailure('echo'),
      { ...ended, tool: 'echo', args: '{}' },
    ]);
    const again = SessionReader.open(recovered);
    const t = await buildSummary(again).finally(() => again.close());
    expect(t.verdictReason).toBe('1 of 1 failure was recovered by a later success of the same tool');
  });

  it('a later success of the same tool recovers, whatever its arguments (MCEC target keys included)', async () => {
    const kill = (proc: string) => ({ ...oldPlainFailure('kill'), args: JSON.stringify({ process: proc }) });
    const dir = plainLog('a1b2c3d4e5f9', [
      kill('a'),
      kill('b'),
      { ...ended, tool: 'kill', args: '{"process":"c"}' },
    ]);
    const s = await summaryOfSession(dir);
    expect(s.verdictReason).toBe('2 of 2 failures were recovered by a later success of the same tool');
    const lone = plainLog('a1b2c3d4e5fa', [{ ...ended, tool: 'kill', args: '{"process":"c"}' }, kill('a')]);
    const again = SessionReader.open(lone);
    const t = await buildSummary(again).finally(() => again.close());
    expect(t.verdictReason).toBe(
      'call #2 kill failed (tool-error) on process=a and no later kill call succeeded',
    );
  });
});
