import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planThumbnails, type ThumbnailRequest } from '../../src/report/html/thumbnails.js';
import { noisePng, pngSize, windowPng } from '../support/images.js';
import { tempDir } from '../support/temp.js';

describe('planThumbnails', () => {
  let dir: string;
  let requests: ThumbnailRequest[];

  beforeAll(async () => {
    dir = tempDir('mcec-');
    requests = [];
    for (let i = 0; i < 12; i++) {
      const file = path.join(dir, `capture-${i}.png`);
      fs.writeFileSync(file, await noisePng(640, 400, i + 7));
      requests.push({ key: `artifacts/capture-${i}.png`, file, priority: i === 0, order: i });
    }
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('makes 320 px thumbnails when they fit, never wider than the source, never taller than twice the width', async () => {
    const tall = path.join(dir, 'tall.png');
    fs.writeFileSync(tall, await windowPng('tall', { width: 200, height: 1200 }));
    const plan = await planThumbnails(
      [...requests.slice(0, 2), { key: 'artifacts/tall.png', file: tall, priority: false, order: 99 }],
      10_000_000,
    );
    expect(plan.width).toBe(320);
    expect(plan.omitted).toBe(0);
    expect(plan.thumbs.get('artifacts/capture-1.png')).toMatchObject({ width: 320, height: 200 });
    // 200x1200 fits into 320x640 as 107x640 (rounded by sharp).
    const t = plan.thumbs.get('artifacts/tall.png')!;
    expect(t.height).toBe(640);
    expect(t.width).toBeGreaterThanOrEqual(106);
    expect(t.width).toBeLessThanOrEqual(107);
    for (const thumb of plan.thumbs.values())
      expect(thumb.src.startsWith('data:image/webp;base64,UklGR')).toBe(true);
    expect(plan.bytes).toBe([...plan.thumbs.values()].reduce((n, x) => n + x.src.length, 0));
  });

  it('goes narrower, then keeps priority and the newest when the budget is small', async () => {
    const wide = await planThumbnails(requests, 10_000_000);
    const perImage320 = wide.bytes / wide.thumbs.size;

    const narrower = await planThumbnails(requests, Math.floor(perImage320 * 12 * 0.5));
    expect(narrower.width).toBeLessThan(320);
    expect(narrower.thumbs.size).toBe(12);
    expect(narrower.bytes).toBeLessThanOrEqual(perImage320 * 12 * 0.5);

    const few = await planThumbnails(requests, 3_000);
    expect(few.width).toBe(80);
    expect(few.bytes).toBeLessThanOrEqual(3_000 + [...few.thumbs.values()][0]!.src.length);
    expect(few.thumbs.has('artifacts/capture-0.png')).toBe(true); // priority, although the oldest
    expect(few.omitted).toBe(12 - few.thumbs.size);
    expect(few.omitted).toBeGreaterThan(0);
    const kept = [...few.thumbs.keys()].filter((k) => k !== 'artifacts/capture-0.png');
    const newest = requests
      .slice(1)
      .sort((a, b) => b.order - a.order)
      .slice(0, kept.length)
      .map((r) => r.key);
    expect(kept.sort()).toEqual(newest.sort());
  });

  it('reports missing, undecodable and non-regular files instead of failing', async () => {
    const notImage = path.join(dir, 'not-an-image.png');
    fs.writeFileSync(notImage, 'this is not a PNG');
    const link = path.join(dir, 'link.png');
    fs.symlinkSync(requests[1]!.file, link);
    const plan = await planThumbnails(
      [
        requests[1]!,
        { key: 'artifacts/missing.png', file: path.join(dir, 'missing.png'), priority: true, order: 1 },
        { key: 'artifacts/not-an-image.png', file: notImage, priority: false, order: 2 },
        { key: 'artifacts/link.png', file: link, priority: false, order: 3 },
      ],
      10_000_000,
    );
    expect(plan.thumbs.size).toBe(1);
    expect(plan.failed.get('artifacts/missing.png')).toBe('image file missing');
    expect(plan.failed.get('artifacts/not-an-image.png')).toMatch(/^not decodable: /);
    expect(plan.failed.get('artifacts/not-an-image.png')).not.toContain(dir);
    expect(plan.failed.get('artifacts/link.png')).toBe('not a regular file');
    expect(plan.omitted).toBe(0);
  });

  it('does nothing for no images', async () => {
    const plan = await planThumbnails([], 1000);
    expect(plan).toMatchObject({ width: 0, omitted: 0, bytes: 0 });
    expect(plan.thumbs.size).toBe(0);
    expect(pngSize(await noisePng(3, 2, 1))).toEqual({ width: 3, height: 2 });
  });
});
