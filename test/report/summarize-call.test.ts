import { describe, expect, it } from 'vitest';
import { CallJson } from '../../src/report/call-json.js';
import { MAX_LINE, summarizeCall } from '../../src/report/summarize-call.js';
import type { CallRow } from '../../src/store/schema.js';
import { NOTEPAD, SAVE_AS } from '../support/fixture-session.js';

function row(
  tool: string,
  args: Record<string, unknown> | null,
  outcome: { result?: unknown; error?: { code: string; category: string; detail: string } } | 'pending' = {},
  extra: Partial<CallRow> = {},
): CallRow {
  const pending = outcome === 'pending';
  const error = pending ? undefined : outcome.error;
  return {
    seq: 1,
    tool,
    args: args === null ? null : JSON.stringify(args),
    rpc_id: '1',
    transport: 'wrap',
    started_at: '2026-12-02T10:15:00.000Z',
    ended_at: pending ? null : '2026-12-02T10:15:00.100Z',
    duration_ms: pending ? null : 100,
    status: pending ? 'pending' : error ? 'failed' : 'ok',
    ok: pending ? null : error ? 0 : 1,
    error_code: error?.code ?? null,
    error_category: error?.category ?? null,
    error_detail: error?.detail ?? null,
    output_kind: 'envelope',
    envelope: pending
      ? null
      : JSON.stringify(error ? { ok: false, error } : { ok: true, result: outcome.result ?? {} }),
    response: null,
    violations: null,
    payload_dropped: 0,
    ...extra,
  };
}

const captureSummary = {
  kind: 'capture-summary',
  window: NOTEPAD,
  handle: NOTEPAD.handle,
  width: 800,
  height: 600,
  encoding: 'png',
  bytes: 14 * 1024 + 100,
  blankCheck: { blank: false, dominantFraction: 0.4, dominantIsDark: false },
  artifact: 'artifacts/capture-20261202-101500123-1.png',
};

describe('summarizeCall', () => {
  it.each([
    [
      'capture of a window',
      row('capture', { title: 'Untitled - Notepad' }, { result: captureSummary }),
      "capture 800x600 png 14 KB of 'Untitled - Notepad'",
    ],
    [
      'capture of a region, blank',
      row(
        'capture',
        { region: { x: 0, y: 0, width: 400, height: 300 } },
        {
          result: {
            ...captureSummary,
            window: undefined,
            width: 400,
            height: 300,
            bytes: 900,
            blankCheck: { blank: true, dominantFraction: 1, dominantIsDark: true },
          },
        },
      ),
      'capture 400x300 png 900 B of region 0,0 400x300 (blank)',
    ],
    [
      'capture whose image was not kept',
      row(
        'capture',
        {},
        { result: { ...captureSummary, artifact: undefined, artifactError: 'over the artifact budget' } },
      ),
      "capture 800x600 png 14 KB of 'Untitled - Notepad' (image not kept: over the artifact budget)",
    ],
    [
      'failed capture',
      row(
        'capture',
        { title: 'Untitled - Notepad' },
        { error: { code: 'frame-all-black', category: 'capture-blank', detail: '' } },
      ),
      "capture title='Untitled - Notepad': frame-all-black",
    ],
    [
      'find, found',
      row(
        'find',
        { name: 'Save', controlType: 'Button' },
        {
          result: {
            found: true,
            element: { controlType: 'Button', name: 'Save', children: [] },
            window: SAVE_AS,
          },
        },
      ),
      "find name='Save' controlType='Button': found Button 'Save'",
    ],
    [
      'find, missed',
      row('find', { automationId: 'btnX' }, { result: { found: false, element: null, window: SAVE_AS } }),
      "find automationId='btnX': not found",
    ],
    [
      'find, ambiguous',
      row(
        'find',
        { name: 'Save' },
        { error: { code: 'selector-matched-3', category: 'ambiguous-selector', detail: '' } },
      ),
      "find name='Save': selector-matched-3",
    ],
    [
      'find with a nested selector object',
      row(
        'find',
        { selector: { name: 'OK', className: 'Button' } },
        { error: { code: 'element-not-found', category: 'no-target', detail: '' } },
      ),
      "find name='OK' className='Button': element-not-found",
    ],
    [
      'query',
      row(
        'query',
        { title: 'Save As' },
        { result: { window: SAVE_AS, nodeCount: 14, truncated: true, tree: [] } },
      ),
      "query 'Save As': 14 nodes (truncated)",
    ],
    [
      'wait-for, found',
      row(
        'wait-for',
        { name: 'Saved', timeoutMs: 5000 },
        {
          result: {
            found: true,
            element: { controlType: 'ControlType.Text', name: 'Saved' },
            window: NOTEPAD,
          },
        },
      ),
      "wait-for name='Saved' (5000 ms): found Text 'Saved'",
    ],
    [
      'wait-for, timeout',
      row(
        'wait-for',
        { name: 'Saved', timeoutMs: 5000 },
        { error: { code: 'wait-condition-timeout', category: 'timeout', detail: '' } },
      ),
      "wait-for name='Saved' (5000 ms): wait-condition-timeout",
    ],
    [
      'invoke',
      row('invoke', { name: 'Save' }, { result: { invoked: true, action: 'invoke', by: 'InvokePattern' } }),
      "invoke name='Save': invoked (invoke)",
    ],
    [
      'invoke opening a modal',
      row('invoke', { name: 'Save' }, { result: { invoked: true, modalPending: true, note: 'modal' } }),
      "invoke name='Save': invoked, modal dialog pending",
    ],
    [
      'click',
      row('click', { name: 'OK' }, { result: { clicked: true, at: [512, 300], button: 'left', count: 2 } }),
      "click name='OK': clicked at 512,300 (left x2)",
    ],
    [
      'windows',
      row(
        'windows',
        {},
        { result: { condition: 'exists', count: 5, windows: [NOTEPAD, SAVE_AS], satisfied: true } },
      ),
      "windows exists: 5 windows ('Untitled - Notepad', 'Save As', +3), condition met",
    ],
    [
      'displays',
      row(
        'displays',
        {},
        {
          result: {
            count: 2,
            displays: [
              { index: 0, primary: false, bounds: { width: 2560, height: 1440 }, dpi: 96 },
              { index: 1, primary: true, bounds: { width: 1920, height: 1080 }, dpi: 144 },
            ],
          },
        },
      ),
      'displays: 2 displays, primary 1920x1080 @ 144 dpi',
    ],
    [
      'get-text',
      row(
        'get-text',
        { title: 'Untitled - Notepad' },
        { result: { window: NOTEPAD, text: 'Hello world\nsecond line', lineCount: 2, wordCount: 4 } },
      ),
      "get-text of 'Untitled - Notepad': 2 lines, 4 words 'Hello world second line'",
    ],
    [
      'session-start',
      row('session-start', {}, { result: { sessionId: '5f19c9c01a3f', startedAt: '2026-12-02T10:15:00Z' } }),
      'session-start 5f19c9c01a3f',
    ],
    [
      'session-end, twice',
      row('session-end', {}, { result: { sessionId: '5f19c9c01a3f', ended: false } }),
      'session-end: not ended (already ended)',
    ],
    [
      'send_command',
      row('send_command', { command: 'WINDOWS LIST' }, { result: { output: 'a\nb\nc' } }),
      "send_command 'WINDOWS LIST': output 5 chars",
    ],
    [
      'send_command whose inner result failed',
      row(
        'send_command',
        { command: 'CAPTURE 1' },
        {
          result: {
            output: JSON.stringify({ success: false, command: 'CAPTURE', errorCode: 'window-not-found' }),
          },
        },
      ),
      "send_command 'CAPTURE 1': inner command failed: window-not-found",
    ],
    [
      'an unknown tool',
      row('mystery', { level: 3, mode: 'fast', sessionId: 'x' }, { result: { anything: 1 } }),
      "mystery level=3 mode='fast': ok",
    ],
    ['an unknown tool without arguments', row('ping-ish', null, { result: {} }), 'ping-ish: ok'],
    [
      'a pending call',
      row('invoke', { name: 'Save' }, 'pending'),
      "invoke name='Save': pending (no response recorded)",
    ],
    [
      'a fault',
      row(
        'find',
        { name: 'x' },
        { error: { code: 'json-rpc-32603', category: 'internal', detail: '' } },
        { status: 'fault' },
      ),
      "find name='x': fault json-rpc-32603",
    ],
    [
      'a dropped payload',
      row('capture', null, {}, { envelope: null, payload_dropped: 1 }),
      'capture: ok [payload dropped]',
    ],
  ])('%s', (_name, input, expected) => {
    expect(summarizeCall(input)).toBe(expected);
  });

  it('clips the send_command command and every huge value', () => {
    const command = `TYPE ${'x'.repeat(500)}`;
    const line = summarizeCall(row('send_command', { command }, { result: { output: 'ok' } }));
    expect(line.length).toBeLessThanOrEqual(MAX_LINE);
    expect(line.startsWith("send_command 'TYPE xxxx")).toBe(true);
    expect(line).toContain("…': output 2 chars");
    const huge = summarizeCall(
      row(
        'x'.repeat(1000),
        { a: 'y'.repeat(1_000_000) },
        { error: { code: 'z'.repeat(10_000), category: 'internal', detail: '' } },
      ),
    );
    expect(huge.length).toBeLessThanOrEqual(MAX_LINE);
  });

  it('never lets image bytes into a line', () => {
    const png = `iVBORw0KGgoAAAANSUhEUgAA${'A'.repeat(4000)}`;
    for (const input of [
      row('mystery', { data: png, other: `data:image/png;base64,${png}` }, { result: {} }),
      row('capture', { title: png }, 'pending'),
      row('find', { name: png }, { error: { code: 'x', category: 'internal', detail: '' } }),
    ]) {
      const line = summarizeCall(input);
      expect(line).not.toContain('iVBORw0KGgo');
      expect(line).toContain('image bytes omitted');
    }
  });

  it('copes with unreadable stored JSON', () => {
    expect(summarizeCall(row('find', null, {}, { args: '{not json', envelope: '[1,2' }))).toBe('find: ok');
  });

  it('reads a parsed row handed in, and ignores anything else in its place (an index from map)', () => {
    const found = row(
      'find',
      { by: 'name', value: 'Save' },
      { result: { found: true, element: { name: 'Save' } } },
    );
    const other = row('find', { by: 'name', value: 'Open' }, { result: { found: false } });
    const alone = [found, other].map((r) => summarizeCall(r));
    // TypeScript refuses this; JavaScript callers of the built module can still write it.
    expect([found, other].map(summarizeCall as (r: CallRow) => string)).toEqual(alone);
    expect(summarizeCall(found, new CallJson(found))).toBe(alone[0]);
    expect(summarizeCall(found, new CallJson(other))).toBe(alone[0]); // another row's JSON is not used
  });
});
