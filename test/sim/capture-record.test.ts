/** capture (window, region, downscale, file, path-only) and record (real GIF files), as the server runs them. */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { computeBlankCheck } from '../../src/artifacts/index.js';
import { HANDLES } from '../../src/sim/index.js';
import { PATH_ONLY_CAPTURE_KEYS } from '../support/mcec.js';
import { call, envelopeFrom, type Loose, request, simulatorsInTempDir, toolsCall } from './helpers.js';

// The default GIF name is local time (the server uses DateTime.Now): run in a zone that differs from UTC.
process.env.TZ = 'America/New_York';

const fixedNow = () => new Date('2026-07-01T23:30:05.123Z');
const tmp = simulatorsInTempDir({ seed: 7, now: fixedNow, modalGraceMs: 20, pollMs: 10 });
const sim = tmp.sim;

describe('capture: targets and regions', () => {
  it('a region capture has the region key order and no window; off every monitor it is black with a warning', async () => {
    const s = sim();
    const { env, out } = await call(s, 'capture', { x: 3300, y: 0, width: 400, height: 100 });
    expect(env.ok).toBe(true);
    expect(Object.keys(env.result!)).toEqual([
      'encoding',
      'width',
      'height',
      'bytes',
      'base64',
      'blankCheck',
    ]);
    expect(env.result!.blankCheck).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
    expect(env.warnings).toEqual([
      {
        code: 'capture-blank',
        detail: 'Captured region is blank (a flat fill); it may be off-screen or genuinely empty.',
      },
    ]);
    expect(out.content[0]!.type).toBe('image');
    const big = await call(s, 'capture', { x: 0, y: 0, width: 20_000, height: 10 });
    expect(big.env.error).toMatchObject({ code: 'region-too-large', category: 'invalid-argument' });
    expect(big.env.error!.detail).toBe(
      'Region 20000x10 exceeds the capture limit of 16384 px per side. Request a smaller region.',
    );
  });

  it('a target plus a region is a window capture; a partial region without a target is window-not-found', async () => {
    const s = sim();
    const both = await call(s, 'capture', { window: 'Notepad', x: 0, y: 0, width: 10, height: 10 });
    expect(both.env.result).toMatchObject({ handle: HANDLES.notepad, width: 800, height: 600 });
    const partial = await call(s, 'capture', { x: 0, y: 0, width: 10 });
    expect(partial.env.error).toMatchObject({ code: 'window-not-found', category: 'no-target' });
    // an empty title and a zero handle are no selectors either
    expect((await call(s, 'capture', { window: '', handle: 0 })).env.error?.code).toBe('window-not-found');
  });
});

describe('capture: maxWidth and scale', () => {
  it('downscales to maxWidth keeping the aspect; width/height and blankCheck describe the returned PNG', async () => {
    const s = sim();
    const { env } = await call(s, 'capture', { window: 'Notepad', maxWidth: 333 });
    const r = env.result!;
    expect([r.width, r.height]).toEqual([333, 250]); // 600 * 333/800 = 249.75
    const png = Buffer.from(r.base64, 'base64');
    const meta = await sharp(png).metadata();
    expect([meta.width, meta.height, r.bytes]).toEqual([333, 250, png.length]);
    expect(await computeBlankCheck(png)).toEqual(r.blankCheck);
  });

  it('scale rounds half to even like .NET, never below 1 px and never up', async () => {
    const s = sim();
    // 5 * 0.5 = 2.5 rounds to 2 (Math.round would give 3); height 4 * 2/5 = 1.6 rounds to 2.
    const half = await call(s, 'capture', { x: 0, y: 0, width: 5, height: 4, scale: 0.5 });
    expect([half.env.result!.width, half.env.result!.height]).toEqual([2, 2]);
    // One pixel is one colour: the window capture is blank (frame-uniform), with the 1x1 PNG kept.
    const tiny = await call(s, 'capture', { window: 'Notepad', scale: 0.0001 });
    expect(tiny.env.error).toMatchObject({ code: 'frame-uniform', category: 'capture-blank' });
    expect([tiny.env.error!.partialResult!.width, tiny.env.error!.partialResult!.height]).toEqual([1, 1]);
    const both = await call(s, 'capture', { window: 'Notepad', scale: 0.5, maxWidth: 300 });
    expect([both.env.result!.width, both.env.result!.height]).toEqual([300, 225]);
    const noUp = await call(s, 'capture', { window: 'Notepad', maxWidth: 5000, scale: 1 });
    expect([noUp.env.result!.width, noUp.env.result!.height]).toEqual([800, 600]);
  });

  it('a maxWidth that is not a positive integer, or a scale outside (0, 1], is bad-arguments (null included)', async () => {
    const s = sim();
    for (const args of [
      { maxWidth: 0 },
      { maxWidth: -5 },
      { maxWidth: 1.5 },
      { maxWidth: '640' },
      { maxWidth: null },
      { scale: 0 },
      { scale: 1.01 },
      { scale: '0.5' },
      { scale: null },
    ]) {
      const { env } = await call(s, 'capture', { window: 'Notepad', ...args });
      expect(env.error).toMatchObject({ code: 'bad-arguments', category: 'invalid-argument' });
      expect(env.error).not.toHaveProperty('lastObservation');
    }
  });
});

describe('capture: file and path-only', () => {
  it('pathOnly writes a real PNG into the session artifact dir and answers with its absolute path', async () => {
    const s = sim();
    const { out, env } = await call(s, 'capture', { window: 'Save As', pathOnly: true });
    expect(out.content.map((b) => b.type)).toEqual(['text']);
    const r = env.result!;
    expect(Object.keys(r)).toEqual(PATH_ONLY_CAPTURE_KEYS);
    expect(path.isAbsolute(r.artifact)).toBe(true);
    expect(path.basename(r.artifact)).toBe('capture-20260701-233005123-1.png');
    expect(path.basename(path.dirname(r.artifact))).toMatch(/^20260701-233005-[0-9a-f]{12}$/);
    expect(path.dirname(path.dirname(r.artifact))).toBe(s.sessionsRoot);
    const bytes = fs.readFileSync(r.artifact);
    expect(bytes.length).toBe(r.bytes);
    const meta = await sharp(bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 640, 480]);
    expect(await computeBlankCheck(bytes)).toEqual(r.blankCheck);
  });

  it('returnImage:false is path-only too; path-only files are numbered across sessions', async () => {
    const s = sim();
    const a = await call(s, 'capture', { window: 'Notepad', returnImage: false });
    const started = await call(s, 'session-start');
    const b = await call(s, 'capture', {
      window: 'Notepad',
      pathOnly: true,
      sessionId: started.env.result!.sessionId,
    });
    expect(path.basename(a.env.result!.artifact)).toMatch(/-1\.png$/);
    expect(path.basename(b.env.result!.artifact)).toMatch(/-2\.png$/);
    expect(path.dirname(b.env.result!.artifact)).toBe(started.env.result!.artifactDir);
    expect(fs.existsSync(a.env.result!.artifact) && fs.existsSync(b.env.result!.artifact)).toBe(true);
  });

  it('a blank window in path-only mode fails with a path, not bytes, in partialResult', async () => {
    const s = sim();
    const { env } = await call(s, 'capture', { window: 'Video Player', pathOnly: true });
    expect(env.error).toMatchObject({ code: 'frame-all-black', category: 'capture-blank' });
    const partial = env.error!.partialResult!;
    expect(partial).not.toHaveProperty('base64');
    const stats = await sharp(fs.readFileSync(partial.artifact)).stats();
    expect(stats.channels.slice(0, 3).map((c) => c.max)).toEqual([0, 0, 0]);
  });

  it('file writes the PNG where asked and names it; a write that fails gives fileError and still succeeds', async () => {
    const s = sim();
    const file = path.join(tmp.dir, 'notepad-shot.png');
    const { env } = await call(s, 'capture', { window: 'Notepad', file });
    expect(env.result!.file).toBe(file);
    expect(Buffer.from(env.result!.base64, 'base64').equals(fs.readFileSync(file))).toBe(true);
    const bad = await call(s, 'capture', {
      window: 'Notepad',
      file: path.join(tmp.dir, 'no-such-dir', 'x.png'),
    });
    expect(bad.env.ok).toBe(true);
    expect(bad.env.result).not.toHaveProperty('file');
    expect(bad.env.result!.fileError).toMatch(/ENOENT/);
  });

  it('over real HTTP the path-only answer names a file that exists (with file too)', async () => {
    const s = sim();
    const listener = await s.listenHttp({ port: 0 });
    try {
      const file = path.join(tmp.dir, 'http-shot.png');
      const a = await request(listener.url, {
        body: toolsCall(1, 'capture', { window: 'Notepad', pathOnly: true, file }),
      });
      const { env } = envelopeFrom((JSON.parse(a.text) as Loose).result);
      expect(fs.readFileSync(env.result!.artifact).equals(fs.readFileSync(file))).toBe(true);
      expect(env.result!.file).toBe(file);
    } finally {
      await listener.close();
    }
  });
});

describe('record', () => {
  it('a one-shot writes a real animated GIF to `file` and answers with the server shape', async () => {
    const s = sim();
    const file = path.join(tmp.dir, 'oneshot.gif');
    const { env, out } = await call(s, 'record', { window: 'Notepad', durationMs: 300, fps: 10, file });
    expect(out.content.map((b) => b.type)).toEqual(['text']);
    const r = env.result!;
    expect(Object.keys(r)).toEqual([
      'frames',
      'durationMs',
      'fps',
      'width',
      'height',
      'bytes',
      'target',
      'file',
    ]);
    expect(r).toMatchObject({ fps: 10, width: 800, height: 600, file });
    expect(r.target).toMatchObject({ handle: HANDLES.notepad, title: 'Untitled - Notepad' });
    expect(r.frames).toBeGreaterThanOrEqual(3);
    const gif = fs.readFileSync(file);
    expect(gif.length).toBe(r.bytes);
    const meta = await sharp(gif, { animated: true }).metadata();
    expect([meta.format, meta.pages, meta.width, meta.pageHeight]).toEqual(['gif', r.frames, 800, 600]);
    expect(meta.delay?.[0]).toBe(100);
  });

  it('start then stop; without `file` the GIF goes to the temp dir under a local-time name', async () => {
    const s = sim();
    const start = await call(s, 'record', { x: 0, y: 0, width: 320, height: 200 });
    expect(start.env.result).toEqual({
      recording: true,
      fps: 5,
      maxDurationMs: 60_000,
      target: { type: 'region', x: 0, y: 0, width: 320, height: 200 },
    });
    const again = await call(s, 'record', { window: 'Notepad', action: 'start' });
    expect(again.env.error).toMatchObject({ code: 'recording-in-progress', category: 'invalid-argument' });
    const stop = await call(s, 'record', { action: 'stop' });
    // 2026-07-01T23:30:05Z is 19:30:05 in New York.
    expect(stop.env.result!.file).toBe(path.join(s.temp, 'mcec-rec-20260701-193005.gif'));
    expect((await sharp(fs.readFileSync(stop.env.result!.file)).metadata()).format).toBe('gif');
    expect(stop.env.result).toMatchObject({ width: 320, height: 200, frames: 1 });
    const none = await call(s, 'record', { action: 'STOP' });
    expect(none.env.error).toMatchObject({ code: 'no-recording', category: 'invalid-argument' });
  });

  it('failures: unknown action, no window, a GIF that cannot be written, a region too large', async () => {
    const s = sim();
    expect((await call(s, 'record', { action: 'pause' })).env.error).toMatchObject({
      code: 'record-action-unknown',
      category: 'invalid-argument',
    });
    expect((await call(s, 'record', { window: 'No Such Window' })).env.error).toMatchObject({
      code: 'window-not-found',
      category: 'no-target',
    });
    expect((await call(s, 'record', { x: 0, y: 0, width: 9000, height: 9000 })).env.error?.code).toBe(
      'region-too-large',
    );
    const bad = await call(s, 'record', {
      window: 'Notepad',
      durationMs: 50,
      file: path.join(tmp.dir, 'missing-dir', 'r.gif'),
    });
    expect(bad.env.error).toMatchObject({ code: 'record-write-failed', category: 'internal' });
  });

  it('a recording that auto-stopped and was never fetched is discarded by the next start, with a warning', async () => {
    const s = sim({ recordLimits: { maxDurationMs: 100 } });
    await call(s, 'record', { window: 'Notepad', action: 'start' });
    await new Promise((r) => setTimeout(r, 250));
    const next = await call(s, 'record', { window: 'Save As', action: 'start' });
    expect(next.env.ok).toBe(true);
    expect(next.env.warnings?.map((w) => w.code)).toEqual(['unfetched-recording-discarded']);
    const stop = await call(s, 'record', { action: 'stop', file: path.join(tmp.dir, 'second.gif') });
    expect(stop.env.result!.target.title).toBe('Save As');
    expect(stop.env.result!.durationMs).toBeLessThanOrEqual(100);
  });
});
