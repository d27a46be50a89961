/** One recorded session's state: its log and artifact store (opened lazily), counts and last good observation. */
import type { ArtifactStore } from '../artifacts/artifact-store.js';
import type { SessionRow } from '../store/schema.js';
import type { EventRecord, SessionLog } from '../store/session-log.js';
import type { SessionCounts } from './types.js';

/** How a session came to be recorded (the `via` of its `session-start` event). */
export type SessionVia = 'session-start' | 'envelope' | 'argument' | 'default';

/** Events kept while a log cannot be opened; past this many the rest are counted, not kept. */
const MAX_BUFFERED_EVENTS = 1000;

/** Counts with every field zero. */
export function zeroCounts(): SessionCounts {
  return {
    calls: 0,
    pending: 0,
    failures: 0,
    warnings: 0,
    artifacts: 0,
    violations: 0,
    droppedPayloads: 0,
    recordFailures: 0,
    lostCalls: 0,
  };
}

/** A failure that could not be written yet (the log was unwritable): written once it is writable again. */
export interface PendingFailure {
  stage: string;
  message: string;
  lost: number;
}

export class RecordedSession {
  readonly id: string;
  /** The id as received when it was not path-safe (escaped, clipped), else null. */
  readonly originalId: string | null;
  readonly via: SessionVia;
  readonly startedAt: Date;
  readonly dir: string;
  status: 'open' | 'ended' | 'aborted' = 'open';
  readonly counts: SessionCounts = zeroCounts();
  log: SessionLog | null = null;
  artifacts: ArtifactStore | null = null;
  /** Highest seq handed out. */
  seq = 0;
  /** Payload characters stored so far (args, envelopes, responses), against maxLogBytes. */
  storedBytes = 0;
  omittedCalls = 0;
  omittedBytes = 0;
  /** When a payload was last omitted, while its `truncation` event is not yet queued. */
  truncationAt: Date | null = null;
  /** Artifact images omitted for the budget, as last written in an `artifact-limit` event. */
  reportedOmittedImages = 0;
  /** Compact, unredacted, artifact paths relative to `dir`; the agent gets absolute copies. */
  lastObservation: Record<string, unknown> | null = null;
  lastObservationDirty = false;
  /** The last observation as written to the log: redacted, clipped. */
  storedObservation: unknown = null;
  /** Why the log could not be opened (null once it is open), and when to try again. */
  openError: string | null = null;
  nextOpenAt = 0;
  /** Calls whose rows could not be written because the log was not open. */
  lostWhileClosed = 0;
  /** A commit failure not yet written as an event, and when to try committing again. */
  pendingFailure: PendingFailure | null = null;
  nextCommitAt = 0;
  /** True once something worth keeping happened here (a call, a step, a verdict, a fault). */
  hasContent = false;
  /** Steps, verdicts and events declared for this session (kept only if it ever holds a tool call). */
  declared = 0;
  /** This recorder created the session's dir (so it may remove it again when the session holds no call). */
  createdDir = false;
  /** Session fields set before the log was open (an end before any call), applied when it opens. */
  fields: Partial<SessionRow> = {};
  private buffered: EventRecord[] = [];
  private bufferedDropped = 0;

  constructor(init: {
    id: string;
    originalId: string | null;
    via: SessionVia;
    startedAt: Date;
    dir: string;
  }) {
    this.id = init.id;
    this.originalId = init.originalId;
    this.via = init.via;
    this.startedAt = init.startedAt;
    this.dir = init.dir;
  }

  /** Add an event to the log, or keep it until the log opens. */
  addEvent(kind: string, detail: unknown, callSeq: number | null = null, at = new Date()): void {
    const e: EventRecord = { at: at.toISOString(), kind, callSeq, detail: JSON.stringify(detail) };
    if (this.log) {
      this.log.addEvent(e);
      return;
    }
    if (this.buffered.length < MAX_BUFFERED_EVENTS) this.buffered.push(e);
    else this.bufferedDropped += 1;
  }

  /** Hand events kept while the log was closed to the (now open) log; returns how many were dropped. */
  drainBuffered(): number {
    if (!this.log) return 0;
    for (const e of this.buffered) this.log.addEvent(e);
    this.buffered = [];
    const dropped = this.bufferedDropped;
    this.bufferedDropped = 0;
    return dropped;
  }
}
