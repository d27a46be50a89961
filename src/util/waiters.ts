/**
 * Callers waiting for one condition (room in a queue). They share one promise until `wakeAll()`: however many
 * callers come while the condition holds (a proxy asks at every request while its recorder is stalled), they
 * hold one promise, not one each.
 */
export class Waiters {
  private pending: { promise: Promise<void>; wake: () => void } | undefined;

  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** A promise that resolves at the next `wakeAll()`: the same one for every caller until then. */
  wait(): Promise<void> {
    if (!this.pending) {
      let wake = () => {};
      const promise = new Promise<void>((resolve) => {
        wake = resolve;
      });
      this.pending = { promise, wake };
    }
    return this.pending.promise;
  }

  wakeAll(): void {
    const woken = this.pending;
    this.pending = undefined;
    woken?.wake();
  }
}
