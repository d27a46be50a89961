/** RecordedSession's counts change only through its methods, so a call that moves or settles twice cannot skew them. */
import { describe, expect, it } from 'vitest';
import { newCall, type RecordedCall } from '../../src/record/call.js';
import { RecordedSession, zeroCounts } from '../../src/record/session.js';

function session(id: string, dirty: Set<RecordedSession>, payloadBudget = 1000): RecordedSession {
  return new RecordedSession({
    id,
    originalId: null,
    via: 'argument',
    startedAt: new Date(0),
    dir: `/tmp/${id}`,
    payloadBudget,
    changed: (s) => dirty.add(s),
  });
}

function call(): RecordedCall {
  return newCall({
    tool: 'find',
    args: {},
    rpcId: null,
    method: null,
    transport: 'wrap',
    startedAt: new Date(0),
    namedSessionId: undefined,
    startSessionId: 'a',
    startVia: 'default',
    plainServer: false,
  });
}

describe('RecordedSession', () => {
  it('counts a call from its start to its completion, once', () => {
    const dirty = new Set<RecordedSession>();
    const s = session('a', dirty);
    const c = call();
    s.callStarted(c);
    expect(c.session).toBe(s);
    expect(c.seq).toBe(1);
    expect(s.counts).toMatchObject({ calls: 1, pending: 1 });
    s.callCompleted(c, 'failed', 2);
    s.callCompleted(c, 'failed', 2); // a second report of the same outcome changes nothing
    expect(s.counts).toMatchObject({ calls: 1, pending: 0, failures: 1, violations: 2 });
    // A late answer replaces a proxy timeout's fault: pending again, then counted by its real outcome.
    s.callReopened(c);
    expect(s.counts).toMatchObject({ pending: 1, failures: 0 });
    s.callCompleted(c, 'ok');
    expect(s.counts).toMatchObject({ pending: 0, failures: 0 });
  });

  it('moves a call with its counts and stored args to another session, which gives it its next seq', () => {
    const dirty = new Set<RecordedSession>();
    const from = session('a', dirty, 10);
    const to = session('b', dirty, 10);
    const other = call();
    to.callStarted(other);
    const c = call();
    from.callStarted(c);
    expect(from.admitPayload(6)).toBe(true);
    c.argsRecorded('123456', false);
    from.moveCallTo(c, to);
    expect(from.counts).toEqual(zeroCounts());
    expect(to.counts).toMatchObject({ calls: 2, pending: 2 });
    expect(c.session).toBe(to);
    expect(c.seq).toBe(2);
    expect(dirty.has(from)).toBe(true);
    // The args' bytes moved too: 'a' has its whole budget again, 'b' only 4 left.
    expect(from.admitPayload(10)).toBe(true);
    expect(to.admitPayload(5)).toBe(false);
    expect(to.admitPayload(4)).toBe(true);
  });

  it('counts omitted payloads and writes one truncation event per burst', () => {
    const s = session('a', new Set());
    s.payloadOmitted(100, true);
    expect(s.takeTruncation()).toBeNull(); // no log open: nothing to write yet
    s.opened({ existingMaxSeq: 0 } as never, null as never, false); // only its presence matters here
    s.payloadOmitted(50, true);
    s.payloadOmitted(25, false);
    const e = s.takeTruncation();
    expect(JSON.parse(e!.detail as string)).toEqual({ omittedCalls: 2, omittedBytes: 175 });
    expect(s.takeTruncation()).toBeNull();
    expect(s.counts.droppedPayloads).toBe(2);
  });

  it('keeps events while its log is closed, bounded, and marks itself dirty on a note', () => {
    const dirty = new Set<RecordedSession>();
    const s = session('a', dirty);
    for (let i = 0; i < 1005; i++) s.addEvent('step', { i });
    expect(dirty.size).toBe(0);
    s.note('verdict', { passed: true });
    expect(dirty.has(s)).toBe(true);
    const added: unknown[] = [];
    s.opened({ existingMaxSeq: 0, addEvent: (e: unknown) => added.push(e) } as never, null as never, false);
    expect(s.drainBuffered()).toBe(6);
    expect(added).toHaveLength(1000);
  });
});
