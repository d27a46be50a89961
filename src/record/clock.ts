/**
 * The recorder's clocks: a monotonic scale for scheduling (retry deadlines, the commit interval, queue slices)
 * and the wall clock that stamps calls and events. Both are injectable, so no test depends on today's date.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (performance.now() by default). */
  now(): number;
  /** The wall-clock time (new Date() by default): call and event stamps, and the reference for server times. */
  date(): Date;
}

/** performance.now() and new Date(). */
export const systemClock: Clock = { now: () => performance.now(), date: () => new Date() };

/**
 * A clock that runs with the system's and can be moved forward: a test skips a retry interval at once
 * instead of sleeping through it (timers still run on real time). Given `wallStart`, its wall clock starts
 * there and runs at the same pace, so a recording of fixture times taken on any day reads as recorded then.
 */
export class AdvancingClock implements Clock {
  private offset = 0;
  private readonly wallOffset: number;

  constructor(wallStart?: Date) {
    this.wallOffset = wallStart === undefined ? 0 : wallStart.getTime() - Date.now();
  }

  now(): number {
    return performance.now() + this.offset;
  }

  date(): Date {
    return new Date(Date.now() + this.wallOffset + this.offset);
  }

  /** Move the clock `ms` forward. */
  advance(ms: number): void {
    this.offset += ms;
  }
}
