/** Replay keeps the images it read for later calls within a bound, least recently used let go first. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArtifactFiles, MAX_CACHED_BASE64_CHARS } from '../../src/replay/answer.js';
import { tempDir } from './helpers.js';

const MiB = 1024 * 1024;
let dir: string;
beforeAll(() => {
  dir = tempDir();
  fs.mkdirSync(path.join(dir, 'artifacts'));
  // Six 48 MiB files: 384 MiB of base64 in all, past the 256 MiB kept.
  for (let i = 0; i < 6; i++)
    fs.writeFileSync(path.join(dir, 'artifacts', `capture-${i}.png`), crypto.randomBytes(48 * MiB));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('ArtifactFiles', () => {
  it('serves every image whole but keeps at most 256 MiB of base64, the least recently used let go first', () => {
    const files = new ArtifactFiles(dir);
    const expected = (i: number) =>
      fs.readFileSync(path.join(dir, 'artifacts', `capture-${i}.png`)).toString('base64');
    for (let i = 0; i < 6; i++) {
      expect(files.base64(`artifacts/capture-${i}.png`)).toBe(expected(i));
      expect(files.cachedChars).toBeLessThanOrEqual(MAX_CACHED_BASE64_CHARS);
    }
    // Before: all six were held (384 MiB of base64 for the replay's life).
    expect(files.cachedChars).toBe(4 * expected(0).length);
    // A file used again moves to the back: the next read lets go of the oldest other (3, not 2).
    const two = expected(2);
    files.base64('artifacts/capture-2.png');
    files.base64('artifacts/capture-0.png');
    fs.rmSync(path.join(dir, 'artifacts', 'capture-2.png'));
    fs.rmSync(path.join(dir, 'artifacts', 'capture-3.png'));
    expect(files.base64('artifacts/capture-2.png')).toBe(two);
    expect(files.base64('artifacts/capture-3.png')).toBeNull();
  });
});
