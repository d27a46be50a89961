/**
 * Secrets out of the pixels: real captures of the simulator's Sign in dialog, recorded through `wrap`, read
 * back from the session's artifacts and decoded by sharp.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { validateCaptureSummary } from '../../src/contract/index.js';
import type { MaskedRegion } from '../../src/contract/types.js';
import type { MaskOptions } from '../../src/mask/types.js';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { calls, sessionDirs, tempDir, withLog } from './helpers.js';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

type Rect = { x: number; y: number; width: number; height: number };
// biome-ignore lint/suspicious/noExplicitAny: assertion-only view of parsed JSON
type Loose = Record<string, any>;

interface Run {
  dir: string;
  call: (tool: string, args?: Record<string, unknown>) => Promise<Loose>;
  finish: () => Promise<void>;
  sim: ReturnType<typeof createSimulator>;
}

/** A recorder wrapped around a simulator with the Sign in dialog open; `call` returns the agent's envelope. */
async function record(mask?: MaskOptions): Promise<Run> {
  const root = tempDir();
  const simRoot = tempDir();
  roots.push(root, simRoot);
  const sim = createSimulator({ seed: 11, signIn: true, sessionsRoot: simRoot });
  const recorder = createRecorder({ sessionsDir: root, ...(mask ? { mask } : {}) });
  const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  const sessionId = envelopeOf((await dispatch('session-start', {})) as never).sessionId!;
  const run: Run = {
    dir: '',
    sim,
    call: async (tool, args = {}) =>
      envelopeOf((await dispatch(tool, { sessionId, ...args })) as never) as Loose,
    finish: async () => {
      await recorder.close();
      run.dir = path.join(root, sessionDirs(root).find((d) => d.endsWith(sessionId))!);
    },
  };
  return run;
}

/** The stored capture-summary of a call (its envelope's result) and the decoded pixels of its artifact. */
async function storedCapture(dir: string, seq: number) {
  const row = calls(dir).find((r) => r.seq === seq)!;
  const env = JSON.parse(row.envelope!) as Loose;
  const summary = (env.ok ? env.result : env.error.partialResult) as Loose;
  expect(validateCaptureSummary(summary).violations).toEqual([]);
  const file = path.join(dir, summary.artifact as string);
  const { data, info } = await sharp(fs.readFileSync(file))
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { summary, data, width: info.width, height: info.height, file };
}

/** {@link storedCapture} of the session's first capture call. */
function firstStoredCapture(dir: string) {
  return storedCapture(dir, calls(dir).find((r) => r.tool === 'capture')!.seq);
}

async function rawOf(base64: string) {
  const { data, info } = await sharp(Buffer.from(base64, 'base64'))
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const inside = (r: Rect, x: number, y: number) =>
  x >= r.x && y >= r.y && x < r.x + r.width && y < r.y + r.height;

/** Pixels of `rect` (image pixels) that are not the mask colour. */
function unmasked(img: { data: Buffer; width: number }, rect: Rect): number {
  let n = 0;
  for (let y = rect.y; y < rect.y + rect.height; y++)
    for (let x = rect.x; x < rect.x + rect.width; x++) {
      const i = (y * img.width + x) * 3;
      if (img.data[i] !== 0 || img.data[i + 1] !== 0 || img.data[i + 2] !== 0) n++;
    }
  return n;
}

/** Pixels outside every mask that differ between two images of the same size. */
function changedOutside(
  a: { data: Buffer; width: number; height: number },
  b: { data: Buffer },
  masks: MaskedRegion[],
) {
  let n = 0;
  for (let y = 0; y < a.height; y++)
    for (let x = 0; x < a.width; x++) {
      if (masks.some((m) => inside(m.rect, x, y))) continue;
      const i = (y * a.width + x) * 3;
      if (a.data[i] !== b.data[i] || a.data[i + 1] !== b.data[i + 1] || a.data[i + 2] !== b.data[i + 2]) n++;
    }
  return n;
}

/** An element's rectangle in a window capture of its window, from a find result. */
function fieldRect(found: Loose, scale = 1): Rect {
  const e = found.result.element;
  const w = found.result.window;
  return {
    x: Math.floor((e.x - w.x) * scale),
    y: Math.floor((e.y - w.y) * scale),
    width: Math.ceil(e.width * scale),
    height: Math.ceil(e.height * scale),
  };
}

const TOKEN = 'ghp_0123456789abcdefTOKEN';

/** Find the Sign in window's ApiToken field, click it and type TOKEN: the field the masks must cover. */
async function typeTokenIntoField(run: Run): Promise<Loose> {
  const found = await run.call('find', { window: 'Sign in', by: 'automationid', value: 'ApiToken' });
  await run.call('click', { window: 'Sign in', at: { by: 'automationid', value: 'ApiToken' } });
  await run.call('send_command', { command: `chars:${TOKEN}` });
  return found;
}

describe('masks from what the recorder knows', () => {
  it('a token typed into a field: every pixel of the field is the mask in the stored image, nothing else changed', async () => {
    const run = await record();
    const found = await typeTokenIntoField(run);
    const capture = await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    const field = fieldRect(found);
    expect(unmasked(stored, field)).toBe(0);
    const original = await rawOf(capture.result.base64);
    expect(unmasked(original, field)).toBeGreaterThan(0); // the agent got the real pixels
    expect(changedOutside(original, stored, stored.summary.masked)).toBe(0);
    const typed = (stored.summary.masked as MaskedRegion[]).find((m) => m.rule === 'typed-text')!;
    expect(typed).toMatchObject({ reason: 'typed secret', rect: field });
    expect(typed.widened).toBeUndefined();
    expect(typed.target).toContain('ApiToken');
    // The artifacts row carries the masks; the file is the masked one.
    const row = withLog(run.dir, (db) =>
      db.prepare('SELECT masks, masks_painted FROM artifacts').get(),
    ) as Loose;
    expect(JSON.parse(row.masks)).toEqual(stored.summary.masked);
    expect(row.masks_painted).toBe(1);
  });

  it('a field named like a secret is masked before anything is typed; invoke setvalue masks its element', async () => {
    const run = await record();
    await run.call('query', { window: 'Sign in' });
    await run.call('invoke', {
      window: 'Sign in',
      by: 'automationid',
      value: 'UserName',
      action: 'setvalue',
      text: 'alice@example.com',
    });
    const capture = await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    const rules = (stored.summary.masked as MaskedRegion[]).map((m) => `${m.rule} ${m.target}`).sort();
    expect(rules).toEqual([
      "secret-field Edit 'API token' (automationid ApiToken) in 'Sign in'",
      "secret-field Edit 'Password' (automationid PasswordBox) in 'Sign in'",
      "typed-text Edit 'User name' (automationid UserName) in 'Sign in'",
    ]);
    for (const m of stored.summary.masked as MaskedRegion[]) expect(unmasked(stored, m.rect)).toBe(0);
    expect(changedOutside(await rawOf(capture.result.base64), stored, stored.summary.masked)).toBe(0);
  });

  it('the window moved between find and capture: the mask covers the whole window and says why', async () => {
    const run = await record();
    await run.call('focus', { window: 'Sign in', at: { by: 'automationid', value: 'PasswordBox' } });
    await run.call('send_command', { command: 'chars:hunter2hunter2' });
    await run.call('window', { window: 'Sign in', action: 'move', x: 300, y: 260 });
    await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    // One region: the typed secret (the Password field's own look is the same element).
    expect((stored.summary.masked as MaskedRegion[]).map((m) => m.rule)).toEqual(['typed-text']);
    for (const m of stored.summary.masked as MaskedRegion[]) {
      expect(m.rect).toEqual({ x: 0, y: 0, width: 480, height: 300 });
      expect(m.widened).toMatch(/moved from 1000,200 to 300,260 since the element was seen \(call #\d+\)/);
    }
    expect(unmasked(stored, { x: 0, y: 0, width: 480, height: 300 })).toBe(0);
  });

  it('seen again after the move, the element is placed exactly again', async () => {
    const run = await record();
    await run.call('focus', { window: 'Sign in', at: { by: 'automationid', value: 'PasswordBox' } });
    await run.call('send_command', { command: 'chars:hunter2hunter2' });
    await run.call('window', { window: 'Sign in', action: 'move', x: 300, y: 260 });
    const found = await run.call('find', { window: 'Sign in', by: 'automationid', value: 'PasswordBox' });
    await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    expect(stored.summary.masked).toEqual([
      expect.objectContaining({ rule: 'typed-text', rect: fieldRect(found) }),
    ]);
  });

  it('a downscaled capture (maxWidth) is masked at its scale, rounded outward', async () => {
    const run = await record();
    const found = await typeTokenIntoField(run);
    await run.call('capture', { window: 'Sign in', maxWidth: 240 });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    expect(stored.width).toBe(240);
    const field = fieldRect(found, 0.5);
    const typed = (stored.summary.masked as MaskedRegion[]).find((m) => m.rule === 'typed-text')!;
    // The field at half scale, grown by the resampling margin on each side, and covered.
    expect(typed.rect.x).toBeLessThanOrEqual(field.x);
    expect(typed.rect.y).toBeLessThanOrEqual(field.y);
    expect(typed.rect.x + typed.rect.width).toBeGreaterThanOrEqual(field.x + field.width);
    expect(typed.rect.y + typed.rect.height).toBeGreaterThanOrEqual(field.y + field.height);
    expect(typed.rect.width).toBeLessThan(field.width + 10);
    expect(typed.widened).toMatch(/image scaled x0\.5/);
    expect(unmasked(stored, typed.rect)).toBe(0);
  });

  it('a region capture containing the field is masked in screen coordinates', async () => {
    const run = await record();
    const found = await typeTokenIntoField(run);
    const capture = await run.call('capture', { x: 900, y: 300, width: 700, height: 200 });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    const e = found.result.element;
    const field = { x: e.x - 900, y: e.y - 300, width: e.width, height: e.height };
    const typed = (stored.summary.masked as MaskedRegion[]).find((m) => m.rule === 'typed-text')!;
    expect(typed.rect).toEqual(field);
    expect(unmasked(stored, field)).toBe(0);
    expect(changedOutside(await rawOf(capture.result.base64), stored, stored.summary.masked)).toBe(0);
  });
});

describe('a bundle of a session that typed a secret into a field and captured the window (default options)', () => {
  it('holds no image where the field survives, and its report.html and failure summary say where and why', async () => {
    const { buildBundle } = await import('../../src/bundle/build.js');
    const { readZip } = await import('../bundle/helpers.js');
    const run = await record();
    const found = await typeTokenIntoField(run);
    const inline = await run.call('capture', { window: 'Sign in' }); // inline base64 and an image block
    await run.call('capture', { window: 'Sign in', pathOnly: true }); // a file on the "MCEC host", copied
    await run.call('capture', { window: 'Sign in', scale: 0.75 });
    await run.call('capture', { x: 900, y: 150, width: 800, height: 400 });
    await run.finish();
    const out = path.join(path.dirname(run.dir), 'bundle.zip');
    await buildBundle(run.dir, { output: out });
    const entries = await readZip(out);
    const pngs = entries.filter((e) => e.name.endsWith('.png'));
    // The path-only copy is the inline capture's bytes: masked alike, it is the same file.
    expect(pngs.length).toBe(3);
    const original = await rawOf(inline.result.base64);
    const field = fieldRect(found);
    let windowSized = 0;
    for (const png of pngs) {
      const { data, info } = await sharp(png.data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      const img = { data, width: info.width, height: info.height };
      if (info.width === 480 && info.height === 300) {
        windowSized += 1;
        expect(unmasked(img, field), png.name).toBe(0);
      }
      // No image holds the field's original pixels anywhere: compare each row of the field with every row.
      const fieldRow = original.data.subarray(
        ((field.y + 14) * original.width + field.x) * 3,
        ((field.y + 14) * original.width + field.x + field.width) * 3,
      );
      expect(unmasked(original, { ...field, y: field.y + 14, height: 1 })).toBeGreaterThan(0);
      expect(data.includes(fieldRow), png.name).toBe(false);
    }
    expect(windowSized).toBe(1);
    const rows = withLog(run.dir, (db) =>
      db.prepare('SELECT role, path, masks FROM artifacts').all(),
    ) as Loose[];
    // Every copy of every capture (results, image blocks, the host file) is masked.
    expect(new Set(rows.map((r) => r.role))).toEqual(new Set(['host-capture', 'image-block', 'result']));
    for (const r of rows) expect(JSON.parse(r.masks).length, r.role).toBeGreaterThan(0);
    const page = entries.find((e) => e.name.endsWith('/report.html'))!.data.toString('utf8');
    expect(page).toContain('<svg class="mk"');
    expect(page).toContain('masked: typed secret');
    expect(page).toMatch(/<title>masked: typed secret \(typed-text\); over Edit &#x27;API token&#x27;/);
    const summary = entries.find((e) => e.name.endsWith('/failure-summary.md'))!.data.toString('utf8');
    expect(summary).toContain('## Masked images');
    expect(summary).toMatch(/masked region\(s\) \(\d typed secret/);
  });
});

describe("the user's rules", () => {
  it('by window: the whole window; by selector: the element; by rectangle: window pixels at the capture scale', async () => {
    const run = await record({
      rules: [
        { window: { title: 'notepad' }, label: 'editor' },
        { window: { title: 'Sign in' }, element: { by: 'automationid', value: 'UserName' }, label: 'user' },
        {
          window: { process: 'CredentialUIBroker' },
          rect: { x: 24, y: 44, width: 300, height: 20 },
          label: 'banner',
        },
      ],
      secretFields: false,
    });
    const found = await run.call('find', { window: 'Sign in', by: 'automationid', value: 'UserName' });
    const notepad = await run.call('capture', { window: 'Notepad' });
    await run.call('capture', { window: 'Sign in', maxWidth: 240 });
    await run.finish();
    const [first, second] = calls(run.dir).filter((r) => r.tool === 'capture');
    const np = await storedCapture(run.dir, first!.seq);
    expect(np.summary.masked).toEqual([
      {
        rect: { x: 0, y: 0, width: 800, height: 600 },
        reason: 'user rule',
        rule: 'user:editor',
        target: "window 'Untitled - Notepad'",
      },
    ]);
    expect(unmasked(np, { x: 0, y: 0, width: 800, height: 600 })).toBe(0);
    expect(
      unmasked(await rawOf(notepad.result.base64), { x: 0, y: 0, width: 800, height: 600 }),
    ).toBeGreaterThan(0);
    const si = await storedCapture(run.dir, second!.seq);
    const byRule = new Map((si.summary.masked as MaskedRegion[]).map((m) => [m.rule, m]));
    expect([...byRule.keys()].sort()).toEqual(['user:banner', 'user:user']);
    const user = fieldRect(found, 0.5);
    const banner = { x: 12, y: 22, width: 150, height: 10 };
    for (const [rule, want] of [
      ['user:user', user],
      ['user:banner', banner],
    ] as const) {
      const got = byRule.get(rule)!.rect;
      expect(got.x).toBeLessThanOrEqual(want.x);
      expect(got.y).toBeLessThanOrEqual(want.y);
      expect(got.x + got.width).toBeGreaterThanOrEqual(want.x + want.width);
      expect(got.y + got.height).toBeGreaterThanOrEqual(want.y + want.height);
      expect(got.width).toBeLessThanOrEqual(want.width + 6);
      expect(unmasked(si, got)).toBe(0);
    }
  });

  it('an element rule for a window whose element was never seen masks the whole window, and says so', async () => {
    const run = await record({ rules: [{ window: { title: 'Sign in' }, element: { value: 'Password' } }] });
    await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    expect(stored.summary.masked).toEqual([
      {
        rect: { x: 0, y: 0, width: 480, height: 300 },
        reason: 'user rule',
        rule: 'user:#1',
        target: "window 'Sign in'",
        widened: 'the element has not been seen in this window: widened to the window',
      },
    ]);
  });

  it('--no-masking / enabled: false stores the capture as it came', async () => {
    const run = await record({ enabled: false, rules: [{ window: { title: 'Sign in' } }] });
    const capture = await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    expect(stored.summary.masked).toBeUndefined();
    expect(fs.readFileSync(stored.file).equals(Buffer.from(capture.result.base64, 'base64'))).toBe(true);
  });
});

describe('masks painted while bundling', () => {
  it('on-export keeps the original in the session and paints the bundle; the manifest says which mode', async () => {
    const { buildBundle } = await import('../../src/bundle/build.js');
    const { readZip } = await import('../bundle/helpers.js');
    const run = await record({ mode: 'on-export' });
    const found = await typeTokenIntoField(run);
    const capture = await run.call('capture', { window: 'Sign in' });
    await run.finish();
    const stored = await firstStoredCapture(run.dir);
    expect(stored.summary.maskedOnExport).toBe(true);
    expect(fs.readFileSync(stored.file).equals(Buffer.from(capture.result.base64, 'base64'))).toBe(true);
    const out = path.join(path.dirname(run.dir), 'on-export.zip');
    await buildBundle(run.dir, { output: out });
    const entries = await readZip(out);
    const manifest = JSON.parse(
      entries.find((e) => e.name.endsWith('/manifest.json'))!.data.toString('utf8'),
    );
    expect(manifest.masking).toEqual({
      mode: 'on-export',
      paintedWhileBundling: 1,
      bundleRules: 0,
      notDecodable: 0,
    });
    const png = entries.find((e) => e.name.endsWith('.png'))!;
    const { data, info } = await sharp(png.data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    expect(unmasked({ data, width: info.width }, fieldRect(found))).toBe(0);
    // The manifest's sha256 is the painted file's; the session dir still holds the original.
    expect(fs.readFileSync(stored.file).equals(Buffer.from(capture.result.base64, 'base64'))).toBe(true);
  });

  it('--mask-rules paints new rules over an existing session, and a default bundle says before-write', async () => {
    const { buildBundle } = await import('../../src/bundle/build.js');
    const { readZip } = await import('../bundle/helpers.js');
    const run = await record();
    const capture = await run.call('capture', { window: 'Notepad' });
    await run.finish();
    const plain = path.join(path.dirname(run.dir), 'plain.zip');
    await buildBundle(run.dir, { output: plain });
    const before = await readZip(plain);
    const m0 = JSON.parse(before.find((e) => e.name.endsWith('/manifest.json'))!.data.toString('utf8'));
    expect(m0.masking).toEqual({
      mode: 'before-write',
      paintedWhileBundling: 0,
      bundleRules: 0,
      notDecodable: 0,
    });
    const out = path.join(path.dirname(run.dir), 'ruled.zip');
    await buildBundle(run.dir, {
      output: out,
      maskRules: [
        { window: { title: 'Notepad' }, rect: { x: 0, y: 56, width: 800, height: 100 }, label: 'doc' },
      ],
    });
    const entries = await readZip(out);
    const manifest = JSON.parse(
      entries.find((e) => e.name.endsWith('/manifest.json'))!.data.toString('utf8'),
    );
    expect(manifest.masking).toMatchObject({ paintedWhileBundling: 1, bundleRules: 1 });
    const png = entries.find((e) => e.name.endsWith('.png'))!;
    const { data, info } = await sharp(png.data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const rect = { x: 0, y: 56, width: 800, height: 100 };
    expect(unmasked({ data, width: info.width }, rect)).toBe(0);
    expect(
      changedOutside(await rawOf(capture.result.base64), { data }, [
        { rect, reason: 'user rule', rule: 'user:doc' },
      ]),
    ).toBe(0);
    const page = entries.find((e) => e.name.endsWith('/report.html'))!.data.toString('utf8');
    expect(page).toContain('masked: user rule');
  });
});
