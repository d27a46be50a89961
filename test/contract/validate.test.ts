import { beforeAll, describe, expect, it } from 'vitest';
import {
  ERROR_CATEGORIES,
  isKebabCase,
  validateCaptureSummary,
  validateEnvelope,
} from '../../src/contract/index.js';
import { redPng } from '../support/images.js';
import { CAPTURE_SUMMARY } from './fixtures.js';

let pngBase64 = '';
beforeAll(async () => {
  pngBase64 = (await redPng()).toString('base64');
});

const err = (over: Record<string, unknown> = {}) => ({
  code: 'window-not-found',
  category: 'no-target',
  detail: 'No window matched.',
  ...over,
});

/** The contract text's own example, verbatim in shape: it shows every field, so it holds both result and error. */
const CONTRACT_EXAMPLE = {
  sessionId: 's-4f2a',
  ok: true,
  result: { note: 'tool-specific' },
  warnings: [{ code: 'minimized-window', detail: 'Target was minimized; restored before capture.' }],
  error: {
    code: 'selector-matched-3',
    category: 'ambiguous-selector',
    detail: "Selector title='Save' matched 3 windows; refine with processName or className.",
    lastObservation: { note: 'last good state' },
  },
};
const { error: contractError, ...contractSuccess } = CONTRACT_EXAMPLE;
const { result: _r, ...contractFailureBase } = CONTRACT_EXAMPLE;
const contractFailure = { ...contractFailureBase, ok: false };

describe('validateEnvelope: valid vectors', () => {
  it.each<[string, unknown]>([
    ['contract example as a success (error removed)', contractSuccess],
    ['contract example as a failure (result removed)', contractFailure],
    ['contract failure with result: null', { ...contractFailure, result: null }],
    ['minimal success', { ok: true }],
    ['success with result', { ok: true, result: { found: true, element: null } }],
    ['success with result null', { ok: true, result: null }],
    ['success with null sessionId', { sessionId: null, ok: true, result: {} }],
    ['success with 12-hex sessionId', { sessionId: '5f19c9c01a3f', ok: true, result: {} }],
    ['success with empty warnings', { ok: true, result: {}, warnings: [] }],
    [
      'success with server warning codes',
      {
        ok: true,
        result: {},
        warnings: [
          { code: 'tree-truncated', detail: 'clipped at 1000 nodes' },
          { code: 'capture-fallback', detail: '' },
          { code: 'region-clamped', detail: 'requested region clipped to the screen' },
        ],
      },
    ],
    ['failure with minimal error', { ok: false, error: err() }],
    ['failure with sessionId and warnings', { sessionId: 'abc', ok: false, error: err(), warnings: [] }],
    [
      'failure with selector-matched-3',
      { ok: false, error: err({ code: 'selector-matched-3', category: 'ambiguous-selector' }) },
    ],
    [
      'failure with selector-matched-12',
      { ok: false, error: err({ code: 'selector-matched-12', category: 'ambiguous-selector' }) },
    ],
    ['failure with lastObservation null', { ok: false, error: err({ lastObservation: null }) }],
    ['failure with partialResult null', { ok: false, error: err({ partialResult: null }) }],
    [
      'failure with capture-summary lastObservation (contract example)',
      { ok: false, error: err({ lastObservation: CAPTURE_SUMMARY }) },
    ],
    [
      'failure with capture-summary carrying artifactError',
      {
        ok: false,
        error: err({
          lastObservation: { ...CAPTURE_SUMMARY, artifact: undefined, artifactError: 'disk full' },
        }),
      },
    ],
    ['failure with empty detail', { ok: false, error: err({ detail: '' }) }],
    ['timeout failure', { ok: false, error: err({ code: 'wait-condition-timeout', category: 'timeout' }) }],
    ['ocr-no-text failure', { ok: false, error: err({ code: 'ocr-no-text', category: 'ocr-no-text' }) }],
    ['ocr-blank failure', { ok: false, error: err({ code: 'frame-uniform', category: 'ocr-blank' }) }],
    [
      'emergency-stopped failure',
      { ok: false, error: err({ code: 'emergency-stopped', category: 'internal' }) },
    ],
  ])('%s', (_name, value) => {
    const res = validateEnvelope(JSON.parse(JSON.stringify(value)));
    expect(res.violations).toEqual([]);
    expect(res.valid).toBe(true);
  });

  it.each(ERROR_CATEGORIES.map((c) => [c]))('category %s is accepted', (category) => {
    expect(validateEnvelope({ ok: false, error: err({ code: 'some-code', category }) }).valid).toBe(true);
  });

  it('capture-blank failure may keep the suspect PNG in partialResult', () => {
    const env = {
      ok: false,
      error: err({
        code: 'frame-all-black',
        category: 'capture-blank',
        partialResult: { width: 8, height: 8, encoding: 'png', base64: pngBase64 },
      }),
    };
    expect(validateEnvelope(env)).toEqual({ valid: true, violations: [] });
  });
});

describe('validateEnvelope: invalid vectors', () => {
  it.each<[string, unknown, string[]]>([
    ['the contract example verbatim (ok:true with an error)', CONTRACT_EXAMPLE, ['/error']],
    ['ok missing', { result: {} }, ['/ok']],
    ['ok not boolean', { ok: 'true' }, ['/ok']],
    ['ok:false without error', { ok: false }, ['/error']],
    ['ok:false with error null', { ok: false, error: null }, ['/error']],
    ['ok:true with error', { ok: true, error: err() }, ['/error']],
    ['ok:true with error null', { ok: true, error: null }, ['/error', '/error']],
    ['failure with a result object', { ok: false, result: { a: 1 }, error: err() }, ['/result']],
    ['failure with a result number', { ok: false, result: 3, error: err() }, ['/result', '/result']],
    ['unknown top-level property', { ok: true, data: {} }, ['/data']],
    ['legacy success field at top level', { ok: true, success: true }, ['/success']],
    ['sessionId number', { ok: true, sessionId: 42 }, ['/sessionId']],
    ['result array', { ok: true, result: [1, 2] }, ['/result']],
    ['result string', { ok: true, result: 'done' }, ['/result']],
    ['warnings not an array', { ok: true, warnings: { code: 'a', detail: 'b' } }, ['/warnings']],
    ['warning without detail', { ok: true, warnings: [{ code: 'tree-truncated' }] }, ['/warnings/0/detail']],
    [
      'warning with extra field',
      { ok: true, warnings: [{ code: 'a', detail: 'b', level: 'x' }] },
      ['/warnings/0/level'],
    ],
    ['warning as a string', { ok: true, warnings: ['tree-truncated'] }, ['/warnings/0']],
    [
      'warning code not kebab-case (camel)',
      { ok: true, warnings: [{ code: 'treeTruncated', detail: '' }] },
      ['/warnings/0/code'],
    ],
    [
      'warning code with underscore',
      { ok: true, warnings: [{ code: 'tree_truncated', detail: '' }] },
      ['/warnings/0/code'],
    ],
    ['warning code empty', { ok: true, warnings: [{ code: '', detail: '' }] }, ['/warnings/0/code']],
    ['error without code', { ok: false, error: { category: 'internal', detail: 'x' } }, ['/error/code']],
    ['error without category', { ok: false, error: { code: 'x', detail: 'x' } }, ['/error/category']],
    ['error without detail', { ok: false, error: { code: 'x', category: 'internal' } }, ['/error/detail']],
    ['error with unknown category', { ok: false, error: err({ category: 'network' }) }, ['/error/category']],
    [
      'error with category in wrong case',
      { ok: false, error: err({ category: 'Timeout' }) },
      ['/error/category'],
    ],
    ['error with extra field', { ok: false, error: err({ stack: 'at x' }) }, ['/error/stack']],
    ['error code uppercase', { ok: false, error: err({ code: 'WINDOW_NOT_FOUND' }) }, ['/error/code']],
    ['error code with spaces', { ok: false, error: err({ code: 'window not found' }) }, ['/error/code']],
    ['error code with leading dash', { ok: false, error: err({ code: '-window' }) }, ['/error/code']],
    ['error code with trailing dash', { ok: false, error: err({ code: 'window-' }) }, ['/error/code']],
    ['error code with double dash', { ok: false, error: err({ code: 'window--closed' }) }, ['/error/code']],
    [
      'selector-matched without a number',
      { ok: false, error: err({ code: 'selector-matched', category: 'ambiguous-selector' }) },
      ['/error/code'],
    ],
    [
      'selector-matched-N with a word for N',
      { ok: false, error: err({ code: 'selector-matched-many', category: 'ambiguous-selector' }) },
      ['/error/code'],
    ],
    [
      'selector-matched-N under the wrong category',
      { ok: false, error: err({ code: 'selector-matched-2', category: 'no-target' }) },
      ['/error/category'],
    ],
    ['lastObservation array', { ok: false, error: err({ lastObservation: [] }) }, ['/error/lastObservation']],
    ['partialResult string', { ok: false, error: err({ partialResult: 'x' }) }, ['/error/partialResult']],
    ['detail not a string', { ok: false, error: err({ detail: 42 }) }, ['/error/detail']],
    ['envelope is null', null, ['']],
    ['envelope is an array', [{ ok: true }], ['']],
    ['envelope is a string', '{"ok":true}', ['']],
    [
      'capture-summary lastObservation with both artifact and artifactError',
      { ok: false, error: err({ lastObservation: { ...CAPTURE_SUMMARY, artifactError: 'x' } }) },
      ['/error/lastObservation'],
    ],
  ])('%s', (_name, value, paths) => {
    const res = validateEnvelope(value);
    expect(res.valid).toBe(false);
    expect(res.violations.map((v) => v.path).sort()).toEqual([...paths].sort());
    for (const v of res.violations) expect(v.message.length).toBeGreaterThan(0);
  });

  it('flags image bytes in lastObservation, wherever they sit, and never echoes them', () => {
    const env = {
      ok: false,
      error: err({
        lastObservation: {
          kind: 'capture',
          base64: pngBase64,
          nested: { shot: `data:image/png;base64,${pngBase64}` },
          list: [pngBase64],
        },
      }),
    };
    const res = validateEnvelope(env);
    expect(res.valid).toBe(false);
    expect(res.violations.map((v) => v.path)).toEqual([
      '/error/lastObservation/base64',
      '/error/lastObservation/nested/shot',
      '/error/lastObservation/list/0',
    ]);
    expect(JSON.stringify(res)).not.toContain(pngBase64.slice(0, 20));
  });

  it('flags a capture-summary lastObservation that kept its base64', () => {
    const res = validateEnvelope({
      ok: false,
      error: err({ lastObservation: { ...CAPTURE_SUMMARY, base64: pngBase64 } }),
    });
    expect(res.violations.map((v) => v.path)).toContain('/error/lastObservation/base64');
  });

  it('reports several breaches at once', () => {
    const res = validateEnvelope({
      ok: false,
      result: {},
      error: err({ code: 'Bad Code', category: 'nope' }),
      x: 1,
    });
    expect(res.violations.map((v) => v.path).sort()).toEqual([
      '/error/category',
      '/error/code',
      '/result',
      '/x',
    ]);
  });

  it('never quotes a huge or byte-bearing value in a message', () => {
    const res = validateEnvelope({ ok: 'x'.repeat(100_000), [pngBase64]: 1 });
    expect(JSON.stringify(res).length).toBeLessThan(2_000);
  });

  it('shortens a huge stray key in the violation path', () => {
    const key = 'k'.repeat(1_000_000);
    const res = validateEnvelope({ ok: true, [key]: 1 });
    expect(res.violations).toEqual([
      { path: `/${'k'.repeat(32)}...(1000000 chars)`, message: 'property not allowed here' },
    ]);
  });
});

describe('isKebabCase', () => {
  it.each(['a', 'minimized-window', 'selector-matched-3', 'ocr-no-text', 'a1-b2'])('accepts %s', (c) => {
    expect(isKebabCase(c)).toBe(true);
  });
  it.each(['', 'A', 'a_b', 'a--b', '-a', 'a-', 'a b', 'é', 'a'.repeat(201)])('rejects %j', (c) => {
    expect(isKebabCase(c)).toBe(false);
  });
});

describe('validateCaptureSummary', () => {
  it('accepts the contract example', () => {
    expect(validateCaptureSummary(CAPTURE_SUMMARY)).toEqual({ valid: true, violations: [] });
  });

  it.each<[string, Record<string, unknown>]>([
    [
      'minimal with artifact',
      { kind: 'capture-summary', width: 1, height: 1, encoding: 'png', bytes: 10, artifact: 'a.png' },
    ],
    [
      'region capture with artifactError and sha256',
      {
        kind: 'capture-summary',
        width: 1920,
        height: 1080,
        encoding: 'png',
        bytes: 1,
        artifactError: 'over the artifact budget',
        sha256: 'a'.repeat(64),
        handle: null,
        window: null,
        blankCheck: null,
        file: null,
      },
    ],
  ])('accepts %s', (_n, v) => {
    expect(validateCaptureSummary(v).violations).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['neither artifact nor artifactError', { ...CAPTURE_SUMMARY, artifact: undefined }, ''],
    ['both artifact and artifactError', { ...CAPTURE_SUMMARY, artifactError: 'x' }, ''],
    ['wrong kind', { ...CAPTURE_SUMMARY, kind: 'capture' }, '/kind'],
    ['base64 kept', { ...CAPTURE_SUMMARY, base64: 'AAAA' }, '/base64'],
    ['data field', { ...CAPTURE_SUMMARY, data: 'AAAA' }, '/data'],
    ['negative width', { ...CAPTURE_SUMMARY, width: -1 }, '/width'],
    ['fractional bytes', { ...CAPTURE_SUMMARY, bytes: 1.5 }, '/bytes'],
    ['missing encoding', { ...CAPTURE_SUMMARY, encoding: undefined }, '/encoding'],
    ['bad sha256', { ...CAPTURE_SUMMARY, sha256: 'XYZ' }, '/sha256'],
    [
      'blankCheck fraction above 1',
      { ...CAPTURE_SUMMARY, blankCheck: { blank: true, dominantFraction: 2, dominantIsDark: true } },
      '/blankCheck/dominantFraction',
    ],
  ])('rejects %s', (_n, v, path) => {
    const res = validateCaptureSummary(JSON.parse(JSON.stringify(v)));
    expect(res.valid).toBe(false);
    expect(res.violations.map((x) => x.path)).toContain(path);
  });

  it('flags image bytes hidden under an allowed field', async () => {
    const res = validateCaptureSummary({ ...CAPTURE_SUMMARY, file: pngBase64 });
    expect(res.violations.map((x) => x.path)).toContain('/file');
  });
});
