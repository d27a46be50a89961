/** The recorder's scheduling clock: retry deadlines, the commit interval and queue slices read it. */

/** Milliseconds on a monotonic scale (performance.now() by default). */
export interface Clock {
  now(): number;
}

/** performance.now(). */
export const systemClock: Clock = { now: () => performance.now() };

/**
 * A clock that runs with the system's and can be moved forward: a test skips a retry interval at once
 * instead of sleeping through it (timers still run on real time).
 */
export class AdvancingClock implements Clock {
  private offset = 0;

  now(): number {
    return performance.now() + this.offset;
  }

  /** Move the clock `ms` forward. */
  advance(ms: number): void {
    this.offset += ms;
  }
}
