import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionReader } from '../../src/store/session-reader.js';
import { type RecordedSession, readZip, recordMcecSession, sha256, tempDir } from '../bundle/helpers.js';
import { removeDir } from '../support/fixture-session.js';
import { externalRequests, hasChromium, images, launchChromium, openLogged, visibleSeqs } from './browser.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist/cli/mcec-bundle.js');
const SCREENSHOT = path.join(ROOT, 'test-results/report-html-bundle.png');

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: ROOT, timeout: 60_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('report.html from mcec-bundle (a session recorded by the recorder against the simulator)', () => {
  let work: string;
  let rec: RecordedSession;
  let browser: Browser | undefined;
  let failedSeqs: number[];

  beforeAll(async () => {
    work = tempDir();
    const sessionsDir = path.join(work, 'sessions');
    fs.mkdirSync(sessionsDir);
    [rec, browser] = await Promise.all([
      recordMcecSession(sessionsDir, { extraCaptures: 3 }),
      hasChromium ? launchChromium() : Promise.resolve(undefined),
    ]);
    const reader = SessionReader.open(rec.dir);
    try {
      failedSeqs = [...reader.calls()].filter((c) => c.status !== 'ok').map((c) => c.seq);
    } finally {
      reader.close();
    }
  });
  afterAll(async () => {
    await browser?.close();
    removeDir(work);
  });

  it('`mcec-bundle report <id>` writes report.html into the session dir and prints its path', () => {
    const res = cli(['report', rec.sessionId.slice(0, 6), '--sessions', rec.sessionsDir]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(path.join(rec.dir, 'report.html'));
    const html = fs.readFileSync(path.join(rec.dir, 'report.html'), 'utf8');
    expect(html).toContain('frame-all-black');
    expect(html.split('<details class="call').length - 1).toBe(13);

    const missing = cli(['report', 'ffffffffffff', '--sessions', rec.sessionsDir]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no session matching/);
    // A path is a session dir to look at (as mcec-replay takes it): one that is not there is not found (1).
    const notThere = cli(['report', '../etc', '--sessions', rec.sessionsDir]);
    expect(notThere.code).toBe(1);
    expect(notThere.stderr).toMatch(/etc: no such directory; give a session dir, a session id/);
    const help = cli(['report', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('report.html');
  });

  it('puts the same report.html in the bundle: top folder, listed in the manifest, verified', async () => {
    const zip = path.join(work, 'bug.zip');
    const res = cli([rec.sessionId, '--sessions', rec.sessionsDir, '-o', zip]);
    expect(res.code).toBe(0);
    const entries = await readZip(zip);
    const report = entries.find((e) => e.name === `${rec.dirName}/report.html`);
    expect(report).toBeDefined();
    expect(report!.data.toString('utf8')).toBe(fs.readFileSync(path.join(rec.dir, 'report.html'), 'utf8'));
    const manifest = JSON.parse(
      entries.find((e) => e.name === `${rec.dirName}/manifest.json`)!.data.toString('utf8'),
    );
    expect(manifest.files).toContainEqual({
      path: 'report.html',
      bytes: report!.data.length,
      sha256: sha256(report!.data),
    });
    expect(cli(['verify', zip]).code).toBe(0);
  });

  it.skipIf(!hasChromium)(
    'opens from the unzipped bundle: no errors, no network, images resolve beside it',
    async () => {
      const zip = path.join(work, 'bug.zip');
      if (!fs.existsSync(zip))
        expect(cli([rec.sessionId, '--sessions', rec.sessionsDir, '-o', zip]).code).toBe(0);
      const out = path.join(work, 'unzipped');
      const unzip = spawnSync('unzip', ['-q', zip, '-d', out], { encoding: 'utf8' });
      expect(unzip.status).toBe(0);
      const page = path.join(out, rec.dirName, 'report.html');
      const html = fs.readFileSync(page, 'utf8');
      const hrefs = [...html.matchAll(/href="(artifacts\/[^"]+)"/g)].map((m) => m[1]!);
      expect(hrefs.length).toBeGreaterThan(0);
      for (const href of hrefs)
        expect(fs.existsSync(path.join(out, rec.dirName, decodeURIComponent(href)))).toBe(true);

      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      try {
        const { page: tab, log } = await openLogged(context, pathToFileURL(page).href);
        expect(await tab.isVisible('#failing')).toBe(true);
        expect(await tab.textContent('#failing')).toContain('frame-all-black');
        await tab.check('#f-failed');
        expect(await visibleSeqs(tab)).toEqual(failedSeqs);
        await tab.uncheck('#f-failed');
        await tab.fill('#f-q', 'unknown-command');
        expect(await visibleSeqs(tab)).toEqual([6]);
        await tab.fill('#f-q', '');
        const imgs = await images(tab);
        expect(imgs.length).toBeGreaterThanOrEqual(4);
        for (const img of imgs) expect(img.naturalWidth).toBeGreaterThan(0);
        fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
        await tab.screenshot({ path: SCREENSHOT, fullPage: true });
        expect(log.errors).toEqual([]);
        expect(externalRequests(log)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});
