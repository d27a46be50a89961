/**
 * Painting masks into image bytes: decoded with sharp, each rectangle filled with the mask colour (every frame
 * of a GIF), encoded again in the same format. PNG stays lossless (pixels outside the masks are unchanged);
 * a JPEG is re-encoded at quality 90. BMP (no decoder here) and anything sharp cannot read is an error: the
 * caller then stores no image at all.
 */

import { loadSharp } from '../util/sharp.js';
import type { Rect } from './types.js';

/** The mask colour: opaque black. */
export const MASK_RGB: readonly [number, number, number] = [0, 0, 0];

function fill(
  data: Buffer,
  width: number,
  height: number,
  channels: number,
  pageHeight: number,
  rects: readonly Rect[],
) {
  const pages = Math.max(1, Math.floor(height / pageHeight));
  for (let page = 0; page < pages; page++) {
    const top = page * pageHeight;
    for (const r of rects) {
      const x0 = Math.max(0, Math.floor(r.x));
      const x1 = Math.min(width, Math.ceil(r.x + r.width));
      const y0 = Math.max(0, Math.floor(r.y));
      const y1 = Math.min(pageHeight, Math.ceil(r.y + r.height));
      for (let y = y0; y < y1; y++) {
        let i = ((top + y) * width + x0) * channels;
        for (let x = x0; x < x1; x++, i += channels) {
          data[i] = MASK_RGB[0];
          if (channels >= 3) {
            data[i + 1] = MASK_RGB[1];
            data[i + 2] = MASK_RGB[2];
          }
          if (channels === 4 || channels === 2) data[i + channels - 1] = 255;
        }
      }
    }
  }
}

/** The image with `rects` (image pixels) painted over, or why it could not be done. */
export async function paintMasks(
  bytes: Buffer,
  format: 'png' | 'jpeg' | 'gif' | 'bmp' | string | undefined,
  rects: readonly Rect[],
  limitInputPixels = 100_000_000,
): Promise<{ bytes: Buffer } | { error: string }> {
  if (format !== 'png' && format !== 'jpeg' && format !== 'gif')
    return { error: `cannot decode ${format ?? 'unknown'} images to mask them` };
  try {
    const sharp = await loadSharp();
    const animated = format === 'gif';
    const input = sharp(bytes, { limitInputPixels, animated });
    const meta = animated ? await input.metadata() : undefined;
    const { data, info } = await input.raw().toBuffer({ resolveWithObject: true });
    const pageHeight = meta?.pageHeight ?? info.height;
    fill(data, info.width, info.height, info.channels, pageHeight, rects);
    const raw = sharp(data, {
      raw: {
        width: info.width,
        height: info.height,
        channels: info.channels,
        ...(animated ? { pageHeight } : {}),
      },
      limitInputPixels,
    });
    if (format === 'png')
      return { bytes: await raw.png({ compressionLevel: 6, adaptiveFiltering: false }).toBuffer() };
    if (format === 'jpeg') return { bytes: await raw.jpeg({ quality: 90 }).toBuffer() };
    return {
      bytes: await raw
        .gif({
          ...(meta?.delay ? { delay: meta.delay } : {}),
          ...(meta?.loop !== undefined ? { loop: meta.loop } : {}),
        })
        .toBuffer(),
    };
  } catch (err) {
    const message =
      err instanceof Error ? err.message.split('\n', 1)[0]!.slice(0, 200) : String(err).slice(0, 200);
    return { error: `could not decode the image to mask it: ${message}` };
  }
}
