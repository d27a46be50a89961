/** Headless Debian Chromium driven by playwright-core (never a downloaded browser). */
import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** The browser binary: Debian's chromium (CI installs it), or MCEC_CHROMIUM. */
export const CHROMIUM = process.env.MCEC_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);
// Locally a missing browser skips the browser suites (with SKIP_MESSAGE); in CI it is a failure, never a skip.
if (!hasChromium && process.env.CI)
  throw new Error(
    `${CHROMIUM} not found: CI must install Debian's chromium (.ci/run does), or set MCEC_CHROMIUM`,
  );
export const SKIP_MESSAGE = `report.html browser tests skipped: ${CHROMIUM} not found (CI installs Debian's chromium)`;

/** Launch headless Chromium; playwright gives every launch a fresh temporary profile (user data dir). */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    // A clock-shifted run (faketime's LD_PRELOAD) tests the recorder's dates, not the browser's: Chromium runs
    // on the real clock.
    env: browserEnv(),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** This process's environment less faketime's preload and settings. */
function browserEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== 'LD_PRELOAD' && !k.startsWith('FAKETIME')) env[k] = v;
  }
  return env;
}

/** What a page did while loading: console errors, uncaught exceptions, every request URL. */
export interface PageLog {
  errors: string[];
  requests: string[];
}

/** Open a page that records console errors, page errors and requests. */
export async function openLogged(
  context: BrowserContext,
  url: string,
): Promise<{ page: Page; log: PageLog }> {
  const log: PageLog = { errors: [], requests: [] };
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') log.errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => log.errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => log.requests.push(r.url()));
  await page.goto(url, { waitUntil: 'load' });
  return { page, log };
}

/** Requests to anything but the page's own file:// and data: URLs. */
export function externalRequests(log: PageLog): string[] {
  return log.requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'));
}

/** Seqs of the timeline rows that are not hidden by the filters. */
export function visibleSeqs(page: Page): Promise<number[]> {
  return page.$$eval('#timeline > details.call', (rows) =>
    rows.filter((r) => !(r as unknown as { hidden: boolean }).hidden).map((r) => Number(r.id.slice(1))),
  );
}

/**
 * Every <img> on the page with its decoded width, but the player's stage (it shows one of these thumbnails);
 * the tests' tsconfig has no DOM lib, hence the casts.
 */
export function images(page: Page): Promise<Array<{ src: string; naturalWidth: number }>> {
  return page.$$eval('img:not(#p-img)', (list) =>
    list.map((el) => {
      const img = el as unknown as { src: string; naturalWidth: number };
      return { src: img.src.slice(0, 30), naturalWidth: img.naturalWidth };
    }),
  );
}
