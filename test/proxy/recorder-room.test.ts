/** recorderRoom: a proxy's pacing by its recorder's room, with a recorder that is slow but alive. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ProxyRecorder, ROOM_WAIT_MS, recorderRoom } from '../../src/proxy/recorder-port.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('recorderRoom', () => {
  it('keeps a client faster than a slow recorder paced: the backlog stays near the high mark', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // A recorder like the worker's: room() past HIGH held, resolved at HIGH / 2. It takes 5 items every 1.5 s
    // (its commits are slow on a busy machine, longer than a wait), but it is alive.
    const HIGH = 10;
    let held = 0;
    let maxHeld = 0;
    const waiters: Array<() => void> = [];
    const recorder = {
      room: () => (held <= HIGH ? undefined : new Promise<void>((resolve) => waiters.push(resolve))),
    } as unknown as ProxyRecorder;
    const drain = () => {
      held = Math.max(0, held - 5);
      if (held <= HIGH / 2) {
        for (const wake of waiters.splice(0)) wake();
      }
      setTimeout(drain, 1500);
    };
    setTimeout(drain, 1500);
    // The client: a request every 10 ms whenever it may go on, for 20 s.
    let elapsed = 0;
    while (elapsed < 20_000) {
      const wait = recorderRoom(recorder);
      if (wait) {
        const t0 = elapsed;
        let done = false;
        void wait.then(() => {
          done = true;
        });
        while (!done) {
          await vi.advanceTimersByTimeAsync(10);
          elapsed += 10;
        }
        expect(elapsed - t0).toBeLessThanOrEqual(ROOM_WAIT_MS + 10);
      }
      held += 1;
      maxHeld = Math.max(maxHeld, held);
      await vi.advanceTimersByTimeAsync(10);
      elapsed += 10;
    }
    expect(maxHeld).toBeLessThanOrEqual(3 * HIGH);
  });

  it('a stalled recorder asked at every request holds one reaction, not one per request', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // A recorder that never has room again (a hung disk): each room() hands out the same promise, as the
    // worker's and the record queue's do. Count the reactions attached to it.
    let reactions = 0;
    let makeRoom = () => {};
    const stalled = new Promise<void>((resolve) => {
      makeRoom = resolve;
    });
    const then = stalled.then.bind(stalled);
    // biome-ignore lint/suspicious/noThenProperty: the test counts the reactions attached to this promise
    stalled.then = ((onFulfilled, onRejected) => {
      reactions += 1;
      return then(onFulfilled, onRejected);
    }) as typeof stalled.then;
    const recorder = { room: () => stalled } as unknown as ProxyRecorder;
    let wentOn = 0;
    for (let i = 0; i < 1000; i++) {
      void recorderRoom(recorder)?.then(() => {
        wentOn += 1;
      });
      await vi.advanceTimersByTimeAsync(ROOM_WAIT_MS / 100);
    }
    await vi.advanceTimersByTimeAsync(ROOM_WAIT_MS);
    expect(wentOn).toBe(1000); // each went on after its own ROOM_WAIT_MS
    expect(reactions).toBe(1);
    // Requests still held back when room comes go on at once.
    let late = 0;
    for (let i = 0; i < 3; i++)
      void recorderRoom(recorder)?.then(() => {
        late += 1;
      });
    makeRoom();
    await vi.advanceTimersByTimeAsync(0);
    expect(late).toBe(3);
    expect(reactions).toBe(1);
  });

  it('a room promise handed out again after it resolved lets each later request go at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const resolved = Promise.resolve();
    const recorder = { room: () => resolved } as unknown as ProxyRecorder;
    for (let i = 0; i < 3; i++) {
      let wentOn = false;
      void recorderRoom(recorder)?.then(() => {
        wentOn = true;
      });
      await vi.advanceTimersByTimeAsync(0); // microtasks only: no waiting out ROOM_WAIT_MS
      expect(wentOn).toBe(true);
    }
  });

  it('a recorder whose room() throws never holds a request back', () => {
    const recorder = {
      room: () => {
        throw new Error('broken');
      },
    } as unknown as ProxyRecorder;
    expect(recorderRoom(recorder)).toBeUndefined();
  });
});
