import type { BlankCheck } from '../contract/types.js';
import { decodeBmp } from './image-file.js';

/**
 * The server's blank-frame check (mcec-wire §2), the same algorithm as the simulator's (src/sim/raster.ts):
 * RGB quantized to 5 bits per channel, sampled at the centres of a grid of at most GRID x GRID cells; the
 * most frequent quantized colour's share of the samples is `dominantFraction` (rounded to 4 decimals for
 * output, compared unrounded). Blank when that share is >= 0.99; dark when the bucket's colour (the 5-bit
 * value shifted back to 8 bits) has luminance 0.299 R + 0.587 G + 0.114 B below 40.
 */

/** Samples per axis at most: 64 x 64 = 4096 samples whatever the image size. */
export const BLANK_GRID = 64;
/** A frame is blank when one colour holds at least this share of the samples. */
export const BLANK_THRESHOLD = 0.99;
/** A dominant colour is dark when its luminance (0..255) is below this. */
export const DARK_LUMINANCE = 40;
/**
 * Up to this many pixels computeBlankCheck decodes the whole image and samples the exact grid (4K is 8.3 M);
 * beyond, sharp shrinks it to the grid first (nearest neighbour, slightly different sample points) so a
 * huge image never needs its full raw buffer in memory.
 */
export const EXACT_SAMPLING_MAX_PIXELS = 16_777_216;

/** blankCheck of raw interleaved pixels (1 = grey, 2 = grey+alpha, 3 = RGB, 4 = RGBA); alpha is ignored. */
export function blankCheckFromRaw(raw: Buffer, width: number, height: number, channels: number): BlankCheck {
  const w = Math.max(0, Math.floor(width));
  const h = Math.max(0, Math.floor(height));
  const ch = Math.max(1, Math.floor(channels));
  if (w === 0 || h === 0 || raw.length < w * h * ch) {
    return { blank: false, dominantFraction: 0, dominantIsDark: false };
  }
  const gw = Math.min(w, BLANK_GRID);
  const gh = Math.min(h, BLANK_GRID);
  const counts = new Uint16Array(32 * 32 * 32);
  const grey = ch < 3;
  let best = 0;
  let bestKey = 0;
  for (let j = 0; j < gh; j++) {
    const row = Math.floor(((j + 0.5) * h) / gh) * w * ch;
    for (let i = 0; i < gw; i++) {
      const o = row + Math.floor(((i + 0.5) * w) / gw) * ch;
      const r = raw[o]! >> 3;
      const g = grey ? r : raw[o + 1]! >> 3;
      const b = grey ? r : raw[o + 2]! >> 3;
      const key = (r << 10) | (g << 5) | b;
      const c = ++counts[key]!;
      if (c > best) {
        best = c;
        bestKey = key;
      }
    }
  }
  const fraction = best / (gw * gh);
  const lum =
    0.299 * (((bestKey >> 10) & 31) << 3) +
    0.587 * (((bestKey >> 5) & 31) << 3) +
    0.114 * ((bestKey & 31) << 3);
  return {
    blank: fraction >= BLANK_THRESHOLD,
    dominantFraction: Math.round(fraction * 10_000) / 10_000,
    dominantIsDark: lum < DARK_LUMINANCE,
  };
}

/**
 * blankCheck of an encoded image (PNG, JPEG, GIF, BMP) with the server's sampling; a full decode, so call it
 * only when the envelope carries no blankCheck. Throws when sharp cannot decode the image.
 */
export async function computeBlankCheck(image: Buffer, limitInputPixels = 100_000_000): Promise<BlankCheck> {
  if (image[0] === 0x42 && image[1] === 0x4d) {
    // sharp has no BMP loader: uncompressed 24/32-bit BMPs are decoded here.
    const bmp = decodeBmp(image);
    if (!bmp) throw new Error('unsupported BMP variant');
    if (bmp.width * bmp.height > limitInputPixels) throw new Error('too many pixels');
    return blankCheckFromRaw(bmp.data, bmp.width, bmp.height, bmp.channels);
  }
  const { default: sharp } = await import('sharp');
  const meta = await sharp(image, { limitInputPixels }).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width <= 0 || height <= 0) throw new Error('image has no dimensions');
  let pipeline = sharp(image, { limitInputPixels });
  if (width * height > EXACT_SAMPLING_MAX_PIXELS) {
    pipeline = pipeline.resize(Math.min(width, BLANK_GRID), Math.min(height, BLANK_GRID), {
      kernel: 'nearest',
      fit: 'fill',
    });
  }
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  return blankCheckFromRaw(data, info.width, info.height, info.channels);
}
