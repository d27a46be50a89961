/** The one function that decides what the agent gets back, on the critical path and in the queue alike. */
import { describe, expect, it } from 'vitest';
import type { CompactedImage } from '../../src/artifacts/compact.js';
import { readToolOutput } from '../../src/contract/read-tool-output.js';
import { agentValue, decidableFailure, unrecordedValue } from '../../src/record/agent-value.js';
import { callToolResult, envelopeIn } from './helpers.js';

const OBS = { found: true, element: { name: 'OK' } };
const session = { dir: '/tmp/s', lastObservation: OBS as Record<string, unknown> };
const failure = (extra: Record<string, unknown> = {}) =>
  callToolResult({
    ok: false,
    error: { code: 'element-not-found', category: 'not-found', detail: 'no such element', ...extra },
  });

function valueFor(tool: string, output: unknown, more: Partial<Parameters<typeof agentValue>[0]> = {}) {
  return agentValue({
    tool,
    output,
    read: readToolOutput(output),
    images: [],
    session,
    fillLastObservation: true,
    ...more,
  });
}

describe('agentValue', () => {
  it('hands back a success, and an output without a session, as the very same object', () => {
    const ok = callToolResult({ ok: true, result: OBS });
    expect(valueFor('find', ok)).toBe(ok);
    const failed = failure();
    expect(valueFor('find', failed, { session: undefined })).toBe(failed);
  });

  it("fills a command-level failure with the session's last good observation, in a copy", () => {
    const failed = failure();
    const value = valueFor('find', failed);
    expect(value).not.toBe(failed);
    expect((envelopeIn(value).error as Record<string, unknown>).lastObservation).toEqual(OBS);
    expect((envelopeIn(failed).error as Record<string, unknown>).lastObservation).toBeUndefined();
  });

  it('does not fill when filling is off, for a refusal, for a meta tool, or when one is there', () => {
    const failed = failure();
    expect(valueFor('find', failed, { fillLastObservation: false })).toBe(failed);
    const refusal = callToolResult({
      ok: false,
      error: { code: 'emergency-stopped', category: 'invalid-argument', detail: 'stop' },
    });
    expect(valueFor('find', refusal)).toBe(refusal);
    expect(valueFor('send_command', failed)).toBe(failed);
    const own = failure({ lastObservation: { found: false } });
    expect(valueFor('find', own)).toBe(own);
  });

  it('gives a lastObservation whose bytes were compacted its summary with an absolute artifact path', () => {
    const raw = failure({ lastObservation: { base64: 'iVBORw0KGgo', width: 1, height: 1 } });
    const summary = { kind: 'capture-summary', artifact: 'artifacts/capture-1.png', width: 1, height: 1 };
    const compactEnvelope = {
      ok: false as const,
      error: { ...(envelopeIn(raw).error as object), lastObservation: summary },
    };
    const image = { jsonPath: '/error/lastObservation/base64' } as CompactedImage;
    const value = valueFor('find', raw, { compactEnvelope: compactEnvelope as never, images: [image] });
    const lo = (envelopeIn(value).error as Record<string, unknown>).lastObservation as Record<
      string,
      unknown
    >;
    expect(lo.artifact).toBe('/tmp/s/artifacts/capture-1.png');
  });

  it("turns a throw into an unhandled failure naming the called session, with the session's observation", () => {
    const thrown = { message: 'boom', shape: 'envelope' as const };
    const value = agentValue({
      tool: 'click',
      output: undefined,
      thrown,
      images: [],
      namedSessionId: 'abc',
      session,
      fillLastObservation: false,
    });
    expect(value).toEqual({
      sessionId: 'abc',
      ok: false,
      error: { code: 'unhandled', category: 'internal', detail: 'boom', lastObservation: OBS },
    });
    expect(unrecordedValue('click', undefined, thrown)).toEqual({
      ok: false,
      error: { code: 'unhandled', category: 'internal', detail: 'boom' },
    });
  });
});

describe('decidableFailure', () => {
  it('decides a plain failure now, and leaves image bytes and unflagged shapes to the queue', () => {
    expect(decidableFailure(failure())).toEqual({ knownFailure: true });
    expect(decidableFailure({ ok: false, error: { code: 'x', category: 'internal' } })).toEqual({
      knownFailure: true,
    });
    expect(decidableFailure(callToolResult({ ok: true, result: {} }))).toBeUndefined();
    expect(decidableFailure(failure({ lastObservation: { base64: 'iVBORw0KGgoAAAA' } }))).toBeUndefined();
    expect(decidableFailure({ content: [{ type: 'text', text: 'not json' }], isError: true })).toEqual({
      knownFailure: false,
    });
    expect(decidableFailure('text')).toBeUndefined();
  });
});
