import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { ArtifactStore, compactImages } from '../../src/artifacts/index.js';
import { decodeBase64Strict, findImageBytes } from '../../src/contract/index.js';

const W = 1920,
  H = 1080,
  N = 40;
const pngs: Buffer[] = [];
for (let i = 0; i < N; i++) {
  const raw = Buffer.alloc(W * H * 3, 240);
  let x = 1234 + i;
  // noise in a band so the PNG is ~1-2 MB like a real screenshot with text/photos
  for (let p = 0; p < raw.length / 3; p++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    raw[p] = x & 0xff;
  }
  pngs.push(
    await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
      .png()
      .toBuffer(),
  );
}
console.log('png size', pngs[0]!.length);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-'));
fs.mkdirSync(dir + '/floor');
const store = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 1e10 });
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const manualT: number[] = [];
const floorT: number[] = [],
  compT: number[] = [],
  compFindT: number[] = [];
const envs = pngs.map((png) => ({
  ok: true,
  result: {
    handle: 1,
    width: W,
    height: H,
    encoding: 'png',
    bytes: png.length,
    base64: png.toString('base64'),
    window: {},
    blankCheck: { blank: false, dominantFraction: 0.5, dominantIsDark: false },
  },
}));
// warm
await compactImages(
  {
    ok: true,
    result: {
      base64: (
        await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
          .png()
          .toBuffer()
      ).toString('base64'),
    },
  },
  findImageBytes({}),
  store,
);
await sharp(pngs[0]!).metadata();
const floorRun = async (i: number) => {
  const t = performance.now();
  const buf = Buffer.from(envs[i]!.result.base64, 'base64');
  await fs.promises.writeFile(`${dir}/floor/f${i}.png`, buf);
  await sharp(buf).metadata();
  floorT.push(performance.now() - t);
};
const compRun = async (i: number) => {
  const env = envs[i]!;
  const locs = findImageBytes(env);
  const t = performance.now();
  await compactImages(env, locs, store);
  compT.push(performance.now() - t);
};
for (let i = 0; i < N; i++) {
  if (i % 2) {
    await floorRun(i);
    await compRun(i);
  } else {
    await compRun(i);
    await floorRun(i);
  }
}
console.log(
  'floor',
  median(floorT).toFixed(2),
  'compact',
  median(compT).toFixed(2),
  'ratio',
  (median(compT) / median(floorT)).toFixed(2),
);
fs.rmSync(dir, { recursive: true });
