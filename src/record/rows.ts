/**
 * The rows a call leaves in the log, built from values alone (pure): the pending row, the completed row of an
 * answer, of a transport fault, of an answer too large to record, and of a call whose recording failed
 * part-way; and an artifact row per image.
 */
import type { CompactedImage } from '../artifacts/compact.js';
import type { Envelope, ToolOutput, Violation } from '../contract/types.js';
import type { CallRow } from '../store/schema.js';
import type { ArtifactRecord } from '../store/session-log.js';
import type { RecordedCall } from './call.js';
import { isoTime } from './time.js';
import type { OversizeAnswer } from './types.js';
import { jsonOrNull } from './values.js';

/** The call's row as pending (one object shape for every row: the other builders fill it in). */
export function pendingRow(call: RecordedCall): CallRow {
  return {
    seq: call.seq,
    tool: call.tool,
    args: call.argsJson,
    rpc_id: call.rpcId,
    transport: call.transport,
    started_at: isoTime(call.startedAt),
    ended_at: null,
    duration_ms: null,
    status: 'pending',
    ok: null,
    error_code: null,
    error_category: null,
    error_detail: null,
    output_kind: null,
    envelope: null,
    response: null,
    violations: null,
    payload_dropped: call.argsDropped ? 1 : 0,
  };
}

/** The call's row with its status, end time and duration set. */
export function endedRow(call: RecordedCall, status: CallRow['status']): CallRow {
  const row = pendingRow(call);
  row.status = status;
  row.ended_at = isoTime(call.endedAt ?? new Date());
  row.duration_ms = call.durationMs ?? null;
  return row;
}

/** The status of an answered call: a JSON-RPC error is a fault; else the (stored) envelope's ok. */
export function answerStatus(out: ToolOutput | undefined, env: Envelope | undefined): CallRow['status'] {
  if (out?.kind === 'json-rpc-error' && out.fault) return 'fault';
  return env?.ok ? 'ok' : 'failed';
}

/** What a completed call stores besides its metadata (already redacted, compacted and within budget). */
export interface StoredAnswer {
  out: ToolOutput | undefined;
  /** The stored envelope (redacted; the thrown failure's for a throw). */
  env: Envelope | undefined;
  /** The JSON-RPC error's message, scrubbed, for a fault. */
  faultDetail: string | undefined;
  envelopeJson: string | null;
  responseJson: string | null;
  violations: readonly Violation[];
  payloadDropped: boolean;
}

/** The completed row of an answered (or thrown) call. */
export function answeredRow(call: RecordedCall, a: StoredAnswer): CallRow {
  const fault = a.out?.kind === 'json-rpc-error' ? a.out.fault : undefined;
  const row = endedRow(call, answerStatus(a.out, a.env));
  const env = a.env;
  if (fault) {
    row.error_code = String(fault.code);
    row.error_detail = a.faultDetail ?? null;
  } else if (env) {
    row.ok = env.ok ? 1 : 0;
    if (!env.ok) {
      const detail: unknown = env.error.detail;
      row.error_code = env.error.code;
      // A plain server's failure has no category: the envelope's 'internal' is the reader's stand-in, not the server's word.
      row.error_category = a.out?.plain ? null : env.error.category;
      row.error_detail =
        detail === undefined ? null : typeof detail === 'string' ? detail : jsonOrNull(detail);
    }
  }
  row.output_kind = call.thrown ? 'exception' : (a.out?.kind ?? null);
  row.envelope = a.envelopeJson;
  row.response = a.responseJson;
  row.violations = a.violations.length > 0 ? jsonOrNull(a.violations) : null;
  row.payload_dropped = a.payloadDropped ? 1 : 0;
  return row;
}

/** The row of a call whose exchange failed at the transport (`detail`: the reason, scrubbed). */
export function transportFaultRow(call: RecordedCall, detail: string): CallRow {
  const code = call.transportFailureCode;
  const row = endedRow(call, code === 'cancelled' ? 'failed' : 'fault');
  if (code === 'cancelled') row.ok = 0;
  row.error_code = code;
  row.error_detail = detail;
  return row;
}

/**
 * The row of an answer a proxy passed through unrecorded: status from its `isError` when the proxy could read
 * it, else a fault; no payload.
 */
export function oversizeRow(call: RecordedCall, o: OversizeAnswer): CallRow {
  const known = o.rpcError !== true && typeof o.isError === 'boolean';
  const status: CallRow['status'] = !known ? 'fault' : o.isError ? 'failed' : 'ok';
  const row = endedRow(call, status);
  row.ok = known ? (o.isError ? 0 : 1) : null;
  if (status !== 'ok') {
    row.error_code = 'answer-not-recorded';
    const why =
      o.reason === 'queue-full'
        ? `the answer (about ${o.bytes} bytes) came while the record queue held its ${o.limit} bytes`
        : `the answer (${o.bytes} bytes) was over the recording limit of ${o.limit} bytes`;
    row.error_detail = `${why}: passed to the client unchanged, not recorded; ${o.rpcError ? 'it was a JSON-RPC error' : known ? 'isError: true' : 'outcome unknown'}`;
  }
  row.payload_dropped = 1;
  return row;
}

/** The row of a call whose recording failed part-way (a bug in a stage): what is known without its payload. */
export function metadataOnlyRow(call: RecordedCall, ok: boolean | undefined): CallRow {
  const row = endedRow(call, ok === true ? 'ok' : 'failed');
  row.ok = ok === undefined ? null : ok ? 1 : 0;
  row.error_code = call.thrown ? 'unhandled' : null;
  row.payload_dropped = 1;
  return row;
}

/** The `artifacts` row of one image (or host file) of call `callSeq`. */
export function artifactRow(callSeq: number, img: CompactedImage, createdAt: string): ArtifactRecord {
  return {
    call_seq: callSeq,
    role: img.role,
    json_path: img.jsonPath,
    path: img.error === undefined ? (img.path ?? null) : null,
    sha256: img.sha256 || null,
    bytes: img.bytes || null,
    width: img.width ?? null,
    height: img.height ?? null,
    format: img.format ?? null,
    blank_check: img.blankCheck ? JSON.stringify(img.blankCheck) : null,
    error: img.error ?? null,
    created_at: createdAt,
    host_path: img.hostPath ?? null,
    masks: img.masked?.length ? JSON.stringify(img.masked) : null,
    masks_painted: img.masked?.length ? (img.maskedOnExport ? 0 : 1) : null,
  };
}

/** The `oversize-message` event's detail for a message a proxy passed through unrecorded. */
export function oversizeDetail(
  direction: 'answer' | 'request',
  o: OversizeAnswer,
  transport: string | undefined,
): Record<string, unknown> {
  const detail: Record<string, unknown> = { direction, bytes: o.bytes, limit: o.limit };
  if (typeof o.isError === 'boolean') detail.isError = o.isError;
  if (o.rpcError === true) detail.rpcError = true;
  if (o.reason) detail.reason = o.reason;
  if (transport) detail.transport = transport;
  return detail;
}
