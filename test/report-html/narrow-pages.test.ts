/**
 * Every page the project writes fits a 400 px screen with no horizontal scroll, in headless Chromium:
 * index.html (`report --all`: the tables and the scenario selector), diff.html and report.html, written by
 * the built CLI from two recorded demo runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDemo } from '../replay/helpers.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';
import { hasChromium, launchChromium } from './browser.js';

let work: string;
let sessions: string;
let pages: Record<'index' | 'diff' | 'report', string>;
let browser: Browser;

async function cli(args: string[]): Promise<string> {
  const r = await runNode([BUNDLE_CLI, ...args, '-s', sessions]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

beforeAll(async () => {
  if (!hasChromium) return;
  work = tempDir('mcec-narrow-');
  sessions = path.join(work, 'sessions');
  const a = await recordDemo(sessions);
  const b = await recordDemo(sessions);
  const report = await cli(['report', a.sessionId]);
  const index = await cli(['report', '--all']);
  await cli(['diff', a.sessionId, b.sessionId, '-o', path.join(work, 'diff')]);
  pages = { index, diff: path.join(work, 'diff', 'diff.html'), report };
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!hasChromium)('pages at 400 px in headless Chromium', () => {
  for (const name of ['index', 'diff', 'report'] as const) {
    it(`${name}.html has no horizontal scroll`, async () => {
      const context = await browser.newContext({ viewport: { width: 400, height: 800 } });
      try {
        const page = await context.newPage();
        await page.goto(`file://${pages[name]}`, { waitUntil: 'load' });
        const wide = (await page.evaluate(
          `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 401)
             .slice(0, 5).map((e) => e.tagName + (e.id ? '#' + e.id : ''))`,
        )) as string[];
        expect(
          await page.evaluate('document.documentElement.scrollWidth'),
          wide.join(' '),
        ).toBeLessThanOrEqual(400);
      } finally {
        await context.close();
      }
    });
  }
});
