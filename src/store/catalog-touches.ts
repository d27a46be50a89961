/**
 * The recorder's side of the sessions catalog: when a session's end (or a verdict after it) is committed,
 * its catalog row is touched so the next reader reads the session again. Never in the agent's way: the
 * touch does not wait for the catalog's lock (another process may hold it for seconds: a long `index`). A
 * busy catalog gets the change handed to its next reader at once (`handSessionToNextReader`, so nothing
 * depends on the retries). The touch is tried again from timers, never waiting for the lock (each try is
 * one quick attempt), for about 3 s per session, then given up, said once on stderr.
 */
import path from 'node:path';
import { CATALOG_FILE, handSessionToNextReader, touchCatalogSession } from './catalog.js';

/** Waits between the tries of touches that found the catalog busy; the last repeats. */
const RETRY_DELAYS_MS = [100, 200, 400, 800];
/** How long each session's touch is tried before it is left to the next reader. */
const RETRY_WINDOW_MS = 3000;

/** The counts a failure is added to (the session's). */
interface FailureCounts {
  recordFailures: number;
}

/** A touch that found the catalog busy: whose counts, and until when it is tried again. */
interface PendingTouch {
  counts: FailureCounts;
  until: number;
}

export class CatalogTouches {
  private readonly sessionsDir: string;
  private readonly notice: (line: string) => void;
  /** Session dirs whose touch found the catalog busy. */
  private readonly pending = new Map<string, PendingTouch>();
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
    // Each session is tried for its own window: one that found the lock late is not given up with the early ones.
    this.pending.set(sessionDir, { counts, until: performance.now() + RETRY_WINDOW_MS });
    this.tries = 0;
    if (this.timer === null) this.schedule();
  }

  /** Stop retrying (the recorder closes): one last try, then what is still busy is the next reader's. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.retry(true);
  }

  private schedule(): void {
    // Unref'd: a pending touch never holds the process open (the next reader has the change already).
    const delay = RETRY_DELAYS_MS[Math.min(this.tries, RETRY_DELAYS_MS.length - 1)]!;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.retry(false);
    }, delay);
    this.timer.unref();
  }

  private retry(last: boolean): void {
    const now = performance.now();
    let givenUp = 0;
    for (const [dir, touch] of [...this.pending]) {
      const result = touchCatalogSession(this.sessionsDir, dir, { busyTimeoutMs: 0 });
      if (result === 'busy' && !last && now < touch.until) continue;
      this.pending.delete(dir);
      if (result === 'failed') touch.counts.recordFailures += 1;
      else if (result === 'busy') givenUp += 1;
    }
    if (givenUp > 0 && !this.saidGivenUp) {
      this.saidGivenUp = true;
      this.notice(
        `mcec-recorder: ${path.join(this.sessionsDir, CATALOG_FILE)} stayed busy (locked by another process): ` +
          `${givenUp} ended session(s) are left for the catalog's next reader to read again`,
      );
    }
    if (this.pending.size === 0 || last) return;
    this.tries += 1;
    this.schedule();
  }
}
