/**
 * The rule both recorders follow at their cap (the in-process record queue's bytes, the worker recorder's JSON
 * not yet taken): what would add to what they hold (a new call, request or exchange, a note, an event) is not
 * kept, only counted, and one `recording-gap` event says how many and when, once they are back under half the
 * cap (or at close). What settles a call already recorded still goes in, as do the agent's declared steps and
 * verdicts, up to GAP_DECLARED of them in one gap.
 */

import { SMALL_JOB_BYTES } from './call.js';
import type { Clock } from './clock.js';
import type { Job } from './jobs.js';

/** The kind of the event that says what a gap did not keep. */
export const RECORDING_GAP = 'recording-gap';

/** What is at a recorder's cap, for its gap's texts (as the state now, `holds`, and after, `held`). */
export interface AtCap {
  /** What holds it: "the record queue". */
  holder: string;
  held: string;
  holds: string;
  /** What becomes of the calls meanwhile: "passed through", "forwarded". */
  calls: string;
}

/** A gap's event `reason` and the stderr line said as it opens, written once for both recorders. */
export function gapTexts(at: AtCap): { reason: string; opened: string } {
  return {
    reason: `${at.holder} held ${at.held} (its cap)`,
    opened:
      `mcec-recorder: ${at.holder} holds ${at.holds} (its cap): calls are ${at.calls} but not recorded until ` +
      `it catches up (a ${RECORDING_GAP} event will say how many)`,
  };
}

/** Events recorded even at the cap: what an agent declares of its run (declarations.ts). */
export const DECLARED_KINDS: ReadonlySet<string> = new Set(['step', 'verdict']);
/** Declared events let through in one gap at most: past it they are counted too. */
export const GAP_DECLARED = 1000;

/** What was not kept: a tools/call, any other request with an id, or anything else (notification, note, event). */
export type NotRecorded = 'tool-call' | 'request' | 'other';

/** What a request not kept counts as: a tools/call, another request (it has an id), or a notification: other. */
export function notRecordedAs(request: unknown): NotRecorded {
  if (typeof request !== 'object' || request === null) return 'other';
  if ((request as { method?: unknown }).method === 'tools/call') return 'tool-call';
  return (request as { id?: unknown }).id === undefined ? 'other' : 'request';
}

export interface RecordingGapOptions {
  /** What the recorder holds now, in the unit of `cap` (bytes queued, chars untaken). */
  held: () => number;
  cap: number;
  /** The event's `reason`: what was at its cap. */
  reason: string;
  /** Said once a gap first counts something not kept (a line on stderr). */
  opened: () => void;
  /** Epoch milliseconds: the gap's `from` and `to`. */
  now: () => number;
  /**
   * Records the `recording-gap` event as the gap closes (without waiting for room: it is one small event); not
   * called for a gap that counted nothing (only declared events, or a kept token, came while it was open).
   */
  record: (detail: RecordingGapDetail) => void;
}

/** The `recording-gap` event's detail (schema/session-log-event.schema.json, `recordingGap`). */
export interface RecordingGapDetail {
  reason: string;
  toolCalls: number;
  requests: number;
  otherMessages: number;
  from: string;
  to: string;
}

/** A recorder's gaps: at most one open at a time, counting what its cap kept out. */
export class RecordingGaps {
  private readonly options: RecordingGapOptions;
  private toolCalls = 0;
  private requests = 0;
  private others = 0;
  private declared = 0;
  private since = 0;
  private last = 0;
  private isOpen = false;
  /** True once this gap counted something (and said so through `opened`). */
  private lost = false;

  constructor(options: RecordingGapOptions) {
    this.options = options;
  }

  /** Whether a gap is open (for tests). */
  get open(): boolean {
    return this.isOpen;
  }

  /** True at the cap: what is held reached it, or `bytes` more would take it past. */
  atCap(bytes = 0): boolean {
    const held = this.options.held();
    return held >= this.options.cap || held + bytes > this.options.cap;
  }

  /**
   * At the cap, counts `what` (opening a gap) and says true: the caller keeps nothing of it. One that is alone
   * bigger than the cap, refused while under half of it, is recorded as a gap at once.
   */
  refuses(what: NotRecorded, bytes = 0): boolean {
    if (!this.atCap(bytes)) return false;
    this.count(what);
    this.closeIfRoom(false);
    return true;
  }

  /** A declared step or verdict of `bytes`: false while it may still be kept (GAP_DECLARED), else counted and true. */
  refusesDeclared(bytes = 0): boolean {
    if (!this.atCap(bytes)) return false;
    this.start();
    this.declared += 1;
    if (this.declared <= GAP_DECLARED) return false;
    this.count('other');
    return true;
  }

  /**
   * An event of `kind` and `bytes` at the cap: a declared one as `refusesDeclared`, any other counted as
   * `other`; never one about the whole recorder (`wide`: a recording gap, which says what was lost).
   */
  refusesEvent(kind: string, bytes: number, wide: boolean): boolean {
    if (wide) return false;
    return DECLARED_KINDS.has(kind) ? this.refusesDeclared(bytes) : this.refuses('other', bytes);
  }

  /** Something not kept at the cap, counted into the open gap (opened now if none). */
  count(what: NotRecorded): void {
    this.start();
    if (!this.lost) this.options.opened();
    this.lost = true;
    if (what === 'other') this.others += 1;
    else this.requests += 1;
    if (what === 'tool-call') this.toolCalls += 1;
    this.last = this.options.now();
  }

  /** Opens a gap if none is open: it bounds the declared events let through until it closes. */
  start(): void {
    if (this.isOpen) return;
    const now = this.options.now();
    this.isOpen = true;
    this.toolCalls = 0;
    this.requests = 0;
    this.others = 0;
    this.declared = 0;
    this.since = now;
    this.last = now;
    this.lost = false;
  }

  /**
   * The open gap closed once what is held is back under half the cap (or `force`, at close), and recorded if it
   * counted anything: a gap in which nothing was lost is no record failure.
   */
  closeIfRoom(force: boolean): void {
    if (!this.isOpen || (!force && this.options.held() > this.options.cap / 2)) return;
    this.isOpen = false;
    if (!this.lost) return;
    this.options.record({
      reason: this.options.reason,
      toolCalls: this.toolCalls,
      requests: this.requests,
      otherMessages: this.others,
      from: new Date(this.since).toISOString(),
      to: new Date(this.last).toISOString(),
    });
  }
}

/**
 * The in-process recorder's gaps: at its record queue's byte cap (`maxQueuedBytes`), where the proxies' new
 * requests, notes and events are counted instead of queued.
 */
export function queueGaps(
  queue: { readonly bytes: number; readonly maxQueuedBytes: number },
  clock: Clock,
  ledger: { notice(line: string): void },
  push: (job: Job, bytes: number) => void,
): RecordingGaps {
  const cap = queue.maxQueuedBytes;
  const texts = gapTexts({
    holder: 'the record queue',
    held: `${cap} bytes`,
    holds: `${cap} bytes`,
    calls: 'passed through',
  });
  return new RecordingGaps({
    held: () => queue.bytes,
    cap,
    reason: texts.reason,
    now: () => clock.date().getTime(),
    record: (detail) =>
      push(
        { type: 'event', sessionId: undefined, kind: RECORDING_GAP, detail, at: clock.date() },
        SMALL_JOB_BYTES,
      ),
    opened: () => ledger.notice(texts.opened),
  });
}
