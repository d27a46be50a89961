/** Putting a real PNG (from test/support/images.ts) into a fixture session for the report.html tests. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR, artifactFileName } from '../../src/paths/naming.js';
import type { FixtureImage, FixtureSession } from '../support/fixture-session.js';

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

export { blankPng, noisePng, windowPng } from '../support/images.js';
