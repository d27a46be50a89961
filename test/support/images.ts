/**
 * Every test image in one place: real PNGs, JPEGs and GIFs made by sharp (solid, striped, noisy, seeded), and
 * hand-built ones sharp cannot make or must not decode (BMP, a PNG whose header claims a huge size).
 */
import zlib from 'node:zlib';
import sharp from 'sharp';

/** A PNG of one colour. */
export function solidPng(width: number, height: number, rgb: [number, number, number]): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } })
    .png()
    .toBuffer();
}

/** `n` bytes from an xorshift32 sequence started at `state`, byte `i` made by `byte(x, i)`: repeatable. */
function xorshiftBytes(n: number, state: number, byte: (x: number, i: number) => number): Buffer {
  const out = Buffer.alloc(n);
  let x = state;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = byte(x, i);
  }
  return out;
}

/** Raw RGB noise from a fixed seed (xorshift), so tests are repeatable. */
export function noiseRaw(width: number, height: number, seed = 12345): Buffer {
  return xorshiftBytes(width * height * 3, seed >>> 0 || 1, (x) => x & 0xff);
}

/** A PNG from raw RGB. */
export function rawToPng(raw: Buffer, width: number, height: number): Promise<Buffer> {
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** A noisy PNG (no dominant colour). */
export function noisyPng(width: number, height: number, seed?: number): Promise<Buffer> {
  return rawToPng(noiseRaw(width, height, seed), width, height);
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/**
 * A small, well-formed PNG whose IHDR claims `width` x `height` (CRCs correct): a decompression bomb's
 * header. The IDAT holds one deflated row only.
 */
export function claimedSizePng(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.alloc(1 + 3 * 16))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** An uncompressed 24-bit bottom-up BMP of one colour (sharp does not write BMP). */
export function solidBmp(width: number, height: number, rgb: [number, number, number]): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const o = y * stride + x * 3;
      pixels[o] = rgb[2];
      pixels[o + 1] = rgb[1];
      pixels[o + 2] = rgb[0];
    }
  const header = Buffer.alloc(54);
  header.write('BM', 0, 'latin1');
  header.writeUInt32LE(54 + pixels.length, 2);
  header.writeUInt32LE(54, 10);
  header.writeUInt32LE(40, 14);
  header.writeInt32LE(width, 18);
  header.writeInt32LE(height, 22);
  header.writeUInt16LE(1, 26);
  header.writeUInt16LE(24, 28);
  header.writeUInt32LE(pixels.length, 34);
  return Buffer.concat([header, pixels]);
}

/** A JPEG of one colour. */
export function solidJpeg(width: number, height: number, background: string): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background } })
    .jpeg()
    .toBuffer();
}

/** A GIF of one colour. */
export function solidGif(width: number, height: number, background: string): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background } })
    .gif()
    .toBuffer();
}

/** A real 8x8 red PNG. */
export async function redPng(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#f00' } })
    .png()
    .toBuffer();
}

/** A real 8x8 JPEG. */
export async function blueJpeg(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#00f' } })
    .jpeg()
    .toBuffer();
}

/** A real 8x8 GIF. */
export async function greenGif(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#0f0' } })
    .gif()
    .toBuffer();
}

/** A minimal valid 2x1 24-bit BMP, built by hand (sharp does not write BMP). */
export function tinyBmp(): Buffer {
  const pixels = Buffer.from([0, 0, 255, 0, 255, 0, 0, 0]); // two BGR pixels + row padding to 4 bytes
  const header = Buffer.alloc(54);
  header.write('BM', 0, 'latin1');
  header.writeUInt32LE(54 + pixels.length, 2);
  header.writeUInt32LE(54, 10);
  header.writeUInt32LE(40, 14);
  header.writeInt32LE(2, 18);
  header.writeInt32LE(1, 22);
  header.writeUInt16LE(1, 26);
  header.writeUInt16LE(24, 28);
  header.writeUInt32LE(pixels.length, 34);
  return Buffer.concat([header, pixels]);
}

/** A real PNG of one colour (plus a stripe so it is not blank unless asked). */
export async function makePng(
  width: number,
  height: number,
  rgb: [number, number, number],
  options: { uniform?: boolean } = {},
): Promise<Buffer> {
  const base = sharp({
    create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } },
  });
  if (options.uniform) return base.png().toBuffer();
  const stripe = await sharp({
    create: {
      width: Math.max(1, Math.floor(width / 2)),
      height,
      channels: 3,
      background: { r: 255, g: 255, b: 255 },
    },
  })
    .png()
    .toBuffer();
  return base
    .composite([{ input: stripe, left: 0, top: 0 }])
    .png()
    .toBuffer();
}

/** A real PNG of `width` x `height` with some content (not blank). */
export async function realPng(width: number, height: number, seed = 1): Promise<Buffer> {
  // One channel of noise, two of a gradient along the row.
  const raw = xorshiftBytes(width * height * 3, seed * 2654435761 || 1, (x, i) =>
    i % 3 === 0 ? x & 0xff : (i >> 6) & 0xff,
  );
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** An all-black PNG (a blank capture). */
export function blankPng(width = 800, height = 500): Promise<Buffer> {
  return solidPng(width, height, [0, 0, 0]);
}

/** A noisy PNG written fast (compression level 1): thumbnails of it do not compress to nothing. */
export function noisePng(width: number, height: number, seed: number): Promise<Buffer> {
  return sharp(noiseRaw(width, height, seed), { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** A PNG that looks like a desktop window (title bar, text lines, a button), drawn from SVG by sharp. */
export async function windowPng(
  title: string,
  options: { width?: number; height?: number; accent?: string; lines?: string[]; dialog?: string } = {},
): Promise<Buffer> {
  const width = options.width ?? 800;
  const height = options.height ?? 500;
  const accent = options.accent ?? '#2b579a';
  const lines = (options.lines ?? ['Hello + <world> & friends', 'Second line of the document'])
    .map(
      (l, i) =>
        `<text x="24" y="${96 + i * 26}" font-family="sans-serif" font-size="18" fill="#222">${escapeXml(l)}</text>`,
    )
    .join('');
  const dialog = options.dialog
    ? `<rect x="${width / 2 - 170}" y="${height / 2 - 80}" width="340" height="160" fill="#fff" stroke="#888"/>
       <rect x="${width / 2 - 170}" y="${height / 2 - 80}" width="340" height="30" fill="${accent}"/>
       <text x="${width / 2 - 158}" y="${height / 2 - 59}" font-family="sans-serif" font-size="15" fill="#fff">${escapeXml(options.dialog)}</text>
       <rect x="${width / 2 + 40}" y="${height / 2 + 36}" width="110" height="30" rx="3" fill="#e5e5e5" stroke="#777"/>
       <text x="${width / 2 + 75}" y="${height / 2 + 57}" font-family="sans-serif" font-size="15" fill="#222">Save</text>`
    : '';
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="#f3f3f3"/>
    <rect width="100%" height="40" fill="${accent}"/>
    <text x="16" y="27" font-family="sans-serif" font-size="18" fill="#fff">${escapeXml(title)}</text>
    <rect x="0" y="40" width="100%" height="26" fill="#e8e8e8"/>
    <text x="16" y="58" font-family="sans-serif" font-size="14" fill="#333">File   Edit   Format   View   Help</text>
    ${lines}${dialog}
  </svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}
