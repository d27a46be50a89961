import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  blankCheckFromRaw,
  computeBlankCheck,
  EXACT_SAMPLING_MAX_PIXELS,
} from '../../src/artifacts/index.js';
import { Desktop } from '../../src/sim/desktop.js';
import { encodePng, blankCheck as simBlankCheck } from '../../src/sim/raster.js';
import { noiseRaw, noisyPng, rawToPng, solidBmp, solidJpeg, solidPng } from '../support/images.js';

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

  it('samples every floor(w/64)-th column from 0: pixels between the sample columns do not count', () => {
    // 640 wide: step 10, samples at x = 0, 10, 20 ... Only those columns are white; the rest is black.
    const w = 640;
    const h = 64;
    const raw = Buffer.alloc(w * h * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x += 10) raw.fill(255, (y * w + x) * 3, (y * w + x) * 3 + 3);
    expect(blankCheckFromRaw(raw, w, h, 3)).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: false,
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

  it('a too-short raw buffer gives a not-blank verdict instead of throwing; no pixels is blank and dark, as on the server', () => {
    expect(blankCheckFromRaw(Buffer.alloc(5), 10, 10, 3)).toEqual({
      blank: false,
      dominantFraction: 0,
      dominantIsDark: false,
    });
    expect(blankCheckFromRaw(Buffer.alloc(0), 0, 0, 3)).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
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
    const jpeg = await solidJpeg(300, 200, '#204080');
    const check = await computeBlankCheck(jpeg);
    expect(check.blank).toBe(true);
    expect(check.dominantIsDark).toBe(false);
  });
});

/**
 * ScreenCapture.AnalyzeBlank (MCEC ScreenCapture.cs 203-244) transcribed line by line, as the oracle: the
 * recorder's blankCheck must give the same blank, 4-decimal dominantFraction and dominantIsDark.
 */
function serverAnalyzeBlank(raw: Buffer, w: number, h: number, ch: number) {
  if (w <= 0 || h <= 0) return { blank: true, dominantFraction: 1, dominantIsDark: true };
  const stepX = Math.max(1, Math.trunc(w / 64));
  const stepY = Math.max(1, Math.trunc(h / 64));
  const counts = new Map<number, number>();
  let total = 0;
  let bestKey = 0;
  let bestCount = 0;
  for (let y = 0; y < h; y += stepY) {
    for (let x = 0; x < w; x += stepX) {
      const o = (y * w + x) * ch;
      const [r, g, b] = ch < 3 ? [raw[o]!, raw[o]!, raw[o]!] : [raw[o]!, raw[o + 1]!, raw[o + 2]!];
      const key = ((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3);
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      if (n > bestCount) {
        bestCount = n;
        bestKey = key;
      }
      total++;
    }
  }
  const dominantFraction = total === 0 ? 1 : bestCount / total;
  const r = (((bestKey >> 10) & 0x1f) << 3) | 0x04;
  const g = (((bestKey >> 5) & 0x1f) << 3) | 0x04;
  const b = ((bestKey & 0x1f) << 3) | 0x04;
  const luminance = 0.299 * r + 0.587 * g + 0.114 * b;
  // Math.Round(x, 4): MidpointRounding.ToEven on x * 10^4.
  const v = dominantFraction * 10_000;
  const f = Math.floor(v);
  const rounded = v - f > 0.5 ? f + 1 : v - f < 0.5 ? f : f % 2 === 0 ? f : f + 1;
  return {
    blank: dominantFraction >= 0.99,
    dominantFraction: rounded / 10_000,
    dominantIsDark: luminance < 24,
  };
}

/** Raw RGB with large flat areas plus noise, so the dominant share varies with the size. */
function mixedRaw(w: number, h: number, seed: number): Buffer {
  const raw = noiseRaw(w, h, seed);
  const flat = Math.floor((w * h * (seed % 100)) / 100) * 3;
  raw.fill(40, 0, flat);
  return raw;
}

describe('blankCheck agrees with the server on real PNGs', () => {
  it('matches the transcribed AnalyzeBlank on odd sizes, narrow images (w < 64) and steps that do not divide', async () => {
    const sizes: Array<[number, number]> = [
      [1, 1],
      [3, 2],
      [63, 5],
      [64, 64],
      [65, 130],
      [127, 129],
      [128, 1],
      [191, 97],
      [1000, 701],
      [4097, 3],
    ];
    let seed = 11;
    for (const [w, h] of sizes) {
      seed += 17;
      const raw = mixedRaw(w, h, seed);
      const expected = serverAnalyzeBlank(raw, w, h, 3);
      expect(await computeBlankCheck(await rawToPng(raw, w, h)), `${w}x${h}`).toEqual(expected);
    }
  });

  it('rounds dominantFraction half to even like .NET: 4002 of 8000 samples is 0.5002, not 0.5003', async () => {
    // 80 x 100: steps are 1, so all 8000 pixels are samples; 4002 of them grey 200, the rest white.
    const w = 80;
    const h = 100;
    const raw = Buffer.alloc(w * h * 3, 255);
    raw.fill(200, 0, 4002 * 3);
    const check = await computeBlankCheck(await rawToPng(raw, w, h));
    expect(check).toEqual({ blank: false, dominantFraction: 0.5002, dominantIsDark: false });
    // 17 of 32: 0.53125 rounds to 0.5312
    const small = Buffer.alloc(32 * 3, 255);
    small.fill(0, 0, 17 * 3);
    expect((await computeBlankCheck(await rawToPng(small, 32, 1))).dominantFraction).toBe(0.5312);
  });

  it('judges darkness on the mid-value of the 5-bit bucket against 24', async () => {
    const dark = async (rgb: [number, number, number]) =>
      (await computeBlankCheck(await solidPng(70, 70, rgb))).dominantIsDark;
    expect(await dark([23, 23, 23])).toBe(true); // bucket 2, mid 20
    expect(await dark([24, 24, 24])).toBe(false); // bucket 3, mid 28 (the old rule, < 40 unshifted, said dark)
    expect(await dark([31, 31, 31])).toBe(false);
    // Every channel counts at its mid-value (0 becomes 4): 0.299*4 + 0.587*4 + 0.114*172 = 23.15, * 180 = 24.06.
    expect(await dark([0, 0, 168])).toBe(true);
    expect(await dark([0, 0, 176])).toBe(false);
    expect(await dark([64, 0, 0])).toBe(true); // 0.299*68 + 0.587*4 + 0.114*4 = 23.14
    expect(await dark([72, 0, 0])).toBe(false); // 25.53
  });

  it('on a tie, the colour that reached the count first (row by row) is dominant', async () => {
    const bw = Buffer.from([0, 0, 0, 255, 255, 255]);
    expect(await computeBlankCheck(await rawToPng(bw, 2, 1))).toEqual({
      blank: false,
      dominantFraction: 0.5,
      dominantIsDark: true,
    });
    const wb = Buffer.from([255, 255, 255, 0, 0, 0]);
    expect((await computeBlankCheck(await rawToPng(wb, 2, 1))).dominantIsDark).toBe(false);
  });

  it('reads the colour of fully transparent pixels (GetPixel ignores alpha; PrintWindow often leaves it 0)', async () => {
    const w = 50;
    const h = 40;
    const rgba = Buffer.alloc(w * h * 4);
    for (let i = 0; i < rgba.length; i += 4) rgba.fill(200, i, i + 3); // alpha stays 0
    const png = await sharp(rgba, { raw: { width: w, height: h, channels: 4 } })
      .png()
      .toBuffer();
    expect(await computeBlankCheck(png)).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: false });
  });

  it('a 16-bit PNG is judged on its 8-bit values', async () => {
    const png = await sharp({
      create: { width: 40, height: 30, channels: 3, background: { r: 24, g: 24, b: 24 } },
    })
      .toColourspace('rgb16')
      .png()
      .toBuffer();
    expect((await sharp(png).metadata()).depth).toBe('ushort');
    expect(await computeBlankCheck(png)).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: false });
  });

  it('an image over the exact-decode limit is streamed and sampled at the same pixels', async () => {
    // 4104 x 4096 = 16.8 M pixels, just over EXACT_SAMPLING_MAX_PIXELS: steps 64 x 64.
    const w = 4104;
    const h = 4096;
    expect(w * h).toBeGreaterThan(EXACT_SAMPLING_MAX_PIXELS);
    const raw = Buffer.alloc(w * h, 255); // grey
    // Dark exactly on the sampled rows and columns of the top half: the sampled verdict differs from the image's.
    for (let y = 0; y < h / 2; y += 64) for (let x = 0; x < w; x += 64) raw[y * w + x] = 0;
    const png = await sharp(raw, { raw: { width: w, height: h, channels: 1 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const expected = serverAnalyzeBlank(raw, w, h, 1);
    expect(expected.dominantFraction).toBeLessThan(0.99);
    expect(await computeBlankCheck(png)).toEqual(expected);
  });
});
