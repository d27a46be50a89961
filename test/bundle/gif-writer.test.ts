// The GIF89a writer behind run.gif, decoded by sharp (libvips' own GIF loader): frame count, size and
// delays; every pixel comes back as the palette entry it was mapped to (random noise, so the LZW table fills
// and clears); the overlay's colours come back exact (a failing step's red frame stays that red); the same
// frames make the same bytes.
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { GifFileWriter, GifPalette, type Rgb, rgbOf } from '../../src/bundle/gif-writer.js';
import { OVERLAY_COLOURS, overlaySvg } from '../../src/report/player/overlay-svg.js';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';

const root = makeSessionsDir();
afterAll(() => removeDir(root));
const palette = new GifPalette([...OVERLAY_COLOURS.map(rgbOf), [31, 35, 40]]);

/** Deterministic noise: `bytes` bytes from a linear congruential generator seeded with `seed`. */
function noise(bytes: number, seed: number): Buffer {
  const out = Buffer.alloc(bytes);
  let s = seed;
  for (let i = 0; i < bytes; i++) {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    out[i] = s >> 16;
  }
  return out;
}

async function writeGif(name: string, width: number, height: number, frames: Buffer[], channels: number) {
  const file = path.join(root, name);
  const gif = await GifFileWriter.open(file, palette, width, height);
  for (const [i, f] of frames.entries()) await gif.addFrame(f, channels, 100 * (i + 1));
  await gif.close();
  expect(fs.statSync(file).size).toBe(gif.bytes);
  return file;
}

async function page(file: string, n: number) {
  const { data, info } = await sharp(file, { page: n }).raw().toBuffer({ resolveWithObject: true });
  return { data, channels: info.channels, width: info.width };
}

describe('GifFileWriter', () => {
  it('writes every frame, each pixel as its palette entry, with its delay', async () => {
    const width = 211;
    const height = 157;
    const n = width * height;
    const flat = Buffer.alloc(n * 3, 200);
    const frames = [noise(n * 3, 1), flat, noise(n * 3, 2)];
    const file = await writeGif('noise.gif', width, height, frames, 3);
    const meta = await sharp(file, { animated: true }).metadata();
    expect(meta.format).toBe('gif');
    expect(meta.pages).toBe(3);
    expect(meta.width).toBe(width);
    expect(meta.pageHeight).toBe(height);
    expect(meta.delay).toEqual([100, 200, 300]);
    expect(meta.loop).toBe(0);
    const indices = new Uint8Array(n);
    for (const [i, f] of frames.entries()) {
      palette.indexInto(f, 3, indices);
      const decoded = await page(file, i);
      let wrong = 0;
      for (let p = 0; p < n; p++)
        for (let c = 0; c < 3; c++)
          if (decoded.data[p * decoded.channels + c] !== palette.table[indices[p]! * 3 + c]) wrong++;
      expect(wrong).toBe(0);
    }
  });

  it("keeps the overlay's colours, black and white exact", async () => {
    const exact: Rgb[] = [...OVERLAY_COLOURS.map(rgbOf), [31, 35, 40], [0, 0, 0], [255, 255, 255]];
    const width = exact.length;
    const pixels = Buffer.from(exact.flatMap(([r, g, b]) => [r, g, b, 255]));
    const file = await writeGif('exact.gif', width, 1, [pixels, pixels], 4);
    const decoded = await page(file, 1);
    const got = exact.map((_, x) => [
      ...decoded.data.subarray(x * decoded.channels, x * decoded.channels + 3),
    ]);
    expect(got).toEqual(exact.map((c) => [...c]));
  });

  it("draws a failing step's red frame in the overlay's red", async () => {
    const width = 258;
    const height = 194;
    const svg = overlaySvg(800, 600, [], {
      width,
      height,
      title: 'click Save',
      failing: true,
      minFontPx: 10,
    });
    const pixels = await sharp({ create: { width, height, channels: 4, background: '#f0f0f0' } })
      .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
      .raw()
      .toBuffer();
    const file = await writeGif('red.gif', width, height, [pixels, pixels], 4);
    const decoded = await page(file, 0);
    const at = (x: number, y: number) => {
      const o = (y * decoded.width + x) * decoded.channels;
      return [...decoded.data.subarray(o, o + 3)];
    };
    expect(at(1, height / 2)).toEqual([...rgbOf('#cf222e')]);
    expect(at(width / 2, height - 2)).toEqual([...rgbOf('#cf222e')]);
  });

  it('makes the same bytes from the same frames', async () => {
    const frames = [noise(64 * 48 * 4, 7), noise(64 * 48 * 4, 8)];
    const a = fs.readFileSync(await writeGif('a.gif', 64, 48, frames, 4));
    const b = fs.readFileSync(await writeGif('b.gif', 64, 48, frames, 4));
    expect(a.equals(b)).toBe(true);
  });

  it('refuses a frame of the wrong size and a size of no pixels', async () => {
    const gif = await GifFileWriter.open(path.join(root, 'short.gif'), palette, 10, 10);
    await expect(gif.addFrame(Buffer.alloc(10), 4, 100)).rejects.toThrow(RangeError);
    await gif.abandon();
    await expect(GifFileWriter.open(path.join(root, 'none.gif'), palette, 0, 10)).rejects.toThrow(RangeError);
  });
});
