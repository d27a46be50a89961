import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { decodeBase64Strict } from '../../src/contract/index.js';

const W = 1920,
  H = 1080;
const raw = Buffer.alloc(W * H * 3, 240);
let x = 1234;
for (let p = 0; p < raw.length / 3; p++) {
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  x >>>= 0;
  raw[p] = x & 0xff;
}
const png = await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
  .png()
  .toBuffer();
const b64 = png.toString('base64');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-'));
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const T: Record<string, number[]> = {};
const time = async (name: string, f: () => unknown) => {
  const t = performance.now();
  await f();
  (T[name] ??= []).push(performance.now() - t);
};
for (let i = 0; i < 25; i++) {
  await time('Buffer.from', () => Buffer.from(b64, 'base64'));
  await time('strict', () => decodeBase64Strict(b64));
  await time('sha256', () => createHash('sha256').update(png).digest('hex'));
  await time('metadata', () => sharp(png).metadata());
  await time('metadata-limit', () => sharp(png, { limitInputPixels: 1e8 }).metadata());
  await time('writeFile', () => fs.promises.writeFile(`${dir}/a${i}.png`, png));
  await time('writeFile-wx', () => fs.promises.writeFile(`${dir}/b${i}.png`, png, { flag: 'wx' }));
  await time(
    'writeFileCb',
    () => new Promise<void>((res, rej) => fs.writeFile(`${dir}/c${i}.png`, png, (e) => (e ? rej(e) : res()))),
  );
  await time('writeFileSync', () => fs.writeFileSync(`${dir}/d${i}.png`, png));
  await time('indexOf x4', () => {
    b64.indexOf('\n');
    b64.indexOf('\r');
    b64.indexOf('-');
    b64.indexOf('_');
  });
}
for (const [k, v] of Object.entries(T)) console.log(k.padEnd(16), median(v).toFixed(2));
fs.rmSync(dir, { recursive: true });
