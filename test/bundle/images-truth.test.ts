/**
 * A bundle tells the truth about its images when the session dir is not as the log recorded it (a copy from
 * another machine): a row whose file is missing, a file cut short, two files swapped, a PNG its row describes
 * that is not whole. Each is left out with its reason in `dropped` and a warning, failure-summary.md and
 * bug-report.md name it instead of linking it, and the zip verifies. Real PNGs (sharp), real sessions
 * recorded by the recorder, zips read back; the built CLI for `--json`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import Database from 'better-sqlite3';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { type BundleResult, buildBundle, bundleResultJson } from '../../src/bundle/build.js';
import { LEFT_OUT_WORDS } from '../../src/bundle/documents.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { renderReportHtml } from '../../src/report/html/render-html.js';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { recordCaptureRun } from '../support/capture-run.js';
import { noiseRaw } from '../support/images.js';
import { BUNDLE_CLI, ROOT } from '../support/programs.js';
import { bundleValidators, readZip, sha256, tempDir, unzipTest, type ZipEntryRead } from './helpers.js';

const validators = bundleValidators();
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
const validateResult = ajv.compile(
  JSON.parse(fs.readFileSync(path.join(ROOT, 'schema', 'bundle-result.schema.json'), 'utf8')),
);

/** An uncompressed PNG of noise: every one of the same size has the same byte length (so two can be swapped unseen by size). */
function noisePng(seed: number, width = 48, height = 32): Promise<Buffer> {
  return sharp(noiseRaw(width, height, seed), { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

interface Recorded {
  dir: string;
  sessionId: string;
  /** The capture files in call order, relative to the session dir, with the bytes sent and the call's seq. */
  captures: Array<{ path: string; png: Buffer; seq: number }>;
}

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

/** A session of three captures (the last one the last image the documents link), recorded by the recorder. */
async function recordCaptures(): Promise<Recorded> {
  const root = tempDir();
  roots.push(root);
  const sessionsDir = path.join(root, 'sessions');
  const pngs = [await noisePng(1), await noisePng(2), await noisePng(3, 40, 30)];
  const { sessionId, dir } = await recordCaptureRun(sessionsDir, pngs);
  const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true });
  const rows = db
    .prepare(
      'SELECT path, sha256, MIN(call_seq) AS seq FROM artifacts WHERE path IS NOT NULL GROUP BY path ORDER BY MIN(id)',
    )
    .all() as Array<{
    path: string;
    sha256: string;
    seq: number;
  }>;
  db.close();
  const captures = rows.map((r) => ({
    path: r.path,
    seq: r.seq,
    png: pngs.find((p) => sha256(p) === r.sha256)!,
  }));
  expect(captures.map((c) => c.png !== undefined)).toEqual([true, true, true]);
  return { dir, sessionId, captures };
}

async function bundled(dir: string): Promise<{ res: BundleResult; files: Map<string, ZipEntryRead> }> {
  const res = await buildBundle(dir, { output: path.join(path.dirname(path.dirname(dir)), 'out.zip') });
  const top = path.basename(dir);
  const files = new Map((await readZip(res.bundle)).map((e) => [e.name.slice(top.length + 1), e]));
  return { res, files };
}

function text(files: Map<string, ZipEntryRead>, name: string): string {
  return files.get(name)!.data.toString('utf8');
}

/** What every bundle of a damaged session dir must hold to: it verifies, its JSON follows the schemas. */
async function expectTruthful(res: BundleResult, files: Map<string, ZipEntryRead>): Promise<void> {
  expect((await verifyBundle(res.bundle)).problems).toEqual([]);
  unzipTest(res.bundle);
  const manifest = JSON.parse(text(files, 'manifest.json'));
  expect(validators.manifest(manifest)).toEqual([]);
  expect(manifest.dropped).toEqual(res.dropped);
  expect(validators.session(JSON.parse(text(files, 'session.json')))).toEqual([]);
  expect(validateResult(bundleResultJson(res)), JSON.stringify(validateResult.errors)).toBe(true);
  const inZip = new Set([...files.keys()].filter((n) => n.startsWith('artifacts/')));
  expect(JSON.parse(text(files, 'session.json')).artifacts.sort()).toEqual([...inZip].sort());
  // No document links an image the zip lacks.
  for (const doc of ['failure-summary.md', 'bug-report.md']) {
    for (const m of text(files, doc).matchAll(/\]\((artifacts\/[^)]+)\)/g))
      expect(inZip, doc).toContain(m[1]);
  }
  // Nor does report.html: it names each one with why, in the words of the documents.
  const html = text(files, 'report.html');
  const links = [...html.matchAll(/href="(artifacts\/[^"]+)"/g)].map((m) => decodeURIComponent(m[1]!));
  for (const link of links) expect(inZip, 'report.html').toContain(link);
  for (const d of res.dropped) {
    if (d.reason === 'no-row' || d.reason === 'no-db' || d.reason === 'unreadable') continue;
    expect(html).toContain(`${path.basename(d.path)} (`);
    expect(html).toContain(`not in this bundle: ${LEFT_OUT_WORDS[d.reason]}`);
  }
}

/** The timeline row of call `seq` in report.html. */
function reportRow(html: string, seq: number): string {
  const at = html.indexOf(`id="c${seq}"`);
  expect(at).toBeGreaterThan(0);
  return html.slice(at, html.indexOf('</details>', at));
}

/** The row's thumbnails (inline WebP) and its links to image files. */
function rowImages(row: string): { thumbs: number; links: string[] } {
  return {
    thumbs: [...row.matchAll(/<img src="data:image\/webp/g)].length,
    links: [...row.matchAll(/href="(artifacts\/[^"]+)"/g)].map((m) => m[1]!),
  };
}

describe('a bundle checks each image against the log rows that name it', () => {
  it('lists a row whose file is missing as dropped (missing), warns, and names it in the documents', async () => {
    const rec = await recordCaptures();
    const gone = rec.captures[2]!;
    fs.rmSync(path.join(rec.dir, gone.path));
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual([
      {
        path: gone.path,
        bytes: gone.png.length,
        reason: 'missing',
        detail: expect.stringMatching(
          /^the log names it \(call #\d+\) but the session dir has no such file$/,
        ),
      },
    ]);
    expect(res.warnings).toEqual([
      `1 image is named by the log but not in the session dir, left out (dropped: missing): ${gone.path}`,
    ]);
    expect([...files.keys()].filter((n) => n.startsWith('artifacts/')).sort()).toEqual(
      rec.captures
        .slice(0, 2)
        .map((c) => c.path)
        .sort(),
    );
    const summary = text(files, 'failure-summary.md');
    expect(summary).toContain('(the image is not in this bundle: the session dir has no such file)');
    expect(summary).toContain(`\`${gone.path}\``);
    const report = text(files, 'bug-report.md');
    expect(report).toContain(`\`${gone.path}\` (not in the bundle: the session dir has no such file)`);
    expect(report).toContain('1 image the log names is not in the attached bundle');
    expect(report).not.toContain('The images are in the attached bundle');
    await expectTruthful(res, files);
  });

  it('without artifacts/ at all: every image is missing and bug-report.md does not promise them', async () => {
    const rec = await recordCaptures();
    fs.rmSync(path.join(rec.dir, 'artifacts'), { recursive: true });
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped.map((d) => [d.path, d.reason])).toEqual(
      rec.captures.map((c) => [c.path, 'missing']).sort(),
    );
    expect(res.warnings).toEqual([
      expect.stringMatching(/^3 images are named by the log but not in the session dir/),
    ]);
    expect([...files.keys()].some((n) => n.startsWith('artifacts/'))).toBe(false);
    const report = text(files, 'bug-report.md');
    expect(report).toContain('3 images the log names are not in the attached bundle');
    expect(report).not.toContain('`artifacts/` (');
    await expectTruthful(res, files);
  });

  it('with more images missing than in the zip, bug-report.md still names artifacts/ among the files', async () => {
    const rec = await recordCaptures();
    for (const c of rec.captures.slice(1)) fs.rmSync(path.join(rec.dir, c.path));
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped.map((d) => d.reason)).toEqual(['missing', 'missing']);
    expect([...files.keys()].filter((n) => n.startsWith('artifacts/'))).toEqual([rec.captures[0]!.path]);
    const report = text(files, 'bug-report.md');
    expect(report).toContain('`artifacts/` (the captured images)');
    expect(report).toContain('2 images the log names are not in the attached bundle');
    await expectTruthful(res, files);
  });

  it('leaves out files cut short (another size than the row): the zip verifies', async () => {
    const rec = await recordCaptures();
    for (const c of rec.captures) fs.truncateSync(path.join(rec.dir, c.path), 500);
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual(
      rec.captures
        .map((c) => ({
          path: c.path,
          bytes: 500,
          reason: 'mismatch',
          detail: `500 bytes, but the log recorded ${c.png.length}: a damaged or replaced copy, not the image the log describes`,
        }))
        .sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    expect(res.warnings).toEqual([
      expect.stringMatching(
        /^3 images are not the files the log recorded \(another size or sha256\), left out/,
      ),
    ]);
    await expectTruthful(res, files);
  });

  it('leaves out two files of one size swapped (found by the sha256 the zip writer takes anyway)', async () => {
    const rec = await recordCaptures();
    const [a, b, kept] = rec.captures as [
      Recorded['captures'][0],
      Recorded['captures'][0],
      Recorded['captures'][0],
    ];
    expect(a.png.length).toBe(b.png.length); // nothing but the sha256 tells them apart
    fs.writeFileSync(path.join(rec.dir, a.path), b.png);
    fs.writeFileSync(path.join(rec.dir, b.path), a.png);
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual(
      [
        { c: a, now: b.png },
        { c: b, now: a.png },
      ]
        .map(({ c, now }) => ({
          path: c.path,
          bytes: c.png.length,
          reason: 'mismatch',
          detail: `sha256 ${sha256(now)}, but the log recorded ${sha256(c.png)}: a replaced copy, not the image the log describes`,
        }))
        .sort((x, y) => (x.path < y.path ? -1 : 1)),
    );
    expect(res.warnings).toHaveLength(1);
    expect([...files.keys()].filter((n) => n.startsWith('artifacts/'))).toEqual([kept.path]);
    expect(files.get(kept.path)!.data.equals(kept.png)).toBe(true);
    // report.html in the zip: the swapped ones' rows show no thumbnail and no link, and say why; the kept one's
    // row is as ever.
    const html = text(files, 'report.html');
    for (const c of [a, b]) {
      const row = reportRow(html, c.seq);
      expect(rowImages(row)).toEqual({ thumbs: 0, links: [] });
      expect(row).toContain(`${path.basename(c.path)} (48x32 `);
      expect(row).toContain(
        'not in this bundle: the file is not the one the log recorded (another size or sha256)',
      );
    }
    expect(rowImages(reportRow(html, kept.seq))).toEqual({ thumbs: 1, links: [kept.path] });
    // The player's stage, where each would be shown, says so too.
    const player = JSON.parse(
      html.slice(
        html.indexOf('<pre id="p-data" hidden>') + 24,
        html.indexOf('</pre>', html.indexOf('<pre id="p-data"')),
      ),
    );
    const frames = player.f as Array<{ name: string; i: number; note?: string }>;
    expect(frames.map((f) => [f.name, f.i, f.note])).toEqual(
      rec.captures.map((c) =>
        c === kept
          ? [path.basename(c.path), 0, undefined]
          : [
              path.basename(c.path),
              -1,
              'not in this bundle: the file is not the one the log recorded (another size or sha256)',
            ],
      ),
    );
    expect(html).toContain(
      '2 images the log names are not in this bundle: where each would be, this page says why instead of linking it',
    );
    await expectTruthful(res, files);
  });

  it("report.html beside the session still links every image: the zip's names those it left out", async () => {
    const rec = await recordCaptures();
    const [a, b] = rec.captures as [Recorded['captures'][0], Recorded['captures'][0]];
    fs.writeFileSync(path.join(rec.dir, a.path), b.png);
    fs.writeFileSync(path.join(rec.dir, b.path), a.png);
    const res = await buildBundle(rec.dir, {
      output: path.join(path.dirname(path.dirname(rec.dir)), 'out.zip'),
      reportHtmlInSessionDir: true,
    });
    expect(res.dropped.map((d) => d.reason)).toEqual(['mismatch', 'mismatch']);
    const beside = fs.readFileSync(res.reportHtml!, 'utf8');
    const reader = SessionReader.open(rec.dir);
    try {
      expect(beside).toBe(await renderReportHtml(reader, await buildSummary(reader)));
    } finally {
      reader.close();
    }
    for (const c of rec.captures)
      expect(rowImages(reportRow(beside, c.seq))).toEqual({ thumbs: 1, links: [c.path] });
    const inZip = (await readZip(res.bundle))
      .find((e) => e.name.endsWith('/report.html'))!
      .data.toString('utf8');
    expect(rowImages(reportRow(inZip, a.seq))).toEqual({ thumbs: 0, links: [] });
  });

  it('report.html in the zip names an image left out to fit --max-bytes instead of linking it, and keeps its thumbnail', async () => {
    const rec = await recordCaptures();
    const sizes = rec.captures.reduce((n, c) => n + c.png.length, 0);
    const whole = await bundled(rec.dir);
    // Room for all but about one image: the oldest (droppable) goes.
    const res = await buildBundle(rec.dir, {
      output: path.join(path.dirname(path.dirname(rec.dir)), 'capped.zip'),
      maxBytes: whole.res.bytes - Math.floor(sizes / 6),
    });
    const dropped = res.dropped.filter((d) => d.reason === 'max-bytes');
    expect(dropped.length).toBeGreaterThan(0);
    const top = path.basename(rec.dir);
    const files = new Map((await readZip(res.bundle)).map((e) => [e.name.slice(top.length + 1), e]));
    const html = text(files, 'report.html');
    for (const d of dropped) {
      const c = rec.captures.find((x) => x.path === d.path)!;
      const row = reportRow(html, c.seq);
      // The capture is the log's, only not carried: its thumbnail (inline) stays, its link goes.
      expect(rowImages(reportRow(text(whole.files, 'report.html'), c.seq))).toEqual({
        thumbs: 1,
        links: [c.path],
      });
      expect(rowImages(row)).toEqual({ thumbs: 1, links: [] });
      expect(row).toContain('not in this bundle: left out to fit --max-bytes');
    }
    await expectTruthful(res, files);
  });

  it('leaves out a .png its row describes that is not a whole PNG (verify would fail the zip)', async () => {
    const rec = await recordCaptures();
    const cut = rec.captures[2]!;
    const file = path.join(rec.dir, cut.path);
    fs.truncateSync(file, 500);
    // A log that recorded the short file itself (another tool's writer): size and sha256 agree with the row.
    const db = new Database(path.join(rec.dir, 'session.sqlite'));
    db.prepare('UPDATE artifacts SET bytes = 500, sha256 = ? WHERE path = ?').run(
      sha256(fs.readFileSync(file)),
      cut.path,
    );
    db.close();
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual([
      {
        path: cut.path,
        bytes: 500,
        reason: 'damaged',
        detail: 'not a whole PNG (500 bytes; no PNG signature or IEND end)',
      },
    ]);
    expect(res.warnings).toEqual([`1 image is not a whole PNG, left out (dropped: damaged): ${cut.path}`]);
    expect(text(files, 'failure-summary.md')).toContain(
      '(the image is not in this bundle: the file is not a whole PNG)',
    );
    // The last image, shown at the top of report.html: named there with why, no thumbnail, no link.
    const html = text(files, 'report.html');
    expect(html).toContain(`${path.basename(cut.path)}: not in this bundle: the file is not a whole PNG`);
    expect(rowImages(reportRow(html, cut.seq))).toEqual({ thumbs: 0, links: [] });
    await expectTruthful(res, files);
  });

  it('a capture replaced by a symbolic link is dropped once (unreadable), not also as missing', async () => {
    const rec = await recordCaptures();
    const link = rec.captures[0]!;
    const file = path.join(rec.dir, link.path);
    fs.renameSync(file, path.join(path.dirname(path.dirname(rec.dir)), 'elsewhere.png'));
    fs.symlinkSync(path.join(path.dirname(path.dirname(rec.dir)), 'elsewhere.png'), file);
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual([
      { path: link.path, bytes: 0, reason: 'unreadable', detail: 'symbolic link' },
    ]);
    expect(res.warnings).toEqual([]);
    await expectTruthful(res, files);
  });

  it('leaves out files named as Windows would not keep them, and all but one of names that are one file there', async () => {
    const rec = await recordCaptures();
    // A session dir from a Linux machine can hold these; a zip holding them fails verify (src/bundle/README.md).
    const renamed = ['artifacts/nul.png', 'artifacts/Shot.png', 'artifacts/shot.png'];
    const db = new Database(path.join(rec.dir, 'session.sqlite'));
    for (const [i, c] of rec.captures.entries()) {
      const to = renamed[i]!;
      fs.renameSync(path.join(rec.dir, c.path), path.join(rec.dir, to));
      db.prepare('UPDATE artifacts SET path = ? WHERE path = ?').run(to, c.path);
      db.prepare(
        'UPDATE calls SET envelope = replace(envelope, ?, ?), response = replace(response, ?, ?)',
      ).run(c.path, to, c.path, to);
    }
    db.close();
    const { res, files } = await bundled(rec.dir);
    expect(res.dropped).toEqual([
      {
        path: 'artifacts/nul.png',
        bytes: rec.captures[0]!.png.length,
        reason: 'unreadable',
        detail: expect.stringMatching(/^file name not safe in a zip: is a Windows device name \(/),
      },
      {
        path: 'artifacts/shot.png',
        bytes: rec.captures[2]!.png.length,
        reason: 'unreadable',
        detail: 'file name not safe in a zip: the same file as artifacts/Shot.png on Windows and macOS',
      },
    ]);
    expect([...files.keys()].filter((n) => n.startsWith('artifacts/'))).toEqual(['artifacts/Shot.png']);
    expect(files.get('artifacts/Shot.png')!.data.equals(rec.captures[1]!.png)).toBe(true);
    await expectTruthful(res, files);
  });

  it('an untouched session: nothing dropped, no warning, every image in the zip', async () => {
    const rec = await recordCaptures();
    const { res, files } = await bundled(rec.dir);
    expect([res.dropped, res.warnings]).toEqual([[], []]);
    for (const c of rec.captures) expect(files.get(c.path)!.data.equals(c.png)).toBe(true);
    expect(text(files, 'bug-report.md')).toContain('The images are in the attached bundle');
    await expectTruthful(res, files);
  });

  it('mcec-bundle <id> --json (built CLI): the dropped rows and the warning, exit 0, a zip that verifies', async () => {
    const rec = await recordCaptures();
    const gone = rec.captures[0]!;
    fs.rmSync(path.join(rec.dir, gone.path));
    const out = path.join(path.dirname(path.dirname(rec.dir)), 'cli.zip');
    const run = spawnSync(
      process.execPath,
      [BUNDLE_CLI, rec.sessionId, '--sessions', path.dirname(rec.dir), '-o', out, '--json'],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout);
    expect(validateResult(json), JSON.stringify(validateResult.errors)).toBe(true);
    expect(json.dropped.map((d: { path: string; reason: string }) => [d.path, d.reason])).toEqual([
      [gone.path, 'missing'],
    ]);
    expect(json.warnings).toHaveLength(1);
    expect(run.stderr).toContain(`mcec-bundle: warning: ${json.warnings[0]}`);
    const verify = spawnSync(process.execPath, [BUNDLE_CLI, 'verify', out], { encoding: 'utf8' });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  });
});

describe('run.gif shows only images checked to be the ones the log recorded', () => {
  /** run.gif's frames, each as its raw pixels. */
  async function gifFrames(gif: Buffer): Promise<Buffer[]> {
    const { data, info } = await sharp(gif, { animated: true }).raw().toBuffer({ resolveWithObject: true });
    const page = info.width * info.pageHeight! * info.channels;
    return Array.from({ length: info.pages! }, (_, i) => data.subarray(i * page, (i + 1) * page));
  }

  async function runGif(dir: string, options: { images?: boolean } = {}) {
    const res = await buildBundle(dir, {
      output: path.join(path.dirname(path.dirname(dir)), 'gif.zip'),
      ...options,
    });
    const top = path.basename(dir);
    const files = new Map((await readZip(res.bundle)).map((e) => [e.name.slice(top.length + 1), e]));
    const gif = files.get('run.gif')!.data;
    expect(JSON.parse(text(files, 'manifest.json')).runGif.frames).toBe((await gifFrames(gif)).length);
    return { res, files, gif, frames: await gifFrames(gif) };
  }

  it('a same-size replacement gets no frame (as a missing file), found by the zip writer; the rest as ever', async () => {
    const rec = await recordCaptures();
    const untouched = await runGif(rec.dir);
    expect(untouched.frames).toHaveLength(3);
    const replaced = rec.captures[1]!;
    const other = await noisePng(9);
    expect(other.length).toBe(replaced.png.length); // a valid PNG of the same size: only the sha256 tells
    fs.writeFileSync(path.join(rec.dir, replaced.path), other);
    const after = await runGif(rec.dir);
    expect(after.res.dropped.map((d) => [d.path, d.reason])).toEqual([[replaced.path, 'mismatch']]);
    expect(after.frames).toEqual([untouched.frames[0], untouched.frames[2]]);
    expect(text(after.files, 'bug-report.md')).toContain('run.gif');
    await expectTruthful(after.res, after.files);
    // The very GIF a session dir without that file gives.
    fs.rmSync(path.join(rec.dir, replaced.path));
    expect((await runGif(rec.dir)).gif.equals(after.gif)).toBe(true);
  });

  it('with --no-images (no image zipped, so none hashed by the zip writer) it checks the images it shows itself', async () => {
    const rec = await recordCaptures();
    const untouched = await runGif(rec.dir, { images: false });
    expect(untouched.frames).toHaveLength(3);
    const replaced = rec.captures[0]!;
    fs.writeFileSync(path.join(rec.dir, replaced.path), await noisePng(9));
    const after = await runGif(rec.dir, { images: false });
    expect(after.frames).toEqual([untouched.frames[1], untouched.frames[2]]);
    await expectTruthful(after.res, after.files);
    // report.html keeps the thumbnails of captures it only did not carry, and links none.
    const html = text(after.files, 'report.html');
    for (const c of rec.captures.slice(1))
      expect(rowImages(reportRow(html, c.seq))).toEqual({ thumbs: 1, links: [] });
  });
});
