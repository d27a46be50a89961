/** A proxy's pending exchange settles once; what its client saw meanwhile goes with the answer. */
import { describe, expect, it } from 'vitest';
import { newCall, SMALL_JOB_BYTES } from '../../src/record/call.js';
import { type ExchangeSink, otherExchange, toolCallExchange } from '../../src/record/exchange.js';
import type { Job } from '../../src/record/jobs.js';

/**
 * A sink whose queue takes any job, or (with `cap`) none larger than `cap` bytes (those it counts). Queued
 * events are in `events`, every queued job in `all`.
 */
function sink(cap?: number) {
  const jobs: Job[] = [];
  const all: Job[] = [];
  const events: Array<{ kind: string; detail: unknown }> = [];
  const refused: string[] = [];
  const s: ExchangeSink = {
    push: (job) => {
      all.push(job);
      return job.type === 'event' ? events.push({ kind: job.kind, detail: job.detail }) : jobs.push(job);
    },
    now: () => new Date('2026-12-02T10:00:01.000Z'),
    overQueueCap: (bytes) => (cap !== undefined && bytes > cap ? cap : null),
    refuses: (what, bytes) => cap !== undefined && bytes > cap && refused.push(what) > 0,
  };
  return { s, jobs, all, events, refused };
}

const started = new Date('2026-12-02T10:00:00.000Z');
const call = () =>
  newCall({
    tool: 'find',
    args: {},
    rpcId: '1',
    method: 'tools/call',
    transport: 'http',
    startedAt: started,
    namedSessionId: undefined,
    startSessionId: 'abc',
    startVia: 'default',
    plainServer: false,
  });

describe('toolCallExchange', () => {
  it('settles once: a second answer or a failure after it is ignored', () => {
    const { s, jobs } = sink();
    const c = call();
    const x = toolCallExchange(s, c, started);
    x.complete({ ok: true }, { endedAt: new Date('2026-12-02T10:00:00.040Z') });
    x.complete({ ok: false });
    x.fail('gone');
    expect(jobs.map((j) => j.type)).toEqual(['complete']);
    expect(c.durationMs).toBe(40);
    expect(c.output).toEqual({ ok: true });
  });

  it('a timeout is a fault now and its late answer replaces it; a failure after the timeout keeps the fault', () => {
    const late = sink();
    const c = call();
    const x = toolCallExchange(late.s, c, started);
    x.timedOut('no answer in 150 s');
    expect(c.transportFailure).toBe('no answer in 150 s');
    x.complete({ ok: true });
    expect(late.jobs.map((j) => j.type)).toEqual(['complete', 'late']);
    const job = late.jobs[1] as Extract<Job, { type: 'late' }>;
    expect(job.saw).toEqual({ client: 'proxy-timeout', reason: 'no answer in 150 s' });
    const failed = sink();
    const y = toolCallExchange(failed.s, call(), started);
    y.timedOut('t');
    y.fail('closed');
    expect(failed.jobs.map((j) => j.type)).toEqual(['complete']);
  });

  it('a client that left before the answer is noted with it', () => {
    const { s, jobs } = sink();
    const c = call();
    const x = toolCallExchange(s, c, started);
    x.clientLeft('socket closed');
    x.tooLarge({ bytes: 10, limit: 5, isError: false });
    expect(jobs.map((j) => j.type)).toEqual(['complete']);
    expect(c.clientSaw).toEqual({ client: 'disconnected', reason: 'socket closed' });
    expect(c.oversize).toEqual({ bytes: 10, limit: 5, isError: false });
  });
});

describe('otherExchange', () => {
  it('an answer too large to record is an exchange without response and an oversize-message event', () => {
    const { s, jobs, events } = sink();
    const x = otherExchange(s, { method: 'tools/list' }, 'tools/list');
    x.timedOut('slow');
    x.tooLarge({ bytes: 10, limit: 5 });
    x.complete({});
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      type: 'exchange',
      response: null,
      failed: expect.stringContaining('10 bytes'),
    });
    expect(events.map((e) => e.kind)).toEqual(['oversize-message', 'late-answer']);
    expect(events[1]!.detail).toEqual({ client: 'proxy-timeout', reason: 'slow', method: 'tools/list' });
  });

  it("its own events go where it goes: its MCP session, read from the answer's meta for initialize's", () => {
    const { s, all } = sink();
    const sessionOf = (m?: { mcpSessionId?: string }) =>
      m?.mcpSessionId ? `srv-${m.mcpSessionId}` : undefined;
    const x = otherExchange(s, { method: 'initialize' }, 'initialize', undefined, sessionOf);
    x.clientLeft('gone');
    x.tooLarge({ bytes: 10, limit: 5 }, { mcpSessionId: 'a' });
    const where = all.map((j) => [
      j.type,
      'kind' in j ? j.kind : null,
      'mcpSession' in j ? j.mcpSession : null,
    ]);
    expect(where).toEqual([
      ['exchange', null, 'srv-a'],
      ['event', 'oversize-message', 'srv-a'],
      ['event', 'late-answer', 'srv-a'],
    ]);
    // A request that names its MCP session: a note of it is that session's too, as the server vouched for it.
    const notes = sink();
    const named = () => 'srv-b';
    otherExchange(notes.s, { method: 'resources/read' }, 'resources/read', undefined, named).note(
      'notification',
      {
        method: 'notifications/message',
      },
    );
    expect(notes.all).toEqual([
      expect.objectContaining({
        type: 'event',
        kind: 'notification',
        mcpSession: 'srv-b',
        clientsWord: false,
      }),
    ]);
  });

  it("one with no JSON-RPC request (an orphan answer, a body that is not JSON-RPC) holds its MCP session on the client's word only", () => {
    const { s, all } = sink();
    const x = otherExchange(s, null, null, undefined, () => 'srv-a');
    x.tooLarge({ bytes: 10, limit: 5 });
    expect(all.map((j) => ('clientsWord' in j ? [j.type, j.mcpSession, j.clientsWord] : null))).toEqual([
      ['exchange', 'srv-a', true],
      ['event', 'srv-a', true],
    ]);
  });
});

describe('the record queue bounds what the proxies queue (they never wait for room)', () => {
  const bigAnswer = (isError: boolean) => ({
    jsonrpc: '2.0',
    id: 1,
    result: { content: [{ type: 'text', text: 'x'.repeat(4096) }], isError },
  });

  it('a tools/call answer past the cap is a row without its body, its outcome read from the answer', () => {
    const { s, jobs } = sink(1000);
    const c = call();
    toolCallExchange(s, c, started).complete(bigAnswer(true));
    expect(c.oversize).toMatchObject({ limit: 1000, reason: 'queue-full', isError: true });
    expect(c.oversize!.bytes).toBeGreaterThan(4096);
    expect(c.output).toBeUndefined();
    expect(jobs).toHaveLength(1);
  });

  it('any other answer past the cap is an exchange without response and an oversize-message event', () => {
    const { s, jobs, events } = sink(1000);
    otherExchange(s, { method: 'resources/read' }, 'resources/read').complete(bigAnswer(false));
    expect(jobs[0]).toMatchObject({
      type: 'exchange',
      response: null,
      failed: expect.stringContaining('record queue'),
    });
    expect(events).toEqual([
      {
        kind: 'oversize-message',
        detail: expect.objectContaining({
          direction: 'answer',
          limit: 1000,
          reason: 'queue-full',
          method: 'resources/read',
        }),
      },
    ]);
  });

  it('a note past the cap is counted, not queued; one that fits is queued at its rough size', () => {
    const { s, jobs, refused } = sink(1000);
    const x = toolCallExchange(s, call(), started);
    x.note('notification', { text: 'x'.repeat(4096) });
    expect(jobs).toEqual([]);
    expect(refused).toEqual(['other']);
    const sizes: number[] = [];
    const sized: ExchangeSink = { ...s, push: (job, size) => sizes.push(size) && jobs.push(job) };
    toolCallExchange(sized, call(), started).note('notification', { text: 'x'.repeat(400) });
    expect(jobs).toHaveLength(1);
    expect(sizes[0]).toBeGreaterThan(SMALL_JOB_BYTES + 400);
  });

  it('at the cap the events that settle an exchange begun before it (oversize-message, late-answer) are queued, not counted', () => {
    const { s, events, refused } = sink(1000);
    const x = otherExchange(s, { method: 'resources/read' }, 'resources/read');
    x.timedOut('slow');
    x.complete(bigAnswer(false));
    expect(events.map((e) => e.kind)).toEqual(['oversize-message', 'late-answer']);
    expect(refused).toEqual([]);
  });

  it("at the cap an exchange's settling record holds the request's head alone: one small record", () => {
    const { s, jobs } = sink(1000);
    const request = { jsonrpc: '2.0', id: 7, method: 'resources/read', params: { pad: 'p'.repeat(4096) } };
    otherExchange(s, request, 'resources/read').fail('the target went away');
    expect(jobs[0]).toMatchObject({
      type: 'exchange',
      request: { jsonrpc: '2.0', id: 7, method: 'resources/read' },
    });
    expect((jobs[0] as { request: Record<string, unknown> }).request.params).toBeUndefined();
  });
});
