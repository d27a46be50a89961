import { createHash } from 'node:crypto';
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
const writeFd = (file: string, b: Buffer) =>
  new Promise<number>((res, rej) => fs.open(file, 'wx', (e, fd) => (e ? rej(e) : res(fd))));
for (let i = 0; i < N; i++) {
  const b = bufs[i]!;
  await time('floor seq', async () => {
    await fs.promises.writeFile(`${dir}/${n++}`, b);
    await sharp(b).metadata();
  });
  await time('open+write(whole)+close', async () => {
    const h = await fs.promises.open(`${dir}/${n++}`, 'wx');
    await h.write(b);
    await h.close();
  });
  await time('par: open, write‖meta‖synchash, close', async () => {
    const h = await fs.promises.open(`${dir}/${n++}`, 'wx');
    const w = h.write(b, 0, b.length, 0);
    const m = sharp(b).metadata();
    createHash('sha256').update(b).digest('hex');
    await Promise.all([w, m]);
    await h.close();
  });
  await time('cb: open, write‖meta‖synchash, close', async () => {
    const fd = await writeFd(`${dir}/${n++}`, b);
    const w = new Promise<void>((res, rej) => fs.write(fd, b, 0, b.length, 0, (e) => (e ? rej(e) : res())));
    const m = sharp(b).metadata();
    createHash('sha256').update(b).digest('hex');
    await Promise.all([w, m]);
    await new Promise<void>((res) => fs.close(fd, () => res()));
  });
}
for (const [k, v] of Object.entries(T)) console.log(k.padEnd(40), median(v).toFixed(2));
fs.rmSync(dir, { recursive: true });
