// report.html at a desktop width (1400 px) and a phone's (400 px) in headless Chromium: the filter bar stays one
// compact row, the two images read as a before and after only when they show one window (stacked on a phone,
// with the arrow turned down), and a row's thumbnail expands its row instead of leaving the page.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useDemoSession } from '../support/demo-session.js';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';
import { hasChromium, launchChromium, openLogged, SKIP_MESSAGE } from './browser.js';
import { type Scenario, writeScenario } from './scenario.js';

const RESULTS = fileURLToPath(new URL('../../test-results/', import.meta.url));
/** Most height the filter bar may take on a 400 px screen (it took ~154 px as three wrapped rows). */
const MAX_BAR_PX = 60;

if (!hasChromium) console.warn(SKIP_MESSAGE);

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

async function box(page: Page, selector: string): Promise<Box> {
  const b = await page.locator(selector).boundingBox();
  expect(b, selector).not.toBeNull();
  return b!;
}

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(RESULTS, { recursive: true });
  const file = path.join(RESULTS, name);
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: file, fullPage: true });
  expect(fs.statSync(file).size).toBeGreaterThan(10_000);
}

describe.skipIf(!hasChromium)('report.html layout in headless Chromium at 1400 and 400 px', () => {
  let root: string;
  let sc: Scenario;
  let demoReport: string;
  let browser: Browser;

  const demoSession = useDemoSession();

  beforeAll(async () => {
    root = makeSessionsDir();
    [sc, browser] = await Promise.all([writeScenario(root), launchChromium()]);
    demoReport = demoSession().reportHtml;
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    removeDir(root);
  });

  for (const width of [1400, 400]) {
    it(`at ${width} px: one compact filter row, a before and after of one window, thumbnails that expand their row`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      try {
        const { page, log } = await openLogged(context, pathToFileURL(sc.reportPath).href);
        // The filter bar is one row however narrow the screen (it scrolls sideways rather than wrap).
        expect((await box(page, '#filters')).height).toBeLessThanOrEqual(MAX_BAR_PX);
        expect(await page.isVisible('#f-q')).toBe(true);
        // Nothing sticks out sideways: the page itself never scrolls horizontally.
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);

        // The last image and the failing call's image both show 'Save As': a before and after, with an arrow.
        expect(await page.textContent('#images h2')).toBe("Before and after: 'Save As'");
        const figs = page.locator('#images .fig');
        expect(await figs.count()).toBe(2);
        const [before, after] = [(await figs.nth(0).boundingBox())!, (await figs.nth(1).boundingBox())!];
        const arrow = await box(page, '#images .arrow');
        // The tests' tsconfig has no DOM lib: the style is read by an expression.
        const turned = await page.evaluate(
          "getComputedStyle(document.querySelector('#images .arrow')).transform",
        );
        if (width === 1400) {
          // Side by side, the arrow between them pointing right.
          expect(after.x).toBeGreaterThan(before.x + before.width);
          expect(arrow.x).toBeGreaterThanOrEqual(before.x + before.width);
          expect(turned).toBe('none');
        } else {
          // Stacked, the arrow between them turned to point down.
          expect(after.y).toBeGreaterThan(before.y + before.height);
          expect(arrow.y).toBeGreaterThanOrEqual(before.y + before.height - 1);
          expect(arrow.y + arrow.height).toBeLessThanOrEqual(after.y + 1);
          expect(turned).not.toBe('none');
        }
        expect(await page.textContent('#images')).toContain("'Save As' · call #");

        await screenshot(page, `report-html-${width}.png`);

        // A thumbnail in a row expands that row (and the page stays where it is); the full PNG is linked inside.
        const row = page.locator('#timeline > details.call:has(.thumbs img)').first();
        const id = await row.getAttribute('id');
        expect(await row.getAttribute('open')).toBeNull();
        await row.locator('.thumbs img').first().click();
        expect(await row.getAttribute('open')).toBe('');
        expect(page.url()).toBe(pathToFileURL(sc.reportPath).href);
        expect(await row.locator('> summary a').count()).toBe(0);
        const full = row.locator('> div a[href$=".png"]');
        expect(await full.count()).toBeGreaterThan(0);
        expect(await full.first().isVisible()).toBe(true);
        await row.locator('.thumbs img').first().click();
        expect(await row.getAttribute('open')).toBeNull();
        expect(id).toMatch(/^c\d+$/);
        expect(log.errors).toEqual([]);
      } finally {
        await context.close();
      }
    });

    it(`at ${width} px: the demo's two images of two windows are two titled images, no arrow`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      try {
        const { page, log } = await openLogged(context, pathToFileURL(demoReport).href);
        expect(await page.textContent('#images h2')).toBe('Two windows: not a before and after');
        expect(await page.locator('#images .arrow').count()).toBe(0);
        const captions = await page.locator('#images figcaption').allTextContents();
        expect(captions).toEqual([
          expect.stringMatching(
            /^Last image before the failure 'Untitled - Notepad' · call #4 capture · 800x600/,
          ),
          expect.stringMatching(/^The failing call's image 'Video Player' · call #11 capture · 800x450/),
        ]);
        expect((await box(page, '#filters')).height).toBeLessThanOrEqual(MAX_BAR_PX);
        await screenshot(page, `report-html-demo-${width}.png`);
        expect(log.errors).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }
});
