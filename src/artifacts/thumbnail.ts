/**
 * Thumbnails of captures: how one is made (the same bytes whoever makes it, the recorder or a report), and
 * where it is kept: `<session>/thumbnails/<sha256>-<width>.webp`, beside the `artifacts/` folder of the image
 * it shows. A report reads a kept thumbnail instead of decoding the image again.
 */

/**
 * Thumbnails of captures: how one is made (the same bytes whoever makes it, the recorder or a report), and
 * where it is kept: `<session>/thumbnails/<sha256>-<width>.webp`, beside the `artifacts/` folder of the image it
 * shows. A report reads a kept
 * thumbnail instead of decoding the image again.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { thumbnailRelativePath } from '../paths/naming.js';
import type { Sharp } from '../util/sharp.js';
import { placeNewFile, tempFileIn } from './place-file.js';

/** Widths thumbnails are made at, widest first (the widest is the one report.html promises, 320 px). */
export const THUMBNAIL_WIDTHS: readonly number[] = [320, 160, 80];
/** The widest thumbnail (the width `verifyBundle` checks). */
export const MAX_THUMBNAIL_WIDTH = 320;
/** A very tall capture is clipped to this height ratio so one thumbnail cannot dominate the page. */
export const MAX_ASPECT = 2;
/** Source images larger than this many pixels are refused rather than decoded (a hostile or corrupt file). */
const MAX_INPUT_PIXELS = 80_000_000;
/** A kept thumbnail larger than this is not one of ours (a 320 px WebP of noise is ~100 KB). */
const MAX_STORED_BYTES = 1024 * 1024;

/** A thumbnail's WebP bytes and size in pixels. */
export interface ThumbnailImage {
  data: Buffer;
  width: number;
  height: number;
}

/** One thumbnail of `input` (an image, or a wider thumbnail) at most `width` wide and twice as tall. */
export async function encodeThumbnail(sharp: Sharp, input: Buffer, width: number): Promise<ThumbnailImage> {
  const { data, info } = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS })
    .resize({ width, height: width * MAX_ASPECT, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 60, effort: 2 })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/**
 * The thumbnails of an image at each of `widths` (widest first): the widest from the image, the narrower from
 * the widest (a small WebP, cheap to decode). The same bytes wherever they are made.
 */
export async function makeThumbnails(
  sharp: Sharp,
  image: Buffer,
  widths: readonly number[] = THUMBNAIL_WIDTHS,
): Promise<Map<number, ThumbnailImage>> {
  const out = new Map<number, ThumbnailImage>();
  if (widths.length === 0) return out;
  const widest = await encodeThumbnail(sharp, image, widths[0]!);
  out.set(widths[0]!, widest);
  for (const w of widths.slice(1)) out.set(w, await encodeThumbnail(sharp, widest.data, w));
  return out;
}

/** Absolute path of the kept thumbnail of the image with this sha256, at this width. */
export function thumbnailFile(sessionDir: string, sha256: string, width: number): string {
  return path.join(sessionDir, thumbnailRelativePath(sha256, width));
}

/** True for a sha256 in hex (the only names thumbnails are kept under). */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/**
 * The kept thumbnail of an image, or null when there is none or it is not a whole WebP of at most `width` x
 * 2·`width` px holding no PNG or GIF bytes (a file put there by something else is never embedded).
 */
export async function readKeptThumbnail(
  sessionDir: string,
  sha256: string,
  width: number,
): Promise<ThumbnailImage | null> {
  if (!isSha256Hex(sha256)) return null;
  let data: Buffer;
  try {
    const file = thumbnailFile(sessionDir, sha256, width);
    const stat = await fsp.lstat(file);
    if (!stat.isFile() || stat.size > MAX_STORED_BYTES) return null;
    data = await fsp.readFile(file);
  } catch {
    return null;
  }
  const dims = webpDimensions(data);
  if (!dims || dims.width > width || dims.height > width * MAX_ASPECT) return null;
  if (data.includes(PNG_SIGNATURE) || data.includes('GIF87a') || data.includes('GIF89a')) return null;
  return { data, ...dims };
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Keep a thumbnail (never replacing one already there: the same image gives the same bytes). A temp file in
 * `thumbnails/`, then its name by a hard link (or a rename to a free name). False when it could not be
 * written; never throws.
 */
export async function keepThumbnail(
  sessionDir: string,
  sha256: string,
  width: number,
  data: Buffer,
): Promise<boolean> {
  if (!isSha256Hex(sha256)) return false;
  const file = thumbnailFile(sessionDir, sha256, width);
  const dir = path.dirname(file);
  let tmp: string | null = null;
  try {
    // The folder, never the session dir itself: a session dir removed meanwhile stays removed.
    await fsp.mkdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    tmp = tempFileIn(dir, 'thumb');
    await fsp.writeFile(tmp, data, { flag: 'wx' });
    const placed = placeNewFile(tmp, file);
    return placed === 'ok' || placed === 'taken';
  } catch {
    return false;
  } finally {
    if (tmp) await fsp.unlink(tmp).catch(() => undefined);
  }
}

/**
 * Width and height from a WebP's header, without decoding it: RIFF and WEBP magic, a RIFF size that matches
 * the file, then the first chunk (VP8X canvas, lossy VP8 frame or lossless VP8L). Null for anything else.
 */
export function webpDimensions(buf: Buffer): { width: number; height: number } | null {
  if (
    buf.length < 30 ||
    buf.toString('latin1', 0, 4) !== 'RIFF' ||
    buf.toString('latin1', 8, 12) !== 'WEBP'
  ) {
    return null;
  }
  if (buf.readUInt32LE(4) + 8 !== buf.length) return null; // cut short, or something after it
  const chunk = buf.toString('latin1', 12, 16);
  if (chunk === 'VP8X') {
    return { width: buf.readUIntLE(24, 3) + 1, height: buf.readUIntLE(27, 3) + 1 };
  }
  if (chunk === 'VP8 ') {
    // Frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height.
    if (buf[23] !== 0x9d || buf[24] !== 0x01 || buf[25] !== 0x2a) return null;
    return { width: buf.readUInt16LE(26) & 0x3fff, height: buf.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (buf[20] !== 0x2f) return null;
    const bits = buf.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  return null;
}
