// Session and artifact names are UTC: run in a zone far from it so a local-time slip shows.
process.env.TZ = 'America/Los_Angeles';

import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { longestBase64Run } from '../../src/bundle/scrub.js';
import { TRUNCATION_LINE } from '../../src/bundle/tool-call-log.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { createRecorder } from '../../src/record/index.js';
import { calls, deadPid, FixtureSession } from '../support/fixture-session.js';
import {
  bundleValidators,
  inlineImages,
  type RecordedSession,
  readZip,
  recordMcecSession,
  SECRETS,
  sha256,
  tempDir,
  unzipTest,
  type ZipEntryRead,
} from './helpers.js';

const validators = bundleValidators();

function byName(entries: ZipEntryRead[], top: string): Map<string, ZipEntryRead> {
  return new Map(entries.map((e) => [e.name.slice(top.length + 1), e]));
}

function text(entries: Map<string, ZipEntryRead>, name: string): string {
  const e = entries.get(name);
  if (!e) throw new Error(`${name} is not in the zip`);
  return e.data.toString('utf8');
}

describe('a bundle of a session recorded through the recorder', () => {
  let root: string;
  let rec: RecordedSession;
  let zipPath: string;
  let entries: ZipEntryRead[];
  let files: Map<string, ZipEntryRead>;
  let result: Awaited<ReturnType<typeof buildBundle>>;
  const progress: Array<[number, number]> = [];

  beforeAll(async () => {
    root = tempDir();
    rec = await recordMcecSession(path.join(root, 'sessions'), { extraCaptures: 2 });
    result = await buildBundle(rec.dir, { onProgress: (d, t) => progress.push([d, t]) });
    zipPath = result.bundle;
    entries = await readZip(zipPath);
    files = byName(entries, rec.dirName);
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('writes <sessionsDir>/<dir>.zip and reports what it wrote', () => {
    expect(zipPath).toBe(path.join(rec.sessionsDir, `${rec.dirName}.zip`));
    expect(result.bytes).toBe(fs.statSync(zipPath).size);
    expect(result.files).toBe(entries.length);
    expect(result.verdict).toBe('FAIL');
    expect(result.dropped).toEqual([]);
    // No temp file is left next to it.
    expect(fs.readdirSync(rec.sessionsDir).filter((f) => f.includes('.partial'))).toEqual([]);
    expect(progress.at(-1)?.[0]).toBe(progress.at(-1)?.[1]);
  });

  it('has one top folder with the required files, artifacts and the log, manifest last', () => {
    expect(entries.every((e) => e.name.startsWith(`${rec.dirName}/`))).toBe(true);
    const names = [...files.keys()];
    for (const f of [
      'failure-summary.md',
      'bug-report.md',
      'session.json',
      'tool-calls.jsonl',
      'environment.json',
      'manifest.json',
      'session.sqlite',
    ]) {
      expect(names).toContain(f);
    }
    expect(names.at(-1)).toBe('manifest.json');
    const rest = names.slice(0, -1);
    expect(rest).toEqual([...rest].sort());
    const onDisk = fs.readdirSync(path.join(rec.dir, 'artifacts')).sort();
    expect(names.filter((n) => n.startsWith('artifacts/')).map((n) => n.slice(10))).toEqual(onDisk);
    expect(onDisk.length).toBeGreaterThanOrEqual(4);
  });

  it('passes `unzip -t` and verifyBundle', async () => {
    expect(unzipTest(zipPath)).toMatch(/No errors detected/);
    expect(await verifyBundle(zipPath)).toEqual({ ok: true, problems: [], entries: entries.length });
  });

  it('stores PNGs, deflates text, with one fixed time and mode', () => {
    for (const e of entries) {
      expect(e.compressionMethod).toBe(/\.(png|gif)$/.test(e.name) ? 0 : 8); // images (run.gif too) stored
      expect(e.externalFileAttributes >>> 16).toBe(0o100644);
      expect([e.lastModFileDate, e.lastModFileTime]).toEqual([
        entries[0]!.lastModFileDate,
        entries[0]!.lastModFileTime,
      ]);
    }
    // The DOS time holds the session's start in UTC wall-clock, whatever TZ says.
    const session = JSON.parse(text(files, 'session.json'));
    const start = new Date(session.startedAt);
    const d = entries[0]!.lastModFileDate;
    const t = entries[0]!.lastModFileTime;
    expect([(d >> 9) + 1980, (d >> 5) & 15, d & 31, t >> 11, (t >> 5) & 63]).toEqual([
      start.getUTCFullYear(),
      start.getUTCMonth() + 1,
      start.getUTCDate(),
      start.getUTCHours(),
      start.getUTCMinutes(),
    ]);
  });

  it('lists every other file in the manifest with its size and sha256', () => {
    const manifest = JSON.parse(text(files, 'manifest.json'));
    expect(validators.manifest(manifest)).toEqual([]);
    expect(manifest.bundle).toBe(rec.dirName);
    const listed = manifest.files.map((f: { path: string }) => f.path);
    expect(listed).toEqual([...files.keys()].filter((n) => n !== 'manifest.json').sort());
    for (const f of manifest.files) {
      const e = files.get(f.path)!;
      expect(f.bytes).toBe(e.data.length);
      expect(f.sha256).toBe(sha256(e.data));
    }
    expect(manifest.dropped).toEqual([]);
    expect(manifest.toolCallLog).toMatchObject({ truncated: false, imagesRedacted: 0 });
  });

  it('carries the PNG bytes the server sent, unchanged', () => {
    const pngs = [...files.entries()].filter(([n]) => n.endsWith('.png'));
    for (const [name, e] of pngs) {
      expect(rec.images.has(sha256(e.data)), name).toBe(true);
      expect(e.data.equals(fs.readFileSync(path.join(rec.dir, name)))).toBe(true);
    }
    // Every distinct image the server sent is in the bundle (the recorder dedupes by sha256).
    const inZip = new Set(pngs.map(([, e]) => sha256(e.data)));
    for (const sha of rec.images.keys()) expect(inZip.has(sha)).toBe(true);
  });

  it('has no image bytes and no secrets in any non-image file', () => {
    for (const [name, e] of files) {
      if (name.endsWith('.png')) continue;
      const body = e.data.toString('latin1');
      for (const secret of SECRETS) expect(body.includes(secret), `${secret} in ${name}`).toBe(false);
      if (name.endsWith('.json')) expect(inlineImages(JSON.parse(e.data.toString('utf8'))), name).toBe(0);
      if (name.endsWith('.jsonl')) {
        for (const line of e.data.toString('utf8').trim().split('\n'))
          expect(inlineImages(JSON.parse(line))).toBe(0);
      }
      // report.html embeds small WebP thumbnails as data: URIs by design; nothing else may be base64.
      const rest =
        name === 'report.html' ? body.replace(/data:image\/webp;base64,[A-Za-z0-9+/=]*/g, '') : body;
      if (name === 'report.html') expect(rest).not.toContain('iVBORw0KGgo');
      expect(longestBase64Run(rest), name).toBeLessThan(200);
    }
  });

  it('writes session.json with the existing fields and the verdict', () => {
    const session = JSON.parse(text(files, 'session.json'));
    expect(validators.session(session)).toEqual([]);
    expect(session).toMatchObject({
      sessionId: rec.sessionId,
      scenario: 'save a file in Notepad',
      issue: null,
      passed: false,
      verdict: 'FAIL',
      status: 'ended',
      toolCallLogTruncated: false,
      failingCall: { tool: 'capture', code: 'frame-all-black', category: 'capture-blank' },
    });
    expect(session.lastObservation).not.toMatch(/\n/);
    expect(session.steps.map((s: { name: string }) => s.name)).toEqual([
      'open the Save As dialog',
      'capture the player',
    ]);
    expect(session.artifacts).toEqual([...files.keys()].filter((n) => n.startsWith('artifacts/')));
    expect(session.counts.calls).toBeGreaterThanOrEqual(10);
    expect(Date.parse(session.endedAt)).toBeGreaterThanOrEqual(Date.parse(session.startedAt));
  });

  it('writes environment.json from the log, not from the machine that bundles', () => {
    const env = JSON.parse(text(files, 'environment.json'));
    expect(validators.environment(env)).toEqual([]);
    expect(env).toMatchObject({ sessionId: rec.sessionId, dotnet: null, display: '1920x1080', dpi: 96 });
    expect(env.timestamp).toBe(JSON.parse(text(files, 'session.json')).startedAt);
  });

  it('writes tool-calls.jsonl in the existing format: a request and a response per call', () => {
    const lines = text(files, 'tool-calls.jsonl')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const line of lines) expect(validators.line(line)).toEqual([]);
    const calls = lines.filter((l) => l.method === 'tools/call');
    const session = JSON.parse(text(files, 'session.json'));
    expect(calls.length).toBe(2 * session.counts.calls);
    for (let i = 0; i < calls.length; i += 2) {
      expect([calls[i].direction, calls[i + 1].direction]).toEqual(['request', 'response']);
      expect(calls[i].payload.id).toEqual(calls[i + 1].payload.id);
      expect(calls[i].sessionId).toBe(rec.sessionId);
    }
    // A capture's response as the server sent it: the image block (bytes redacted) then the envelope text.
    const capture = calls.find(
      (l) => l.direction === 'response' && l.payload.result?.content?.[0]?.type === 'image',
    );
    expect(capture.payload.result.content[0].data).toBe('<redacted base64>');
    const envelope = JSON.parse(capture.payload.result.content.at(-1).text);
    expect(envelope.result.kind).toBe('capture-summary');
    expect(files.has(envelope.result.artifact)).toBe(true);
    // The secrets were redacted by the recorder before they were stored.
    const login = calls.find((l) => l.direction === 'request' && l.payload.params.name === 'send_command');
    expect(login.payload.params.arguments.password).not.toBe(SECRETS[0]);
  });

  it('summarizes the failure: code, category, recovery step and image links that resolve in the zip', () => {
    const md = text(files, 'failure-summary.md');
    expect(md.startsWith('# save a file in Notepad; FAIL')).toBe(true);
    expect(md).toContain('frame-all-black');
    expect(md).toContain('capture-blank');
    expect(md).toContain('restore or foreground the window and capture again');
    const links = [...md.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThanOrEqual(2);
    for (const link of links) expect(files.has(link), link).toBe(true);
    const bug = text(files, 'bug-report.md');
    expect(bug).toContain(`${rec.dirName}.zip`);
    expect(bug.length).toBeLessThanOrEqual(65_536);
  });

  it('carries a consistent copy of the log with the same rows as the session', () => {
    const copy = path.join(root, 'copy.sqlite');
    fs.writeFileSync(copy, files.get('session.sqlite')!.data);
    const dump = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return ['session', 'calls', 'warnings', 'artifacts', 'events'].map((t) =>
          db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all(),
        );
      } finally {
        db.close();
      }
    };
    expect(dump(copy)).toEqual(dump(path.join(rec.dir, 'session.sqlite')));
  });

  it('is deterministic: the same session bundled again is byte-identical', async () => {
    const again = await buildBundle(rec.dir, { output: path.join(root, 'again.zip') });
    expect(fs.readFileSync(again.bundle).equals(fs.readFileSync(zipPath))).toBe(true);
  });
});

describe('bundle options', () => {
  let root: string;
  let rec: RecordedSession;

  beforeAll(async () => {
    root = tempDir();
    rec = await recordMcecSession(path.join(root, 'sessions'), { extraCaptures: 6 });
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('--no-images and --no-db leave them out and say so in the manifest', async () => {
    const res = await buildBundle(rec.dir, { output: path.join(root, 'lean.zip'), images: false, db: false });
    const files = byName(await readZip(res.bundle), rec.dirName);
    expect([...files.keys()].some((n) => n.endsWith('.png') || n.endsWith('.sqlite'))).toBe(false);
    const manifest = JSON.parse(text(files, 'manifest.json'));
    expect(validators.manifest(manifest)).toEqual([]);
    const reasons = new Set(manifest.dropped.map((d: { reason: string }) => d.reason));
    expect(reasons).toEqual(new Set(['no-images', 'no-db']));
    expect(manifest.dropped.filter((d: { reason: string }) => d.reason === 'no-images').length).toBe(
      fs.readdirSync(path.join(rec.dir, 'artifacts')).length,
    );
    expect(JSON.parse(text(files, 'session.json')).artifacts).toEqual([]);
    expect((await verifyBundle(res.bundle)).ok).toBe(true);
  });

  it('--max-bytes drops the oldest images first, never the key ones, and lists them', async () => {
    const full = await buildBundle(rec.dir, { output: path.join(root, 'full.zip') });
    const all = fs.readdirSync(path.join(rec.dir, 'artifacts')).sort();
    const sizes = all.map((f) => fs.statSync(path.join(rec.dir, 'artifacts', f)).size);
    // Room for everything but about two and a half images.
    const maxBytes = full.bytes - Math.floor(sizes[0]! + sizes[1]! + sizes[2]! / 2);
    const res = await buildBundle(rec.dir, { output: path.join(root, 'capped.zip'), maxBytes });
    expect(res.bytes).toBeLessThanOrEqual(maxBytes);
    expect(res.dropped.every((d) => d.reason === 'max-bytes')).toBe(true);
    const droppedNames = res.dropped.map((d) => d.path.slice('artifacts/'.length));
    expect(droppedNames.length).toBeGreaterThanOrEqual(2);
    // Oldest first: the dropped ones are a prefix of the droppable ones in time order.
    const files = byName(await readZip(res.bundle), rec.dirName);
    const session = JSON.parse(text(files, 'session.json'));
    const kept = session.artifacts.map((a: string) => a.slice('artifacts/'.length));
    const keyImages = [
      ...text(files, 'failure-summary.md').matchAll(/!\[[^\]]*\]\(artifacts\/([^)]+)\)/g),
    ].map((m) => m[1]!);
    for (const k of keyImages) expect(kept).toContain(k);
    const droppable = all.filter((f) => !keyImages.includes(f));
    expect(droppedNames).toEqual(droppable.slice(0, droppedNames.length));
    const manifest = JSON.parse(text(files, 'manifest.json'));
    expect(validators.manifest(manifest)).toEqual([]);
    expect(manifest.limit).toEqual({ maxBytes, met: true });
    expect(manifest.dropped.map((d: { path: string }) => d.path)).toEqual(res.dropped.map((d) => d.path));
    expect((await verifyBundle(res.bundle)).ok).toBe(true);
  });

  it('--max-bytes below what must stay keeps the key images, says the cap was not met', async () => {
    const res = await buildBundle(rec.dir, { output: path.join(root, 'tiny.zip'), maxBytes: 1000 });
    expect(res.bytes).toBeGreaterThan(1000);
    expect(res.warnings.join(' ')).toMatch(/over --max-bytes/);
    const files = byName(await readZip(res.bundle), rec.dirName);
    const manifest = JSON.parse(text(files, 'manifest.json'));
    expect(manifest.limit).toEqual({ maxBytes: 1000, met: false });
    const md = text(files, 'failure-summary.md');
    for (const m of md.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)) expect(files.has(m[1]!)).toBe(true);
  });

  it('--max-bytes not met names run.gif and session.sqlite when the zip holds them, and how to leave them out', async () => {
    const full = await buildBundle(rec.dir, { output: path.join(root, 'tiny-full.zip'), maxBytes: 1000 });
    const names = new Set((await readZip(full.bundle)).map((e) => e.name.slice(rec.dirName.length + 1)));
    expect(names.has('run.gif') && names.has('session.sqlite')).toBe(true);
    const over = full.warnings.find((w) => w.includes('over --max-bytes'))!;
    expect(over).toMatch(/run\.gif \(\d+ bytes; --no-gif leaves it out\)/);
    expect(over).toMatch(/session\.sqlite \(\d+ bytes; --no-db leaves it out\)/);
    const lean = await buildBundle(rec.dir, {
      output: path.join(root, 'tiny-lean.zip'),
      maxBytes: 1000,
      gif: false,
      db: false,
    });
    const leanOver = lean.warnings.find((w) => w.includes('over --max-bytes'))!;
    expect(leanOver).not.toMatch(/run\.gif|session\.sqlite/);
  });

  it('-o into an existing directory writes <dir>.zip there; a failed build leaves no zip', async () => {
    const out = path.join(root, 'out');
    fs.mkdirSync(out);
    const res = await buildBundle(rec.dir, { output: out });
    expect(res.bundle).toBe(path.join(out, `${rec.dirName}.zip`));
    await expect(
      buildBundle(rec.dir, { output: path.join(root, 'bad.zip'), templatesDir: '/nonexistent' }),
    ).rejects.toThrow(/templates/);
    expect(fs.existsSync(path.join(root, 'bad.zip'))).toBe(false);
    expect(fs.readdirSync(root).filter((f) => f.includes('.partial'))).toEqual([]);
  });

  it('report.html failing while the earlier entries are written fails the build and leaves nothing', async () => {
    // report.html renders while artifacts/ are written; a template that throws mid-render must stop the zip.
    const custom = path.join(root, 'broken-templates');
    fs.mkdirSync(custom, { recursive: true });
    fs.writeFileSync(path.join(custom, 'report.html.hbs'), '<p>{{noSuchHelper title}}</p>');
    const out = path.join(root, 'broken.zip');
    await expect(buildBundle(rec.dir, { output: out, templatesDir: custom })).rejects.toThrow(
      /report\.html\.hbs.*noSuchHelper/,
    );
    expect(fs.existsSync(out)).toBe(false);
    expect(fs.readdirSync(root).filter((f) => f.includes('.partial'))).toEqual([]);
  });

  it('an image that vanishes while the zip is written fails the build and leaves nothing behind', async () => {
    const copy = path.join(root, 'vanish', rec.dirName);
    fs.cpSync(rec.dir, copy, { recursive: true });
    const last = fs.readdirSync(path.join(copy, 'artifacts')).sort().at(-1)!;
    const out = path.join(root, 'vanish', 'out.zip');
    let removed = false;
    const build = buildBundle(copy, {
      output: out,
      gif: false, // run.gif holds bug-report.md back: the images would be zipped before a progress call
      onProgress: () => {
        // Once the zip is being written (its .partial exists), take a later entry's file away.
        const writing = fs.readdirSync(path.dirname(out)).some((f) => f.endsWith('.partial'));
        if (!removed && writing) {
          fs.rmSync(path.join(copy, 'artifacts', last));
          removed = true;
        }
      },
    });
    await expect(build).rejects.toThrow(/ENOENT/);
    expect(removed).toBe(true);
    expect(
      fs.readdirSync(path.dirname(out)).filter((f) => f.endsWith('.zip') || f.endsWith('.partial')),
    ).toEqual([]);
  });

  it('refuses a dir that is not a session and a bad maxBytes', async () => {
    await expect(buildBundle(root)).rejects.toThrow(/not a session dir/);
    await expect(buildBundle(rec.dir, { maxBytes: -5 })).rejects.toThrow(/maxBytes/);
  });
});

describe('bundling from the log alone', () => {
  let root: string;
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('caps tool-calls.jsonl at 8 MB with the existing truncation line', async () => {
    root = tempDir();
    const s = FixtureSession.create(root, { scenario: 'long run' });
    const filler = 'x'.repeat(3000);
    s.manyCalls(4000, (i) => ({
      tool: 'query',
      args: { window: 'Save As', i },
      result: { note: filler, i },
    }));
    s.end({ passed: true });
    s.close();
    const res = await buildBundle(s.dir, { db: false, images: false });
    const files = byName(await readZip(res.bundle), s.dirName);
    const log = files.get('tool-calls.jsonl')!.data;
    expect(log.length).toBeLessThanOrEqual(8 * 1024 * 1024);
    const lines = log.toString('utf8').trim().split('\n');
    expect(lines.at(-1)).toBe(TRUNCATION_LINE);
    expect(lines.slice(0, -1).every((l) => JSON.parse(l).direction !== undefined)).toBe(true);
    const session = JSON.parse(text(files, 'session.json'));
    expect(session.toolCallLogTruncated).toBe(true);
    expect(session.verdict).toBe('PASS');
    expect(JSON.parse(text(files, 'manifest.json')).toolCallLog.truncated).toBe(true);
  });

  it('replaces image bytes a log should never hold, inside envelope text too', async () => {
    const dir = tempDir();
    try {
      const s = FixtureSession.create(dir);
      const png = (await s.writePng(40, 30)).artifact;
      const b64 = fs.readFileSync(path.join(s.dir, png)).toString('base64');
      // A legacy send_command result holding a capture, as JSON inside a string, with the server's \u002B escaping.
      const legacy = JSON.stringify({ success: true, data: { base64: b64 } })
        .split('+')
        .join('\\u002B');
      s.call({ tool: 'send_command', args: { command: 'capture' }, result: { output: legacy } });
      s.call({ tool: 'capture', args: { window: 'x' }, result: { base64: b64, width: 40, height: 30 } });
      s.end();
      s.close();
      const res = await buildBundle(s.dir);
      const files = byName(await readZip(res.bundle), s.dirName);
      const log = text(files, 'tool-calls.jsonl');
      expect(log).toContain('<redacted base64>');
      for (const line of log.trim().split('\n')) expect(inlineImages(JSON.parse(line))).toBe(0);
      expect(longestBase64Run(log)).toBeLessThan(100);
      expect(JSON.parse(text(files, 'manifest.json')).toolCallLog.imagesRedacted).toBe(2);
      // The log itself holds the bytes (planted past the recorder): verify says so, and only about the log copy.
      const checked = await verifyBundle(res.bundle);
      expect(checked.problems).toEqual([
        `${s.dirName}/session.sqlite: holds base64 image bytes (a run starting "iVBORw0KGgo")`,
      ]);
      const withoutDb = await buildBundle(s.dir, { db: false, output: path.join(dir, 'no-db.zip') });
      expect((await verifyBundle(withoutDb.bundle)).ok).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('logs in any state', () => {
  const root = tempDir();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('bundles a session while the recorder is still writing it', async () => {
    const sessionsDir = path.join(root, 'live');
    const recorder = createRecorder({ sessionsDir, scenario: 'still running', stderr: () => {} });
    const sid = 'a11ve0000001';
    const dispatch = recorder.wrap(async (tool: string, _args: Record<string, unknown>) => ({
      content: [{ type: 'text', text: JSON.stringify({ ok: true, sessionId: sid, result: { tool } }) }],
      isError: false,
    }));
    for (let i = 0; i < 50; i++) await dispatch('find', { sessionId: sid, value: `item ${i}` });
    await recorder.flush();
    const dir = path.join(sessionsDir, fs.readdirSync(sessionsDir)[0]!);
    // Keep recording while the bundle is built.
    const more = (async () => {
      for (let i = 0; i < 200; i++) await dispatch('query', { sessionId: sid, window: `w${i}` });
      await recorder.flush();
    })();
    const res = await buildBundle(dir, { output: path.join(root, 'live.zip') });
    await more;
    expect((await verifyBundle(res.bundle)).ok).toBe(true);
    const files = byName(await readZip(res.bundle), path.basename(dir));
    const session = JSON.parse(text(files, 'session.json'));
    expect(session.status).toBe('open');
    expect(session.counts.calls).toBeGreaterThanOrEqual(50);
    // The log copy is a snapshot that SQLite opens, holding at least what the summary saw.
    const copy = path.join(root, 'live.sqlite');
    fs.writeFileSync(copy, files.get('session.sqlite')!.data);
    const db = new Database(copy, { readonly: true });
    const n = (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n;
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    expect(n).toBeGreaterThanOrEqual(50);
    await recorder.close();
  });

  it('carries a snapshot of a finished log, not its file: same rows, no history', async () => {
    const s = FixtureSession.create(path.join(root, 'done'), { writerPid: deadPid(), status: 'open' });
    s.call(calls.findSave());
    s.end({ passed: true });
    s.close();
    const res = await buildBundle(s.dir, { output: path.join(root, 'done.zip') });
    const files = byName(await readZip(res.bundle), s.dirName);
    const copy = path.join(root, 'done-copy.sqlite');
    fs.writeFileSync(copy, files.get('session.sqlite')!.data);
    const rows = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare('SELECT seq, tool, status FROM calls ORDER BY seq').all();
      } finally {
        db.close();
      }
    };
    expect(rows(copy)).toEqual(rows(path.join(s.dir, 'session.sqlite')));
    expect(rows(copy)).toHaveLength(1);
  });
});
