// Session and artifact names are UTC: run this suite in a zone far from it.
process.env.TZ = 'Pacific/Chatham';

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THUMBNAIL_WIDTHS, thumbnailFile } from '../../src/artifacts/thumbnail.js';
import { createRecorder } from '../../src/record/index.js';
import { renderReportHtml } from '../../src/report/html/render-html.js';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { readZip } from '../bundle/helpers.js';
import { noisyPng } from '../support/images.js';
import { removeDir, tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist/cli/mcec-bundle.js');
const NO_SHARP = path.join(ROOT, 'test/record/fixtures/no-sharp.mjs');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A capture as MCEC sends it over MCP: the image block, then the envelope (same base64) as text. */
function captureResult(png: Buffer, width: number, height: number) {
  const base64 = png.toString('base64');
  const envelope = {
    ok: true,
    sessionId: 'a1b2c3d4e5f6',
    result: {
      handle: 65552,
      width,
      height,
      encoding: 'png',
      bytes: png.length,
      base64,
      blankCheck: { blank: false, dominantFraction: 0.4, dominantIsDark: false },
    },
  };
  return {
    content: [
      { type: 'image', data: base64, mimeType: 'image/png' },
      { type: 'text', text: JSON.stringify(envelope) },
    ],
    isError: false,
  };
}

/** A PNG whose header and chunks are whole but whose pixel data is garbage: kept as evidence, not decodable. */
async function corruptPng(): Promise<Buffer> {
  const png = Buffer.from(await noisyPng(320, 240, 99));
  const idat = png.indexOf('IDAT');
  png.fill(0x5a, idat + 40, idat + 4000);
  return png;
}

const FIND = {
  content: [
    { type: 'text', text: JSON.stringify({ ok: true, sessionId: 'a1b2c3d4e5f6', result: { found: 1 } }) },
  ],
  isError: false,
};

/** Record captures of `pngs` (and a find between them) through the real recorder; returns the session dir. */
async function record(sessionsDir: string, pngs: Buffer[], options: { thumbnails?: boolean } = {}) {
  const recorder = createRecorder({ sessionsDir, scenario: 'thumbnails', stderr: () => {}, ...options });
  const outputs = [
    ...pngs.map((png) => captureResult(png, 320, 240)),
    FIND,
    captureResult(pngs[0]!, 320, 240),
  ];
  const dispatch = recorder.wrap(
    async (_tool: string, args: Record<string, unknown>) => outputs[args.i as number],
  );
  const got: unknown[] = [];
  for (let i = 0; i < outputs.length; i++) {
    got.push(await dispatch(i === pngs.length ? 'find' : 'capture', { sessionId: 'a1b2c3d4e5f6', i }));
  }
  await recorder.close();
  const dirName = fs.readdirSync(sessionsDir).find((d) => d.endsWith('-a1b2c3d4e5f6'))!;
  return { dir: path.join(sessionsDir, dirName), got, outputs };
}

async function reportOf(dir: string): Promise<string> {
  const reader = SessionReader.open(dir);
  try {
    return await renderReportHtml(reader, await buildSummary(reader));
  } finally {
    reader.close();
  }
}

function bundleWithoutSharp(sessionsDir: string, out: string, extra: string[] = ['--no-gif']) {
  return spawnSync(
    process.execPath,
    ['--import', NO_SHARP, CLI, 'a1b2c3d4e5f6', '--sessions', sessionsDir, '-o', out, ...extra],
    { encoding: 'utf8', cwd: ROOT, timeout: 60_000 },
  );
}

describe('thumbnails made at record time', () => {
  let root: string;
  let pngs: Buffer[];

  beforeAll(async () => {
    root = tempDir();
    pngs = await Promise.all([1, 2, 3].map((seed) => noisyPng(320, 240, seed)));
  });
  afterAll(() => removeDir(root));

  it('are kept beside the artifacts by sha256 at every width, the agent getting its values unchanged', async () => {
    const { dir, got, outputs } = await record(path.join(root, 'a'), pngs);
    expect(got).toEqual(outputs);
    for (const png of pngs) {
      for (const w of THUMBNAIL_WIDTHS) {
        const meta = await sharp(fs.readFileSync(thumbnailFile(dir, sha(png), w))).metadata();
        expect({ format: meta.format, width: meta.width }).toEqual({ format: 'webp', width: w });
      }
    }
    // Three images, three widths: the repeated capture made no second set; no temp file is left.
    expect(fs.readdirSync(path.join(dir, 'thumbnails')).sort()).toHaveLength(9);
  });

  it('are reused by report.html, which is the same page as with thumbnails made on demand', async () => {
    const { dir } = await record(path.join(root, 'b'), pngs);
    const withKept = await reportOf(dir);
    fs.rmSync(path.join(dir, 'thumbnails'), { recursive: true });
    const onDemand = await reportOf(dir);
    expect(onDemand).toBe(withKept);
    expect(withKept.split('src="data:image/webp;base64,').length - 1).toBeGreaterThanOrEqual(3);
  });

  it('let a bundle be built without importing sharp (run.gif aside), and the bundle holds no thumbnail file', async () => {
    const sessionsDir = path.join(root, 'c');
    const { dir } = await record(sessionsDir, pngs);
    const out = path.join(root, 'c-out.zip');
    const res = bundleWithoutSharp(sessionsDir, out);
    expect(res.status).toBe(0);
    expect(res.stderr).not.toContain('sharp');
    const entries = await readZip(out);
    const names = entries.map((e) => e.name);
    expect(names.filter((n) => n.includes('/thumbs/') || n.endsWith('.webp'))).toEqual([]);
    expect(names.filter((n) => n.endsWith('.png'))).toHaveLength(3);
    const page = entries.find((e) => e.name.endsWith('/report.html'))!.data.toString('utf8');
    expect(page.split('src="data:image/webp;base64,').length - 1).toBeGreaterThanOrEqual(3);
    expect(page).not.toContain('not decodable');
    // run.gif is drawn with sharp by design: without it the bundle is still made, and says the GIF is not.
    fs.rmSync(out);
    const withGif = bundleWithoutSharp(sessionsDir, out, []);
    expect(withGif.status).toBe(0);
    expect(withGif.stderr).toMatch(/run\.gif was not/);
    expect((await readZip(out)).some((e) => e.name.endsWith('/report.html'))).toBe(true);
    // The hook really bites: without kept thumbnails the page needs sharp, which cannot be imported here.
    fs.rmSync(path.join(dir, 'thumbnails'), { recursive: true });
    fs.rmSync(out);
    expect(bundleWithoutSharp(sessionsDir, out).status).toBe(0);
    const without = (await readZip(out)).find((e) => e.name.endsWith('/report.html'))!.data.toString('utf8');
    expect(without).toContain('not decodable: sharp was imported');
  });

  it("never break the agent's call nor lose the image when one cannot be decoded", async () => {
    const bad = await corruptPng();
    const { dir, got, outputs } = await record(path.join(root, 'd'), [bad, pngs[1]!]);
    expect(got).toEqual(outputs);
    const reader = SessionReader.open(dir);
    const rows = reader.artifacts().filter((a) => a.sha256 === sha(bad));
    reader.close();
    expect(rows.length).toBeGreaterThan(0);
    expect(fs.readFileSync(path.join(dir, rows[0]!.path!)).equals(bad)).toBe(true);
    expect(fs.existsSync(thumbnailFile(dir, sha(bad), 320))).toBe(false);
    expect(fs.existsSync(thumbnailFile(dir, sha(pngs[1]!), 80))).toBe(true);
    // The report tries again on demand and says why there is no thumbnail.
    expect(await reportOf(dir)).toContain('not decodable');
  });

  it('are not made with thumbnails: false', async () => {
    const { dir } = await record(path.join(root, 'e'), pngs, { thumbnails: false });
    expect(fs.existsSync(path.join(dir, 'thumbnails'))).toBe(false);
    expect(fs.readdirSync(path.join(dir, 'artifacts')).filter((f) => f.endsWith('.png'))).toHaveLength(3);
  });
});
