/** Cheap facts about encoded image bytes: file extensions, MIME types, end markers. */

import { decodeBase64Strict, type ImageFormat } from '../contract/image-bytes.js';

/** File extension written for each format. */
export const EXTENSION: Readonly<Record<ImageFormat, string>> = {
  png: 'png',
  jpeg: 'jpg',
  gif: 'gif',
  bmp: 'bmp',
  webp: 'webp',
};

/** MIME type of each format. */
export const MIME_TYPE: Readonly<Record<ImageFormat, string>> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  bmp: 'image/bmp',
  webp: 'image/webp',
};

/**
 * Extension of the file written for bytes in no format the recorder reads (`notRaster`), by their declared
 * MIME type; any other declared type gets `.bin`. The bytes are kept as they came, never decoded.
 */
const NOT_RASTER_EXTENSION: Readonly<Record<string, string>> = {
  'image/svg+xml': 'svg',
  'image/x-icon': 'ico',
  'image/vnd.microsoft.icon': 'ico',
  'image/avif': 'avif',
  'image/tiff': 'tif',
};

/** Declared MIME types of the formats sniffed: bytes that claim one of them must be one (else refused). */
const RASTER_MIME_TYPES: ReadonlySet<string> = new Set([...Object.values(MIME_TYPE), 'image/jpg']);

/**
 * The extension to write bytes no format was sniffed in under, when their declared MIME type names another
 * format (`image/svg+xml` -> `svg`, unknown -> `bin`); undefined when none is declared or it names a sniffed
 * format (then the bytes are no image: garbage or a false PNG is refused, as always).
 */
export function notRasterExtension(declaredMimeType: string | undefined): string | undefined {
  const mime = bareMimeType(declaredMimeType);
  if (!mime || RASTER_MIME_TYPES.has(mime)) return undefined;
  return NOT_RASTER_EXTENSION[mime] ?? 'bin';
}

/** A declared MIME type without parameters, in lower case (`Image/SVG+xml; charset=utf-8` -> `image/svg+xml`). */
export function bareMimeType(declared: string | undefined): string {
  return (declared ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

/** Extensions of the files written for the sniffed formats: the artifacts whose pixels can be read. */
const RASTER_EXTENSIONS: ReadonlySet<string> = new Set([...Object.values(EXTENSION), 'jpeg']);

/** True when an artifact's file name is one of a sniffed format (thumbnails and run.gif frames come from those). */
export function isRasterArtifact(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot !== -1 && RASTER_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

const PNG_IEND = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

function startsWith(buf: Buffer, bytes: number[], at = 0): boolean {
  if (buf.length < at + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[at + i] !== bytes[i]) return false;
  return true;
}

/**
 * Why the bytes look cut short, or undefined when the end marker is where it should be. Header-only
 * metadata cannot see a truncated body, so this looks at the tail: PNG ends with IEND, JPEG with EOI (a few
 * bytes of trailing padding allowed), GIF with its trailer, BMP and WebP are at least as long as their headers say.
 */
export function truncationOf(buf: Buffer, format: ImageFormat): string | undefined {
  switch (format) {
    case 'png': {
      if (buf.length >= PNG_IEND.length && startsWith(buf, PNG_IEND, buf.length - PNG_IEND.length)) return;
      // Tolerate trailing bytes after IEND (some encoders pad); only a missing IEND is truncation.
      const tail = buf.subarray(Math.max(0, buf.length - 4096));
      return tail.includes(Buffer.from(PNG_IEND)) ? undefined : 'truncated png (no IEND chunk at the end)';
    }
    case 'jpeg': {
      const tail = buf.subarray(Math.max(0, buf.length - 64));
      for (let i = tail.length - 2; i >= 0; i--) if (tail[i] === 0xff && tail[i + 1] === 0xd9) return;
      return 'truncated jpeg (no end-of-image marker)';
    }
    case 'gif': {
      const tail = buf.subarray(Math.max(0, buf.length - 16));
      return tail.includes(0x3b) ? undefined : 'truncated gif (no trailer)';
    }
    case 'bmp': {
      const declared = buf.readUInt32LE(2);
      return declared > buf.length ? `truncated bmp (${buf.length} of ${declared} bytes)` : undefined;
    }
    case 'webp': {
      // The RIFF header says how long the file is: its size field plus the 8 bytes before the data.
      const declared = buf.readUInt32LE(4) + 8;
      return declared > buf.length ? `truncated webp (${buf.length} of ${declared} bytes)` : undefined;
    }
  }
}

/** What a BMP header says (sharp cannot read BMP, so its facts come from here). */
export interface BmpHeader {
  width: number;
  height: number;
  bitsPerPixel: number;
  compression: number;
  dataOffset: number;
  topDown: boolean;
}

/** The BMP header's facts, or undefined when too short or nonsense. */
export function readBmpHeader(buf: Buffer): BmpHeader | undefined {
  if (buf.length < 30 || buf[0] !== 0x42 || buf[1] !== 0x4d) return undefined;
  const dib = buf.readUInt32LE(14);
  let width: number;
  let rawHeight: number;
  let bitsPerPixel: number;
  let compression = 0;
  if (dib === 12) {
    width = buf.readUInt16LE(18);
    rawHeight = buf.readUInt16LE(20);
    bitsPerPixel = buf.readUInt16LE(24);
  } else {
    if (buf.length < 34) return undefined;
    width = buf.readInt32LE(18);
    rawHeight = buf.readInt32LE(22);
    bitsPerPixel = buf.readUInt16LE(28);
    compression = buf.readUInt32LE(30);
  }
  if (width <= 0 || rawHeight === 0) return undefined;
  return {
    width,
    height: Math.abs(rawHeight),
    bitsPerPixel,
    compression,
    dataOffset: buf.readUInt32LE(10),
    topDown: rawHeight < 0,
  };
}

/** Raw RGB of an uncompressed 24- or 32-bit BMP (what screen grabs are), or undefined for other kinds. */
export function decodeBmp(
  buf: Buffer,
): { data: Buffer; width: number; height: number; channels: 3 } | undefined {
  const h = readBmpHeader(buf);
  if (!h || (h.bitsPerPixel !== 24 && h.bitsPerPixel !== 32)) return undefined;
  if (h.compression !== 0 && !(h.compression === 3 && h.bitsPerPixel === 32)) return undefined;
  const bpp = h.bitsPerPixel / 8;
  const stride = Math.ceil((h.width * bpp) / 4) * 4;
  if (h.dataOffset + stride * h.height > buf.length) return undefined;
  const data = Buffer.alloc(h.width * h.height * 3);
  for (let y = 0; y < h.height; y++) {
    const src = h.dataOffset + (h.topDown ? y : h.height - 1 - y) * stride;
    for (let x = 0; x < h.width; x++) {
      const s = src + x * bpp;
      const d = (y * h.width + x) * 3;
      data[d] = buf[s + 2]!;
      data[d + 1] = buf[s + 1]!;
      data[d + 2] = buf[s]!;
    }
  }
  return { data, width: h.width, height: h.height, channels: 3 };
}

/** Width and height from the first bytes of a PNG, GIF or BMP (sync, no decoder); undefined for JPEG and WebP. */
export function headerDimensions(
  buf: Buffer,
  format: ImageFormat,
): { width: number; height: number } | undefined {
  if (format === 'png' && buf.length >= 24 && buf.toString('latin1', 12, 16) === 'IHDR')
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  if (format === 'gif' && buf.length >= 10)
    return { width: buf.readUInt16LE(6), height: buf.readUInt16LE(8) };
  if (format === 'bmp') {
    const h = readBmpHeader(buf);
    return h ? { width: h.width, height: h.height } : undefined;
  }
  return undefined;
}

/** Decoded length a base64 string without whitespace implies, or -1 when none. */
function impliedLength(s: string): number {
  let len = s.length;
  let pad = 0;
  while (pad < 2 && len > 0 && s.charCodeAt(len - 1) === 61) {
    len--;
    pad++;
  }
  if (len % 4 === 1 || (pad > 0 && (len + pad) % 4 !== 0)) return -1;
  return Math.floor((len * 3) / 4);
}

/**
 * Decode base64 in one pass when it is clean (the usual case: Node's decoder skips characters outside the
 * alphabet, so a decoded length equal to the one the string's length implies proves there were none), and
 * fall back to the contract's strict decoder (line breaks, precise errors) otherwise. Like Node's decoder it
 * accepts the url-safe `-`/`_` for `+`/`/`: the bytes are the same either way.
 */
export function decodeBase64Fast(s: string): Buffer | { error: string } {
  if (s.length === 0) return { error: 'empty string' };
  const expected = impliedLength(s);
  if (expected > 0) {
    const buf = Buffer.from(s, 'base64');
    if (buf.length === expected) return buf;
  }
  return decodeBase64Strict(s);
}
