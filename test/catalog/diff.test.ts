/**
 * `mcec-bundle diff` on three demo runs (two passing, the player's capture fixed; one failing as the demo
 * does): `--last-pass` picks the newer passing run, names the divergent call (the player's capture) with
 * both calls' arguments and outcomes, and measures the screenshot difference with a diff PNG beside
 * diff.html. Also: the alignment itself, UI tree differences, --exit-code, and the JSON schema.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SCENARIO, runDemo } from '../../src/demo/run-demo.js';
import { alignKeys, diffTrees, type SessionDiff } from '../../src/fleet/diff.js';
import { createSimulator } from '../../src/sim/index.js';
import { externalRequests, hasChromium, launchChromium, openLogged } from '../report-html/browser.js';
import { cli, scratchRoot, validator } from './helpers.js';

describe('diff: three demo runs, two passing and one failing', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  const runs: Array<{ sessionId: string; dir: string; passed: boolean }> = [];
  const validate = validator('diff.schema.json');
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  beforeAll(async () => {
    fs.mkdirSync(sessionsDir);
    for (const passing of [true, true, false]) {
      const simulator = createSimulator({ sessionsRoot: path.join(root, 'sim') });
      // A passing run: the player shows a picture (the demo's player is a protected, black surface).
      for (const w of simulator.desktop.windows())
        if (passing && w.blankCapture) simulator.desktop.setBlankCapture(w, false);
      // Its own runDemo, not test/support/demo-session.ts: passing runs need a simulator with the player fixed.
      const res = await runDemo({ sessionsDir, simulator, stderr: () => {} });
      runs.push({ sessionId: res.sessionId, dir: res.sessionDir, passed: res.verdict === 'PASS' });
    }
  }, 240_000);

  it('--last-pass names the divergent call and shows the screenshot difference', async () => {
    expect(runs.map((r) => r.passed)).toEqual([true, true, false]);
    const failing = runs[2]!;
    const res = cli(['diff', failing.sessionId, '--last-pass', '--json', '--sessions', sessionsDir]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const d = JSON.parse(res.stdout) as SessionDiff;
    expect(validate(d)).toEqual([]);
    expect(d.a.sessionId).toBe(runs[1]!.sessionId); // the latest passing run, not the first
    expect([d.a.verdict, d.b.verdict, d.a.scenario]).toEqual(['PASS', 'FAIL', DEMO_SCENARIO]);
    const f = d.firstDivergence!;
    expect(f.kind).toBe('changed');
    expect([f.a?.tool, f.b?.tool]).toEqual(['capture', 'capture']);
    expect(f.a?.args).toContain('Video Player');
    expect(f.b?.args).toBe(f.a?.args);
    expect([f.a?.status, f.b?.status, f.b?.code]).toEqual(['ok', 'failed', 'frame-all-black']);
    expect(d.summary.changed).toBe(1);
    expect(d.differs).toBe(true);

    const player = d.screenshots.find((s) => s.aSeq === f.a!.seq)!;
    expect(player.changedShare).toBeGreaterThan(0.05); // the picture against black; identical captures give 0
    expect(player.diffImage).toMatch(/^diff-\d+-\d+\.png$/);
    const png = path.join(d.outDir!, player.diffImage!);
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', player.width, player.height]);
    // The same window captured alike in both runs differs by nothing.
    const notepad = d.screenshots.find((s) => s.aSeq !== f.a!.seq)!;
    expect(notepad.changedPixels).toBe(0);

    const html = fs.readFileSync(path.join(d.outDir!, 'diff.html'), 'utf8');
    expect(html).toMatch(
      /^<!doctype html>\s*<html lang="en">\s*<head>\s*<meta charset="utf-8">\s*<meta http-equiv="Content-Security-Policy" content="default-src 'none';/,
    );
    expect(html).toContain('frame-all-black');
    expect(html).toContain(`href="${player.diffImage}"`);
    expect(html).not.toMatch(/data:image\/png|iVBORw0KGgo/); // thumbnails are WebP, full images are links
    expect(html).not.toMatch(/<script/i);

    const text = cli(['diff', failing.sessionId, '--last-pass', '--sessions', sessionsDir]).stdout;
    expect(text).toMatch(/First divergence/);
    expect(text).toMatch(/B: #\d+ capture .*Video Player[\s\S]*failed frame-all-black \(capture-blank\)/);
    expect(text).toMatch(/capture A#\d+ \/ B#\d+: \d+\.\d+% of \d+x\d+ pixels changed/);
  });

  it('a PNG bomb (16383 x 16383 claimed) is not decoded: the pair is reported not compared', async () => {
    const bombs = path.join(root, 'bombs');
    const [a, b] = [runs[0]!, runs[1]!].map((r) => {
      const to = path.join(bombs, path.basename(r.dir));
      fs.cpSync(r.dir, to, { recursive: true });
      return to;
    });
    // A PNG whose header claims 16383 x 16383 pixels, its data cut short: only a decoder would notice.
    const bomb = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    bomb.writeUInt32BE(16383, 16);
    bomb.writeUInt32BE(16383, 20);
    const { crc32 } = await import('node:zlib');
    bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)) >>> 0, 29);
    for (const dir of [a!, b!]) {
      for (const f of fs.readdirSync(path.join(dir, 'artifacts')).filter((n) => n.endsWith('.png')))
        fs.writeFileSync(path.join(dir, 'artifacts', f), bomb);
    }
    const { diffSessions } = await import('../../src/fleet/diff.js');
    const t = performance.now();
    const d = await diffSessions(a!, b!, {});
    expect(performance.now() - t).toBeLessThan(30_000);
    expect(d.screenshots.length).toBeGreaterThan(0);
    for (const shot of d.screenshots)
      expect(shot.note).toMatch(/not compared: A is 16383x16383, over the cap/);
  });

  it('--exit-code: 1 when the runs differ, 0 when they match; bad usage is 2', () => {
    const [p1, p2, failing] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];
    expect(
      cli(['diff', failing.sessionId, '--last-pass', '--exit-code', '--sessions', sessionsDir]).code,
    ).toBe(1);
    const same = cli([
      'diff',
      p1.sessionId,
      p2.sessionId,
      '--exit-code',
      '--json',
      '--sessions',
      sessionsDir,
    ]);
    expect(same.code).toBe(0);
    const d = JSON.parse(same.stdout) as SessionDiff;
    expect([d.firstDivergence, d.differs]).toEqual([null, false]);
    expect(cli(['diff', p1.sessionId, '--sessions', sessionsDir]).code).toBe(2);
    // Nothing to compare with is bad usage (2), never "the runs differ" (1).
    const first = cli(['diff', p1.sessionId, '--last-pass', '--exit-code', '--sessions', sessionsDir]);
    expect(first.code).toBe(2);
    expect(first.stderr).toMatch(/no passing run of scenario/);
  });

  it('two session dirs given by their paths need no sessions dir: the diff goes beside B', () => {
    const [p1, p2] = runs as [(typeof runs)[0], (typeof runs)[0]];
    const elsewhere = path.join(root, 'elsewhere'); // no ./sessions here
    fs.mkdirSync(elsewhere);
    const res = cli(['diff', p1.dir, p2.dir, '--json'], { cwd: elsewhere });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout) as SessionDiff).toMatchObject({ differs: false });
    const out = path.join(sessionsDir, 'diffs', `${path.basename(p1.dir)}--${path.basename(p2.dir)}`);
    expect(fs.existsSync(path.join(out, 'diff.html'))).toBe(true);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });
});

describe.skipIf(!hasChromium)('index page: mcec-bundle report --all over the demo runs, in Chromium', () => {
  it('lists every session with its verdict, filters them, and links each report.html; no request leaves the page', async () => {
    const root = scratchRoot();
    try {
      const sessionsDir = path.join(root, 'sessions');
      fs.mkdirSync(sessionsDir);
      const ids: string[] = [];
      for (const passing of [true, false]) {
        const simulator = createSimulator({ sessionsRoot: path.join(root, 'sim') });
        for (const w of simulator.desktop.windows())
          if (passing && w.blankCapture) simulator.desktop.setBlankCapture(w, false);
        // Its own runDemo (not the shared demo session): the passing run needs a simulator with the player fixed.
        ids.push((await runDemo({ sessionsDir, simulator, stderr: () => {} })).sessionId);
      }
      const res = cli(['report', '--all', '--sessions', sessionsDir]);
      expect(res.code, res.stderr).toBe(0);
      const file = res.stdout.trim();
      expect(file).toBe(path.join(sessionsDir, 'index.html'));
      const html = fs.readFileSync(file, 'utf8');
      expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none';/);
      const browser = await launchChromium();
      try {
        const context = await browser.newContext();
        const { page, log } = await openLogged(context, `file://${file}`);
        expect(log.errors).toEqual([]);
        expect(externalRequests(log)).toEqual([]);
        const visible = () =>
          page.$$eval('#sessions tbody tr', (rows) =>
            rows
              .filter((r) => !(r as unknown as { hidden: boolean }).hidden)
              .map((r) => r.getAttribute('data-verdict')),
          );
        expect((await visible()).sort()).toEqual(['FAIL', 'PASS']);
        await page.selectOption('#f-verdict', 'FAIL');
        expect(await visible()).toEqual(['FAIL']);
        const links = await page.$$eval('#sessions a', (as) => as.map((a) => a.getAttribute('href')));
        for (const l of links) expect(l).toMatch(/report\.html$/);
        for (const l of links)
          expect(fs.existsSync(path.join(sessionsDir, decodeURIComponent(l!)))).toBe(true);
        expect(await page.textContent('#triage')).toContain('frame-all-black');
        await context.close();
      } finally {
        await browser.close();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('diff: alignment and UI trees', () => {
  it('aligns by the longest common subsequence and keeps every call once', () => {
    const a = ['start', 'windows', 'query', 'find', 'invoke', 'capture', 'end'];
    const b = ['start', 'windows', 'focus', 'query', 'find', 'find', 'capture', 'end'];
    const pairs = alignKeys(a, b);
    const matched = pairs.filter(([i, j]) => i !== null && j !== null).map(([i]) => a[i!]);
    expect(matched).toEqual(['start', 'windows', 'query', 'find', 'capture', 'end']);
    expect(pairs.filter(([i]) => i !== null).map(([i]) => i)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(pairs.filter(([, j]) => j !== null).map(([, j]) => j)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('names nodes added, removed and renamed', () => {
    const tree = (save: string, extra: boolean) => ({
      controlType: 'Window',
      name: 'Save As',
      children: [
        { controlType: 'Button', automationId: '1', name: save, children: [] },
        { controlType: 'Button', name: 'Cancel', children: [] },
        ...(extra ? [{ controlType: 'CheckBox', name: 'Hide folders', children: [] }] : []),
      ],
    });
    const d = diffTrees(tree('Save', false), tree('Speichern', true));
    expect(d.added).toEqual(["CheckBox 'Hide folders' at /CheckBox[0]"]);
    expect(d.removed).toEqual([]);
    expect(d.renamed).toEqual([{ node: '/Button#1', from: 'Save', to: 'Speichern' }]);
  });
});
