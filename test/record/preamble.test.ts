/** The connection's events before any call: kept (bounded) for the first session, or told on stderr at close. */
import { describe, expect, it } from 'vitest';
import { MAX_PREAMBLE_EVENTS, Preamble } from '../../src/record/preamble.js';
import { RecordedSession } from '../../src/record/session.js';

describe('Preamble', () => {
  it('writes what it kept into the first session, with a count of what it could not keep', () => {
    const p = new Preamble(1e6);
    for (let i = 0; i < MAX_PREAMBLE_EVENTS + 3; i++) p.keep('exchange', { method: 'ping' }, new Date(0));
    const dirty = new Set<RecordedSession>();
    const s = new RecordedSession({
      id: 'abc',
      originalId: null,
      via: 'default',
      startedAt: new Date(0),
      dir: '/tmp/abc',
      payloadBudget: 1e6,
      changed: (x) => dirty.add(x),
    });
    const added: Array<{ kind: string }> = [];
    s.opened(
      { existingMaxSeq: 0, addEvent: (e: { kind: string }) => added.push(e) } as never,
      null as never,
      false,
    );
    p.writeInto(s);
    expect(added).toHaveLength(MAX_PREAMBLE_EVENTS + 1);
    expect(added.at(-1)!.kind).toBe('record-failure');
    expect(dirty.has(s)).toBe(true);
    expect(p.unwrittenNotice()).toBeUndefined();
  });

  it('says what a handshake held when no call followed it, control characters flattened', () => {
    const p = new Preamble(1e6);
    p.keep('exchange', { method: 'initialize' }, new Date(0));
    p.keep('exchange', { method: 'ping' }, new Date(0));
    p.keep('exchange', { method: 'ping' }, new Date(0));
    p.keep('protocol-fault', { code: -32700, message: 'parse\u001b[31m error' }, new Date(0));
    const line = p.unwrittenNotice()!;
    expect(line).toContain('initialize, ping x2');
    expect(line).toContain('protocol faults: -32700 parse [31m error');
    expect(p.unwrittenNotice()).toBeUndefined();
  });
});
