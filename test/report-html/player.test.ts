// report.html's player in headless Chromium: the demo's run plays step by step (the invoke on Save boxed, the
// black capture marked as the failure), the timeline seeks it, the arrow keys step it, it fits a 400 px
// screen; and a click recorded through the simulator is drawn within 2 px of the element it hit, whether its
// pixels were window-relative or absolute and whether the capture was downscaled.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/index.js';
import { writeReportHtml } from '../../src/report/html/write-report.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { useDemoSession } from '../support/demo-session.js';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';
import { hasChromium, launchChromium, openLogged, SKIP_MESSAGE } from './browser.js';

const RESULTS = fileURLToPath(new URL('../../test-results/', import.meta.url));

if (!hasChromium) console.warn(SKIP_MESSAGE);

type Rec = Record<string, unknown>;

/** The player's step counter: [current (1-based), total]. */
async function counter(page: Page): Promise<[number, number]> {
  const text = (await page.textContent('#p-n')) ?? '';
  const m = /^(\d+) \/ (\d+)$/.exec(text.trim());
  expect(m, text).not.toBeNull();
  return [Number(m![1]), Number(m![2])];
}

/** The timeline rows highlighted as the player's current call. */
function playingRows(page: Page): Promise<string[]> {
  return page.$$eval('#timeline > details.call.playing', (rows) => rows.map((r) => r.id));
}

/** A session recorded through the simulator: captures of Notepad (full and downscaled) and clicks on its editor. */
async function recordClicks(sessionsDir: string) {
  const sim = createSimulator({ sessionsRoot: path.join(sessionsDir, 'sim') });
  const recorder = createRecorder({ sessionsDir, scenario: 'clicks', stderr: () => {} });
  const initialize = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  };
  recorder.recordExchange(initialize, await sim.handle(initialize));
  const dispatch = recorder.wrap((tool: string, args: Rec) => sim.callTool(tool, args));
  const call = async (tool: string, args: Rec) => envelopeOf(await dispatch(tool, { ...args, sessionId }));
  let sessionId: string | undefined;
  const started = envelopeOf(await dispatch('session-start', {}));
  sessionId = started.sessionId as string;
  const window = 'Untitled - Notepad';
  const full = await call('capture', { window }); // #2
  const win = (full.ok ? (full.result as Rec).window : null) as Rec;
  const found = await call('find', { window, by: 'automationid', value: '15' }); // #3
  const el = (found.ok ? (found.result as Rec).element : null) as Rec;
  const centre = {
    x: (el.x as number) + Math.floor((el.width as number) / 2),
    y: (el.y as number) + Math.floor((el.height as number) / 2),
  };
  const origin = { x: win.x as number, y: win.y as number };
  // #4: window-relative pixels (MCEC 3.0.28+ with a target), drawn on the full capture.
  const relative = await call('click', { window, at: { x: centre.x - origin.x, y: centre.y - origin.y } });
  expect(relative.ok).toBe(true);
  await call('capture', { window, maxWidth: 400 }); // #5, 400x300
  // #6: absolute pixels (no target), drawn on the downscaled capture.
  const absolute = await call('click', { at: centre });
  expect(absolute.ok).toBe(true);
  await call('session-end', {});
  await recorder.flush();
  const dir = recorder.session(sessionId)!.dir;
  await recorder.close();
  return { dir, centre, origin };
}

describe.skipIf(!hasChromium)('report.html player in headless Chromium', () => {
  let root: string;
  let browser: Browser;
  let demoReport: string;
  let clicks: Awaited<ReturnType<typeof recordClicks>> & { report: string };

  const demoSession = useDemoSession();

  beforeAll(async () => {
    root = makeSessionsDir();
    let recorded: Awaited<ReturnType<typeof recordClicks>>;
    [recorded, browser] = await Promise.all([recordClicks(path.join(root, 'clicks')), launchChromium()]);
    demoReport = demoSession().reportHtml;
    clicks = { ...recorded, report: await writeReportHtml(recorded.dir) };
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    removeDir(root);
  });

  it('plays the demo step by step, highlighting each call; the failing capture is marked and ends the run', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const { page, log } = await openLogged(context, pathToFileURL(demoReport).href);
      expect(await page.isVisible('#player')).toBe(true);
      const [first, total] = await counter(page);
      expect(first).toBe(1);
      expect(total).toBeGreaterThanOrEqual(6);
      expect(await playingRows(page)).toEqual(['c4']); // the Notepad capture opens the run
      expect(await page.getAttribute('#p-img', 'src')).toMatch(/^data:image\/webp;base64,/);
      // The failing call's step is marked on the scrubber, at its end.
      expect(await page.$$eval('#p-marks .fmark', (m) => m.length)).toBe(1);

      await page.selectOption('#p-speed', 's400');
      await page.click('#p-play');
      expect(await page.getAttribute('#p-play', 'aria-label')).toBe('pause');
      const seen = new Set<string>();
      for (let i = 0; i < 40 && (await counter(page))[0] === 1; i++) await page.waitForTimeout(100);
      expect((await counter(page))[0]).toBeGreaterThan(1);
      // Follow the play to its end, noting the highlighted rows.
      for (let i = 0; i < 60; i++) {
        for (const id of await playingRows(page)) seen.add(id);
        if ((await page.getAttribute('#p-play', 'aria-label')) === 'play') break;
        await page.waitForTimeout(150);
      }
      expect(await page.getAttribute('#p-play', 'aria-label')).toBe('play');
      expect((await counter(page))[0]).toBe(total);
      expect(seen.has('c11')).toBe(true);
      expect(await page.getAttribute('#p-stage', 'class')).toContain('failing');
      expect(await page.textContent('#p-title')).toContain('#11 capture · frame-all-black');
      expect(await playingRows(page)).toEqual(['c11']);
      expect(log.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('seeks from the timeline and steps with the arrow keys; the invoke on Save is boxed', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const { page, log } = await openLogged(context, pathToFileURL(demoReport).href);
      await page.click('#c10 > summary');
      expect(await playingRows(page)).toEqual(['c10']);
      expect(await page.textContent('#p-title')).toContain('#10 invoke automationid="1"');
      const labels = await page.$$eval('#p-ov svg text', (t) => t.map((x) => x.textContent));
      expect(labels).toContain('invoke automationid="1" · invoked');
      expect(labels.some((l) => l?.startsWith("'Save As' · another window"))).toBe(true);
      // The box is inside the stage's image.
      const stage = (await page.locator('#p-img').boundingBox())!;
      const rect = (await page.locator('#p-ov svg rect[stroke="#1a7f37"]').first().boundingBox())!;
      expect(rect.x).toBeGreaterThanOrEqual(stage.x);
      expect(rect.x + rect.width).toBeLessThanOrEqual(stage.x + stage.width + 1);

      await page.keyboard.press('ArrowLeft');
      expect(await page.textContent('#p-title')).toContain('#9 find');
      expect(await playingRows(page)).toEqual(['c9']);
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      expect(await page.textContent('#p-title')).toContain('#11 capture');
      expect(await page.getAttribute('#p-stage', 'class')).toContain('failing');
      await page.keyboard.press('ArrowRight'); // past the end: stays
      expect(await page.textContent('#p-title')).toContain('#11 capture');
      // A call before any image (session-start) seeks to the start.
      await page.click('#c1 > summary');
      expect((await counter(page))[0]).toBe(1);
      expect(log.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('fits a 400 px screen: no sideways scroll, the stage and its controls within the width', async () => {
    const context = await browser.newContext({ viewport: { width: 400, height: 800 } });
    try {
      const { page, log } = await openLogged(context, pathToFileURL(demoReport).href);
      await page.click('#c10 > summary');
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(400);
      for (const sel of ['#p-stage', '#p-play', '#p-next', '#p-pos', '#p-speed', '#p-title']) {
        const b = (await page.locator(sel).boundingBox())!;
        expect(b.x, sel).toBeGreaterThanOrEqual(0);
        expect(b.x + b.width, sel).toBeLessThanOrEqual(400);
      }
      fs.mkdirSync(RESULTS, { recursive: true });
      await page.locator('#player').screenshot({ path: path.join(RESULTS, 'report-player-400.png') });
      expect(log.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('draws a click within 2 px of the element it hit: window-relative, absolute, on a downscaled capture', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const { page, log } = await openLogged(context, pathToFileURL(clicks.report).href);
      const artifacts = path.join(clicks.dir, 'artifacts');
      const widths = await Promise.all(
        fs
          .readdirSync(artifacts)
          .filter((f) => f.endsWith('.png'))
          .map(async (f) => (await sharp(path.join(artifacts, f)).metadata()).width),
      );
      expect(widths.sort()).toEqual([400, 800]);
      for (const [seq, imageWidth] of [
        [4, 800],
        [6, 400],
      ] as const) {
        await page.click(`#c${seq} > summary`);
        expect(await page.textContent('#p-title')).toContain(`#${seq} click`);
        const img = (await page.locator('#p-img').boundingBox())!;
        const dot = (await page.locator('#p-ov svg circle.pt').boundingBox())!;
        // The marker's centre in the capture's own pixels.
        const px = ((dot.x + dot.width / 2 - img.x) * imageWidth) / img.width;
        const py = ((dot.y + dot.height / 2 - img.y) * imageWidth) / img.width;
        const ratio = imageWidth / 800; // Notepad is 800 px wide on the screen
        const expected = {
          x: (clicks.centre.x - clicks.origin.x) * ratio,
          y: (clicks.centre.y - clicks.origin.y) * ratio,
        };
        expect(Math.abs(px - expected.x), `#${seq} x`).toBeLessThanOrEqual(2);
        expect(Math.abs(py - expected.y), `#${seq} y`).toBeLessThanOrEqual(2);
      }
      expect(log.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
