/** Callers waiting for one condition (room in a queue): each gets a promise, all are woken at once. */
export class Waiters {
  private list: Array<() => void> = [];

  get waiting(): boolean {
    return this.list.length > 0;
  }

  /** A promise that resolves at the next `wakeAll()`. */
  wait(): Promise<void> {
    return new Promise((resolve) => this.list.push(resolve));
  }

  wakeAll(): void {
    const woken = this.list;
    this.list = [];
    for (const wake of woken) wake();
  }
}
