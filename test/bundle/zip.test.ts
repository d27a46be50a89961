/** The zip writer read back by real readers: yauzl (what verify and replay use) and Info-ZIP's unzip. */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Entry, ZipFile } from 'yauzl';
import { dosDateTime, writeZip, type ZipEntry } from '../../src/bundle/zip.js';
import { entryName, openZip, zipEntries } from '../../src/bundle/zip-read.js';
import { noisyPng } from '../support/images.js';
import { removeDir, tempDir } from '../support/temp.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('mcec-zip-');
});
afterEach(() => removeDir(dir));

const MTIME = new Date(Date.UTC(2026, 11, 2, 10, 15, 3));
const manifest = {
  name: 'top/manifest.json',
  build: (hashes: ReadonlyMap<string, { bytes: number; sha256: string }>) =>
    Buffer.from(JSON.stringify([...hashes])),
};

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function readEntry(zip: ZipFile, entry: Entry): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(err);
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('error', reject);
    });
  });
}

/** Every entry's name, bytes and raw record, read back with yauzl (sizes validated). */
async function readBack(file: string): Promise<Map<string, { data: Buffer; entry: Entry }>> {
  const zip = await openZip(file);
  const out = new Map<string, { data: Buffer; entry: Entry }>();
  try {
    for await (const entry of zipEntries(zip))
      out.set(entryName(entry), { data: await readEntry(zip, entry), entry });
  } finally {
    zip.close();
  }
  return out;
}

describe('writeZip of files, buffers and streams', () => {
  const opts = { mtime: MTIME };

  it('writes stored and deflated entries from buffers, files and streams that unzip and yauzl read back byte for byte', async () => {
    const png = await noisyPng(300, 200, 7);
    const pngFile = path.join(dir, 'shot.png');
    fs.writeFileSync(pngFile, png);
    // Larger than one read buffer, so a file goes through several reads into reused buffers.
    const big = Buffer.from('{"line":"x"}\n'.repeat(250_000));
    const bigFile = path.join(dir, 'big.jsonl');
    fs.writeFileSync(bigFile, big);
    const empty = path.join(dir, 'empty.txt');
    fs.writeFileSync(empty, '');
    const page = ['<html>', '<p>é – 日本</p>'.repeat(5000), '</html>'].map((s) => Buffer.from(s));
    const entries: ZipEntry[] = [
      { name: 'top/artifacts/shot.png', source: { file: pngFile, size: png.length }, compress: false },
      { name: 'top/big.jsonl', source: { file: bigFile, size: big.length }, compress: true, level: 3 },
      { name: 'top/empty.txt', source: { file: empty, size: 0 }, compress: true },
      { name: 'top/notes-é.md', source: { buffer: Buffer.from('# notes\n') }, compress: true },
      { name: 'top/report.html', source: { stream: () => page }, compress: true },
    ];
    const file = path.join(dir, 'out.zip');
    const res = await writeZip(file, entries, manifest, opts);

    expect(res.bytes).toBe(fs.statSync(file).size);
    const unzip = spawnSync('unzip', ['-tq', file], { encoding: 'utf8' });
    expect(unzip.status, unzip.stdout + unzip.stderr).toBe(0);
    const back = await readBack(file);
    expect([...back.keys()]).toEqual([...entries.map((e) => e.name), 'top/manifest.json']);
    expect(back.get('top/artifacts/shot.png')!.data.equals(png)).toBe(true);
    expect(back.get('top/artifacts/shot.png')!.entry.compressionMethod).toBe(0);
    expect(back.get('top/big.jsonl')!.data.equals(big)).toBe(true);
    expect(back.get('top/big.jsonl')!.entry.compressedSize).toBeLessThan(big.length / 10);
    expect(back.get('top/empty.txt')!.data.length).toBe(0);
    expect(back.get('top/notes-é.md')!.data.toString()).toBe('# notes\n');
    expect(back.get('top/report.html')!.data.equals(Buffer.concat(page))).toBe(true);
    // The hashes handed to the manifest are the entries' real sizes and sha256.
    expect(res.hashes.get('top/big.jsonl')).toEqual({ bytes: big.length, sha256: sha256(big) });
    const listed = new Map(
      JSON.parse(back.get('top/manifest.json')!.data.toString()) as Array<[string, unknown]>,
    );
    expect(listed.get('top/report.html')).toEqual({
      bytes: Buffer.concat(page).length,
      sha256: sha256(Buffer.concat(page)),
    });
    // Fixed mode and UTC wall-clock time, whatever the umask and the zone.
    const info = spawnSync('zipinfo', ['-T', file, 'top/notes-é.md'], { encoding: 'utf8' });
    expect(info.stdout).toMatch(/^-rw-r--r--.*20261202\.101502 top\/notes-é\.md/m);
  });

  it('keeps every file whole when many files, some shorter and some longer than a read buffer, follow each other', async () => {
    // The read buffer is reused from file to file; copied files land at their reserved places meanwhile.
    const files: Array<{ name: string; data: Buffer }> = [];
    const entries: ZipEntry[] = [];
    for (let i = 0; i < 120; i++) {
      const data = randomBytes(i % 7 === 0 ? 1_500_000 + i : 200_000 + i * 3_001);
      const file = path.join(dir, `f${i}.bin`);
      fs.writeFileSync(file, data);
      files.push({ name: `top/f${String(i).padStart(3, '0')}.bin`, data });
      entries.push({ name: files[i]!.name, source: { file, size: data.length }, compress: i % 10 === 9 });
    }
    const out = path.join(dir, 'many.zip');
    const res = await writeZip(out, entries, manifest, opts);
    const back = await readBack(out);
    for (const f of files) {
      expect(sha256(back.get(f.name)!.data), f.name).toBe(sha256(f.data));
      expect(res.hashes.get(f.name)!.sha256).toBe(sha256(f.data));
    }
    const unzip = spawnSync('unzip', ['-tq', out], { encoding: 'utf8' });
    expect(unzip.status, unzip.stdout).toBe(0);
  });

  it('gives the same bytes for the same inputs', async () => {
    const data = Buffer.from('same bytes\n'.repeat(1000));
    const entries: ZipEntry[] = [
      { name: 'top/a.txt', source: { buffer: data }, compress: true },
      { name: 'top/b.bin', source: { buffer: data }, compress: false },
    ];
    const a = path.join(dir, 'a.zip');
    const b = path.join(dir, 'b.zip');
    await writeZip(a, entries, manifest, opts);
    await writeZip(b, entries, manifest, opts);
    expect(fs.readFileSync(a).equals(fs.readFileSync(b))).toBe(true);
  });

  it('writes stored files between deflated ones from files, the same bytes each time', async () => {
    const files = [150_000, 2_500_000, 0, 70_000].map((size, i) => {
      const file = path.join(dir, `in${i}.bin`);
      fs.writeFileSync(file, i % 2 ? Buffer.alloc(size, 'ab') : randomBytes(size));
      return { file, size };
    });
    const entries: ZipEntry[] = files.map((source, i) => ({
      name: `top/f${i}`,
      source,
      compress: i === 1,
    }));
    entries.splice(2, 0, { name: 'top/mid.txt', source: { buffer: Buffer.from('between') }, compress: true });
    const mine = path.join(dir, 'mine.zip');
    const other = path.join(dir, 'other.zip');
    await writeZip(mine, entries, manifest, opts);
    await writeZip(other, entries, manifest, opts);
    expect(fs.readFileSync(mine).equals(fs.readFileSync(other))).toBe(true);
    expect(spawnSync('unzip', ['-tq', mine]).status).toBe(0);
  });

  it('fails with the file named when a file is not the size it was listed with, and never replaces the output', async () => {
    const file = path.join(dir, 'grew.txt');
    fs.writeFileSync(file, 'longer than listed');
    for (const compress of [true, false]) {
      const out = path.join(dir, `out-${compress}.zip`);
      const entries: ZipEntry[] = [
        { name: 'top/a.png', source: { file, size: 18 }, compress: false },
        { name: 'top/grew.txt', source: { file, size: 4 }, compress },
        { name: 'top/z.txt', source: { buffer: Buffer.from('after') }, compress: true },
      ];
      await expect(writeZip(out, entries, manifest, opts)).rejects.toThrow(
        /grew\.txt changed while it was zipped: 4 bytes expected, 5 read/,
      );
      fs.writeFileSync(file, 'shrunk');
      await expect(writeZip(`${out}2`, entries, manifest, opts)).rejects.toThrow(
        /grew\.txt changed while it was zipped/,
      );
      fs.writeFileSync(file, 'longer than listed');
    }
    const out = path.join(dir, 'out-true.zip');
    await expect(
      writeZip(
        out,
        [{ name: 'top/missing', source: { file: path.join(dir, 'nope'), size: 1 }, compress: false }],
        manifest,
        opts,
      ),
    ).rejects.toThrow(/EEXIST/);
  });

  it('takes sources known later: each awaited at its turn, a larger file deflated as soon as it is known', async () => {
    const log = Buffer.from('{"line":"later"}\n'.repeat(20_000));
    const file = path.join(dir, 'later.jsonl');
    let known: (source: { file: string; size: number }) => void = () => undefined;
    const laterFile = new Promise<{ file: string; size: number }>((resolve) => {
      known = resolve;
    });
    const entries: ZipEntry[] = [
      { name: 'top/a.txt', source: { buffer: Buffer.from('first') }, compress: true },
      {
        name: 'top/b.json',
        source: laterFile.then(() => ({ buffer: Buffer.from('{"b":1}') })),
        compress: true,
      },
      { name: 'top/c.jsonl', source: laterFile, compress: true },
    ];
    const out = path.join(dir, 'later.zip');
    const writing = writeZip(out, entries, manifest, opts);
    await new Promise((resolve) => setTimeout(resolve, 20));
    fs.writeFileSync(file, log); // made while the zip waits for it
    known({ file, size: log.length });
    const res = await writing;
    const back = await readBack(out);
    expect(back.get('top/b.json')!.data.toString()).toBe('{"b":1}');
    expect(back.get('top/c.jsonl')!.data.equals(log)).toBe(true);
    expect(res.hashes.get('top/c.jsonl')).toEqual({ bytes: log.length, sha256: sha256(log) });
    const rejected = Promise.reject(new Error('the plan failed'));
    rejected.catch(() => undefined); // its owner marks it handled, as the bundle does
    const failed = [{ name: 'top/x', source: rejected, compress: true }];
    await expect(writeZip(path.join(dir, 'failed.zip'), failed, manifest, opts)).rejects.toThrow(
      'the plan failed',
    );
  });

  it('fails the same way when a larger text file, deflated ahead of its turn, changed size', async () => {
    const file = path.join(dir, 'log.jsonl');
    fs.writeFileSync(file, 'x'.repeat(200_000));
    const entries: ZipEntry[] = [
      { name: 'top/a.png', source: { buffer: Buffer.alloc(10) }, compress: false },
      { name: 'top/log.jsonl', source: { file, size: 150_000 }, compress: true },
    ];
    await expect(writeZip(path.join(dir, 'out.zip'), entries, manifest, opts)).rejects.toThrow(
      /log\.jsonl changed while it was zipped: 150000 bytes expected/,
    );
  });

  it('fails cleanly when a listed file cannot be read', async () => {
    const out = path.join(dir, 'out.zip');
    const missing = path.join(dir, 'vanished.png');
    await expect(
      writeZip(
        out,
        [{ name: 'top/vanished.png', source: { file: missing, size: 10 }, compress: false }],
        manifest,
        opts,
      ),
    ).rejects.toThrow(/ENOENT.*vanished\.png/);
  });
});

describe('writeZip', () => {
  it('adds the zip64 end records past 65,534 entries, which unzip and yauzl read', async () => {
    const entries: ZipEntry[] = [];
    for (let i = 0; i < 65_600; i++)
      entries.push({ name: `top/e${i}`, source: { buffer: Buffer.from(`${i}`) }, compress: false });
    const file = path.join(dir, 'many.zip');
    await writeZip(file, entries, manifest, { mtime: MTIME });
    const bytes = fs.readFileSync(file);
    expect(bytes.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true); // zip64 end record
    const unzip = spawnSync('unzip', ['-tq', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
    expect(unzip.status, unzip.stderr).toBe(0);
    const zip = await openZip(file);
    expect(zip.entryCount).toBe(65_601);
    let last = '';
    for await (const entry of zipEntries(zip)) last = entryName(entry);
    zip.close();
    expect(last).toBe('top/manifest.json');
  }, 60_000);
});

describe('dosDateTime', () => {
  it('holds the UTC wall-clock time at two-second resolution, and 1980-01-01 for dates DOS cannot hold', () => {
    const { date, time } = dosDateTime(new Date(Date.UTC(2026, 11, 2, 23, 59, 59)));
    expect({ y: (date >> 9) + 1980, m: (date >> 5) & 15, d: date & 31 }).toEqual({ y: 2026, m: 12, d: 2 });
    expect({ h: time >> 11, min: (time >> 5) & 63, s: (time & 31) * 2 }).toEqual({ h: 23, min: 59, s: 58 });
    expect(dosDateTime(new Date(Date.UTC(1970, 0, 1)))).toEqual({ date: (1 << 5) | 1, time: 0 });
    expect(dosDateTime(new Date(Number.NaN))).toEqual({ date: (1 << 5) | 1, time: 0 });
  });
});
