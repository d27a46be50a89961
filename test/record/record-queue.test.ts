/** The record queue on its own: order, group commits, flush, back-pressure, retries and a broken worker. */
import { describe, expect, it } from 'vitest';
import { AdvancingClock } from '../../src/record/clock.js';
import { type CommitPass, type QueueWorker, RecordQueue } from '../../src/record/record-queue.js';

/** A worker that logs what it sees; `commits` says what each commit leaves to do. */
function worker(commits: CommitPass[] = []) {
  const seen: string[] = [];
  let uncommitted = 0;
  const broken: unknown[] = [];
  const w: QueueWorker<string> = {
    process(job) {
      if (job === 'throw') throw new Error('a bug in the machinery');
      seen.push(job);
      uncommitted += 1;
      return job.startsWith('async') ? Promise.resolve() : undefined;
    },
    hasUncommitted: () => uncommitted > 0,
    commit(force) {
      seen.push(force ? 'commit!' : 'commit');
      const pass = commits.shift() ?? { retry: false, again: false };
      if (!pass.retry && !pass.again) uncommitted = 0;
      return pass;
    },
    broke: (err) => broken.push(err),
  };
  return { w, seen, broken };
}

describe('RecordQueue', () => {
  it('processes jobs in order, sync and async, and a flush commits them with force', async () => {
    const { w, seen } = worker();
    const q = new RecordQueue(w);
    q.push('a', 1);
    q.push('async b', 1);
    q.push('c', 1);
    await q.flush();
    expect(seen.slice(0, 4)).toEqual(['a', 'async b', 'c', 'commit!']);
    q.close();
    q.close(); // idempotent
  });

  it('commits on its own at the next tick (group commit) without a flush', async () => {
    const { w, seen } = worker();
    const q = new RecordQueue(w);
    const committed = new Promise<void>((resolve) => {
      const commit = w.commit.bind(w);
      w.commit = (force) => {
        const pass = commit(force);
        resolve();
        return pass;
      };
    });
    q.push('a', 1);
    q.push('b', 1);
    await committed;
    expect(seen).toEqual(['a', 'b', 'commit']);
    q.close();
  });

  it('past the high-water mark a caller waits for room, and gets it once the queue drains', async () => {
    const { w } = worker();
    const q = new RecordQueue(w, { limits: { highWaterJobs: 4, lowWaterJobs: 2 } });
    for (let i = 0; i < 4; i++) q.push(`j${i}`, 1);
    expect(q.room()).toBeUndefined();
    q.push('j4', 1);
    const room = q.room();
    expect(room).toBeInstanceOf(Promise);
    // Every caller that comes meanwhile holds the same promise (none is kept per caller).
    expect(q.room()).toBe(room);
    await room;
    expect(q.length).toBeLessThanOrEqual(2);
    await q.flush();
    q.close();
  });

  it('a commit that must be retried is tried again after the retry interval, until it succeeds', async () => {
    const { w, seen } = worker([
      { retry: true, again: false },
      { retry: true, again: false },
    ]);
    const q = new RecordQueue(w, { clock: new AdvancingClock(), limits: { retryMs: 5 } });
    // Two failed commits, then one that succeeds: nothing is pushed after the first job.
    const succeeded = new Promise<void>((resolve) => {
      const commit = w.commit.bind(w);
      w.commit = (force) => {
        const pass = commit(force);
        if (!pass.retry) resolve();
        return pass;
      };
    });
    q.push('a', 1);
    await q.flush();
    await succeeded;
    expect(seen[0]).toBe('a');
    expect(seen[1]).toBe('commit!');
    expect(seen.filter((x) => x.startsWith('commit'))).toHaveLength(3);
    expect(w.hasUncommitted()).toBe(false);
    q.close();
  });

  it('a worker that throws is reported and the queue goes on; a flush still resolves', async () => {
    const { w, seen, broken } = worker();
    const q = new RecordQueue(w);
    q.push('throw', 1);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(broken).toHaveLength(1);
    q.push('after', 1);
    await q.flush();
    expect(seen).toContain('after');
    q.close();
  });
});
