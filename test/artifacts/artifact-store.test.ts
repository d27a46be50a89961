// Artifact names must be UTC whatever the local zone: run this suite in a zone far from UTC.
process.env.TZ = 'America/Los_Angeles';

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactStore } from '../../src/artifacts/index.js';
import {
  claimedSizePng,
  noiseRaw,
  noisyPng,
  solidBmp,
  solidGif,
  solidJpeg,
  solidPng,
} from '../support/images.js';
import { tempDir } from '../support/temp.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
// 2026-12-02 03:04:05.067 UTC is still 2026-12-01 19:04 in Los Angeles.
const FIXED = new Date(Date.UTC(2026, 11, 2, 3, 4, 5, 67));

let dir: string;
beforeEach(() => {
  dir = tempDir('mcec-');
});
afterEach(() => {
  fs.chmodSync(dir, 0o700);
  fs.rmSync(dir, { recursive: true, force: true });
});

function store(options: Partial<ConstructorParameters<typeof ArtifactStore>[0]> = {}): ArtifactStore {
  return new ArtifactStore({
    sessionDir: dir,
    maxArtifactBytes: 64 * 1024 * 1024,
    now: () => FIXED,
    ...options,
  });
}

describe('ArtifactStore', () => {
  it('the suite really runs in a non-UTC zone', () => {
    expect(FIXED.getHours()).not.toBe(FIXED.getUTCHours());
    expect(FIXED.getDate()).toBe(1);
  });

  it('writes the bytes once, named in UTC with a per-session counter, sha256 equal to the input', async () => {
    const png = await noisyPng(64, 48);
    const s = store();
    const saved = await s.save(png.toString('base64'));
    expect(saved).toMatchObject({
      sha256: sha(png),
      bytes: png.length,
      format: 'png',
      width: 64,
      height: 48,
      path: 'artifacts/capture-20261202-030405067-1.png',
      deduplicated: false,
    });
    expect(saved.error).toBeUndefined();
    const onDisk = fs.readFileSync(path.join(dir, saved.path!));
    expect(sha(onDisk)).toBe(sha(png));
    expect(s.absolutePath(saved.path!)).toBe(path.join(dir, 'artifacts', 'capture-20261202-030405067-1.png'));

    const other = await s.save(await solidPng(10, 10, [1, 2, 3]));
    expect(other.path).toBe('artifacts/capture-20261202-030405067-2.png');
    expect(s.usedBytes).toBe(png.length + other.bytes);
    expect(s.filesWritten).toBe(2);
  });

  it('bytes in no sniffed format declared as another (SVG, icon, unknown) are written as they came; a false PNG is not', async () => {
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>',
    );
    const s = store();
    const saved = await s.save(svg, { declaredMimeType: 'image/svg+xml', namePrefix: 'image-call1' });
    expect(saved).toEqual({
      sha256: sha(svg),
      bytes: svg.length,
      notRaster: true,
      mimeType: 'image/svg+xml',
      path: 'artifacts/image-call1-20261202-030405067-1.svg',
      deduplicated: false,
    });
    expect(fs.readFileSync(path.join(dir, saved.path!))).toEqual(svg);
    const icon = Buffer.concat([Buffer.from([0, 0, 1, 0, 1, 0]), await solidPng(4, 4, [9, 9, 9])]);
    expect((await s.save(icon, { declaredMimeType: 'image/vnd.microsoft.icon' })).path).toMatch(/-2\.ico$/);
    expect((await s.save(Buffer.from('odd bytes 123'), { declaredMimeType: 'image/x-new' })).path).toMatch(
      /\.bin$/,
    );
    // The same bytes again: one file.
    expect(await s.save(svg, { declaredMimeType: 'image/svg+xml' })).toMatchObject({
      path: saved.path,
      deduplicated: true,
    });

    // Bytes that claim a sniffed format, or claim none (an MCEC capture's base64), are refused as before.
    fs.mkdirSync(path.join(dir, 'other'));
    const refused = store({ sessionDir: path.join(dir, 'other') });
    const garbage = Buffer.from('not a png at all, just text bytes');
    for (const declaredMimeType of ['image/png', 'IMAGE/JPEG', 'image/jpg', 'image/webp', undefined]) {
      const r = await refused.save(garbage, declaredMimeType ? { declaredMimeType } : {});
      expect(r).toMatchObject({ error: 'not an image (unrecognised magic bytes)', failure: 'invalid' });
      expect(r.path).toBeUndefined();
    }
    const png = await solidPng(6, 6, [1, 2, 3]);
    const cut = await refused.save(png.subarray(0, png.length - 20), { declaredMimeType: 'image/svg+xml' });
    expect(cut).toMatchObject({
      error: expect.stringMatching(/^truncated png/),
      failure: 'invalid',
      format: 'png',
    });
    expect(fs.existsSync(path.join(dir, 'other', 'artifacts'))).toBe(false);

    // Bytes refused under image/png and then declared as an SVG are written (not deduplicated to the refusal),
    // and that file stands for them from then on.
    const later = await refused.save(Buffer.from(garbage), { declaredMimeType: 'image/svg+xml' });
    expect(later).toMatchObject({
      notRaster: true,
      deduplicated: false,
      path: expect.stringMatching(/\.svg$/),
    });
    expect(await refused.save(Buffer.from(garbage), { declaredMimeType: 'image/svg+xml' })).toMatchObject({
      path: later.path,
      deduplicated: true,
    });
    expect(fs.readdirSync(path.join(dir, 'other', 'artifacts'))).toEqual([path.basename(later.path!)]);

    // Over the budget: summarized without a file, counted as omitted.
    const tight = store({ sessionDir: path.join(dir, 'tight'), maxArtifactBytes: 10 });
    expect(await tight.save(svg, { declaredMimeType: 'image/svg+xml' })).toMatchObject({
      failure: 'budget',
      notRaster: true,
    });
    expect(tight.omitted).toEqual({ images: 1, bytes: svg.length });
  });

  it('the same bytes twice (even concurrently) give one file and deduplicated: true', async () => {
    const png = await noisyPng(40, 40);
    const s = store();
    const [a, b] = await Promise.all([s.save(png), s.save(png.toString('base64'))]);
    const c = await s.save(Buffer.from(png));
    expect(a.deduplicated).toBe(false);
    expect(b.deduplicated).toBe(true);
    expect(c.deduplicated).toBe(true);
    expect(new Set([a.path, b.path, c.path]).size).toBe(1);
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
    expect(s.usedBytes).toBe(png.length);
  });

  it('while a large image is hashed and written, only a .partial temp name exists', async () => {
    const png = await noisyPng(800, 600); // over 1 MB: written by the thread pool while this thread hashes it
    expect(png.length).toBeGreaterThan(1024 * 1024);
    const artifacts = path.join(dir, 'artifacts');
    fs.mkdirSync(artifacts);
    const seen = new Set<string>();
    let saving = true;
    const watching = (async () => {
      while (saving) {
        for (const name of fs.readdirSync(artifacts)) seen.add(name);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const saved = await store().save(png);
    saving = false;
    await watching;
    expect(saved.error).toBeUndefined();
    expect(saved.sha256).toBe(sha(png));
    // Seen mid-write: the temp name, never the artifact's (it appears, complete, when the save resolves).
    expect([...seen].length).toBeGreaterThan(0);
    for (const name of seen) expect(name).toMatch(/^\.capture-\d+-\d+-[0-9a-f]{8}\.partial$/);
    expect(fs.readdirSync(artifacts)).toEqual([path.basename(saved.path!)]);
    // Every chunk landed at its own position (over 1 MB in 256 KiB chunks, the last one short).
    expect(fs.readFileSync(path.join(artifacts, path.basename(saved.path!))).equals(png)).toBe(true);
  });

  it('never overwrites a file left by an earlier writer of the same session', async () => {
    fs.mkdirSync(path.join(dir, 'artifacts'));
    fs.writeFileSync(path.join(dir, 'artifacts', 'capture-20261202-030405067-1.png'), 'older');
    const png = await solidPng(5, 5, [9, 9, 9]);
    const saved = await store().save(png);
    expect(saved.path).toBe('artifacts/capture-20261202-030405067-2.png');
    expect(fs.readFileSync(path.join(dir, 'artifacts', 'capture-20261202-030405067-1.png'), 'utf8')).toBe(
      'older',
    );
  });

  it('bad base64 gives artifactError, no file', async () => {
    const s = store();
    for (const bad of ['not base64 at all!!', 'iVBORw0KGgo=====', 'abcde', '']) {
      const saved = await s.save(bad);
      expect(saved.error).toMatch(/^bad base64/);
      expect(saved.failure).toBe('invalid');
      expect(saved.path).toBeUndefined();
    }
    expect(fs.existsSync(path.join(dir, 'artifacts'))).toBe(false);
  });

  it('non-image bytes give "not an image"', async () => {
    const saved = await store().save(Buffer.from('just some text, definitely not a picture'));
    expect(saved.error).toMatch(/not an image/);
    expect(saved.failure).toBe('invalid');
    expect(saved.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(saved.path).toBeUndefined();
  });

  it('a truncated PNG is refused even though its header reads', async () => {
    const png = await noisyPng(100, 100);
    const saved = await store().save(png.subarray(0, Math.floor(png.length / 2)));
    expect(saved.error).toMatch(/truncated png/);
    expect(saved.failure).toBe('invalid');
    expect(saved.width).toBe(100); // the header was readable
    expect(saved.path).toBeUndefined();
  });

  it('a PNG cut inside its header is "not a readable png"', async () => {
    const png = await noisyPng(10, 10);
    const saved = await store().save(png.subarray(0, 20));
    expect(saved.error).toMatch(/not a readable png|truncated/);
  });

  it('a decompression bomb (IHDR claims 50,000 x 50,000) is refused from its header', async () => {
    const bomb = claimedSizePng(50_000, 50_000);
    expect(bomb.length).toBeLessThan(200);
    const saved = await store().save(bomb); // header only: a 7.5 GB decode would exhaust the test's memory
    expect(saved.error).toMatch(/too many pixels/);
    expect(saved.path).toBeUndefined();
  });

  it('a custom pixel limit applies', async () => {
    const saved = await store({ limitInputPixels: 100 }).save(await solidPng(20, 20, [0, 0, 0]));
    expect(saved.error).toMatch(/too many pixels/);
  });

  it('past maxArtifactBytes: summary facts without a file, counted once per distinct image', async () => {
    const first = await noisyPng(30, 30, 1);
    const second = await noisyPng(30, 30, 2);
    const s = store({ maxArtifactBytes: first.length + 10 });
    expect((await s.save(first)).path).toBeDefined();
    const over = await s.save(second);
    expect(over.error).toMatch(/over artifact budget/);
    expect(over.failure).toBe('budget');
    expect(over).toMatchObject({ width: 30, height: 30, sha256: sha(second), bytes: second.length });
    await s.save(second); // same bytes again: not counted twice
    expect(s.omitted).toEqual({ images: 1, bytes: second.length });
    expect(s.usedBytes).toBe(first.length);
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
  });

  it('a deleted session dir gives a disk error, not a throw, and is not recreated', async () => {
    const s = store();
    fs.rmSync(dir, { recursive: true });
    const saved = await s.save(await solidPng(4, 4, [0, 0, 0]));
    expect(saved.error).toMatch(/^disk error: ENOENT/);
    expect(saved.failure).toBe('disk');
    expect(fs.existsSync(dir)).toBe(false);
    fs.mkdirSync(dir); // for afterEach
  });

  it('recovers when artifacts/ vanishes between writes', async () => {
    const s = store();
    await s.save(await solidPng(4, 4, [0, 0, 0]));
    fs.rmSync(path.join(dir, 'artifacts'), { recursive: true });
    const saved = await s.save(await solidPng(4, 4, [255, 0, 0]));
    expect(saved.error).toBeUndefined();
    expect(fs.existsSync(path.join(dir, saved.path!))).toBe(true);
  });

  it('a session dir that is a file gives a disk error', async () => {
    const file = path.join(dir, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    const saved = await new ArtifactStore({ sessionDir: file, maxArtifactBytes: 1e9 }).save(
      await solidPng(4, 4, [0, 0, 0]),
    );
    expect(saved.error).toMatch(/^disk error: ENOTDIR/);
    expect(saved.failure).toBe('disk');
  });

  it.skipIf(process.getuid?.() === 0)('a read-only session dir gives a disk error', async () => {
    fs.chmodSync(dir, 0o500);
    const saved = await store().save(await solidPng(4, 4, [0, 0, 0]));
    expect(saved.error).toMatch(/^disk error: EACCES/);
  });

  it('a disk error is retried for a later copy of the same bytes', async () => {
    const png = await solidPng(6, 6, [7, 7, 7]);
    const file = path.join(dir, 'sess');
    fs.writeFileSync(file, 'x');
    const s = new ArtifactStore({ sessionDir: file, maxArtifactBytes: 1e9 });
    expect((await s.save(png)).error).toMatch(/disk error/);
    fs.rmSync(file);
    fs.mkdirSync(file);
    const again = await s.save(png);
    expect(again.error).toBeUndefined();
    expect(again.deduplicated).toBe(false);
    expect(s.usedBytes).toBe(png.length);
  });

  it('a copy that comes while the first save of its bytes fails on a disk error tries again itself', async () => {
    const png = await solidPng(6, 6, [7, 7, 7]);
    const file = path.join(dir, 'sess');
    fs.writeFileSync(file, 'x');
    const s = new ArtifactStore({ sessionDir: file, maxArtifactBytes: 1e9 });
    const first = s.save(png); // its temp file cannot be opened (the session dir is a file)
    fs.rmSync(file);
    fs.mkdirSync(file);
    // The same bytes in another buffer, before the first save settled: the disk is fine again.
    const copy = await s.save(Buffer.from(png));
    expect((await first).failure).toBe('disk');
    expect(copy.error).toBeUndefined();
    expect(copy.deduplicated).toBe(false);
    expect(fs.existsSync(path.join(file, copy.path!))).toBe(true);
    expect(s.usedBytes).toBe(png.length);
  });

  it('computes blankCheck on request, once, and keeps a declared one', async () => {
    const black = await solidPng(50, 50, [0, 0, 0]);
    const s = store();
    const saved = await s.save(black, { blankCheck: true });
    expect(saved.blankCheck).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
    const declared = { blank: false, dominantFraction: 0.5, dominantIsDark: false };
    const white = await solidPng(50, 50, [255, 255, 255]);
    expect((await s.save(white, { knownBlankCheck: declared, blankCheck: true })).blankCheck).toEqual(
      declared,
    );
    expect(await s.ensureBlankCheck(sha(white), white)).toEqual(declared);
  });

  it('a JPEG bomb (SOF claims 50,000 x 50,000) leaves no file behind', async () => {
    const jpeg = await solidJpeg(16, 16, '#888');
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(sof).toBeGreaterThan(0);
    const bomb = Buffer.from(jpeg);
    bomb.writeUInt16BE(50_000, sof + 5);
    bomb.writeUInt16BE(50_000, sof + 7);
    const saved = await store().save(bomb);
    expect(saved.error).toMatch(/too many pixels/);
    expect(saved.path).toBeUndefined();
    const dirEntries = fs.existsSync(path.join(dir, 'artifacts'))
      ? fs.readdirSync(path.join(dir, 'artifacts'))
      : [];
    expect(dirEntries).toEqual([]);
  });

  it('a JPEG bomb of several MiB (its write in chunks at once, sharp refusing meanwhile) leaves no file', async () => {
    const jpeg = await sharp(noiseRaw(1000, 1000), { raw: { width: 1000, height: 1000, channels: 3 } })
      .jpeg({ quality: 100, chromaSubsampling: '4:4:4' })
      .toBuffer();
    expect(jpeg.length).toBeGreaterThan(2 * 1024 * 1024); // several write chunks
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    const bomb = Buffer.from(jpeg);
    bomb.writeUInt16BE(50_000, sof + 5);
    bomb.writeUInt16BE(50_000, sof + 7);
    const s = store();
    const saved = await s.save(bomb);
    expect(saved.error).toMatch(/too many pixels/);
    expect(saved.path).toBeUndefined();
    expect(saved.sha256).toBe(sha(bomb));
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toEqual([]);
    expect(s.usedBytes).toBe(0);
  });

  it.skipIf(process.platform === 'win32')(
    'a write that fails part way (ulimit -f) leaves neither a named file nor a temp file',
    async () => {
      // A child process under a 1 MiB file size limit: the chunks within the first 1 MiB are written, the others fail
      // with EFBIG while the child hashes the bytes; then a small image still saves.
      const large = await noisyPng(1000, 1000); // ~3 MB of noise: a dozen chunks
      const small = await solidPng(8, 8, [1, 2, 3]);
      expect(large.length).toBeGreaterThan(2 * 1024 * 1024);
      fs.writeFileSync(path.join(dir, 'large.png'), large);
      fs.writeFileSync(path.join(dir, 'small.png'), small);
      const sessionDir = path.join(dir, 'session');
      fs.mkdirSync(sessionDir);
      const child = fileURLToPath(new URL('./fixtures/save-under-file-limit.ts', import.meta.url));
      const res = spawnSync(
        'bash',
        [
          '-c',
          'ulimit -f 1024 && exec "$0" "$@"', // bash counts 1024-byte blocks
          process.execPath,
          '--import',
          'tsx',
          child,
          sessionDir,
          path.join(dir, 'large.png'),
          path.join(dir, 'small.png'),
        ],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(res.status, res.stderr).toBe(0);
      const out = JSON.parse(res.stdout) as {
        large: { error?: string; failure?: string; sha256: string; path?: string };
        afterLarge: string[];
        usedAfterLarge: number;
        small: { error?: string; path?: string };
        afterSmall: string[];
      };
      expect(out.large.error).toMatch(/^disk error: EFBIG/);
      expect(out.large.failure).toBe('disk');
      expect(out.large.path).toBeUndefined();
      expect(out.large.sha256).toBe(sha(large));
      expect(out.afterLarge).toEqual([]);
      expect(out.usedAfterLarge).toBe(0);
      expect(out.small.error).toBeUndefined();
      expect(out.afterSmall).toEqual([path.basename(out.small.path!)]);
    },
  );

  it('JPEG and GIF are kept with their own extensions', async () => {
    const s = store();
    const jpeg = await solidJpeg(12, 9, '#123456');
    const gif = await solidGif(5, 6, '#00ff00');
    expect(await s.save(jpeg)).toMatchObject({
      format: 'jpeg',
      width: 12,
      height: 9,
      path: expect.stringMatching(/-1\.jpg$/),
    });
    expect(await s.save(gif)).toMatchObject({
      format: 'gif',
      width: 5,
      height: 6,
      path: expect.stringMatching(/-2\.gif$/),
    });
  });

  it('different bytes with the same length, head and tail are two files (no false dedupe)', async () => {
    const a = solidBmp(100, 100, [50, 50, 50]); // 30 KB: the middle is outside the 4 KiB head and tail
    const b = Buffer.from(a);
    b[15_000] = 255 - b[15_000]!;
    const s = store();
    const [sa, sb] = await Promise.all([s.save(a), s.save(b)]);
    expect(sa.sha256).not.toBe(sb.sha256);
    expect(sb.deduplicated).toBe(false);
    expect(sa.path).not.toBe(sb.path);
    expect(sha(fs.readFileSync(path.join(dir, sb.path!)))).toBe(sha(b));
    const again = await s.save(Buffer.from(b));
    expect(again).toMatchObject({ deduplicated: true, path: sb.path });
  });

  it('BMP: facts from its header, extension .bmp', async () => {
    const bmp = solidBmp(7, 3, [10, 200, 30]);
    const saved = await store().save(bmp);
    expect(saved).toMatchObject({
      format: 'bmp',
      width: 7,
      height: 3,
      path: 'artifacts/capture-20261202-030405067-1.bmp',
    });
  });

  it('never throws, whatever it is given', async () => {
    const s = store();
    // biome-ignore lint/suspicious/noExplicitAny: deliberately wrong input
    for (const bad of [null, undefined, 42, {}, []] as any[]) {
      const saved = await s.save(bad);
      expect(saved.error).toBeDefined();
    }
  });
});
