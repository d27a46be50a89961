/**
 * Recording failures: each is counted in its session, told on stderr once per stage for the recorder's life,
 * and written as a `record-failure` event as soon as the log can take it. Also what a commit's outcome
 * (CommitOutcome: dropped, error, recovered) means for the session's counts.
 */
import type { CommitOutcome } from '../store/session-log.js';
import type { Clock } from './clock.js';
import { thrownMessage } from './outcome.js';
import type { RecordedSession } from './session.js';
import type { RecordStage } from './types.js';

export interface LedgerOptions {
  /** Where notices go (one line each); a throwing sink is ignored. */
  stderr: (line: string) => void;
  /** Scrubs remembered secrets and typed text out of a message before it is stored. */
  scrubText: (text: string) => string;
  clock: Clock;
  /** How long a log whose commit failed waits before the next attempt. */
  commitRetryMs: number;
}

export class FailureLedger {
  private readonly options: LedgerOptions;
  private readonly reportedStages = new Set<string>();

  constructor(options: LedgerOptions) {
    this.options = options;
  }

  /** One line on stderr, never a throw (a broken stderr must not break a call or a close). */
  notice(line: string): void {
    try {
      this.options.stderr(line);
    } catch {
      // nowhere left to say it
    }
  }

  /** One line on stderr per stage for the recorder's life: the first failure says what happened and where. */
  reportOnce(stage: RecordStage, s: RecordedSession | undefined, message: string): void {
    if (this.reportedStages.has(stage)) return;
    this.reportedStages.add(stage);
    const where = s ? ` in session ${s.id}` : '';
    this.notice(
      `mcec-recorder: recording failed (${stage})${where}: ${message.slice(0, 300)}; calls still return, ` +
        'and further failures are counted in the session log',
    );
  }

  /** A recording failure: counted in `s`, reported once, and a `record-failure` event (when the log opens). */
  note(s: RecordedSession | undefined, stage: RecordStage, message: string, lost: number): void {
    this.reportOnce(stage, s, message);
    if (!s) return; // outside any session (a bug before routing): stderr is all there is
    s.recordFailure(lost);
    if (stage === 'open' && !s.log) {
      s.lostWhileOpening(lost);
      return; // written with the open event once the log opens
    }
    s.note('record-failure', { stage, message: this.options.scrubText(message.slice(0, 1000)), lost });
  }

  /**
   * Count what a commit lost or recovered from, and write a failure held back while the log was unwritable;
   * true when the session has nothing left to write.
   */
  commitOutcome(s: RecordedSession, outcome: CommitOutcome): boolean {
    if (outcome.dropped) s.lostWithFailingCommit(outcome.dropped.calls);
    if (outcome.error) {
      const message = thrownMessage(outcome.error);
      const retryAt = this.options.clock.now() + this.options.commitRetryMs;
      if (s.commitFailed(message, outcome.dropped?.calls ?? 0, retryAt)) {
        s.recordFailure(0);
        this.reportOnce('commit', s, message);
      }
      return false;
    }
    const held = s.commitSucceeded();
    let more = false;
    if (outcome.recovered) {
      const { reason, lostCalls } = outcome.recovered;
      s.recordFailure(lostCalls);
      this.reportOnce('store', s, reason);
      s.addEvent('record-failure', { stage: 'store', message: reason, lost: lostCalls });
      more = true;
    }
    if (held) {
      const { stage, message, lost } = held;
      s.addEvent('record-failure', { stage, message: this.options.scrubText(message), lost });
      more = true;
    }
    return more ? s.log!.commit().error === undefined : true;
  }
}
