import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';
import {
  externalRequests,
  hasChromium,
  images,
  launchChromium,
  openLogged,
  SKIP_MESSAGE,
  visibleSeqs,
} from './browser.js';
import { type Scenario, writeScenario } from './scenario.js';

const SCREENSHOT = fileURLToPath(new URL('../../test-results/report-html.png', import.meta.url));

if (!hasChromium) console.warn(SKIP_MESSAGE);

describe.skipIf(!hasChromium)('report.html in headless Chromium (file://)', () => {
  let root: string;
  let sc: Scenario;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    root = makeSessionsDir();
    [sc, browser] = await Promise.all([writeScenario(root), launchChromium()]);
    url = pathToFileURL(sc.reportPath).href;
  });
  afterAll(async () => {
    await browser?.close();
    removeDir(root);
  });

  it('loads with no console error and no request but file:// and data:; filters, search and thumbnails work', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const { page, log } = await openLogged(context, url);
      // The listener works: it saw the page itself.
      expect(log.requests.some((u) => u.startsWith('file:') && u.endsWith('/report.html'))).toBe(true);
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();

      const all = Array.from({ length: 11 }, (_, i) => i + 1);
      expect(await visibleSeqs(page)).toEqual(all);
      expect(await page.isVisible('#filters')).toBe(true);
      expect(await page.isVisible('#nojs')).toBe(false);

      await page.check('#f-failed');
      expect(await visibleSeqs(page)).toEqual(sc.failedSeqs);
      expect(await page.isVisible('#c1')).toBe(false);
      expect(await page.textContent('#f-count')).toBe(`${sc.failedSeqs.length} of 11 calls`);
      await page.uncheck('#f-failed');
      expect(await visibleSeqs(page)).toEqual(all);

      await page.fill('#f-q', 'tree-truncated');
      expect(await visibleSeqs(page)).toEqual([sc.truncatedSeq]);
      await page.fill('#f-q', 'SELECTOR-matched-3');
      expect(await visibleSeqs(page)).toEqual([6]);
      await page.fill('#f-q', 'no call has this');
      expect(await visibleSeqs(page)).toEqual([]);
      expect(await page.isVisible('#f-empty')).toBe(true);
      await page.fill('#f-q', '');

      await page.selectOption('#f-tool', 'capture');
      expect(await visibleSeqs(page)).toEqual([3, 9, sc.failingSeq]);
      await page.check('#f-warn');
      expect(await visibleSeqs(page)).toEqual([9]);
      await page.uncheck('#f-warn');
      await page.selectOption('#f-tool', '');
      expect(await visibleSeqs(page)).toEqual(all);

      const imgs = await images(page);
      expect(imgs.length).toBe(5); // three row thumbnails, the last good image and the suspect at the top
      for (const img of imgs) {
        expect(img.src.startsWith('data:image/webp;base64,')).toBe(true);
        expect(img.naturalWidth).toBeGreaterThan(0);
      }

      // The failing call is at the top and one click opens its row with the stored envelope.
      expect(await page.isVisible('#failing')).toBe(true);
      expect(await page.textContent('#failing')).toContain('frame-all-black');
      expect(await page.isVisible(`#c${sc.failingSeq}.failing`)).toBe(true);
      expect(await page.getAttribute(`#c${sc.failingSeq}`, 'open')).toBeNull();
      await page.click('#failing h2 a');
      // The row opens on the hashchange the click causes, an event later: wait for it, not for luck.
      await page.waitForSelector(`#c${sc.failingSeq}[open]`, { timeout: 10_000 });
      expect(await page.getAttribute(`#c${sc.failingSeq}`, 'open')).toBe('');
      expect(await page.isVisible(`#c${sc.failingSeq} > div pre`)).toBe(true);
      expect(await page.textContent(`#c${sc.failingSeq} > div`)).toContain('"partialResult"');

      fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
      await page.evaluate('window.scrollTo(0, 0)');
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(20_000);

      expect(log.errors).toEqual([]);
      expect(externalRequests(log)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('reads with JavaScript off: every row is there, filters are hidden, rows still expand', async () => {
    const context = await browser.newContext({
      javaScriptEnabled: false,
      viewport: { width: 1280, height: 900 },
    });
    try {
      const { page, log } = await openLogged(context, url);
      expect(await page.$$eval('#timeline > details.call', (rows) => rows.length)).toBe(11);
      expect(await visibleSeqs(page)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
      expect(await page.isVisible('#filters')).toBe(false);
      expect(await page.isVisible('#nojs')).toBe(true);
      expect(await page.isVisible('#failing')).toBe(true);
      expect(await page.isVisible(`#c${sc.failingSeq} > div pre`)).toBe(false);
      await page.click(`#c${sc.failingSeq} > summary`);
      expect(await page.isVisible(`#c${sc.failingSeq} > div pre`)).toBe(true);
      for (const img of await images(page)) expect(img.naturalWidth).toBeGreaterThan(0);
      expect(log.errors).toEqual([]);
      expect(externalRequests(log)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
