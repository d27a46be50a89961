import { beforeAll, describe, expect, it } from 'vitest';
import { findImageBytes, getAtPointer, readToolOutput } from '../../src/contract/index.js';
import { redPng } from '../support/images.js';
import { CAPTURE_SUMMARY, callToolResult, mcecStringify } from './fixtures.js';

let png: Buffer;
let pngBase64 = '';
beforeAll(async () => {
  png = await redPng();
  pngBase64 = png.toString('base64');
});

const WINDOW = {
  handle: 7,
  title: "Bob's <Editor> & C++ – naïve",
  className: 'Ed',
  processName: 'ed',
  processId: 1,
  x: 0,
  y: 0,
  width: 8,
  height: 8,
};

function captureEnvelope() {
  return {
    sessionId: '5f19c9c01a3f',
    ok: true,
    result: {
      handle: 7,
      width: 8,
      height: 8,
      encoding: 'png',
      bytes: png.length,
      base64: pngBase64,
      window: WINDOW,
      blankCheck: { blank: false, dominantFraction: 1, dominantIsDark: false },
    },
  };
}

describe('readToolOutput: bare envelope', () => {
  it('reads a valid success as is', () => {
    const env = { ok: true, result: { found: false, element: null } };
    const out = readToolOutput(env);
    expect(out).toEqual({ kind: 'envelope', envelope: env, envelopePath: '', images: [], violations: [] });
  });

  it('keeps a usable failure when the envelope breaks the contract', () => {
    const out = readToolOutput({
      ok: false,
      result: { x: 1 },
      error: { code: 'Bad', category: 'weird', detail: 3 },
    });
    expect(out.kind).toBe('envelope');
    expect(out.envelope).toEqual({ ok: false, error: { code: 'Bad', category: 'internal', detail: '' } });
    expect(out.violations.map((v) => v.path).sort()).toEqual([
      '/error/category',
      '/error/code',
      '/error/detail',
      '/result',
    ]);
    expect(out.synthesized).toBeUndefined();
  });

  it('synthesizes an internal failure when ok is not boolean', () => {
    const out = readToolOutput({ ok: 'yes' });
    expect(out.kind).toBe('envelope');
    expect(out.synthesized).toBe(true);
    expect(out.envelope?.ok).toBe(false);
    expect(out.envelope?.error).toMatchObject({ code: 'envelope-invalid', category: 'internal' });
  });

  it('gives a failure without error a stand-in error', () => {
    const out = readToolOutput({ ok: false, sessionId: 'abc' });
    expect(out.envelope).toEqual({
      ok: false,
      sessionId: 'abc',
      error: {
        code: 'envelope-invalid',
        category: 'internal',
        detail: 'failure envelope without an error object',
      },
    });
    expect(out.violations).toEqual([{ path: '/error', message: 'a failure (ok:false) requires an error' }]);
  });
});

describe('readToolOutput: MCP CallToolResult', () => {
  it('reads an MCEC capture: image block first, escaped envelope text last', () => {
    const env = captureEnvelope();
    const ctr = callToolResult(env, { data: pngBase64, mimeType: 'image/png' });
    const text = ctr.content[1]!.text as string;
    // The server's escaping is really there: + < > & ' and non-ASCII as \uXXXX.
    expect(text).toContain('\\u002B');
    expect(text).toContain('\\u003C');
    expect(text).toContain('\\u0027');
    expect(text).toContain('\\u0026');
    expect(text).toContain('\\u00EF');
    expect(text).not.toContain('<');
    const out = readToolOutput(ctr);
    expect(out.kind).toBe('call-tool-result');
    expect(out.violations).toEqual([]);
    expect(out.isError).toBe(false);
    expect(out.envelope).toEqual(env);
    expect(out.images).toEqual([{ index: 0, data: pngBase64, mimeType: 'image/png' }]);
    expect(Buffer.from(out.images[0]!.data, 'base64').equals(png)).toBe(true);
    expect(out.envelopePath).toBe('/content/1/text/#json');
    expect(getAtPointer(ctr, out.envelopePath!)).toEqual(env);
  });

  it('escaping cannot hide the bytes: they are found after parsing', () => {
    const ctr = callToolResult(captureEnvelope());
    const locs = findImageBytes(ctr);
    expect(locs).toEqual([
      {
        path: '/content/0/text/#json/result/base64',
        form: 'base64-field',
        decodedBytes: png.length,
        format: 'png',
      },
    ]);
    expect(getAtPointer(ctr, locs[0]!.path)).toBe(pngBase64);
  });

  it('reads a failure with isError true', () => {
    const env = {
      sessionId: '5f19c9c01a3f',
      ok: false,
      error: {
        code: 'window-not-found',
        category: 'no-target',
        detail: 'none',
        lastObservation: CAPTURE_SUMMARY,
      },
    };
    const out = readToolOutput(callToolResult(env));
    expect(out).toMatchObject({ kind: 'call-tool-result', isError: true, envelope: env, violations: [] });
  });

  it('flags isError that does not mirror ok', () => {
    const ctr = { ...callToolResult({ ok: true, result: {} }), isError: true };
    const out = readToolOutput(ctr);
    expect(out.envelope?.ok).toBe(true);
    expect(out.violations).toEqual([
      { path: '/isError', message: 'isError must mirror !ok: isError is true, ok is true' },
    ]);
  });

  it('treats a missing isError as false (MCP default) and flags it on a failure', () => {
    const { content } = callToolResult({ ok: false, error: { code: 'x', category: 'internal', detail: '' } });
    const out = readToolOutput({ content });
    expect(out.isError).toBe(false);
    expect(out.violations.map((v) => v.path)).toEqual(['/isError']);
  });

  it('takes the LAST text block as the envelope', () => {
    const out = readToolOutput({
      content: [
        { type: 'text', text: 'progress: half way' },
        { type: 'text', text: JSON.stringify({ ok: true, result: { n: 2 } }) },
      ],
      isError: false,
    });
    expect(out.envelope).toEqual({ ok: true, result: { n: 2 } });
    expect(out.violations).toEqual([]);
  });

  it('synthesizes envelope-missing when no text block exists', () => {
    const out = readToolOutput({
      content: [{ type: 'image', data: pngBase64, mimeType: 'image/png' }],
      isError: false,
    });
    expect(out.kind).toBe('call-tool-result');
    expect(out.synthesized).toBe(true);
    expect(out.envelope).toMatchObject({
      ok: false,
      error: { code: 'envelope-missing', category: 'internal' },
    });
    expect(out.images).toHaveLength(1);
    expect(out.violations.map((v) => v.path)).toEqual(['/content']);
  });

  it('synthesizes envelope-unparseable for non-JSON text, without quoting it', () => {
    const text = `oops ${pngBase64}`;
    const out = readToolOutput({ content: [{ type: 'text', text }], isError: true });
    expect(out.envelopePath).toBeUndefined();
    expect(out.synthesized).toBe(true);
    expect(out.envelope).toMatchObject({
      ok: false,
      error: { code: 'envelope-unparseable', category: 'internal' },
    });
    expect(out.violations.map((v) => v.path)).toEqual(['/content/0/text']);
    expect(JSON.stringify(out)).not.toContain(pngBase64.slice(0, 16));
  });

  it('synthesizes envelope-unparseable when text is not a string', () => {
    const out = readToolOutput({ content: [{ type: 'text', text: { ok: true } }], isError: false });
    expect(out.envelope).toMatchObject({ error: { code: 'envelope-unparseable' } });
  });

  it('points envelope violations into the text block with #json', () => {
    const out = readToolOutput(callToolResult({ ok: true, result: {}, extra: 1 }));
    expect(out.violations).toEqual([
      { path: '/content/0/text/#json/extra', message: 'property not allowed here' },
    ]);
  });

  it('flags content that is not an array and malformed image blocks', () => {
    expect(readToolOutput({ content: 'hi', isError: false }).violations.map((v) => v.path)).toEqual([
      '/content',
      '/content',
    ]);
    const out = readToolOutput({
      content: [
        { type: 'image', data: 5 },
        { type: 'text', text: '{"ok":true}' },
      ],
      isError: false,
    });
    expect(out.violations.map((v) => v.path)).toEqual(['/content/0']);
    expect(out.images).toEqual([]);
  });
});

describe('readToolOutput: legacy CommandResult', () => {
  it('maps a success: data becomes result', () => {
    const out = readToolOutput({ success: true, command: 'capture', error: null, data: { width: 8 } });
    expect(out).toEqual({
      kind: 'legacy-command-result',
      legacy: true,
      envelope: { ok: true, result: { width: 8 } },
      images: [],
      violations: [],
    });
  });

  it('maps a failure with code, category and warnings kept', () => {
    const out = readToolOutput({
      success: false,
      command: 'find',
      error: 'Selector matched 3 windows',
      data: null,
      errorCode: 'selector-matched-3',
      errorCategory: 'ambiguous-selector',
      warnings: [{ code: 'tree-truncated', detail: 'clipped' }],
    });
    expect(out.envelope).toEqual({
      ok: false,
      warnings: [{ code: 'tree-truncated', detail: 'clipped' }],
      error: {
        code: 'selector-matched-3',
        category: 'ambiguous-selector',
        detail: 'Selector matched 3 windows',
      },
    });
    expect(out.legacy).toBe(true);
    expect(out.violations).toEqual([]);
  });

  it('defaults a failure without code or category to unhandled / internal', () => {
    const out = readToolOutput({ success: false, command: 'x', error: 'boom', data: null });
    expect(out.envelope).toEqual({
      ok: false,
      error: { code: 'unhandled', category: 'internal', detail: 'boom' },
    });
  });

  it('flags an unknown category and a non-kebab code against the legacy fields', () => {
    const out = readToolOutput({
      success: false,
      command: 'x',
      error: 'e',
      errorCode: 'Bad_Code',
      errorCategory: 'network',
    });
    expect(out.envelope?.error).toEqual({ code: 'Bad_Code', category: 'internal', detail: 'e' });
    expect(out.violations.map((v) => v.path).sort()).toEqual(['/errorCategory', '/errorCode']);
  });

  it('wraps non-object data and flags a non-boolean success', () => {
    expect(readToolOutput({ success: true, command: 'x', data: 'text' }).envelope).toEqual({
      ok: true,
      result: { value: 'text' },
    });
    const out = readToolOutput({ success: 'yes', command: 'x' });
    expect(out.envelope?.ok).toBe(false);
    expect(out.violations.map((v) => v.path)).toContain('/success');
  });

  it('maps the legacy result nested in send_command output, bytes and all', () => {
    const inner = { success: true, command: 'capture', error: null, data: { width: 8, base64: pngBase64 } };
    const env = { ok: true, result: { output: JSON.stringify(inner) } };
    const out = readToolOutput(callToolResult(env));
    expect(out.violations).toEqual([]);
    const output = (out.envelope!.result as { output: string }).output;
    expect(readToolOutput(JSON.parse(output)).envelope).toEqual({ ok: true, result: inner.data });
    expect(findImageBytes(out.envelope).map((l) => l.path)).toEqual(['/result/output/#json/data/base64']);
  });
});

describe('readToolOutput: JSON-RPC responses', () => {
  it('reads a tools/call result holding a CallToolResult', () => {
    const env = captureEnvelope();
    const rpc = {
      jsonrpc: '2.0',
      id: 12,
      result: callToolResult(env, { data: pngBase64, mimeType: 'image/png' }),
    };
    const out = readToolOutput(JSON.parse(JSON.stringify(rpc)));
    expect(out.kind).toBe('json-rpc-result');
    expect(out.envelope).toEqual(env);
    expect(out.envelopePath).toBe('/result/content/1/text/#json');
    expect(out.images).toHaveLength(1);
    expect(out.violations).toEqual([]);
  });

  it('points violations under /result', () => {
    const rpc = {
      jsonrpc: '2.0',
      id: 'a',
      result: { content: [{ type: 'text', text: '{"ok":false}' }], isError: true },
    };
    const out = readToolOutput(rpc);
    expect(out.violations).toEqual([
      { path: '/result/content/0/text/#json/error', message: 'a failure (ok:false) requires an error' },
    ]);
  });

  it.each([
    [-32700, 'Parse error', null],
    [-32600, 'Invalid Request', null],
    [-32601, 'Method not found', 3],
    [-32603, 'Internal error', 'req-9'],
  ])('reports error %i as a protocol fault, not an envelope', (code, message, id) => {
    const out = readToolOutput({ jsonrpc: '2.0', id, error: { code, message } });
    expect(out).toEqual({ kind: 'json-rpc-error', fault: { code, message, id }, images: [], violations: [] });
    expect(out.envelope).toBeUndefined();
  });

  it('keeps error data and flags malformed faults', () => {
    const out = readToolOutput({ jsonrpc: '1.0', id: {}, error: { code: 'x', data: { why: 1 } } });
    expect(out.kind).toBe('json-rpc-error');
    expect(out.fault).toEqual({ code: 0, message: '', data: { why: 1 }, id: null });
    expect(out.violations.map((v) => v.path).sort()).toEqual([
      '/error/code',
      '/error/message',
      '/id',
      '/jsonrpc',
    ]);
  });

  it('reads a bare envelope under result but flags it', () => {
    const out = readToolOutput({ jsonrpc: '2.0', id: 1, result: { ok: true, result: {} } });
    expect(out.kind).toBe('json-rpc-result');
    expect(out.envelope).toEqual({ ok: true, result: {} });
    expect(out.envelopePath).toBe('/result');
    expect(out.violations.map((v) => v.path)).toEqual(['/result']);
  });

  it('is invalid with neither result nor error', () => {
    const out = readToolOutput({ jsonrpc: '2.0', id: 1 });
    expect(out.kind).toBe('invalid');
    expect(out.envelope).toMatchObject({ ok: false, error: { code: 'envelope-invalid' } });
  });
});

describe('readToolOutput: anything else', () => {
  it.each<[string, unknown]>([
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a string', '{"ok":true}'],
    ['a boolean', true],
    ['an array', [{ ok: true }]],
    ['an empty object', {}],
    ['an HTTP rejection body', { error: 'unauthorized' }],
  ])('%s is invalid with a synthesized internal failure', (_n, value) => {
    const out = readToolOutput(value);
    expect(out.kind).toBe('invalid');
    expect(out.synthesized).toBe(true);
    expect(out.images).toEqual([]);
    expect(out.violations.length).toBeGreaterThan(0);
    expect(out.envelope).toMatchObject({
      ok: false,
      error: { code: 'envelope-invalid', category: 'internal' },
    });
  });

  it('survives hostile objects (throwing getters, cycles)', () => {
    const hostile = {
      get ok(): boolean {
        throw new Error('nope');
      },
    };
    expect(readToolOutput(hostile).kind).toBe('invalid');
    const cyclic: Record<string, unknown> = { ok: true, result: {} };
    (cyclic.result as Record<string, unknown>).self = cyclic;
    expect(readToolOutput(cyclic).envelope?.ok).toBe(true);
    expect(mcecStringify({ a: "'" })).toBe('{"a":"\\u0027"}');
  });
});
