/** The jobs of the recorder's queue: everything recorded goes through it in order. */
import type { ClientSaw, LateAnswer, RecordedCall } from './call.js';

export type Job =
  /** A call started: its pending row. */
  | { type: 'begin'; call: RecordedCall }
  /** A call completed (answered, thrown, failed at the transport or too large to record). */
  | { type: 'complete'; call: RecordedCall }
  /** The real answer to a call already recorded as a proxy timeout. */
  | { type: 'late'; call: RecordedCall; late: LateAnswer; saw: ClientSaw }
  /** An event of a call (a streamed notification, a server request and its reply), in the call's session. */
  | { type: 'call-event'; call: RecordedCall; kind: string; detail: unknown; at: Date }
  /** A declared event (step, verdict, free-form); without a session id, the connection's. */
  | { type: 'event'; sessionId: string | undefined; kind: string; detail: unknown; at: Date }
  /** A JSON-RPC exchange that is not a tool call (initialize, tools/list, ping, notifications). */
  | { type: 'exchange'; request: unknown; response: unknown; at: Date; failed?: string }
  /** `recorder.end()`. */
  | { type: 'end'; sessionId: string; verdict: { passed?: boolean; reason?: string }; at: Date };
