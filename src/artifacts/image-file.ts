/** Cheap facts about encoded image bytes: file extensions, MIME types, end markers. */

import type { ImageFormat } from '../contract/image-bytes.js';

/** File extension written for each format. */
export const EXTENSION: Readonly<Record<ImageFormat, string>> = {
  png: 'png',
  jpeg: 'jpg',
  gif: 'gif',
  bmp: 'bmp',
};

/** MIME type of each format. */
export const MIME_TYPE: Readonly<Record<ImageFormat, string>> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  bmp: 'image/bmp',
};

const PNG_IEND = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

function startsWith(buf: Buffer, bytes: number[], at = 0): boolean {
  if (buf.length < at + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[at + i] !== bytes[i]) return false;
  return true;
}

/**
 * Why the bytes look cut short, or undefined when the end marker is where it should be. Header-only
 * metadata cannot see a truncated body, so this looks at the tail: PNG ends with IEND, JPEG with EOI (a few
 * bytes of trailing padding allowed), GIF with its trailer, BMP is at least as long as its header says.
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
  }
}
