/** The jobs of the recorder's queue: everything recorded goes through it in order. */
import type { ClientSaw, LateAnswer, RecordedCall } from './call.js';
import type { CallRecording } from './call-recording.js';
import type { EventRecording } from './event-recording.js';
import type { FailureLedger } from './failure-ledger.js';
import { thrownMessage } from './outcome.js';
import { stageOf } from './stages.js';

export type Job =
  /** A call started: its pending row. */
  | { type: 'begin'; call: RecordedCall }
  /** A call completed (answered, thrown, failed at the transport or too large to record). */
  | { type: 'complete'; call: RecordedCall }
  /** The real answer to a call already recorded as a proxy timeout. */
  | { type: 'late'; call: RecordedCall; late: LateAnswer; saw: ClientSaw }
  /** An event of a call (a streamed notification, a server request and its reply), in the call's session. */
  | { type: 'call-event'; call: RecordedCall; kind: string; detail: unknown; at: Date }
  /** A declared event (step, verdict, free-form); without a session id, the connection's (or `mcpSession`'s). */
  | {
      type: 'event';
      sessionId: string | undefined;
      kind: string;
      detail: unknown;
      at: Date;
      mcpSession?: string | undefined;
      /**
       * `mcpSession` is only the client's word (its header): filed there only once a call started there. Unset:
       * decided by the kind (`CLIENTS_WORD_KINDS`); an exchange's own events say whether its exchange's is.
       */
      clientsWord?: boolean | undefined;
    }
  /**
   * A JSON-RPC exchange that is not a tool call (initialize, tools/list, ping, notifications); `mcpSession`:
   * the MCP session it ran in (a server that is not MCEC, over HTTP with session ids), else the connection's;
   * `clientsWord` as for an event (an exchange with no JSON-RPC request: an orphan answer, a body that is not
   * JSON-RPC).
   */
  | {
      type: 'exchange';
      request: unknown;
      response: unknown;
      at: Date;
      failed?: string;
      mcpSession?: string | undefined;
      clientsWord?: boolean | undefined;
    }
  /** `recorder.end()`. */
  | { type: 'end'; sessionId: string; verdict: { passed?: boolean; reason?: string }; at: Date };

/** Do one job: calls by CallRecording, the rest by EventRecording (a promise while it compacts images). */
export function runJob(job: Job, calls: CallRecording, events: EventRecording): Promise<void> | undefined {
  switch (job.type) {
    case 'begin':
      calls.begin(job.call);
      return undefined;
    case 'complete':
      return calls.complete(job.call);
    case 'late':
      return calls.late(job.call, job.late, job.saw);
    case 'event':
      events.declared(job.sessionId, job.kind, job.detail, job.at, job.mcpSession, job.clientsWord);
      return undefined;
    case 'call-event':
      events.ofCall(job.call, job.kind, job.detail, job.at);
      return undefined;
    case 'exchange':
      events.exchange(job.request, job.response, job.at, job.failed, job.mcpSession, job.clientsWord);
      return undefined;
    case 'end':
      events.end(job.sessionId, job.verdict, job.at);
      return undefined;
  }
}

/** Do one job, its failures kept to itself (a throw, sync or async, is jobFailed's). */
export function runJobSafely(
  job: Job,
  calls: CallRecording,
  events: EventRecording,
  ledger: FailureLedger,
): Promise<void> | undefined {
  try {
    const pending = runJob(job, calls, events);
    return pending?.catch((err) => jobFailed(job, err, calls, ledger));
  } catch (err) {
    jobFailed(job, err, calls, ledger);
    return undefined;
  }
}

/** A bug (or injected fault) in a stage: count it, keep what can be kept, and hand the caller its value. */
function jobFailed(job: Job, err: unknown, calls: CallRecording, ledger: FailureLedger): void {
  if (job.type === 'complete' || job.type === 'begin') calls.failed(job.call, job.type === 'complete', err);
  else ledger.note(undefined, stageOf(err), thrownMessage(err), 0);
}
