/** Shared test material: real images made by sharp and the MCEC server's JSON text escaping. */
import sharp from 'sharp';

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

/**
 * Serializes like the MCEC server (System.Text.Json default encoder): inside JSON strings, `+`, `<`, `>`,
 * `&`, `'` and every non-ASCII char are written as \uXXXX escapes. Numbers such as `1e+21` stay as they are.
 */
export function mcecStringify(value: unknown): string {
  const json = JSON.stringify(value);
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    const ch = json[i]!;
    if (inString && ch === '\\') {
      out += ch + json[i + 1]!; // An existing escape passes through untouched.
      i++;
      continue;
    }
    if (ch === '"') inString = !inString;
    if (inString && (c > 0x7e || ch === '+' || ch === '<' || ch === '>' || ch === '&' || ch === "'")) {
      out += `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** A CallToolResult as MCEC sends it: optional image block first, envelope JSON text last, isError = !ok. */
export function callToolResult(
  envelope: { ok: boolean } & Record<string, unknown>,
  image?: { data: string; mimeType: string },
): { content: Record<string, unknown>[]; isError: boolean } {
  const content: Record<string, unknown>[] = [];
  if (image) content.push({ type: 'image', data: image.data, mimeType: image.mimeType });
  content.push({ type: 'text', text: mcecStringify(envelope) });
  return { content, isError: !envelope.ok };
}

/** The contract's capture-summary example, made concrete. */
export const CAPTURE_SUMMARY = {
  kind: 'capture-summary',
  window: {
    handle: 132456,
    title: 'Untitled - Notepad',
    className: 'Notepad',
    processName: 'notepad',
    processId: 4242,
    x: 10,
    y: 20,
    width: 800,
    height: 600,
  },
  width: 800,
  height: 600,
  encoding: 'png',
  bytes: 48213,
  blankCheck: { blank: false, dominantFraction: 0.1043, dominantIsDark: false },
  artifact: '<sessions>/20260701-101500-4f2a9c0d1e2b/capture-20260701-101502123-1.png',
};
