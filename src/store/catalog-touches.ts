/**
 * The recorder's side of the sessions catalog: when a session's end (or a verdict after it) is committed,
 * its catalog row is touched so the next reader reads the session again. Never in the agent's way: the
 * touch does not wait for the catalog's lock (another process may hold it for seconds: a long `index`). A
 * busy catalog gets the change handed to its next reader at once (`handSessionToNextReader`, so nothing
 * depends on the retries) and the touch is tried again off the event loop for a few seconds, then given up,
 * said once on stderr.
 */
import path from 'node:path';
import { CATALOG_FILE, handSessionToNextReader, touchCatalogSession } from './catalog.js';

/** Waits between the tries of a touch that found the catalog busy (about 3 s in all). */
const RETRY_DELAYS_MS = [100, 200, 400, 800, 1600];

/** The counts a failure is added to (the session's). */
interface FailureCounts {
  recordFailures: number;
}

export class CatalogTouches {
  private readonly sessionsDir: string;
  private readonly notice: (line: string) => void;
  /** Session dirs whose touch found the catalog busy, with their counts. */
  private readonly pending = new Map<string, FailureCounts>();
  private timer: NodeJS.Timeout | null = null;
  private tries = 0;
  private saidGivenUp = false;

  constructor(sessionsDir: string, notice: (line: string) => void) {
    this.sessionsDir = sessionsDir;
    this.notice = notice;
  }

  /** The session in `sessionDir` changed: touch its row now, or hand it on and try again later. */
  sessionChanged(sessionDir: string, counts: FailureCounts): void {
    this.pending.delete(sessionDir);
    const result = touchCatalogSession(this.sessionsDir, sessionDir, { busyTimeoutMs: 0 });
    if (result === 'touched') return;
    if (result === 'failed' || !handSessionToNextReader(this.sessionsDir, sessionDir)) {
      counts.recordFailures += 1;
      return;
    }
    this.pending.set(sessionDir, counts);
    if (this.timer === null) {
      this.tries = 0;
      this.schedule();
    }
  }

  /** Stop retrying (the recorder closes): one last try, then what is still busy is the next reader's. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.retry(true);
  }

  private schedule(): void {
    // Unref'd: a pending touch never holds the process open (the next reader has the change already).
    this.timer = setTimeout(() => {
      this.timer = null;
      this.retry(false);
    }, RETRY_DELAYS_MS[this.tries]!);
    this.timer.unref();
  }

  private retry(last: boolean): void {
    for (const [dir, counts] of [...this.pending]) {
      const result = touchCatalogSession(this.sessionsDir, dir, { busyTimeoutMs: 0 });
      if (result === 'busy') continue;
      this.pending.delete(dir);
      if (result === 'failed') counts.recordFailures += 1;
    }
    if (this.pending.size === 0) return;
    this.tries += 1;
    if (!last && this.tries < RETRY_DELAYS_MS.length) {
      this.schedule();
      return;
    }
    if (!this.saidGivenUp) {
      this.saidGivenUp = true;
      this.notice(
        `mcec-recorder: ${path.join(this.sessionsDir, CATALOG_FILE)} stayed busy (locked by another process): ` +
          `${this.pending.size} ended session(s) are left for the catalog's next reader to read again`,
      );
    }
    this.pending.clear();
  }
}
