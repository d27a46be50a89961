import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { decodeBase64Fast } from '../../src/artifacts/image-file.js';
import { ArtifactStore } from '../../src/artifacts/index.js';

const W = 1920,
  H = 1080,
  N = 40;
const b64s: string[] = [];
for (let i = 0; i < N; i++) {
  const raw = Buffer.alloc(W * H * 3, 240);
  let x = 1234 + i;
  for (let p = 0; p < raw.length / 3; p++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    raw[p] = x & 0xff;
  }
  b64s.push(
    (
      await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
        .png()
        .toBuffer()
    ).toString('base64'),
  );
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-'));
fs.mkdirSync(dir + '/floor');
const store = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 1e10 });
await store.save(
  await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
    .png()
    .toBuffer(),
);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const T: Record<string, number[]> = {};
for (let i = 0; i < N; i++) {
  let t = performance.now();
  const a = Buffer.from(b64s[i]!, 'base64');
  (T.decodeNode ??= []).push(performance.now() - t);
  t = performance.now();
  const b = decodeBase64Fast(b64s[i]!) as Buffer;
  (T.decodeFast ??= []).push(performance.now() - t);
  t = performance.now();
  await fs.promises.writeFile(`${dir}/floor/f${i}.png`, a);
  (T.write ??= []).push(performance.now() - t);
  t = performance.now();
  await sharp(a).metadata();
  (T.meta ??= []).push(performance.now() - t);
  t = performance.now();
  await store.save(b);
  (T.save ??= []).push(performance.now() - t);
}
for (const [k, v] of Object.entries(T)) console.log(k.padEnd(12), median(v).toFixed(2));
fs.rmSync(dir, { recursive: true });
