/** The pure row builder: every row a call can leave, from values alone. */
import { describe, expect, it } from 'vitest';
import { readToolOutput } from '../../src/contract/read-tool-output.js';
import type { Envelope } from '../../src/contract/types.js';
import { newCall, type RecordedCall, type ThrownCall } from '../../src/record/call.js';
import {
  answeredRow,
  metadataOnlyRow,
  oversizeRow,
  pendingRow,
  transportFaultRow,
} from '../../src/record/rows.js';

/** A call filed as seq 3 with stored args, answered after 250 ms (or thrown, or with its args dropped). */
function call(more: { argsDropped?: boolean; thrown?: ThrownCall } = {}): RecordedCall {
  const c = newCall({
    tool: 'find',
    args: {},
    rpcId: '7',
    method: 'tools/call',
    transport: 'http',
    startedAt: new Date('2026-12-02T10:00:00.000Z'),
    namedSessionId: undefined,
    startSessionId: 'abc',
    startVia: 'default',
    plainServer: false,
  });
  c.filedIn({} as never, 3);
  c.argsRecorded('{"q":1}', more.argsDropped === true);
  const endedAt = new Date('2026-12-02T10:00:00.250Z');
  if (more.thrown) c.threw(more.thrown.message, more.thrown.shape, endedAt);
  else c.answered({ endedAt, durationMs: 250, size: 0 });
  return c;
}

describe('rows', () => {
  it('a pending row has the call metadata and nothing of an answer', () => {
    expect(pendingRow(call())).toMatchObject({
      seq: 3,
      tool: 'find',
      args: '{"q":1}',
      rpc_id: '7',
      transport: 'http',
      started_at: '2026-12-02T10:00:00.000Z',
      status: 'pending',
      ended_at: null,
      payload_dropped: 0,
    });
    expect(pendingRow(call({ argsDropped: true })).payload_dropped).toBe(1);
  });

  it('an answered row takes its status and error from the stored envelope, a fault from the JSON-RPC error', () => {
    // A detail that is not a string (a hostile server's) is stored as JSON.
    const env = {
      ok: false,
      error: { code: 'element-not-found', category: 'no-target', detail: { n: 1 } },
    } as unknown as Envelope;
    const row = answeredRow(call(), {
      out: readToolOutput(env),
      env,
      faultDetail: undefined,
      envelopeJson: '{}',
      responseJson: null,
      violations: [],
      payloadDropped: false,
    });
    expect(row).toMatchObject({
      status: 'failed',
      ok: 0,
      error_code: 'element-not-found',
      error_category: 'no-target',
      error_detail: '{"n":1}',
      output_kind: 'envelope',
      ended_at: '2026-12-02T10:00:00.250Z',
      duration_ms: 250,
      violations: null,
    });
    const rpc = readToolOutput({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'bad' } });
    const fault = answeredRow(call(), {
      out: rpc,
      env: rpc.envelope,
      faultDetail: 'bad',
      envelopeJson: null,
      responseJson: null,
      violations: [{ path: '', message: 'x' }],
      payloadDropped: true,
    });
    expect(fault).toMatchObject({
      status: 'fault',
      error_code: '-32602',
      error_detail: 'bad',
      payload_dropped: 1,
    });
    expect(JSON.parse(fault.violations!)).toEqual([{ path: '', message: 'x' }]);
  });

  it('transport faults, oversize answers and metadata-only rows', () => {
    expect(transportFaultRow(call(), 'ECONNREFUSED')).toMatchObject({
      status: 'fault',
      error_code: 'proxy-error',
      error_detail: 'ECONNREFUSED',
    });
    expect(oversizeRow(call(), { bytes: 10, limit: 5, isError: false })).toMatchObject({
      status: 'ok',
      ok: 1,
      error_code: null,
      payload_dropped: 1,
    });
    expect(oversizeRow(call(), { bytes: 10, limit: 5 })).toMatchObject({
      status: 'fault',
      ok: null,
      error_code: 'answer-not-recorded',
    });
    expect(metadataOnlyRow(call({ thrown: { message: 'x', shape: 'envelope' } }), false)).toMatchObject({
      status: 'failed',
      ok: 0,
      error_code: 'unhandled',
      payload_dropped: 1,
    });
  });
});
