import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ArtifactStore,
  type CompactedImage,
  captureSummaryOf,
  compactImages,
} from '../../src/artifacts/index.js';
import { findImageBytes, validateCaptureSummary, validateEnvelope } from '../../src/contract/index.js';
import { callToolResult, mcecStringify } from '../contract/fixtures.js';
import { claimedSizePng, noisyPng, solidPng } from '../support/images.js';
import { NOTEPAD } from '../support/mcec.js';
import { tempDir } from '../support/temp.js';

let dir: string;
let store: ArtifactStore;
beforeEach(() => {
  dir = tempDir('mcec-');
  fs.mkdirSync(dir, { recursive: true });
  store = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 256 * 1024 * 1024 });
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Notepad, sized like the captures of this suite. */
const WINDOW = { ...NOTEPAD, width: 64, height: 48 };
const DECLARED_BLANK = { blank: false, dominantFraction: 0.1043, dominantIsDark: false };

/** A capture result as the server sends it (key order included). */
function captureResult(png: Buffer, width: number, height: number): Record<string, unknown> {
  return {
    handle: WINDOW.handle,
    width,
    height,
    encoding: 'png',
    bytes: png.length,
    base64: png.toString('base64'),
    window: WINDOW,
    blankCheck: DECLARED_BLANK,
  };
}

async function compact(value: unknown) {
  const snapshot = structuredClone(value);
  const out = await compactImages(value, findImageBytes(value), store);
  expect(value).toEqual(snapshot); // the input is never modified
  expect(findImageBytes(out.value)).toEqual([]); // no image bytes left anywhere
  return out;
}

function expectFileOf(image: CompactedImage, bytes: Buffer): void {
  expect(image.path).toMatch(/^artifacts\/capture-\d{8}-\d{9}-\d+\.png$/);
  expect(fs.readFileSync(path.join(dir, image.path!)).equals(bytes)).toBe(true);
}

describe('compactImages', () => {
  it('a capture result becomes a capture summary; the declared blankCheck is kept, not recomputed', async () => {
    const png = await noisyPng(64, 48);
    const env = { ok: true, sessionId: '5f19c9c01a3f', result: captureResult(png, 64, 48) };
    const { value, images, violations } = await compact(env);
    expect(violations).toEqual([]);
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ role: 'result', jsonPath: '/result/base64', width: 64, height: 48 });
    expectFileOf(images[0]!, png);
    const summary = (value as { result: Record<string, unknown> }).result;
    expect(Object.keys(summary)).toEqual([
      'kind',
      'window',
      'handle',
      'width',
      'height',
      'encoding',
      'bytes',
      'blankCheck',
      'artifact',
      'sha256',
    ]);
    expect(summary).toMatchObject({
      kind: 'capture-summary',
      window: WINDOW,
      handle: WINDOW.handle,
      encoding: 'png',
      bytes: png.length,
      blankCheck: DECLARED_BLANK, // a noisy image: a computed one would differ
      artifact: images[0]!.path,
      sha256: images[0]!.sha256,
    });
    expect(validateCaptureSummary(summary).violations).toEqual([]);
    expect(validateEnvelope(value).violations).toEqual([]);
  });

  it('declared width, height, bytes and encoding that disagree with the image are violations', async () => {
    const png = await solidPng(30, 20, [0, 0, 0]);
    const result = { ...captureResult(png, 31, 21), bytes: 5, encoding: 'jpeg' };
    const { value, violations } = await compact({ ok: true, result });
    expect(violations).toEqual([
      { path: '/result/width', message: 'declared width 31 but the image is 30 wide' },
      { path: '/result/height', message: 'declared height 21 but the image is 20 high' },
      { path: '/result/bytes', message: `declared bytes 5 but the image has ${png.length}` },
      { path: '/result/encoding', message: 'declared encoding jpeg but the image is png' },
    ]);
    // The summary carries the real facts.
    expect((value as { result: unknown }).result).toMatchObject({
      width: 30,
      height: 20,
      bytes: png.length,
      encoding: 'png',
    });
  });

  it('an MCP CallToolResult: image block gets a summary, the envelope in the text block too, one file', async () => {
    const png = await noisyPng(64, 48, 7);
    const env = { ok: true, result: captureResult(png, 64, 48) };
    const ctr = callToolResult(env, { data: png.toString('base64'), mimeType: 'image/png' });
    const { value, images, violations } = await compact(ctr);
    expect(violations).toEqual([]);
    expect(images.map((i) => [i.role, i.jsonPath])).toEqual([
      ['image-block', '/content/0/data'],
      ['result', '/content/1/text/#json/result/base64'],
    ]);
    expect(images[1]!.deduplicated || images[0]!.deduplicated).toBe(true);
    expect(images[0]!.path).toBe(images[1]!.path);
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
    const content = (value as { content: Record<string, unknown>[] }).content;
    expect(content[0]).toEqual({
      type: 'image',
      mimeType: 'image/png',
      summary: expect.objectContaining({ kind: 'capture-summary', artifact: images[0]!.path }),
    });
    // The block's summary reuses the envelope's declared blankCheck for the same bytes (no recompute).
    expect((content[0]!.summary as { blankCheck: unknown }).blankCheck).toEqual(DECLARED_BLANK);
    const inner = JSON.parse(content[1]!.text as string);
    expect(inner.result.kind).toBe('capture-summary');
    expect(validateCaptureSummary(content[0]!.summary).violations).toEqual([]);
  });

  it('an image block whose mimeType disagrees with its bytes is a violation', async () => {
    const png = await solidPng(3, 3, [0, 0, 0]);
    const { value, violations } = await compact({
      content: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/jpeg' }],
    });
    expect(violations).toEqual([
      { path: '/content/0/mimeType', message: 'declared image/jpeg but the image is png' },
    ]);
    expect((value as { content: Array<{ mimeType: string }> }).content[0]!.mimeType).toBe('image/jpeg');
  });

  it('envelope and response compacted concurrently (as the recorder does): one file, no recompute', async () => {
    const png = await noisyPng(64, 48, 21);
    const env = { ok: true, result: captureResult(png, 64, 48) };
    const response = { content: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/png' }] };
    const [e, r] = await Promise.all([
      compactImages(env, findImageBytes(env), store),
      compactImages(response, findImageBytes(response), store),
    ]);
    expect(e.images[0]!.path).toBe(r.images[0]!.path);
    expect(r.images[0]!.deduplicated).toBe(true);
    expect(r.images[0]!.blankCheck).toEqual(DECLARED_BLANK);
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
  });

  it('an image block without any blankCheck gets a computed one', async () => {
    const png = await solidPng(20, 20, [0, 0, 0]);
    const { value } = await compact({
      content: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/png' }],
    });
    const block = (value as { content: Array<{ summary: { blankCheck: unknown } }> }).content[0]!;
    expect(block.summary.blankCheck).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
  });

  it('a capture-blank failure: the suspect PNG in partialResult and base64 leaked into lastObservation', async () => {
    const black = await solidPng(64, 48, [0, 0, 0]);
    const earlier = await noisyPng(64, 48, 3);
    const env = {
      ok: false,
      result: null,
      error: {
        code: 'frame-all-black',
        category: 'capture-blank',
        detail: 'Captured frame is all black.',
        partialResult: {
          ...captureResult(black, 64, 48),
          blankCheck: { blank: true, dominantFraction: 1, dominantIsDark: true },
        },
        lastObservation: captureResult(earlier, 64, 48),
      },
    };
    const { value, images } = await compact(env);
    expect(images.map((i) => i.role).sort()).toEqual(['lastObservation', 'partialResult']);
    const error = (value as { error: Record<string, Record<string, unknown>> }).error;
    expect(error.partialResult).toMatchObject({ kind: 'capture-summary', blankCheck: { blank: true } });
    expect(error.lastObservation).toMatchObject({ kind: 'capture-summary', window: WINDOW });
    expect(error.code).toBe('frame-all-black');
    for (const img of images) expect(fs.existsSync(path.join(dir, img.path!))).toBe(true);
    expect(validateEnvelope(value).violations).toEqual([]);
  });

  it('a data: URI becomes a capture summary in its place', async () => {
    const png = await solidPng(8, 8, [255, 0, 0]);
    const v = { note: 'see', thumb: `data:image/png;base64,${png.toString('base64')}` };
    const { value, images } = await compact(v);
    expect(images).toHaveLength(1);
    expect(images[0]!.role).toBe('result');
    expectFileOf(images[0]!, png);
    expect((value as Record<string, unknown>).thumb).toMatchObject({
      kind: 'capture-summary',
      width: 8,
      height: 8,
    });
    expect((value as Record<string, unknown>).note).toBe('see');
  });

  it('a bare base64 string found by sniffing becomes a summary', async () => {
    const png = await solidPng(9, 9, [0, 255, 0]);
    const { value } = await compact({ ok: true, result: { picture: png.toString('base64') } });
    expect((value as { result: { picture: unknown } }).result.picture).toMatchObject({
      kind: 'capture-summary',
      width: 9,
    });
  });

  it('a send_command whose output is a legacy CommandResult holding a capture (JSON in a string)', async () => {
    const png = await noisyPng(32, 32, 11);
    const legacy = {
      success: true,
      command: 'capture window notepad',
      data: { width: 32, height: 40, encoding: 'png', bytes: png.length, base64: png.toString('base64') },
    };
    // The server's serializer escapes `+` as \u002B inside the nested JSON text.
    const env = { ok: true, result: { output: mcecStringify(legacy) } };
    const { value, images, violations } = await compact(env);
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ role: 'nested', jsonPath: '/result/output/#json/data/base64' });
    expectFileOf(images[0]!, png);
    expect(violations).toEqual([
      { path: '/result/output/#json/data/height', message: 'declared height 40 but the image is 32 high' },
    ]);
    const output = JSON.parse((value as { result: { output: string } }).result.output);
    expect(output.success).toBe(true);
    expect(output.command).toBe('capture window notepad');
    expect(output.data).toMatchObject({ kind: 'capture-summary', width: 32, height: 32 });
  });

  it('the same envelope through stdio JSON-RPC (image block + envelope text, twice nested) stays correct', async () => {
    const png = await noisyPng(16, 16, 5);
    const ctr = callToolResult(
      { ok: true, result: captureResult(png, 16, 16) },
      { data: png.toString('base64'), mimeType: 'image/png' },
    );
    const rpc = { jsonrpc: '2.0', id: 12, result: ctr };
    const { images } = await compact(rpc);
    expect(images.map((i) => i.role)).toEqual(['image-block', 'result']);
  });

  it('bad, truncated, non-image and bomb bytes give artifactError summaries; nothing throws', async () => {
    const png = await noisyPng(50, 50, 9);
    const env = {
      ok: false,
      error: {
        code: 'frame-all-black',
        category: 'capture-blank',
        detail: 'x',
        partialResult: {
          width: 50,
          height: 50,
          encoding: 'png',
          bytes: 10,
          base64: `iVBORw0KGgo${'A'.repeat(600)}!!!!${'A'.repeat(101)}`,
        },
        lastObservation: {
          width: 50,
          height: 50,
          encoding: 'png',
          base64: png.subarray(0, png.length - 100).toString('base64'),
        },
      },
      result: {
        a: { base64: Buffer.from('hello, this is definitely plain text').toString('base64') },
        b: { base64: claimedSizePng(50_000, 50_000).toString('base64') },
      },
    };
    const { value, images } = await compact(env);
    const errors = Object.fromEntries(images.map((i) => [i.jsonPath, i.error]));
    expect(errors['/error/partialResult/base64']).toMatch(/^bad base64/);
    expect(errors['/error/lastObservation/base64']).toMatch(/^truncated png/);
    expect(errors['/result/a/base64']).toMatch(/^not an image/);
    expect(errors['/result/b/base64']).toMatch(/^too many pixels/);
    expect(images.every((i) => i.path === undefined)).toBe(true);
    const v = value as {
      error: Record<string, Record<string, unknown>>;
      result: Record<string, Record<string, unknown>>;
    };
    expect(v.error.partialResult).toMatchObject({
      kind: 'capture-summary',
      width: 50,
      height: 50,
      bytes: 10,
    });
    expect(v.error.partialResult!.artifactError).toMatch(/^bad base64/);
    expect(v.result.b!.artifactError).toMatch(/too many pixels/);
    for (const s of [v.error.partialResult, v.error.lastObservation, v.result.a, v.result.b])
      expect(validateCaptureSummary(s).violations).toEqual([]);
  });

  it('past the artifact budget: summaries without files, counted', async () => {
    const small = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 10 });
    const png = await noisyPng(20, 20);
    const { value, images } = await compactImages(
      { ok: true, result: captureResult(png, 20, 20) },
      findImageBytes({ ok: true, result: captureResult(png, 20, 20) }),
      small,
    );
    expect(images[0]!.error).toMatch(/over artifact budget/);
    expect((value as { result: Record<string, unknown> }).result).toMatchObject({
      kind: 'capture-summary',
      width: 20,
      artifactError: expect.stringMatching(/over artifact budget/),
    });
    expect(small.omitted).toEqual({ images: 1, bytes: png.length });
  });

  it('a stale location (nothing there) is skipped; the copy is still returned', async () => {
    const v = { ok: true, result: { n: 1 } };
    const out = await compactImages(
      v,
      [{ path: '/result/base64', form: 'base64-field', decodedBytes: 10 }],
      store,
    );
    expect(out).toEqual({ value: v, images: [], violations: [] });
    expect(out.value).not.toBe(v);
  });

  it('deep nesting and cycles in the rest of the value do not break the copy', async () => {
    const png = await solidPng(4, 4, [1, 1, 1]);
    let deep: Record<string, unknown> = {};
    const root = { ok: true, result: { base64: png.toString('base64'), deep } };
    for (let i = 0; i < 10_000; i++) {
      const next = {};
      deep.a = next;
      deep = next;
    }
    const out = await compactImages(
      root,
      [{ path: '/result/base64', form: 'base64-field', decodedBytes: png.length }],
      store,
    );
    expect((out.value as { result: { kind: string } }).result.kind).toBe('capture-summary');
  });
});

describe('captureSummaryOf', () => {
  it('an absolute artifact path can replace the relative one (what the agent gets)', () => {
    const s = captureSummaryOf(
      { window: WINDOW, handle: 1, width: 2, height: 3, encoding: 'png', bytes: 4, file: 'C:\\x.png' },
      {
        sha256: 'a'.repeat(64),
        bytes: 4,
        format: 'png',
        width: 2,
        height: 3,
        path: 'artifacts/c.png',
        deduplicated: false,
      },
      '/abs/artifacts/c.png',
    );
    expect(s).toEqual({
      kind: 'capture-summary',
      window: WINDOW,
      handle: 1,
      width: 2,
      height: 3,
      encoding: 'png',
      bytes: 4,
      blankCheck: null,
      file: 'C:\\x.png',
      artifact: '/abs/artifacts/c.png',
      sha256: 'a'.repeat(64),
    });
  });

  it('keeps only schema-typed declared values', () => {
    const s = captureSummaryOf(
      { window: 'nope', handle: 1.5, width: -3, height: 'x', encoding: '', blankCheck: { blank: 'yes' } },
      { sha256: '', bytes: 0, error: 'bad base64: x', deduplicated: false },
    );
    expect(s).toEqual({
      kind: 'capture-summary',
      handle: null,
      width: 0,
      height: 0,
      encoding: 'unknown',
      bytes: 0,
      blankCheck: null,
      artifactError: 'bad base64: x',
    });
    expect(validateCaptureSummary(s).violations).toEqual([]);
  });
});
