// run.gif in the bug bundle: the demo's run as an animated GIF that bug-report.md shows inline (decoded here
// with sharp: frame count, size and delays within bounds), 60 frames chosen around the failure in a long
// session, none with --no-gif or with fewer than two images. The GIF is drawn from the player's model read on
// a pass of its own before the page's rows: that model is the one the page's rows pass collects.

import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { GifFileWriter, GifPalette, rgbOf } from '../../src/bundle/gif-writer.js';
import { writeRunGif } from '../../src/bundle/run-gif.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { createRecorder } from '../../src/index.js';
import { pageChunks, renderReportHtmlParts } from '../../src/report/html/render-html.js';
import { MAX_STEPS, type PlayerModel } from '../../src/report/player/model.js';
import { OVERLAY_COLOURS, overlaySvg } from '../../src/report/player/overlay-svg.js';
import { readPlayerModel } from '../../src/report/player/read-model.js';
import { summarizeCall } from '../../src/report/summarize-call.js';
import { buildSummary } from '../../src/report/summary.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { type DemoSession, useDemoSession } from '../support/demo-session.js';
import { calls, FixtureSession, makeSessionsDir, removeDir } from '../support/fixture-session.js';
import { bundleValidators, readZip, sha256, unzipTest, type ZipEntryRead } from './helpers.js';

const validators = bundleValidators();

function entriesOf(entries: ZipEntryRead[]): Map<string, Buffer> {
  return new Map(entries.map((e) => [e.name.slice(e.name.indexOf('/') + 1), e.data]));
}

/** A session through the simulator: `before` captures, a black one (the failure), `after` more, all distinct. */
async function recordCaptures(sessionsDir: string, before: number, after: number): Promise<string> {
  const sim = createSimulator({ sessionsRoot: path.join(sessionsDir, 'sim') });
  const recorder = createRecorder({ sessionsDir, scenario: 'captures', stderr: () => {} });
  const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  const sessionId = envelopeOf(await dispatch('session-start', {})).sessionId as string;
  // Each width makes another image (the same picture downscaled), so every capture is a frame.
  const capture = (maxWidth: number) =>
    dispatch('capture', { window: 'Untitled - Notepad', maxWidth, sessionId });
  for (let i = 0; i < before; i++) await capture(300 + i);
  await dispatch('capture', { window: 'Video Player', sessionId });
  for (let i = 0; i < after; i++) await capture(600 + i);
  await recorder.end(sessionId, { passed: false, reason: 'black player' });
  await recorder.flush();
  const dir = recorder.session(sessionId)!.dir;
  await recorder.close();
  return dir;
}

/** Two captures, then `finds` finds (each a step with its marks), the failing capture, and a few more finds. */
async function recordFinds(sessionsDir: string, finds: number): Promise<string> {
  const sim = createSimulator({ sessionsRoot: path.join(sessionsDir, 'sim') });
  const recorder = createRecorder({ sessionsDir, scenario: 'finds', stderr: () => {} });
  const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  const sessionId = envelopeOf(await dispatch('session-start', {})).sessionId as string;
  const find = (i: number) =>
    dispatch('find', {
      window: 'Untitled - Notepad',
      by: 'name',
      value: i % 7 ? 'Text Editor' : `item ${i}`,
      sessionId,
    });
  await dispatch('capture', { window: 'Untitled - Notepad', maxWidth: 300, sessionId });
  await dispatch('capture', { window: 'Untitled - Notepad', maxWidth: 320, sessionId });
  for (let i = 0; i < finds; i++) await find(i);
  await dispatch('capture', { window: 'Video Player', sessionId });
  for (let i = 0; i < 5; i++) await find(i);
  await recorder.end(sessionId, { passed: false, reason: 'black player' });
  await recorder.flush();
  const dir = recorder.session(sessionId)!.dir;
  await recorder.close();
  return dir;
}

/**
 * The page's own model (collected on its rows pass), the one read on a pass of its own, and whether the page
 * given the latter and the summary lines made on that pass (as the bundle does) is the same bytes.
 */
async function bothModels(dir: string) {
  const reader = SessionReader.open(dir);
  try {
    const summary = await buildSummary(reader);
    const collected = await renderReportHtmlParts(reader, summary, {}, { keepRows: true });
    const lines = new Map<number, string>();
    const read = readPlayerModel(reader, summary, lines);
    expect(lines.size).toBe(reader.callCount());
    const given = await renderReportHtmlParts(reader, summary, {}, { keepRows: true, player: read, lines });
    const bytes = (page: typeof given) => Buffer.concat([...pageChunks(page)]);
    return { collected: collected.player, read, samePage: bytes(collected).equals(bytes(given)) };
  } finally {
    reader.close();
  }
}

describe('run.gif', () => {
  let root: string;
  let demo: DemoSession;
  const demoSession = useDemoSession();

  beforeAll(() => {
    root = makeSessionsDir();
    demo = demoSession();
  });
  afterAll(() => removeDir(root));

  it("is in the demo's bundle, listed in the manifest and shown inline by bug-report.md", async () => {
    const files = entriesOf(await readZip(demo.bundle));
    const gif = files.get('run.gif');
    expect(gif).toBeDefined();
    expect(gif!.length).toBeLessThan(5_000_000);
    expect(gif!.subarray(0, 6).toString('latin1')).toBe('GIF89a');
    const meta = await sharp(gif!, { animated: true }).metadata();
    const manifest = JSON.parse(files.get('manifest.json')!.toString('utf8'));
    expect(validators.manifest(manifest)).toEqual([]);
    expect(manifest.options.gif).toBe(true);
    expect(manifest.runGif).toEqual({ frames: meta.pages, width: meta.width, height: meta.pageHeight });
    expect(manifest.files).toContainEqual({ path: 'run.gif', bytes: gif!.length, sha256: sha256(gif!) });
    // Every step of the demo: the two captures and the six calls drawn on them; the black capture last, held.
    expect(meta.pages).toBe(8);
    expect(meta.width).toBeGreaterThanOrEqual(400); // few frames: large ones (at most 800 px)
    expect(meta.width).toBeLessThanOrEqual(800);
    expect(meta.delay?.at(-1)).toBe(3000);
    // The last frame is the failing capture: framed in red (the top-left pixel), black inside.
    const last = await sharp(gif!, { page: 7 }).raw().toBuffer({ resolveWithObject: true });
    const px = (x: number, y: number) => [
      ...last.data.subarray((y * last.info.width + x) * last.info.channels).subarray(0, 3),
    ];
    expect(px(2, 200)).toEqual([0xcf, 0x22, 0x2e]); // the overlay's red, exact (the palette holds it)
    expect(px(400, 200)).toEqual([0, 0, 0]);
    const bug = files.get('bug-report.md')!.toString('utf8');
    expect(bug).toMatch(/^!\[The run, 8 frames: [^\]]*\]\(run\.gif\)$/m);
    expect(demo.verify.ok).toBe(true);
  });

  it("is drawn from the page's player: the model read on its own pass is the one the rows pass collects", async () => {
    const demoModels = await bothModels(demo.sessionDir);
    expect(demoModels.read).toEqual(demoModels.collected);
    expect(demoModels.samePage).toBe(true);
    // The demo draws clicks, finds and invokes: marks that depend on earlier calls (a find gives an invoke its box).
    expect(
      demoModels.read.steps.filter((s) => s.marks.some((m) => m.kind !== 'caption')).length,
    ).toBeGreaterThan(2);
    // More steps than the player keeps: the same ones kept, around the failure, on the same frames.
    const many = await bothModels(await recordFinds(path.join(root, 'finds'), MAX_STEPS + 50));
    expect(many.read.stepsOmitted).toBeGreaterThan(0);
    expect(many.read.steps.some((s) => s.failing)).toBe(true);
    expect(many.read).toEqual(many.collected);
    expect(many.samePage).toBe(true);
  }, 60_000);

  it("makes each call's summary line on the model's pass as from its whole row (dropped payload, failure, pending)", async () => {
    const f = FixtureSession.create(root, { status: 'ended' });
    f.call(calls.findSave());
    f.call({ tool: 'capture', payloadDropped: true });
    f.call(calls.ambiguousFind());
    f.call({ tool: 'wait-for', args: { name: 'Saved', timeoutMs: 5000 }, status: 'pending' });
    f.end();
    const reader = SessionReader.open(f.dir);
    try {
      const lines = new Map<number, string>();
      readPlayerModel(reader, await buildSummary(reader), lines);
      const rows = [...reader.calls()];
      expect([...lines.keys()]).toEqual(rows.map((r) => r.seq));
      for (const row of rows) expect(lines.get(row.seq)).toBe(summarizeCall(row));
      expect(lines.get(2)).toContain('[payload dropped]');
    } finally {
      reader.close();
    }
  });

  it('draws steps in a row on one image from one decode, the same bytes as a pipeline per step (8- and 16-bit PNGs)', async () => {
    const dir = path.join(root, 'shared');
    fs.mkdirSync(dir, { recursive: true });
    const pixels = Buffer.alloc(800 * 600 * 4);
    for (let i = 0; i < pixels.length; i += 4) {
      pixels.set([i % 251, (i >> 8) % 253, (i >> 4) % 241, 128 + ((i >> 6) % 128)], i);
    }
    const image = () => sharp(pixels, { raw: { width: 800, height: 600, channels: 4 } });
    await image().png().toFile(path.join(dir, 'a.png'));
    await image().removeAlpha().toColourspace('rgb16').png({ force: true }).toFile(path.join(dir, 'b.png')); // 16 bits
    await image().removeAlpha().negate().png().toFile(path.join(dir, 'c.png'));
    const frames = ['a.png', 'b.png', 'c.png'].map((key, i) => ({
      key,
      sha256: null,
      seq: i + 1,
      kind: 'image' as const,
      width: 800,
      height: 600,
      window: null,
      handle: null,
      geometry: { screen: null, image: { width: 800, height: 600 } },
    }));
    const steps = [0, 0, 0, 1, 1, 1, 2, 2].map((frame, i) => ({
      seq: i + 1,
      tool: 'find',
      status: 'ok',
      frame,
      at: i * 700,
      failing: i === 7,
      title: `#${i + 1} find`,
      marks: [
        {
          kind: 'box' as const,
          x: 10 + 20 * i,
          y: 20,
          width: 200,
          height: 100,
          label: `box ${i}`,
          tone: 'found' as const,
        },
        { kind: 'caption' as const, text: `caption ${i}` },
      ],
    }));
    const model: PlayerModel = { frames, steps, stepsOmitted: 0 };
    const made = await writeRunGif(dir, model, path.join(dir, 'run.gif'));
    expect(made).toMatchObject({ frames: 8, width: 707, height: 530 });
    // Each step resized and drawn in one pipeline, as run.gif was before it shared the decodes.
    const reference = path.join(dir, 'reference.gif');
    const palette = new GifPalette([...OVERLAY_COLOURS.map(rgbOf), [31, 35, 40]]);
    const gif = await GifFileWriter.open(reference, palette, 707, 530);
    for (const step of steps) {
      const svg = overlaySvg(800, 600, step.marks, {
        width: 707,
        height: 530,
        captions: true,
        title: step.title,
        failing: step.failing,
        minFontPx: 10,
      });
      const drawn = await sharp(path.join(dir, frames[step.frame]!.key))
        .resize(707, 530, { fit: 'fill' })
        .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
        .removeAlpha()
        .raw()
        .toBuffer();
      await gif.addFrame(drawn, 3, step.failing || step.seq === 8 ? 3000 : 700);
    }
    await gif.close();
    expect(fs.readFileSync(path.join(dir, 'run.gif')).equals(fs.readFileSync(reference))).toBe(true);
  });

  it('is the same bytes when the same session is bundled again', async () => {
    const out = path.join(root, 'again.zip');
    await buildBundle(demo.sessionDir, { output: out });
    const again = entriesOf(await readZip(out)).get('run.gif');
    expect(again?.equals(entriesOf(await readZip(demo.bundle)).get('run.gif')!)).toBe(true);
  });

  it('is left out with gif: false (--no-gif), and bug-report.md does not mention it', async () => {
    const out = path.join(root, 'nogif.zip');
    await buildBundle(demo.sessionDir, { output: out, gif: false });
    const files = entriesOf(await readZip(out));
    expect(files.has('run.gif')).toBe(false);
    expect(files.get('bug-report.md')!.toString('utf8')).not.toContain('run.gif');
    const manifest = JSON.parse(files.get('manifest.json')!.toString('utf8'));
    expect(manifest.options.gif).toBe(false);
    expect(manifest.runGif).toBeNull();
    expect(validators.manifest(manifest)).toEqual([]);
    expect((await verifyBundle(out)).ok).toBe(true);
  });

  it('is not made for a session with one image', async () => {
    const dir = await recordCaptures(path.join(root, 'one'), 0, 0);
    const out = path.join(root, 'one.zip');
    await buildBundle(dir, { output: out });
    const files = entriesOf(await readZip(out));
    expect(files.has('run.gif')).toBe(false);
    expect(JSON.parse(files.get('manifest.json')!.toString('utf8')).runGif).toBeNull();
  });

  it('keeps 60 frames of a long run, chosen around the failure, within 800 px and 5 MB', async () => {
    const dir = await recordCaptures(path.join(root, 'long'), 70, 40);
    const out = path.join(root, 'long.zip');
    const result = await buildBundle(dir, { output: out });
    expect(result.warnings).toEqual([]);
    const files = entriesOf(await readZip(out));
    const gif = files.get('run.gif')!;
    expect(gif.length).toBeLessThan(5_000_000);
    const meta = await sharp(gif, { animated: true }).metadata();
    expect(meta.pages).toBe(60);
    expect(meta.width).toBeLessThanOrEqual(800);
    // Two steps before the failure for each one after: the black capture is the 41st frame, held 3 s.
    const held = meta.delay!.flatMap((d, i) => (d === 3000 ? [i] : []));
    expect(held).toEqual([40, 59]);
    const frame = await sharp(gif, { page: 40 }).raw().toBuffer({ resolveWithObject: true });
    const centre =
      (Math.floor(frame.info.height / 3) * frame.info.width + Math.floor(frame.info.width / 2)) *
      frame.info.channels;
    expect([...frame.data.subarray(centre, centre + 3)]).toEqual([0, 0, 0]);
    expect(unzipTest(out)).toMatch(/No errors/);
  });
});
