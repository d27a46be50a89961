import type { BlankCheck } from '../contract/types.js';

/**
 * The server's blank-frame check (mcec-wire §2): RGB quantized to 5 bits per channel, sampled on a grid of
 * at most GRID x GRID points spread evenly over the image; the most frequent quantized colour's share of the
 * samples is `dominantFraction` (4 decimals). Blank when that share is >= 0.99 (the rounded value, so the
 * stored verdict always agrees with the stored fraction); dark when the colour's luminance is below 10%.
 */

/** Samples per axis at most: 64 x 64 = 4096 samples whatever the image size. */
export const BLANK_GRID = 64;
/** A frame is blank when one colour holds at least this share of the samples. */
export const BLANK_THRESHOLD = 0.99;
/** A dominant colour is dark when its luminance (0..255) is below this. */
export const DARK_LUMINANCE = 0.1 * 255;

/** Sample positions along one axis: the centres of `count` equal cells over `size` pixels. */
function samplePositions(size: number, count: number): Uint32Array {
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = Math.min(size - 1, Math.floor(((2 * i + 1) * size) / (2 * count)));
  return out;
}

/** blankCheck of raw interleaved pixels (1 = grey, 2 = grey+alpha, 3 = RGB, 4 = RGBA); alpha is ignored. */
export function blankCheckFromRaw(raw: Buffer, width: number, height: number, channels: number): BlankCheck {
  const w = Math.max(0, Math.floor(width));
  const h = Math.max(0, Math.floor(height));
  const ch = Math.max(1, Math.floor(channels));
  if (w === 0 || h === 0 || raw.length < w * h * ch) {
    return { blank: false, dominantFraction: 0, dominantIsDark: false };
  }
  const xs = samplePositions(w, Math.min(w, BLANK_GRID));
  const ys = samplePositions(h, Math.min(h, BLANK_GRID));
  const counts = new Uint32Array(32 * 32 * 32);
  const grey = ch < 3;
  let total = 0;
  let best = 0;
  let bestKey = 0;
  for (const y of ys) {
    const row = y * w * ch;
    for (const x of xs) {
      const o = row + x * ch;
      const r = raw[o]! >> 3;
      const g = grey ? r : raw[o + 1]! >> 3;
      const b = grey ? r : raw[o + 2]! >> 3;
      const key = (r << 10) | (g << 5) | b;
      const c = ++counts[key]!;
      total++;
      if (c > best) {
        best = c;
        bestKey = key;
      }
    }
  }
  const dominantFraction = Math.round((best / total) * 10000) / 10000;
  // Luminance of the bucket's colour scaled back to 0..255.
  const scale = 255 / 31;
  const lum =
    0.299 * ((bestKey >> 10) & 31) * scale +
    0.587 * ((bestKey >> 5) & 31) * scale +
    0.114 * (bestKey & 31) * scale;
  return {
    blank: dominantFraction >= BLANK_THRESHOLD,
    dominantFraction,
    dominantIsDark: lum < DARK_LUMINANCE,
  };
}

/**
 * blankCheck of an encoded image (PNG, JPEG, GIF, BMP). sharp shrinks it to the sample grid with the nearest
 * kernel first, so the cost stays near one decode whatever the size. Throws when sharp cannot decode it.
 */
export async function computeBlankCheck(image: Buffer, limitInputPixels = 100_000_000): Promise<BlankCheck> {
  const { default: sharp } = await import('sharp');
  const img = sharp(image, { limitInputPixels, failOn: 'none' });
  const meta = await img.metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width === 0 || height === 0) throw new Error('image has no dimensions');
  const gw = Math.min(width, BLANK_GRID);
  const gh = Math.min(height, BLANK_GRID);
  const { data, info } = await img
    .resize(gw, gh, { kernel: 'nearest', fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return blankCheckFromRaw(data, info.width, info.height, info.channels);
}
