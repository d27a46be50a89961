import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { captureEnvelope, screenshotPng } from '../../bench/lib/fixtures.js';
import { alternate, gc, median, nowMs } from '../../bench/lib/stats.js';
import { ArtifactStore, compactImages } from '../../src/artifacts/index.js';
import { findImageBytes } from '../../src/contract/index.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-'));
const fresh = (name: string) => {
  const d = path.join(tmp, name);
  fs.rmSync(d, { recursive: true, force: true });
  fs.mkdirSync(path.join(d, 'artifacts'), { recursive: true });
  return d;
};
const [W, H] = (process.argv[2] ?? '1920x1080').split('x').map(Number) as [number, number];
const samples = [];
for (let v = 0; v < 3; v++) {
  const png = await screenshotPng(W, H, v + 1);
  samples.push({ png, base64: png.toString('base64') });
}
console.log('png', samples[0]!.png.length);
const floor = async (r: number) => {
  const s = samples[r % 3]!;
  const dir = fresh(`f${r}`);
  gc();
  const t = nowMs();
  const buf = Buffer.from(s.base64, 'base64');
  await fs.promises.writeFile(path.join(dir, 'artifacts', 'floor.png'), buf);
  await sharp(buf).metadata();
  return nowMs() - t;
};
const comp = async (r: number) => {
  const s = samples[r % 3]!;
  const dir = fresh(`c${r}`);
  const env = captureEnvelope(s.png, W, H, true, s.base64);
  const store = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 1e12 });
  gc();
  const t = nowMs();
  await compactImages(env, findImageBytes(env), store);
  return nowMs() - t;
};
for (let w = 0; w < 2; w++) {
  await floor(w);
  await comp(w);
}
const times = await alternate(21, { floor, comp });
const f = median(times.floor),
  c = median(times.comp);
console.log('floor', f.toFixed(2), 'comp', c.toFixed(2), 'ratio', (c / f).toFixed(2));
fs.rmSync(tmp, { recursive: true });
