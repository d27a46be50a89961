import { createHash, webcrypto } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';

const W = 1920,
  H = 1080,
  N = 30;
const bufs: Buffer[] = [];
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
  bufs.push(
    await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
      .png()
      .toBuffer(),
  );
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-'));
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const T: Record<string, number[]> = {};
const time = async (k: string, f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  (T[k] ??= []).push(performance.now() - t);
};
let n = 0;
for (let i = 0; i < N; i++) {
  const b = bufs[i]!;
  await time('write', () => fs.promises.writeFile(`${dir}/${n++}`, b));
  await time('writeCb', () => new Promise<void>((res) => fs.writeFile(`${dir}/${n++}`, b, () => res())));
  await time('subtle', () => webcrypto.subtle.digest('SHA-256', b));
  await time('syncHash', async () => createHash('sha256').update(b).digest('hex'));
  await time('meta', () => sharp(b).metadata());
  await time('write+subtle+meta', () =>
    Promise.all([
      fs.promises.writeFile(`${dir}/${n++}`, b),
      webcrypto.subtle.digest('SHA-256', b),
      sharp(b).metadata(),
    ]),
  );
  await time('writeCb+subtle+meta', () =>
    Promise.all([
      new Promise<void>((res) => fs.writeFile(`${dir}/${n++}`, b, () => res())),
      webcrypto.subtle.digest('SHA-256', b),
      sharp(b).metadata(),
    ]),
  );
  await time('write+meta then sync', async () => {
    const p = Promise.all([fs.promises.writeFile(`${dir}/${n++}`, b), sharp(b).metadata()]);
    createHash('sha256').update(b).digest('hex');
    await p;
  });
  await time('writeCb+meta then sync', async () => {
    const p = Promise.all([
      new Promise<void>((res) => fs.writeFile(`${dir}/${n++}`, b, () => res())),
      sharp(b).metadata(),
    ]);
    createHash('sha256').update(b).digest('hex');
    await p;
  });
  await time('floor seq', async () => {
    await fs.promises.writeFile(`${dir}/${n++}`, b);
    await sharp(b).metadata();
  });
}
for (const [k, v] of Object.entries(T)) console.log(k.padEnd(24), median(v).toFixed(2));
fs.rmSync(dir, { recursive: true });
