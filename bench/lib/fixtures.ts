/**
 * Realistic inputs for the figures: MCEC-shaped CallToolResults taken from the simulator (so they carry the
 * server's key order and `\uXXXX` escaping), and screenshots with real content (flat UI shapes, text-like
 * stripes and a photo-like noise area) encoded by sharp, so a 1080p PNG weighs MBs like a real one.
 */
import zlib from 'node:zlib';
import { escapeJsonText } from '../../src/sim/index.js';

/** A CallToolResult as MCEC sends it. */
export interface CallToolResult {
  content: Array<{ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string }>;
  isError: boolean;
}

/** Small non-image results from the simulator: a successful find, and a find that fails selector-matched-3. */
export async function smallResults(): Promise<{ find: CallToolResult; findFailed: CallToolResult }> {
  const { createSimulator } = await import('../../src/sim/index.js');
  const sim = createSimulator({ seed: 7 });
  const find = (await sim.callTool('find', {
    window: 'Untitled - Notepad',
    by: 'automationid',
    value: '15',
  })) as CallToolResult;
  const findFailed = (await sim.callTool('find', { window: 'Save As', value: 'Save' })) as CallToolResult;
  if (find.isError || !findFailed.isError)
    throw new Error('simulator fixtures changed: expected ok find, failed find');
  return { find, findFailed };
}

/** xorshift32: a fast deterministic byte source for noise. */
function noiseFiller(seed: number): (buf: Buffer, start: number, end: number) => void {
  let x = seed >>> 0 || 1;
  return (buf, start, end) => {
    for (let i = start; i < end; i++) {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      buf[i] = x & 0xff;
    }
  };
}

/**
 * Raw RGB of a screenshot-like frame: a desktop colour, window rectangles with title bars, rows of short
 * text-like noisy stripes, and a photo-like noise panel covering about a fifth of the frame. `variant`
 * changes the noise and positions, so every variant has different bytes (no dedupe between them).
 */
export function screenshotRaw(width: number, height: number, variant: number): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  const fill = noiseFiller(0x9e3779b9 ^ (variant * 2654435761));
  const rect = (x: number, y: number, w: number, h: number, rgb: [number, number, number]) => {
    const x0 = Math.max(0, x);
    const y0 = Math.max(0, y);
    const x1 = Math.min(width, x + w);
    const y1 = Math.min(height, y + h);
    if (x1 <= x0 || y1 <= y0) return;
    const row = Buffer.alloc((x1 - x0) * 3);
    for (let i = 0; i < row.length; i += 3) {
      row[i] = rgb[0];
      row[i + 1] = rgb[1];
      row[i + 2] = rgb[2];
    }
    for (let yy = y0; yy < y1; yy++) row.copy(raw, (yy * width + x0) * 3);
  };
  rect(0, 0, width, height, [32, 96, 160]);
  const shift = (variant * 37) % 97;
  // Two windows with title bars and a text area.
  rect(40 + shift, 40, Math.floor(width * 0.55), Math.floor(height * 0.7), [250, 250, 250]);
  rect(40 + shift, 40, Math.floor(width * 0.55), 30, [0, 120, 215]);
  rect(
    Math.floor(width * 0.5),
    Math.floor(height * 0.35),
    Math.floor(width * 0.45),
    Math.floor(height * 0.55),
    [240, 240, 240],
  );
  rect(Math.floor(width * 0.5), Math.floor(height * 0.35), Math.floor(width * 0.45), 30, [60, 60, 60]);
  // Text-like stripes: short runs of noise, 12 px tall, every 24 px, inside the first window.
  for (let y = 90; y < Math.floor(height * 0.7); y += 24) {
    for (let yy = y; yy < Math.min(height, y + 12); yy++) {
      const start = (yy * width + 60 + shift) * 3;
      const len = Math.floor(width * 0.35) * 3;
      fill(raw, start, Math.min(raw.length, start + len));
    }
  }
  // A photo-like panel (a video or a picture on screen): pure noise.
  const pw = Math.floor(width * 0.4);
  const ph = Math.floor(height * 0.45);
  const px = Math.floor(width * 0.55);
  const py = Math.floor(height * 0.42);
  for (let yy = py; yy < Math.min(height, py + ph); yy++) {
    const start = (yy * width + px) * 3;
    fill(raw, start, start + Math.min(pw, width - px) * 3);
  }
  return raw;
}

/** A screenshot-like PNG encoded by sharp. */
export async function screenshotPng(width: number, height: number, variant: number): Promise<Buffer> {
  const sharp = (await import('sharp')).default;
  const raw = screenshotRaw(width, height, variant);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** The window of the captures, as MCEC describes it. */
export const NOTEPAD_WINDOW = {
  handle: 65552,
  title: 'Untitled - Notepad',
  className: 'Notepad',
  processName: 'notepad',
  processId: 4120,
  x: 120,
  y: 80,
  width: 800,
  height: 600,
};

/** A capture envelope (a bare object) with its base64 inline; blankCheck declared unless told otherwise. */
export function captureEnvelope(
  png: Buffer,
  width: number,
  height: number,
  withBlankCheck: boolean,
  base64 = png.toString('base64'),
): Record<string, unknown> {
  const result: Record<string, unknown> = {
    handle: NOTEPAD_WINDOW.handle,
    width,
    height,
    encoding: 'png',
    bytes: png.length,
    base64,
    window: NOTEPAD_WINDOW,
  };
  if (withBlankCheck) result.blankCheck = { blank: false, dominantFraction: 0.4213, dominantIsDark: false };
  return { ok: true, sessionId: null, result };
}

/** A capture as MCEC sends it over MCP: an image block, then the envelope (with the same base64) as text. */
export function captureCallToolResult(png: Buffer, width: number, height: number): CallToolResult {
  const base64 = png.toString('base64');
  const envelope = captureEnvelope(png, width, height, true, base64);
  return {
    content: [
      { type: 'image', data: base64, mimeType: 'image/png' },
      { type: 'text', text: escapeJsonText(JSON.stringify(envelope)) },
    ],
    isError: false,
  };
}

/** A distinct capture (the PNG with a text chunk naming `n`): a new sha256, the same decode cost. */
export function distinctCapture(png: Buffer, n: number, width: number, height: number): CallToolResult {
  const text = Buffer.from(`Comment\u0000variant ${n}`, 'latin1');
  const chunk = Buffer.alloc(12 + text.length);
  chunk.writeUInt32BE(text.length, 0);
  chunk.write('tEXt', 4, 'latin1');
  text.copy(chunk, 8);
  chunk.writeUInt32BE(zlib.crc32(chunk.subarray(4, 8 + text.length)) >>> 0, 8 + text.length);
  const iend = png.length - 12;
  const variant = Buffer.concat([png.subarray(0, iend), chunk, png.subarray(iend)]);
  return captureCallToolResult(variant, width, height);
}
