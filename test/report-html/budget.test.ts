import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FixtureSession, makeSessionsDir, NOTEPAD, removeDir } from '../support/fixture-session.js';
import { blankPng, noisePng } from '../support/images.js';
import { externalRequests, hasChromium, images, launchChromium, openLogged } from './browser.js';
import { writeReport } from './scenario.js';

const FIVE_MB = 5_000_000;
const CAPTURES = 200;

/** Seqs of the rows that carry a thumbnail in their summary line. */
function rowsWithThumbnails(html: string): number[] {
  const out: number[] = [];
  for (const part of html.split('<details class="call').slice(1)) {
    const seq = Number(/id="c(\d+)"/.exec(part)?.[1]);
    const summary = part.slice(0, part.indexOf('</summary>'));
    if (summary.includes('src="data:image/webp')) out.push(seq);
  }
  return out;
}

function count(html: string, needle: string): number {
  return html.split(needle).length - 1;
}

describe('report.html size budget', () => {
  let root: string;
  let dir: string;
  let failingSeq: number;
  let lastGoodSeq: number;
  let browser: Browser | undefined;

  beforeAll(async () => {
    root = makeSessionsDir();
    const browserReady = hasChromium ? launchChromium() : Promise.resolve(undefined);
    // 200 distinct noise captures (thumbnails of noise barely compress), then a blank capture that fails.
    const pngs = await Promise.all(Array.from({ length: CAPTURES }, (_, i) => noisePng(400, 300, i + 1)));
    const black = await blankPng(400, 300);
    const s = FixtureSession.create(root, { sessionId: 'b0d9e7a1c2f3', scenario: '200 captures' });
    s.db.transaction(() => {
      pngs.forEach((png, i) => {
        const image = s.storePng(png);
        const seq = s.call({
          tool: 'capture',
          args: { title: NOTEPAD.title, n: i },
          result: { ...s.summaryOf(image) },
        });
        s.artifactRow(seq, 'result', image);
        lastGoodSeq = seq;
      });
      const suspect = s.storePng(black);
      failingSeq = s.call({
        tool: 'capture',
        args: { title: NOTEPAD.title },
        error: {
          code: 'frame-all-black',
          category: 'capture-blank',
          detail: 'all black',
          partialResult: { ...s.summaryOf(suspect, NOTEPAD, true) },
        },
      });
      s.artifactRow(failingSeq, 'partialResult', suspect, '/error/partialResult/base64');
    })();
    s.end({ passed: false });
    s.close();
    dir = s.dir;
    browser = await browserReady;
  });
  afterAll(async () => {
    await browser?.close();
    removeDir(root);
  });

  it('by default makes thumbnails only for the failure, the last good image and the 48 newest', async () => {
    const { html } = await writeReport(dir);
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(FIVE_MB);
    expect(html).toContain(
      'Thumbnails omitted for 151 of 201 images (only the failing call, the last good observation and the 48 most recent images get one)',
    );
    expect(rowsWithThumbnails(html)).toEqual(Array.from({ length: 50 }, (_, i) => failingSeq - 49 + i));
  });

  it(`keeps all ${CAPTURES} thumbnails under 5 MB by making them narrower, and says so`, async () => {
    const { html, reportPath } = await writeReport(dir, { maxThumbnails: Number.POSITIVE_INFINITY });
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(FIVE_MB);
    // Full-width thumbnails of this much noise would not fit: the page narrows them and tells the reader.
    expect(html).toMatch(/Thumbnails are (160|80) px wide \(instead of 320 px\)/);
    expect(html).not.toContain('Thumbnails omitted');
    const withThumbs = rowsWithThumbnails(html);
    expect(withThumbs).toContain(failingSeq);
    expect(withThumbs).toContain(lastGoodSeq);
    expect(withThumbs.length).toBeGreaterThan(50);
    // Every image stays reachable through its link, thumbnail or not.
    expect(count(html, 'href="artifacts/capture-')).toBeGreaterThanOrEqual(CAPTURES + 1);
    expect(html).toContain('class="fig good"><a href="artifacts/');
    expect(html).toContain('class="fig suspect"><a href="artifacts/');

    if (browser) {
      const context = await browser.newContext();
      try {
        const { page, log } = await openLogged(context, pathToFileURL(reportPath).href);
        const imgs = await images(page);
        expect(imgs.length).toBe(withThumbs.length + 2);
        for (const img of imgs) expect(img.naturalWidth).toBeGreaterThan(0);
        expect(log.errors).toEqual([]);
        expect(externalRequests(log)).toEqual([]);
      } finally {
        await context.close();
      }
    }
  });

  it('under a tight budget keeps thumbnails only for the failure, the last good image and the newest ones', async () => {
    const maxBytes = 400_000;
    const { html } = await writeReport(dir, { maxBytes, maxThumbnails: 1000 });
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(maxBytes);
    expect(html).toMatch(/Thumbnails omitted for \d+ of 201 images \(to keep this page under 400 KB\)/);
    const withThumbs = rowsWithThumbnails(html);
    expect(withThumbs).toContain(failingSeq);
    expect(withThumbs).toContain(lastGoodSeq);
    expect(withThumbs.length).toBeLessThan(CAPTURES);
    // The kept ones are the newest: a contiguous run ending at the failing call.
    const sorted = [...withThumbs].sort((a, b) => a - b);
    expect(sorted).toEqual(
      Array.from({ length: sorted.length }, (_, i) => failingSeq - sorted.length + 1 + i),
    );
    expect(html).toContain('no thumbnail (see the note at the top)');
    // All 201 rows are still there.
    expect(count(html, '<details class="call')).toBe(CAPTURES + 1);
  });
});

describe('report.html for a 10,000-call session', () => {
  let root: string;
  let dir: string;

  beforeAll(() => {
    root = makeSessionsDir();
    const s = FixtureSession.create(root, { sessionId: 'a10000c0ffee', scenario: 'long run' });
    // Each envelope carries a UIA tree of ~60 nodes (a few KB): far more text than the page can hold.
    const tree = Array.from({ length: 60 }, (_, i) => ({
      controlType: 'ListItem',
      name: `Item ${i} <b>&amp;</b>`,
      automationId: `item-${i}`,
      x: i,
      y: i * 20,
      width: 300,
      height: 20,
      children: [],
    }));
    s.manyCalls(9_999, (i) =>
      i % 2 === 0
        ? {
            tool: 'query',
            args: { title: NOTEPAD.title, i },
            result: { window: NOTEPAD, nodeCount: 60, truncated: false, tree },
            ...(i % 1000 === 0 ? { warnings: [{ code: 'tree-truncated', detail: `clip ${i}` }] } : {}),
          }
        : {
            tool: 'find',
            args: { name: `Item ${i}` },
            result: { found: true, element: tree[i % 60], window: NOTEPAD },
          },
    );
    s.call({
      tool: 'invoke',
      args: { name: 'Save' },
      error: { code: 'element-not-found', category: 'no-target', detail: 'No element named Save' },
    });
    s.end({ passed: false });
    s.close();
    dir = s.dir;
  });
  afterAll(() => removeDir(root));

  it('streams every call into a page under 5 MB, clipping envelopes and saying so', async () => {
    const { html } = await writeReport(dir);
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(FIVE_MB);
    expect(count(html, '<details class="call')).toBe(10_000);
    // Thousands of rows: the browser may skip laying out those off screen.
    expect(html).toContain('<div id="timeline" class="long">');
    expect(html).toContain('id="c1"');
    expect(html).toContain('id="c10000"');
    expect(html).toMatch(/The arguments\/envelopes of [\d,]+ call\(s\) are (clipped|left out)/);
    // The failing call keeps its full envelope.
    const failing = html.slice(html.indexOf('id="c10000"'));
    expect(failing.slice(0, failing.indexOf('</details>'))).toContain('"element-not-found"');
  });
});
