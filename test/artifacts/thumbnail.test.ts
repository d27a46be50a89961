import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  keepThumbnail,
  makeThumbnails,
  readKeptThumbnail,
  THUMBNAIL_WIDTHS,
  thumbnailFile,
  webpDimensions,
} from '../../src/artifacts/thumbnail.js';
import { ThumbnailQueue } from '../../src/artifacts/thumbnail-queue.js';
import { loadSharp } from '../../src/util/sharp.js';
import { noisyPng } from '../support/images.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A PNG whose header, chunk layout and IEND are whole but whose pixel data is garbage: it cannot be decoded. */
async function corruptPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await noisyPng(width, height, 99));
  // IDAT data starts 8 bytes after its length field; overwrite a stretch of it (CRC and zlib stream break).
  const idat = png.indexOf('IDAT');
  png.fill(0x5a, idat + 40, Math.min(png.length - 40, idat + 4000));
  return png;
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-thumb-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('thumbnails of a capture', () => {
  it('are WebPs at 320, 160 and 80 px whose header sizes are what sharp decodes', async () => {
    const png = await noisyPng(800, 600, 5);
    const thumbs = await makeThumbnails(await loadSharp(), png);
    expect([...thumbs.keys()]).toEqual([...THUMBNAIL_WIDTHS]);
    for (const [w, t] of thumbs) {
      const meta = await sharp(t.data).metadata();
      expect(meta.format).toBe('webp');
      expect({ width: meta.width, height: meta.height }).toEqual({ width: w, height: (w * 3) / 4 });
      expect(webpDimensions(t.data)).toEqual({ width: t.width, height: t.height });
    }
    // The same image gives the same bytes (the recorder's and a report's thumbnails are interchangeable).
    const again = await makeThumbnails(await loadSharp(), png);
    for (const w of THUMBNAIL_WIDTHS) expect(again.get(w)!.data.equals(thumbs.get(w)!.data)).toBe(true);
  });

  it('reads the header of lossless and alpha WebPs too, and refuses what is not a whole WebP', async () => {
    const rgba = await sharp({ create: { width: 37, height: 21, channels: 4, background: '#12345680' } })
      .webp()
      .toBuffer();
    const lossless = await sharp(await noisyPng(53, 29, 1))
      .webp({ lossless: true })
      .toBuffer();
    expect(webpDimensions(rgba)).toEqual({ width: 37, height: 21 });
    expect(webpDimensions(lossless)).toEqual({ width: 53, height: 29 });
    expect(webpDimensions(lossless.subarray(0, lossless.length - 1))).toBeNull();
    expect(webpDimensions(await noisyPng(20, 20, 2))).toBeNull();
  });

  it('are kept by sha256, never replaced, and read back only when they are whole WebPs of the right size', async () => {
    const png = await noisyPng(400, 300, 7);
    const id = sha(png);
    const [t320, t160] = [...(await makeThumbnails(await loadSharp(), png)).values()];
    expect(await keepThumbnail(dir, id, 320, t320!.data)).toBe(true);
    expect(thumbnailFile(dir, id, 320)).toBe(path.join(dir, 'thumbnails', `${id}-320.webp`));
    expect((await readKeptThumbnail(dir, id, 320))!.data.equals(t320!.data)).toBe(true);
    // Kept again with other bytes: the first stays (nothing is renamed over a file a reader may hold open).
    expect(await keepThumbnail(dir, id, 320, t160!.data)).toBe(true);
    expect(fs.readFileSync(thumbnailFile(dir, id, 320)).equals(t320!.data)).toBe(true);
    expect(fs.readdirSync(path.dirname(thumbnailFile(dir, id, 320)))).toEqual([`${id}-320.webp`]);
    // Too wide for its name, not a WebP, a name that is not a sha256: never read back.
    fs.writeFileSync(thumbnailFile(dir, id, 80), t320!.data);
    expect(await readKeptThumbnail(dir, id, 80)).toBeNull();
    fs.writeFileSync(thumbnailFile(dir, id, 160), png);
    expect(await readKeptThumbnail(dir, id, 160)).toBeNull();
    expect(await keepThumbnail(dir, '../../etc', 320, t320!.data)).toBe(false);
    // A session dir removed meanwhile is not made again.
    expect(await keepThumbnail(path.join(dir, 'gone'), id, 320, t320!.data)).toBe(false);
    expect(fs.existsSync(path.join(dir, 'gone'))).toBe(false);
    expect(await readKeptThumbnail(dir, '../x', 320)).toBeNull();
  });
});

describe('ThumbnailQueue', () => {
  async function writeImage(bytes: Buffer): Promise<{ sessionDir: string; sha256: string; file: string }> {
    const file = path.join(dir, 'artifacts', `capture-${sha(bytes).slice(0, 8)}.png`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, bytes);
    return { sessionDir: dir, sha256: sha(bytes), file };
  }

  it('keeps every width of each image it takes, and counts an undecodable one as failed without throwing', async () => {
    const queue = new ThumbnailQueue();
    const good = await writeImage(await noisyPng(640, 480, 3));
    const bad = await writeImage(await corruptPng(640, 480));
    expect(queue.offer({ ...good, format: 'png' })).toBe(true);
    expect(queue.offer({ ...bad, format: 'png' })).toBe(true);
    await queue.close();
    expect(queue.counts).toEqual({ made: 1, skipped: 0, failed: 1 });
    for (const w of THUMBNAIL_WIDTHS) {
      expect((await readKeptThumbnail(dir, good.sha256, w))?.width).toBe(w);
      expect(fs.existsSync(thumbnailFile(dir, bad.sha256, w))).toBe(false);
    }
    expect(fs.readFileSync(bad.file).length).toBeGreaterThan(0); // the image itself is untouched
    expect(fs.readdirSync(path.join(dir, 'thumbnails')).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('skips what it cannot take: back-pressure, a full queue, BMP and GIF, after close', async () => {
    const queue = new ThumbnailQueue({ maxPending: 1 });
    const a = await writeImage(await noisyPng(64, 48, 1));
    const b = await writeImage(await noisyPng(64, 48, 2));
    const c = await writeImage(await noisyPng(64, 48, 3));
    expect(queue.offer({ ...a, format: 'png' }, true)).toBe(false); // the recorder's queue is under pressure
    expect(queue.offer({ ...a, format: 'png' })).toBe(true); // made at once
    expect(queue.offer({ ...b, format: 'png' })).toBe(true); // waits
    expect(queue.offer({ ...c, format: 'png' })).toBe(false); // one waiting already
    expect(queue.offer({ ...c, file: path.join(dir, 'x.bmp'), format: 'bmp' })).toBe(false);
    expect(queue.offer({ ...c, format: 'gif' })).toBe(false);
    await queue.close();
    expect(queue.offer({ ...c, format: 'png' })).toBe(false);
    expect(queue.counts).toEqual({ made: 2, skipped: 5, failed: 0 });
    expect(fs.existsSync(thumbnailFile(dir, c.sha256, 320))).toBe(false);
  });

  it('stops waiting at its close deadline, leaving the rest for a report to make', async () => {
    const queue = new ThumbnailQueue();
    const images = await Promise.all(
      [4, 5, 6, 7].map(async (s) => writeImage(await noisyPng(1600, 1200, s))),
    );
    for (const img of images) queue.offer({ ...img, format: 'png' });
    await queue.close(0);
    expect(queue.counts.made).toBeLessThan(4);
    expect(queue.counts.made + queue.counts.skipped).toBe(4);
  });
});
