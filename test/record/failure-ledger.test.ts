/** The failure ledger: counted per session, told once per stage, written as events, commit outcomes kept. */
import { describe, expect, it } from 'vitest';
import { AdvancingClock } from '../../src/record/clock.js';
import { FailureLedger } from '../../src/record/failure-ledger.js';
import { RecordedSession } from '../../src/record/session.js';
import type { CommitOutcome } from '../../src/store/session-log.js';

function setup() {
  const lines: string[] = [];
  const clock = new AdvancingClock();
  const ledger = new FailureLedger({
    stderr: (l) => lines.push(l),
    scrubText: (t) => t.replaceAll('hunter2', '[redacted]'),
    clock,
    commitRetryMs: 100,
  });
  const s = new RecordedSession({
    id: 'abc',
    originalId: null,
    via: 'argument',
    startedAt: new Date(0),
    dir: '/tmp/abc',
    payloadBudget: 1000,
    changed: () => {},
  });
  const events: Array<{ kind: string; detail: unknown }> = [];
  let commits = 0;
  const log = {
    existingMaxSeq: 0,
    addEvent: (e: { kind: string; detail: string }) =>
      events.push({ kind: e.kind, detail: JSON.parse(e.detail) }),
    commit: () => {
      commits += 1;
      return { committed: 1 };
    },
  };
  s.opened(log as never, null as never, false);
  return { lines, clock, ledger, s, events, commits: () => commits };
}

describe('FailureLedger', () => {
  it('counts each failure, tells stderr once per stage, and scrubs what it stores', () => {
    const { lines, ledger, s, events } = setup();
    ledger.note(s, 'parse', 'bad password hunter2', 1);
    ledger.note(s, 'parse', 'again', 0);
    ledger.note(undefined, 'store', 'outside any session', 0);
    expect(s.counts).toMatchObject({ recordFailures: 2, lostCalls: 1 });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/recording failed \(parse\) in session abc/);
    expect(events[0]).toEqual({
      kind: 'record-failure',
      detail: { stage: 'parse', message: 'bad password [redacted]', lost: 1 },
    });
  });

  it('a broken stderr is ignored', () => {
    const ledger = new FailureLedger({
      stderr: () => {
        throw new Error('gone');
      },
      scrubText: (t) => t,
      clock: new AdvancingClock(),
      commitRetryMs: 100,
    });
    expect(() => ledger.notice('x')).not.toThrow();
  });

  it('a failed commit backs off, is counted once per episode and written once the log commits again', () => {
    const { ledger, s, events, clock, lines, commits } = setup();
    const failed: CommitOutcome = {
      committed: 0,
      error: new Error('database is locked'),
      dropped: { calls: 2 },
    } as CommitOutcome;
    expect(ledger.commitOutcome(s, failed)).toBe(false);
    expect(s.nextCommitAt).toBeGreaterThan(clock.now());
    expect(
      ledger.commitOutcome(s, { committed: 0, error: new Error('database is locked') } as CommitOutcome),
    ).toBe(false);
    expect(s.counts).toMatchObject({ recordFailures: 1, lostCalls: 2 });
    expect(lines).toEqual([expect.stringContaining('recording failed (commit)')]);
    expect(ledger.commitOutcome(s, { committed: 3 } as CommitOutcome)).toBe(true);
    expect(s.nextCommitAt).toBe(0);
    expect(events).toEqual([
      { kind: 'record-failure', detail: { stage: 'commit', message: 'database is locked', lost: 2 } },
    ]);
    expect(commits()).toBe(1); // the event was committed at once
  });

  it('a recovered log (recreated) counts the calls lost with it', () => {
    const { ledger, s, events } = setup();
    const outcome = { committed: 1, recovered: { reason: 'log replaced', lostCalls: 10 } } as CommitOutcome;
    expect(ledger.commitOutcome(s, outcome)).toBe(true);
    expect(s.counts).toMatchObject({ recordFailures: 1, lostCalls: 10 });
    expect(events[0]!.detail).toEqual({ stage: 'store', message: 'log replaced', lost: 10 });
  });
});
