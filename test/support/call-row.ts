/** A call row of the log's schema (pending unless `fields` say otherwise), for tests that write logs directly. */
import type { CallRow } from '../../src/store/schema.js';

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
