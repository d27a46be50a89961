/**
 * The in-process recorder's record queue at its byte cap (src/record/recording-gap.ts): the proxies never wait
 * for room, so past the cap their new requests, notes and events are counted, not queued, and one
 * `recording-gap` event says how many once the queue is back under half the cap. What the queue holds stays
 * under a bound that does not grow with the number of exchanges. Real SQLite; the queue stalled by an event
 * it holds on (`holdOnEventKind`), as on a hung disk.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SMALL_JOB_BYTES } from '../../src/record/call.js';
import { systemClock } from '../../src/record/clock.js';
import { roughValueSize } from '../../src/record/outcome.js';
import { createRecorderOnClock } from '../../src/record/recorder.js';
import {
  GAP_DECLARED,
  notRecordedAs,
  type RecordingGapDetail,
  RecordingGaps,
} from '../../src/record/recording-gap.js';
import type { Recorder } from '../../src/record/types.js';
import { readSessions } from '../proxy/sim-script.js';
import { summaryOfSession } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { expectEventsValid } from './helpers.js';

const temp = tempDirPerTest('mcec-recording-gap-');

/** The queue's byte cap in these tests (the default is 256 MiB). */
const CAP = 64 * 1024;
/** What the queue may hold past the cap: one settling record per exchange in flight (here one at a time). */
const BOUND = CAP + SMALL_JOB_BYTES;

/** A tools/call `get-state` as a proxy hands it over, answered at once with one text block. */
function answeredCall(recorder: Recorder, id: number, text = `ok ${id}`): void {
  const request = {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'get-state', arguments: { id, note: 'n'.repeat(200) } },
  };
  recorder
    .beginExchange(request, { transport: 'stdio' })
    .complete({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
}

/** A ping as a proxy hands it over, answered at once. */
function answeredPing(recorder: Recorder, id: number): void {
  const request = { jsonrpc: '2.0', id, method: 'ping', params: { _meta: { pad: 'p'.repeat(300) } } };
  recorder.beginExchange(request, { transport: 'stdio' }).complete({ jsonrpc: '2.0', id, result: {} });
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A recorder whose queue stalls at a `hold` event until `release()`; the peak of what its queue held. */
function stallableRecorder(dir: string) {
  let release: () => void = () => {};
  const until = new Promise<void>((resolve) => {
    release = resolve;
  });
  const notices: string[] = [];
  const held = { peak: 0 };
  const recorder = createRecorderOnClock(
    { sessionsDir: dir, transport: 'stdio', stderr: (line) => notices.push(line) },
    systemClock,
    {
      maxQueuedBytes: CAP,
      holdOnEventKind: { kind: 'hold', until },
      queued: (bytes) => {
        held.peak = Math.max(held.peak, bytes);
      },
    },
  );
  temp.defer(() => {
    release();
    return recorder.close();
  });
  return { recorder, notices, held, release: () => release() };
}

/** A stallable recorder with one call recorded, then its queue stalled under `calls` more (ids 1 to `calls`). */
async function stalledUnder(dir: string, calls: number) {
  const stallable = stallableRecorder(dir);
  answeredCall(stallable.recorder, 0);
  await stallable.recorder.flush();
  stallable.recorder.event(undefined, 'hold', {});
  for (let id = 1; id <= calls; id++) answeredCall(stallable.recorder, id);
  return stallable;
}

/** RecordingGaps at a cap of 1,000 whose held bytes and clock the test sets; what it records and says is kept. */
function testGaps(start: { held: number; now: number }) {
  const state = { ...start, recorded: [] as RecordingGapDetail[], opened: 0 };
  const gaps = new RecordingGaps({
    held: () => state.held,
    cap: 1000,
    reason: 'the test cap',
    now: () => state.now,
    record: (detail) => state.recorded.push(detail),
    opened: () => state.opened++,
  });
  return { gaps, state };
}

describe('RecordingGaps', () => {
  it('counts what comes at the cap, lets declared events through up to GAP_DECLARED, and records one gap under half the cap', () => {
    const { gaps, state } = testGaps({ held: 0, now: Date.parse('2026-01-01T00:00:00.000Z') });
    expect(gaps.refuses('tool-call', 1000)).toBe(false); // fits exactly
    expect(gaps.refuses('tool-call', 1001)).toBe(true); // alone bigger than the cap, the queue idle: said at once
    expect(state.recorded).toMatchObject([{ toolCalls: 1, requests: 1, otherMessages: 0 }]);
    state.held = 900;
    expect(gaps.refuses('request', 200)).toBe(true);
    state.now += 5;
    expect(gaps.refuses('other')).toBe(false); // under the cap with nothing more
    state.held = 1000;
    expect(gaps.refuses('other')).toBe(true);
    for (let i = 0; i < GAP_DECLARED; i++) expect(gaps.refusesDeclared(10)).toBe(false);
    expect(gaps.refusesDeclared(10)).toBe(true);
    state.held = 501;
    gaps.closeIfRoom(false);
    expect(state.recorded).toHaveLength(1);
    state.held = 500;
    gaps.closeIfRoom(false);
    expect(state.recorded[1]).toEqual({
      reason: 'the test cap',
      toolCalls: 0,
      requests: 1,
      otherMessages: 2,
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-01-01T00:00:00.005Z',
    });
    expect(state.opened).toBe(2);
    gaps.closeIfRoom(true); // none open: nothing more
    expect(state.recorded).toHaveLength(2);
  });

  it('a request not kept counts as a tool call, a request (it has an id) or, a notification, another message', () => {
    expect(notRecordedAs({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} })).toBe('tool-call');
    expect(notRecordedAs({ jsonrpc: '2.0', id: 0, method: 'ping' })).toBe('request');
    expect(notRecordedAs({ jsonrpc: '2.0', method: 'notifications/progress', params: {} })).toBe('other');
    expect(notRecordedAs('not a message')).toBe('other');
  });

  it('a gap in which nothing was lost (declared events let through, a token kept) is neither recorded nor said', () => {
    const { gaps, state } = testGaps({ held: 1000, now: 0 });
    for (let i = 0; i < 5; i++) expect(gaps.refusesDeclared(10)).toBe(false);
    gaps.start(); // as the worker recorder does for a bearer token it keeps
    state.held = 0;
    gaps.closeIfRoom(false);
    expect(gaps.open).toBe(false);
    expect(state.recorded).toEqual([]);
    expect(state.opened).toBe(0);
    state.held = 1000;
    expect(gaps.refusesDeclared(10)).toBe(false);
    expect(gaps.refuses('other')).toBe(true); // the first thing lost: said now
    expect(state.opened).toBe(1);
    gaps.closeIfRoom(true);
    expect(state.recorded).toMatchObject([{ toolCalls: 0, requests: 0, otherMessages: 1 }]);
  });
});

describe('the record queue at its byte cap (in-process recorder)', () => {
  it.each([1_000, 10_000])(
    'a stall of %i exchanges holds at most the cap plus one small record; the rest are counted, then recording goes on',
    async (n) => {
      const dir = path.join(temp.dir, `n${n}`);
      const { recorder, notices, held, release } = stallableRecorder(dir);
      answeredCall(recorder, 0); // recorded before the stall: the session holds a call
      await recorder.flush();
      recorder.event(undefined, 'hold', {});
      for (let id = 1; id <= n; id++) {
        answeredCall(recorder, id);
        if (id % 10 === 0) answeredPing(recorder, -id);
        if (id % 100 === 0) await nextTurn(); // the queue gets its turns, and stays stalled
      }
      // The bound does not grow with the number of exchanges.
      expect(held.peak).toBeGreaterThan(CAP / 2);
      expect(held.peak).toBeLessThanOrEqual(BOUND);
      // At the cap, events are counted; declared steps still go in, up to GAP_DECLARED of them in one gap.
      for (let i = 1; i <= 10; i++) recorder.event(undefined, 'padding', { text: 'x'.repeat(1000) });
      const step = { name: 'step 1000', status: 'ok' };
      for (let i = 1; i <= GAP_DECLARED + 5; i++) recorder.step(undefined, `step ${i}`, 'ok');
      expect(held.peak).toBeLessThanOrEqual(BOUND + GAP_DECLARED * (SMALL_JOB_BYTES + roughValueSize(step)));
      expect(notices.filter((line) => line.includes('the record queue holds'))).toHaveLength(1);

      release();
      // The gap's event is queued as the queue gets under half its cap, behind the first flush: the second
      // commits it.
      await recorder.flush();
      await recorder.flush();
      // Back under half the cap: the gap is in the log before close.
      const [during] = readSessions(dir);
      const gaps = during!.events.filter((e) => e.kind === 'recording-gap');
      expect(gaps).toHaveLength(1);
      const gap = gaps[0]!.detail as unknown as RecordingGapDetail;
      expect(gap.reason).toBe(`the record queue held ${CAP} bytes (its cap)`);
      const pings = during!.events.filter((e) => e.kind === 'exchange' && e.detail.method === 'ping');
      expect(gap.requests - gap.toolCalls + pings.length).toBe(n / 10);
      expect(gap.toolCalls).toBeGreaterThan(n - 200);
      // The padding events, and the steps past GAP_DECLARED (one or two may still have fit under the cap).
      const stepsKept = during!.events.filter((e) => e.kind === 'step').length;
      expect(stepsKept).toBeGreaterThanOrEqual(GAP_DECLARED);
      expect(stepsKept - GAP_DECLARED).toBeLessThanOrEqual(2);
      expect(gap.otherMessages).toBe(10 + GAP_DECLARED + 5 - stepsKept);
      expect(Date.parse(gap.to)).toBeGreaterThanOrEqual(Date.parse(gap.from));

      // Recording goes on after the stall.
      answeredCall(recorder, n + 1, 'after the stall');
      await recorder.close();
      const [session] = readSessions(dir);
      const calls = session!.calls;
      expect(calls.length + gap.toolCalls).toBe(n + 2);
      expect(calls.at(-1)?.args).toContain(`"id":${n + 1}`);
      expect(calls.filter((c) => c.status === 'pending')).toEqual([]);
      const steps = session!.events.filter((e) => e.kind === 'step').map((e) => e.detail.name);
      expect(steps).toHaveLength(stepsKept);
      expect(steps.at(-1)).toBe(`step ${stepsKept}`);
      expect(session!.events.filter((e) => e.kind === 'recording-gap')).toHaveLength(1);
      expectEventsValid(session!.dir);
      // Read back, the gap is a record failure and its tool calls are lost calls.
      const summary = await summaryOfSession(session!.dir);
      expect(summary.counts.lostCalls).toBe(gap.toolCalls);
      expect(summary.counts.recordFailures).toBe(1);
    },
  );

  it('a gap that is still open at close is recorded then', async () => {
    const dir = path.join(temp.dir, 'at-close');
    const { recorder, release } = await stalledUnder(dir, 500);
    const closed = recorder.close();
    release();
    await closed;
    const [session] = readSessions(dir);
    const gap = session!.events.find((e) => e.kind === 'recording-gap')!.detail as { toolCalls: number };
    expect(session!.calls.length + gap.toolCalls).toBe(501);
  });

  it('a gap that opens while close runs is recorded: every call is in the log or counted in it', async () => {
    const dir = path.join(temp.dir, 'during-close');
    const { recorder, release } = stallableRecorder(dir);
    answeredCall(recorder, 0);
    await recorder.flush();
    // Close's first flush is queued before the stall: the gap opens behind it, while close goes on.
    const closed = recorder.close();
    recorder.event(undefined, 'hold', {});
    for (let id = 1; id <= 500; id++) answeredCall(recorder, id);
    release();
    await closed;
    const [session] = readSessions(dir);
    const gaps = session!.events.filter((e) => e.kind === 'recording-gap');
    expect(gaps).toHaveLength(1);
    const gap = gaps[0]!.detail as { toolCalls: number };
    expect(gap.toolCalls).toBeGreaterThan(0);
    expect(session!.calls.length + gap.toolCalls).toBe(501);
    expect(session!.calls.filter((c) => c.status === 'pending')).toEqual([]);
  });

  it("a recording-gap event posted at the cap (the worker recorder's, through the one in its thread) is queued, not counted", async () => {
    const dir = path.join(temp.dir, 'worker-gap');
    const { recorder, release } = await stalledUnder(dir, 300);
    for (let i = 0; i < 50; i++) recorder.event(undefined, 'padding', { i });
    const posted = {
      reason: "the recorder's thread held 1000 chars of JSON it had not taken (its cap)",
      toolCalls: 999,
      requests: 999,
      otherMessages: 0,
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-01-01T00:00:01.000Z',
    };
    recorder.event(undefined, 'recording-gap', posted);
    release();
    await recorder.close();
    const [session] = readSessions(dir);
    const gaps = session!.events.filter((e) => e.kind === 'recording-gap').map((e) => e.detail);
    expect(gaps).toHaveLength(2);
    expect(gaps).toContainEqual(posted);
    const inner = gaps.find((g) => g.toolCalls !== 999) as { toolCalls: number; otherMessages: number };
    // The padding that did not fit, not the posted gap.
    const paddingKept = session!.events.filter((e) => e.kind === 'padding').length;
    expect(inner.otherMessages).toBe(50 - paddingKept);
    expectEventsValid(session!.dir);
    const summary = await summaryOfSession(session!.dir);
    expect(summary.counts.lostCalls).toBe(inner.toolCalls + 999);
  });

  it('a notification that would take the queue past its cap is counted as another message, not a request', async () => {
    const dir = path.join(temp.dir, 'notification');
    const { recorder } = stallableRecorder(dir);
    answeredCall(recorder, 0);
    await recorder.flush();
    const notification = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { text: 'x'.repeat(CAP) },
    };
    recorder.recordExchange(notification, null, { transport: 'stdio' });
    await recorder.close();
    const [session] = readSessions(dir);
    const gaps = session!.events.filter((e) => e.kind === 'recording-gap').map((e) => e.detail);
    expect(gaps).toMatchObject([{ toolCalls: 0, requests: 0, otherMessages: 1 }]);
  });

  it('at the cap, the oversize-message and late-answer settling an exchange begun before it are queued, not counted', async () => {
    const dir = path.join(temp.dir, 'settling');
    const { recorder, release } = stallableRecorder(dir);
    answeredCall(recorder, 0);
    await recorder.flush();
    const ping = recorder.beginExchange({ jsonrpc: '2.0', id: -1, method: 'ping' }, { transport: 'stdio' });
    recorder.event(undefined, 'hold', {});
    for (let id = 1; id <= 300; id++) answeredCall(recorder, id);
    ping.timedOut('no answer in 150 s');
    ping.complete({ jsonrpc: '2.0', id: -1, result: { content: [{ type: 'text', text: 'x'.repeat(CAP) }] } });
    release();
    await recorder.close();
    const [session] = readSessions(dir);
    const ofPing = session!.events.filter((e) => e.detail.method === 'ping').map((e) => e.kind);
    expect(ofPing).toEqual(expect.arrayContaining(['oversize-message', 'late-answer']));
    const gap = session!.events.find((e) => e.kind === 'recording-gap')!.detail as { otherMessages: number };
    expect(gap.otherMessages).toBe(0);
    expectEventsValid(session!.dir);
  });

  it('an event bigger than the whole cap is counted at once, its gap recorded while the queue is idle', async () => {
    const dir = path.join(temp.dir, 'oversize-event');
    const { recorder } = stallableRecorder(dir);
    answeredCall(recorder, 0);
    await recorder.flush();
    recorder.event(undefined, 'big', { text: 'x'.repeat(CAP) });
    answeredCall(recorder, 1);
    await recorder.close();
    const [session] = readSessions(dir);
    expect(session!.events.filter((e) => e.kind === 'big')).toHaveLength(0);
    const gaps = session!.events.filter((e) => e.kind === 'recording-gap');
    expect(gaps.map((e) => e.detail)).toMatchObject([{ toolCalls: 0, requests: 0, otherMessages: 1 }]);
    expect(session!.calls).toHaveLength(2);
  });
});
