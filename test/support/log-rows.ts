/** Rows of the log's schema for tests that write logs directly (SessionLog) rather than through a recorder. */
import type { CallRow, SessionRow } from '../../src/store/schema.js';

/** An open session's row, written by this process; `fields` override. */
export function sessionRow(id = 'abc123def456', fields: Partial<SessionRow> = {}): SessionRow {
  return {
    session_id: id,
    original_id: null,
    scenario: 'store test',
    started_at: '2026-12-02T10:15:02.123Z',
    ended_at: null,
    status: 'open',
    passed: null,
    end_reason: null,
    recorder_version: '0.1.0',
    writer_pid: process.pid,
    environment: '{}',
    last_observation: null,
    ...fields,
  };
}

/** A call's row, pending unless `fields` say otherwise. */
export function callRow(seq: number, fields: Partial<CallRow> = {}): CallRow {
  return {
    seq,
    tool: 'query',
    args: '{"selector":"x"}',
    rpc_id: null,
    transport: 'wrap',
    started_at: '2026-12-02T10:15:03.000Z',
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
    payload_dropped: 0,
    ...fields,
  };
}

/** A failed plain tool result as logs before 8f606dd stored it: the reader's stand-in category 'internal'. */
export function oldPlainFailure(tool: string): Partial<CallRow> {
  return {
    tool,
    args: '{"message":"hi"}',
    status: 'failed',
    ok: 0,
    ended_at: '2026-12-02T10:15:03.010Z',
    duration_ms: 10,
    error_code: 'tool-error',
    error_category: 'internal',
    error_detail: 'Error: no such thing',
  };
}
