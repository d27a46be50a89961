import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { blankCheckFromRaw, computeBlankCheck } from '../../src/artifacts/index.js';
import { Desktop } from '../../src/sim/desktop.js';
import { encodePng, blankCheck as simBlankCheck } from '../../src/sim/raster.js';
import { noiseRaw, noisyPng, rawToPng, solidBmp, solidPng } from './images.js';

describe('blankCheck (server algorithm)', () => {
  it('an all-black frame is blank and dark', async () => {
    expect(await computeBlankCheck(await solidPng(800, 600, [0, 0, 0]))).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
  });

  it('an all-white frame is blank but not dark', async () => {
    expect(await computeBlankCheck(await solidPng(640, 480, [255, 255, 255]))).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: false,
    });
  });

  it('a noisy frame is not blank and has a small dominant fraction', async () => {
    const check = await computeBlankCheck(await noisyPng(500, 400));
    expect(check.blank).toBe(false);
    expect(check.dominantFraction).toBeLessThan(0.01);
  });

  it('colours within one 5-bit bucket count as one colour', async () => {
    // Values 8..15 quantize to the same bucket: a frame of near-identical dark greys is still blank.
    const w = 128;
    const h = 128;
    const raw = Buffer.alloc(w * h * 3);
    for (let i = 0; i < raw.length; i++) raw[i] = 8 + (i % 8);
    expect(await computeBlankCheck(await rawToPng(raw, w, h))).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
  });

  it('a mostly-uniform frame: 0.99 of the samples is blank, less is not', () => {
    // A 64 x 64 frame: every pixel is a sample, so painting pixels sets the count exactly.
    const w = 64;
    const h = 64;
    const mostly = Buffer.alloc(w * h * 3, 200); // light grey
    for (let i = 0; i < 40; i++) mostly.fill(0, i * 3, i * 3 + 3); // 40 of 4096 samples black: 0.9902
    const a = blankCheckFromRaw(mostly, w, h, 3);
    expect(a).toEqual({ blank: true, dominantFraction: 0.9902, dominantIsDark: false });

    const less = Buffer.alloc(w * h * 3, 200);
    for (let i = 0; i < 51; i++) less.fill(0, i * 3, i * 3 + 3); // 51 black: 0.9875
    const b = blankCheckFromRaw(less, w, h, 3);
    expect(b).toEqual({ blank: false, dominantFraction: 0.9875, dominantIsDark: false });
  });

  it('samples at most 64 x 64 points, evenly spread', () => {
    // A 640-wide frame whose only non-black pixels are off the sample columns stays 100% black.
    const w = 640;
    const h = 64;
    const raw = Buffer.alloc(w * h * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) if (x % 10 !== 5) raw.fill(255, (y * w + x) * 3, (y * w + x) * 3 + 3);
    expect(blankCheckFromRaw(raw, w, h, 3)).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
  });

  it('handles grey and alpha channels', () => {
    expect(blankCheckFromRaw(Buffer.alloc(10 * 10, 255), 10, 10, 1).dominantIsDark).toBe(false);
    const rgba = Buffer.alloc(10 * 10 * 4);
    for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255; // opaque black
    expect(blankCheckFromRaw(rgba, 10, 10, 4)).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
  });

  it('a too-short raw buffer or zero size gives a not-blank verdict instead of throwing', () => {
    expect(blankCheckFromRaw(Buffer.alloc(5), 10, 10, 3)).toEqual({
      blank: false,
      dominantFraction: 0,
      dominantIsDark: false,
    });
    expect(blankCheckFromRaw(Buffer.alloc(0), 0, 0, 3).blank).toBe(false);
  });

  it('decodes uncompressed BMP itself (sharp has no BMP loader)', async () => {
    expect(await computeBlankCheck(solidBmp(30, 20, [0, 0, 0]))).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
  });

  it('computeBlankCheck of a PNG equals blankCheckFromRaw of its pixels', async () => {
    const w = 1000;
    const h = 700;
    const raw = noiseRaw(w, h, 99);
    // Make a dominant colour over part of the frame so the fraction is not trivial.
    raw.fill(30, 0, w * 500 * 3);
    expect(await computeBlankCheck(await rawToPng(raw, w, h))).toEqual(blankCheckFromRaw(raw, w, h, 3));
  });

  it('agrees with the simulator on every window of its desktop (the black video player included)', async () => {
    const desktop = new Desktop();
    const verdicts: boolean[] = [];
    for (const win of desktop.windows()) {
      const raster = desktop.renderWindow(win);
      const expected = simBlankCheck(raster);
      expect(blankCheckFromRaw(raster.data, raster.width, raster.height, 3)).toEqual(expected);
      expect(await computeBlankCheck(await encodePng(raster))).toEqual(expected);
      verdicts.push(expected.blank && expected.dominantIsDark);
    }
    expect(verdicts).toContain(true); // the protected video surface is all black
    expect(verdicts).toContain(false);
  });

  it('rejects what sharp cannot decode', async () => {
    await expect(computeBlankCheck(Buffer.from('not an image at all'))).rejects.toThrow();
  });

  it('a JPEG of one colour is blank', async () => {
    const jpeg = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#204080' } })
      .jpeg()
      .toBuffer();
    const check = await computeBlankCheck(jpeg);
    expect(check.blank).toBe(true);
    expect(check.dominantIsDark).toBe(false);
  });
});
