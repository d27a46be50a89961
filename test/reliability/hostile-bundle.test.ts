/**
 * A bundle whose session.sqlite was rewritten by an attacker, with the manifest's hashes made consistent:
 * the log is data, never code. Through the built CLIs: `verify` fails it, `mcec-replay` and `triage
 * --bundles` refuse it within seconds, and the temp dirs of killed runs are removed by the next run. A
 * bundle holding entry names Windows would take as other names (a stream, a device, a trailing dot, two
 * names of one file) is refused by `verify` and `mcec-replay` wherever they run. A session dir copied in
 * from elsewhere is as foreign: its log's schema is checked at every open, before any query.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { foreignLogProblem } from '../../src/store/foreign-log.js';
import { rawZip, readZip, sha256, tempDir, type ZipEntryRead } from '../bundle/helpers.js';
import { calls, deadPid, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, ROOT, runNode } from '../support/programs.js';
import { removeDir } from '../support/temp.js';
import { reportFigure } from './helpers.js';

const REPLAY_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-replay.js');

let root: string;
let good: string;
/** The session dir `good` was built from. */
let goodDir: string;

/**
 * Rewrite the good bundle with yazl: `change` edits its entries (names and bytes); the manifest then lists
 * every file under the top folder with its size and sha256, so only what `change` did can be at fault.
 */
async function rewrittenBundle(
  name: string,
  change: (entries: ZipEntryRead[]) => ZipEntryRead[],
): Promise<string> {
  const entries = change(await readZip(good));
  const manifest = entries.find((e) => e.name.endsWith('/manifest.json'))!;
  const top = manifest.name.slice(0, manifest.name.indexOf('/'));
  const doc = JSON.parse(manifest.data.toString('utf8')) as {
    files: Array<{ path: string; bytes: number; sha256: string }>;
  };
  doc.files = entries
    .filter((e) => e !== manifest && e.name.startsWith(`${top}/`))
    .map((e) => ({ path: e.name.slice(top.length + 1), bytes: e.data.length, sha256: sha256(e.data) }));
  manifest.data = Buffer.from(JSON.stringify(doc, null, 2));
  const { ZipFile } = await import('yazl');
  const zip = new ZipFile();
  for (const e of entries) zip.addBuffer(e.data, e.name, { compressionLevel: 9 });
  zip.end();
  const file = path.join(root, 'hostile', `${name}.zip`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await new Promise<void>((resolve, reject) => {
    zip.outputStream.pipe(fs.createWriteStream(file)).on('close', resolve).on('error', reject);
  });
  return file;
}

/** Rewrite a bundle: `tamper` changes its log (a copy on disk); the manifest's sizes and hashes follow. */
async function tamperedBundle(name: string, tamper: (db: Database.Database) => void): Promise<string> {
  const scratch = path.join(root, `${name}.sqlite`);
  return rewrittenBundle(name, (entries) => {
    const log = entries.find((e) => e.name.endsWith('/session.sqlite'))!;
    fs.writeFileSync(scratch, log.data);
    const db = new Database(scratch);
    tamper(db);
    db.close();
    log.data = fs.readFileSync(scratch);
    return entries;
  });
}

/** `calls` renamed away and a view of that name that never ends (a recursive query). */
function recursiveView(db: Database.Database): void {
  db.exec(`ALTER TABLE calls RENAME TO calls_real;
    CREATE VIEW calls AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
      SELECT c.* FROM calls_real c, n;`);
}

/** A view whose every row carries 400 MB strings. */
function hugeStrings(db: Database.Database): void {
  db.exec(`ALTER TABLE calls RENAME TO calls_real;
    CREATE VIEW calls AS SELECT seq, tool, printf('%.*c', 400000000, 'x') AS args, rpc_id, transport,
      started_at, ended_at, duration_ms, status, ok, error_code, error_category,
      printf('%.*c', 400000000, 'y') AS error_detail, output_kind, printf('%.*c', 400000000, 'z') AS envelope,
      response, violations, payload_dropped, writer FROM calls_real;`);
}

beforeAll(async () => {
  root = tempDir('mcec-hostile-bundle-');
  const sessionsDir = path.join(root, 'sessions');
  const s = FixtureSession.create(sessionsDir);
  s.call(calls.displays());
  s.call(calls.findSave());
  s.call(calls.ambiguousFind());
  s.end();
  goodDir = s.dir;
  good = (await buildBundle(s.dir, { output: path.join(root, 'good.zip') })).bundle;
}, 120_000);

afterAll(() => removeDir(root));

describe('a bundle whose log is not ours', () => {
  it('is refused by the check for a view, a trigger, an extra or changed table, and passes as built', async () => {
    const problem = async (name: string, tamper: (db: Database.Database) => void) => {
      const zip = await tamperedBundle(name, tamper);
      const entries = await readZip(zip);
      const file = path.join(root, `${name}-check.sqlite`);
      fs.writeFileSync(file, entries.find((e) => e.name.endsWith('/session.sqlite'))!.data);
      return foreignLogProblem(file);
    };
    expect(await problem('same', () => {})).toBeNull();
    expect(await problem('view', recursiveView)).toMatch(/view "calls".*no views or triggers/);
    expect(
      await problem('trigger', (db) =>
        db.exec('CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM calls; END'),
      ),
    ).toMatch(/trigger "t"/);
    expect(await problem('extra', (db) => db.exec('CREATE TABLE extra (x)'))).toMatch(/table "extra"/);
    expect(
      await problem('generated', (db) =>
        db.exec(
          "ALTER TABLE calls RENAME TO c0; CREATE TABLE calls AS SELECT * FROM c0; DROP TABLE c0; ALTER TABLE calls ADD COLUMN g TEXT AS (printf('%.*c', 400000000, 'x'))",
        ),
      ),
    ).toMatch(/table "calls"|index/);
    expect(await problem('version', (db) => db.pragma('user_version = 99'))).toMatch(/version 99/);
    // A value over the cap (measured from the record header, never loaded).
    const big = path.join(root, 'big.sqlite');
    fs.copyFileSync(path.join(root, 'same.sqlite'), big);
    const db = new Database(big);
    db.prepare('UPDATE calls SET envelope = ? WHERE seq = 1').run('x'.repeat(2 * 1024 * 1024));
    db.close();
    expect(foreignLogProblem(big, { maxValueBytes: 1024 * 1024 })).toMatch(
      /calls\.envelope holds a value of 2097152 bytes/,
    );
  }, 120_000);

  it('fails verify, and mcec-replay and triage --bundles refuse it within seconds (built CLIs)', async () => {
    const view = await tamperedBundle('recursive-view', recursiveView);
    const huge = await tamperedBundle('huge-strings', hugeStrings);
    const figures: Record<string, number> = {};
    for (const zip of [view, huge]) {
      const name = path.basename(zip, '.zip');
      let t = performance.now();
      const verify = await runNode([BUNDLE_CLI, 'verify', zip]);
      figures[`verify-${name}-ms`] = Math.round(performance.now() - t);
      expect(verify.code, verify.stdout + verify.stderr).toBe(1);
      expect(verify.stdout + verify.stderr).toMatch(
        /session\.sqlite: not a session log this recorder wrote: it has a view "calls"/,
      );
      t = performance.now();
      const replay = await runNode(['--max-old-space-size=512', REPLAY_CLI, zip, '--stdio']);
      figures[`replay-${name}-ms`] = Math.round(performance.now() - t);
      expect(replay.code).not.toBe(0);
      expect(replay.stderr).toMatch(/refusing its session\.sqlite: not a session log this recorder wrote/);
    }
    // triage over the folder holding both (and nothing else): it answers, naming each zip it skipped.
    const t = performance.now();
    const triage = await runNode([BUNDLE_CLI, 'triage', '--bundles', path.dirname(view), '--json']);
    figures['triage-ms'] = Math.round(performance.now() - t);
    expect(triage.stdout + triage.stderr).toMatch(/recursive-view\.zip/);
    expect(triage.stdout + triage.stderr).toMatch(/huge-strings\.zip/);
    expect(triage.stdout + triage.stderr).toMatch(/is refused: not a session log this recorder wrote/);
    for (const ms of Object.values(figures)) expect(ms).toBeLessThan(60_000);
    // The bundle as built still verifies and replays.
    const ok = await runNode([BUNDLE_CLI, 'verify', good]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    reportFigure('hostile-bundle', figures);
  }, 300_000);

  it('a killed run’s temp dir is removed by the next run; a live one’s is kept', async () => {
    const tmp = path.join(root, 'tmp');
    fs.mkdirSync(tmp);
    const dead = path.join(tmp, `mcec-replay-bundle-${deadPid()}-AbC123`);
    const deadVerify = path.join(tmp, `mcec-verify-${deadPid()}-xYz789`);
    const live = path.join(tmp, `mcec-replay-bundle-${process.pid}-QwE456`);
    for (const d of [dead, deadVerify, live]) {
      fs.mkdirSync(path.join(d, 'top'), { recursive: true });
      fs.writeFileSync(path.join(d, 'top', 'session.sqlite'), 'left by a kill -9');
    }
    const env = { TMPDIR: tmp, TMP: tmp, TEMP: tmp };
    const replay = await runNode([REPLAY_CLI, good, '--stdio'], { env });
    expect(replay.code, replay.stderr).toBe(0);
    const verify = await runNode([BUNDLE_CLI, 'verify', good], { env });
    expect(verify.code).toBe(0);
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(deadVerify)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    // and the runs left nothing of their own
    expect(fs.readdirSync(tmp).sort()).toEqual([path.basename(live)]);
  }, 120_000);

  it('prune removes the partials and temp dirs of dead writers, never a live one’s', async () => {
    const { pruneSessions } = await import('../../src/sessions/prune.js');
    const sessionsDir = path.join(root, 'prune-sessions');
    fs.mkdirSync(sessionsDir, { recursive: true });
    const dead = path.join(sessionsDir, `20261202-101500-abc.zip.${deadPid()}.0badc0de.partial`);
    const live = path.join(sessionsDir, `20261202-101500-abc.zip.${process.pid}.0badc0de.partial`);
    fs.writeFileSync(dead, 'half a zip');
    fs.writeFileSync(live, 'a zip being written');
    const tmpDead = fs.mkdtempSync(path.join(os.tmpdir(), `mcec-bundle-${deadPid()}-`));
    await pruneSessions(sessionsDir, { olderThanMs: 1000 });
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    expect(fs.existsSync(tmpDead)).toBe(false);
  });
});

describe('a session dir whose log is not ours (copied in from another machine)', () => {
  /** `goodDir` copied into a sessions dir of its own, its log changed by `tamper`; its session id. */
  function copiedIn(
    name: string,
    tamper: (db: Database.Database) => void,
  ): { sessionsDir: string; id: string } {
    const sessionsDir = path.join(root, name);
    const dir = path.join(sessionsDir, path.basename(goodDir));
    fs.cpSync(goodDir, dir, { recursive: true });
    const db = new Database(path.join(dir, 'session.sqlite'));
    tamper(db);
    db.close();
    return { sessionsDir, id: path.basename(goodDir).split('-').at(-1)! };
  }

  // Before, `list` ran the view's query for ever (killed here after a minute) and so would anything reading it.
  it('list answers at once naming why; bundle and mcec-replay refuse to read it', async () => {
    const { sessionsDir, id } = copiedIn('copied-view', recursiveView);
    const list = await runNode([BUNDLE_CLI, 'list', '--sessions', sessionsDir], { timeoutMs: 60_000 });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(
        `UNREADABLE ${id}: .*session\\.sqlite: not a session log this recorder wrote, so it is not read: it has a view "calls"`,
      ),
    );
    const bundle = await runNode([BUNDLE_CLI, id, '--sessions', sessionsDir], { timeoutMs: 60_000 });
    expect(bundle.code).toBe(1);
    expect(bundle.stderr).toMatch(
      /not a session log this recorder wrote, so it is not read: it has a view "calls"/,
    );
    const dir = path.join(sessionsDir, path.basename(goodDir));
    const replay = await runNode([REPLAY_CLI, dir, '--stdio'], { timeoutMs: 60_000 });
    expect(replay.code).not.toBe(0);
    expect(replay.stderr).toMatch(/not a session log this recorder wrote/);
  }, 300_000);

  it('verdict refuses a log with a trigger, which never runs', async () => {
    const { sessionsDir, id } = copiedIn('copied-trigger', (db) =>
      db.exec('CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM calls; END'),
    );
    const verdict = await runNode([BUNDLE_CLI, 'verdict', id, 'pass', '--sessions', sessionsDir], {
      timeoutMs: 60_000,
    });
    expect(verdict.code).not.toBe(0);
    expect(verdict.stderr).toMatch(
      /not a session log this recorder wrote, so it is not read: it has a trigger "t"/,
    );
    const db = new Database(path.join(sessionsDir, path.basename(goodDir), 'session.sqlite'), {
      readonly: true,
    });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM calls').get()).toEqual({ n: 3 });
      expect(db.prepare("SELECT count(*) AS n FROM events WHERE kind = 'verdict'").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  }, 120_000);
});

/** An entry of the top folder named `rel`, holding a few bytes. */
function entryOf(top: string, rel: string): ZipEntryRead {
  return { name: `${top}/${rel}`, data: Buffer.from(`added as ${rel}`) } as ZipEntryRead;
}

describe('entry names Windows would not keep as given (built CLIs)', () => {
  const device = 'is a Windows device name';
  const trailing = "ends with a dot or a space (Windows drops it: another file's name)";
  const refusedNames: Array<[string, string]> = [
    [
      'report.html:evil',
      'file name "report.html:evil" holds a ":" (on Windows it names an alternate data stream',
    ],
    ['artifacts/CON', `file name "CON" ${device}`],
    ['artifacts/nul.png', `file name "nul.png" ${device}`],
    ['artifacts/Aux.tar.gz', `file name "Aux.tar.gz" ${device}`],
    ['artifacts/COM\u00b9.png', `file name "COM\u00b9.png" ${device}`],
    ['artifacts/lpt9.txt', `file name "lpt9.txt" ${device}`],
    ['artifacts/capture.png.', `file name "capture.png." ${trailing}`],
    ['artifacts/capture.png ', `file name "capture.png " ${trailing}`],
    ['artifacts./capture.png', `folder name "artifacts." ${trailing}`],
    ...['<', '>', '"', '|', '?', '*'].map((c): [string, string] => [
      `artifacts/a${c}b.png`,
      `holds a ${JSON.stringify(c)} (not allowed in a Windows file name)`,
    ]),
    ['artifacts/a\u0007b.png', 'holds a control character (U+0007)'],
    ['artifacts/CAPTUR~1.PNG', 'file name "CAPTUR~1.PNG" is shaped like a Windows 8.3 short name'],
  ];

  it('mcec-bundle verify names every such entry as refused, and fails the bundle', async () => {
    const top = (await readZip(good))[0]!.name.split('/')[0]!;
    const zip = await rewrittenBundle('windows-names', (entries) => [
      ...entries,
      ...refusedNames.map(([rel]) => entryOf(top, rel)),
    ]);
    const verify = await runNode([BUNDLE_CLI, 'verify', zip]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(1);
    const lines = (verify.stdout + verify.stderr).split('\n');
    for (const [rel, why] of refusedNames) {
      const shown = JSON.stringify(`${top}/${rel}`);
      expect(
        lines.some((l) => l.includes(`entry ${shown}: `) && l.includes(why) && l.endsWith('; refused')),
        `${shown}: ${why}`,
      ).toBe(true);
    }
  }, 120_000);

  it('mcec-bundle verify and mcec-replay refuse two names that are one file on Windows or macOS', async () => {
    const top = (await readZip(good))[0]!.name.split('/')[0]!;
    const pairs: Array<[string, string]> = [
      ['artifacts/shot.png', 'artifacts/Shot.PNG'],
      ['artifacts/\u00e9t\u00e9.png', 'artifacts/e\u0301te\u0301.png'],
    ];
    for (const [i, [first, second]] of pairs.entries()) {
      const zip = await rewrittenBundle(`twins-${i}`, (entries) => [
        ...entries,
        entryOf(top, first),
        entryOf(top, second),
      ]);
      const problem = `entry ${JSON.stringify(`${top}/${second}`)}: same file as ${JSON.stringify(`${top}/${first}`)} on Windows and macOS (the names differ only in letter case or Unicode normalization)`;
      const verify = await runNode([BUNDLE_CLI, 'verify', zip]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(1);
      expect(verify.stdout + verify.stderr).toContain(`${problem}; refused`);
      const tmp = fs.mkdtempSync(path.join(root, 'replay-tmp-'));
      const replay = await runNode([REPLAY_CLI, zip, '--stdio'], {
        env: { TMPDIR: tmp, TMP: tmp, TEMP: tmp },
      });
      expect(replay.code, replay.stderr).toBe(1);
      expect(replay.stderr).toContain(
        `refusing entry ${JSON.stringify(`${top}/${second}`)}: same file as ${JSON.stringify(`${top}/${first}`)}`,
      );
      expect(fs.readdirSync(tmp)).toEqual([]);
    }
  }, 120_000);

  it('mcec-replay refuses a bundle holding any one, naming it, before writing anything', async () => {
    const top = (await readZip(good))[0]!.name.split('/')[0]!;
    // One name per rule (the characters share one).
    const picked = refusedNames.filter(([rel]) => !/[<>"|*]/.test(rel));
    for (const [i, [rel, why]] of picked.entries()) {
      const zip = await rewrittenBundle(`replay-name-${i}`, (entries) => [...entries, entryOf(top, rel)]);
      const tmp = fs.mkdtempSync(path.join(root, 'replay-tmp-'));
      const replay = await runNode([REPLAY_CLI, zip, '--stdio'], {
        env: { TMPDIR: tmp, TMP: tmp, TEMP: tmp },
      });
      expect(replay.code, `${rel}: ${replay.stderr}`).toBe(1);
      expect(replay.stderr, rel).toContain(`refusing entry ${JSON.stringify(`${top}/${rel}`)}: `);
      expect(replay.stderr, rel).toContain(why);
      // Refused while the names were read: nothing written, the temp dir removed.
      expect(fs.readdirSync(tmp), rel).toEqual([]);
    }
    // A name not marked UTF-8 with a byte over 0x7F (0x80 is Ç in CP437, another letter in another code page).
    const entries = (await readZip(good)).map((e) => ({ name: e.name, data: e.data }));
    const latin = path.join(root, 'hostile', 'code-page-name.zip');
    const raw = Buffer.concat([Buffer.from(`${top}/artifacts/`), Buffer.from([0x80]), Buffer.from('.png')]);
    fs.writeFileSync(latin, rawZip([...entries, { name: raw, data: Buffer.from('x'), utf8: false }]));
    const codePage = 'a non-ASCII name not marked UTF-8 (its characters depend on the code page';
    const verify = await runNode([BUNDLE_CLI, 'verify', latin]);
    expect(verify.code).toBe(1);
    expect(verify.stdout + verify.stderr).toContain(codePage);
    const tmp = fs.mkdtempSync(path.join(root, 'replay-tmp-'));
    const refused = await runNode([REPLAY_CLI, latin, '--stdio'], {
      env: { TMPDIR: tmp, TMP: tmp, TEMP: tmp },
    });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(codePage);
    expect(fs.readdirSync(tmp)).toEqual([]);
    // The bundle as built still replays.
    const ok = await runNode([REPLAY_CLI, good, '--stdio']);
    expect(ok.code, ok.stderr).toBe(0);
  }, 300_000);
});
