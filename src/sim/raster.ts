/** Raw RGB drawing for the fake desktop, the server's blank-frame check, and PNG encoding with sharp. */
import { blankCheckFromRaw } from '../artifacts/blank-check.js';
import type { BlankCheck } from '../contract/types.js';

export type Rgb = readonly [number, number, number];

/** An RGB image in memory: 3 bytes per pixel, rows top to bottom. */
export interface Raster {
  width: number;
  height: number;
  data: Buffer;
}

/** A new raster filled with one colour. */
export function createRaster(width: number, height: number, color: Rgb): Raster {
  const data = Buffer.alloc(width * height * 3);
  const raster = { width, height, data };
  fillRect(raster, 0, 0, width, height, color);
  return raster;
}

/** Fill a rectangle, clipped to the raster. */
export function fillRect(r: Raster, x: number, y: number, w: number, h: number, color: Rgb): void {
  const x0 = Math.max(0, Math.floor(x));
  const y0 = Math.max(0, Math.floor(y));
  const x1 = Math.min(r.width, Math.floor(x + w));
  const y1 = Math.min(r.height, Math.floor(y + h));
  if (x1 <= x0 || y1 <= y0) return;
  const row = Buffer.alloc((x1 - x0) * 3);
  for (let i = 0; i < row.length; i += 3) {
    row[i] = color[0];
    row[i + 1] = color[1];
    row[i + 2] = color[2];
  }
  for (let yy = y0; yy < y1; yy++) row.copy(r.data, (yy * r.width + x0) * 3);
}

/** Draw a one-pixel rectangle outline. */
export function strokeRect(r: Raster, x: number, y: number, w: number, h: number, color: Rgb): void {
  fillRect(r, x, y, w, 1, color);
  fillRect(r, x, y + h - 1, w, 1, color);
  fillRect(r, x, y, 1, h, color);
  fillRect(r, x + w - 1, y, 1, h, color);
}

/** Copy `src` into `dst` with its top-left at (dx, dy), clipped to `dst`. */
export function blit(dst: Raster, src: Raster, dx: number, dy: number): void {
  const x0 = Math.max(0, dx);
  const y0 = Math.max(0, dy);
  const x1 = Math.min(dst.width, dx + src.width);
  const y1 = Math.min(dst.height, dy + src.height);
  if (x1 <= x0 || y1 <= y0) return;
  for (let y = y0; y < y1; y++) {
    const from = ((y - dy) * src.width + (x0 - dx)) * 3;
    src.data.copy(dst.data, (y * dst.width + x0) * 3, from, from + (x1 - x0) * 3);
  }
}

/** The server's blank-frame verdict of a raster (ScreenCapture.AnalyzeBlank; the same code the recorder recomputes with). */
export function blankCheck(r: Raster): BlankCheck {
  return blankCheckFromRaw(r.data, r.width, r.height, 3);
}

/** Encode a raster as PNG (sharp is imported lazily: it is heavy and CLIs load this module at start). */
export async function encodePng(r: Raster): Promise<Buffer> {
  const { default: sharp } = await import('sharp');
  return sharp(r.data, { raw: { width: r.width, height: r.height, channels: 3 } })
    .png({ compressionLevel: 6, adaptiveFiltering: false })
    .toBuffer();
}
