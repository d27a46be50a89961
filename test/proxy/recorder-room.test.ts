/** RecorderRoom: one proxy's pacing by its recorder's room, and what a stalled recorder costs the wire. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ProxyRecorder, ROOM_WAIT_MS, RecorderRoom } from '../../src/proxy/recorder-port.js';

/** A recorder whose room() is what the test says: room, or a promise the test resolves. */
function recorderWithRoom() {
  let pending: { promise: Promise<void>; resolve: () => void } | undefined;
  let asked = 0;
  const recorder = {
    room: () => {
      asked += 1;
      return pending?.promise;
    },
  } as unknown as ProxyRecorder;
  return {
    recorder,
    asked: () => asked,
    noRoom() {
      let resolve = () => {};
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      pending = { promise, resolve };
    },
    roomAgain() {
      const was = pending;
      pending = undefined;
      was?.resolve();
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('RecorderRoom', () => {
  it('lets a request go on at once while the recorder keeps up, and waits for its room when it does not', async () => {
    const r = recorderWithRoom();
    const pacing = new RecorderRoom(r.recorder);
    expect(pacing.wait()).toBeUndefined();
    r.noRoom();
    const waiting = pacing.wait();
    expect(waiting).toBeInstanceOf(Promise);
    let done = false;
    waiting!.then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    r.roomAgain();
    await waiting;
    expect(pacing.wait()).toBeUndefined();
  });

  it('a stalled recorder costs one ROOM_WAIT_MS: the requests after it go on at once until its room comes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const r = recorderWithRoom();
    const pacing = new RecorderRoom(r.recorder);
    r.noRoom();
    const first = pacing.wait()!;
    let firstDone = false;
    first.then(() => {
      firstDone = true;
    });
    await vi.advanceTimersByTimeAsync(ROOM_WAIT_MS - 1);
    expect(firstDone).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(firstDone).toBe(true);
    // Stalled: the next requests neither wait nor ask the recorder again (no waiter piles up per request).
    const askedBefore = r.asked();
    expect(pacing.wait()).toBeUndefined();
    expect(pacing.wait()).toBeUndefined();
    expect(r.asked()).toBe(askedBefore);
    // Its room comes back, then runs out again: pacing resumes.
    r.roomAgain();
    await Promise.resolve();
    r.noRoom();
    expect(pacing.wait()).toBeInstanceOf(Promise);
  });

  it('a recorder whose room() throws never holds a request back', () => {
    const recorder = {
      room: () => {
        throw new Error('broken');
      },
    } as unknown as ProxyRecorder;
    expect(new RecorderRoom(recorder).wait()).toBeUndefined();
  });
});
