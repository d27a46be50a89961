import type { BlankCheck } from '../contract/types.js';
import { loadSharp } from '../util/sharp.js';
import { decodeBmp } from './image-file.js';

/**
 * The server's blank-frame check, exactly as ScreenCapture.AnalyzeBlank computes it (mcec-wire §8), so a
 * blankCheck recomputed here agrees with MCEC's: sample every `floor(w/64)`-th column and `floor(h/64)`-th
 * row starting at 0 (step at least 1), quantize each pixel to 5 bits per channel, and take the colour that
 * first reached the highest count. `dominantFraction` is its share of the samples (rounded half-to-even to 4
 * decimals for output, like .NET's Math.Round; compared unrounded). Blank when that share is >= 0.99; dark
 * when the colour's mid-value (each 5-bit channel `<<3|4`) has luminance 0.299 R + 0.587 G + 0.114 B < 24.
 * Alpha is ignored (GetPixel's R, G, B are not premultiplied).
 */

/** Samples per axis the server aims for: the step is `floor(size / 64)`. */
export const BLANK_GRID = 64;
/** A frame is blank when one colour holds at least this share of the samples. */
export const BLANK_THRESHOLD = 0.99;
/** A dominant colour is dark when its mid-value luminance (0..255) is below this. */
export const DARK_LUMINANCE = 24;
/**
 * Up to this many pixels computeBlankCheck decodes the whole image into one buffer (4K is 8.3 M); beyond,
 * sharp streams the pixels row by row and only the sampled ones are kept, so a huge image never needs its
 * full raw buffer in memory. Both paths give the same answer.
 */
export const EXACT_SAMPLING_MAX_PIXELS = 16_777_216;

/** .NET's Math.Round(x, 4): scale, round half to even, unscale. */
function round4(x: number): number {
  const v = x * 10_000;
  const f = Math.floor(v);
  const d = v - f;
  const r = d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1;
  return r / 10_000;
}

/** Accumulates the server's samples from interleaved 8-bit pixels fed in row order, in chunks of any size. */
export class BlankSampler {
  private readonly stepX: number;
  private readonly stepY: number;
  private readonly rowBytes: number;
  private readonly grey: boolean;
  private readonly counts = new Uint32Array(32 * 32 * 32);
  private total = 0;
  private best = 0;
  private bestKey = 0;
  /** Bytes of the image consumed so far. */
  private offset = 0;

  constructor(
    readonly width: number,
    readonly height: number,
    readonly channels: number,
  ) {
    this.stepX = Math.max(1, Math.floor(width / BLANK_GRID));
    this.stepY = Math.max(1, Math.floor(height / BLANK_GRID));
    this.rowBytes = width * channels;
    this.grey = channels < 3;
  }

  /** Feed the next bytes of the image. */
  push(chunk: Buffer): void {
    const { rowBytes, channels: ch, stepX, stepY, counts, grey } = this;
    const end = this.offset + chunk.length;
    let y = Math.floor(this.offset / rowBytes);
    // First sampled row at or after the current one.
    if (y % stepY !== 0) y += stepY - (y % stepY);
    for (; y < this.height; y += stepY) {
      const rowStart = y * rowBytes;
      if (rowStart >= end) break;
      for (let x = 0; x < this.width; x += stepX) {
        const at = rowStart + x * ch;
        if (at < this.offset) continue; // sampled in an earlier chunk
        if (at + ch > end) break; // the rest of the row comes with the next chunk
        const o = at - this.offset;
        const r = chunk[o]! >> 3;
        const g = grey ? r : chunk[o + 1]! >> 3;
        const b = grey ? r : chunk[o + 2]! >> 3;
        const key = (r << 10) | (g << 5) | b;
        const n = ++counts[key]!;
        this.total++;
        if (n > this.best) {
          this.best = n;
          this.bestKey = key;
        }
      }
    }
    this.offset = end;
  }

  /** The verdict over the samples seen. */
  result(): BlankCheck {
    const fraction = this.total === 0 ? 1 : this.best / this.total;
    const k = this.bestKey;
    const lum =
      0.299 * ((((k >> 10) & 31) << 3) | 4) +
      0.587 * ((((k >> 5) & 31) << 3) | 4) +
      0.114 * (((k & 31) << 3) | 4);
    return {
      blank: fraction >= BLANK_THRESHOLD,
      dominantFraction: round4(fraction),
      dominantIsDark: lum < DARK_LUMINANCE,
    };
  }
}

/** blankCheck of raw interleaved 8-bit pixels (1 = grey, 2 = grey+alpha, 3 = RGB, 4 = RGBA); alpha is ignored. */
export function blankCheckFromRaw(raw: Buffer, width: number, height: number, channels: number): BlankCheck {
  const w = Math.max(0, Math.floor(width));
  const h = Math.max(0, Math.floor(height));
  const ch = Math.max(1, Math.floor(channels));
  // The server calls an image without pixels blank and dark.
  if (w === 0 || h === 0) return { blank: true, dominantFraction: 1, dominantIsDark: true };
  // A buffer too short for its size is not an image the server made: no verdict of blankness.
  if (raw.length < w * h * ch) return { blank: false, dominantFraction: 0, dominantIsDark: false };
  const sampler = new BlankSampler(w, h, ch);
  sampler.push(raw);
  return sampler.result();
}

/**
 * blankCheck of an encoded image (PNG, JPEG, GIF's first frame, BMP) with the server's sampling; a full
 * decode, so call it only when the envelope carries no blankCheck. Throws when the image cannot be decoded.
 */
export async function computeBlankCheck(image: Buffer, limitInputPixels = 100_000_000): Promise<BlankCheck> {
  if (image[0] === 0x42 && image[1] === 0x4d) {
    // sharp has no BMP loader: uncompressed 24/32-bit BMPs are decoded here.
    const bmp = decodeBmp(image);
    if (!bmp) throw new Error('unsupported BMP variant');
    if (bmp.width * bmp.height > limitInputPixels) throw new Error('too many pixels');
    return blankCheckFromRaw(bmp.data, bmp.width, bmp.height, bmp.channels);
  }
  const sharp = await loadSharp();
  const meta = await sharp(image, { limitInputPixels }).metadata();
  const width = meta.width ?? 0;
  const height = meta.pageHeight ?? meta.height ?? 0;
  if (width <= 0 || height <= 0) throw new Error('image has no dimensions');
  const pipeline = sharp(image, { limitInputPixels }).raw({ depth: 'uchar' });
  if (width * height <= EXACT_SAMPLING_MAX_PIXELS) {
    const { data, info } = await pipeline.toBuffer({ resolveWithObject: true });
    return blankCheckFromRaw(data, info.width, info.height, info.channels);
  }
  // Huge: stream the rows and keep only the sampled pixels. The channel count comes from the header.
  const channels = meta.channels ?? 3;
  const sampler = new BlankSampler(width, height, channels);
  for await (const chunk of pipeline as AsyncIterable<Buffer>) sampler.push(chunk);
  return sampler.result();
}
