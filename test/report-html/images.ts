/** Real PNGs for the report.html tests (made by sharp) and a way to put one into a fixture session. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR, artifactFileName } from '../../src/paths/naming.js';
import type { FixtureImage, FixtureSession } from '../helpers/fixture-session.js';

let counter = 0;

/** Write `png` into the session's artifacts/ like the recorder would (UTC-stamped name) and describe it. */
export function writeImage(session: FixtureSession, png: Buffer): FixtureImage {
  const name = artifactFileName('capture', new Date(session.clock), ++counter, 'png');
  const artifact = `${ARTIFACTS_DIR}/${name}`;
  fs.writeFileSync(path.join(session.dir, artifact), png);
  const { width, height } = pngSize(png);
  return {
    artifact,
    sha256: createHash('sha256').update(png).digest('hex'),
    bytes: png.length,
    width,
    height,
  };
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

type Sharp = typeof import('sharp')['default'];

async function sharpModule(): Promise<Sharp> {
  return (await import('sharp')).default;
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
  const sharp = await sharpModule();
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export { blankPng, noisePng } from '../support/images.js';
