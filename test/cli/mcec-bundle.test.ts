import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readZip, sha256, tempDir } from '../bundle/helpers.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, type ChildRun, runNode, runNodeSync } from '../support/programs.js';
import { fileTimesMatchClock } from '../support/temp.js';

const CLI = BUNDLE_CLI;
const TRACE = fileURLToPath(new URL('./fixtures/trace-imports.mjs', import.meta.url));

type Run = ChildRun;

function run(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; node?: string[] } = {},
): Run {
  return runNodeSync([...(options.node ?? []), CLI, ...args], { ...options, timeoutMs: 60_000 });
}

/** run() without blocking, so independent error cases can run side by side. */
function runAsync(args: string[]): Promise<Run> {
  return runNode([CLI, ...args]);
}

const DAY = 86_400_000;
const FAIL_ID = 'fa11ed000001';
const PASS_ID = 'a55ed0000002';
const OLD_PASS = 'abc100000003';
const OLD_FAIL = 'abc200000004';

/** A finished session: PASS, or FAIL on a blank capture. */
async function makeSession(
  root: string,
  sessionId: string,
  options: { fail: boolean; startedAt?: Date },
): Promise<FixtureSession> {
  const s = FixtureSession.create(root, {
    sessionId,
    startedAt: options.startedAt,
    scenario: `scenario ${sessionId}`,
  });
  s.call(calls.displays());
  const cap = await s.capture();
  s.call(calls.findSave());
  if (options.fail) await s.blankCapture(cap.summary as unknown as Record<string, unknown>);
  s.end();
  s.close();
  return s;
}

describe('mcec-bundle', () => {
  let root: string;
  let sessions: string;
  const dirs: Record<string, string> = {};

  beforeAll(async () => {
    root = tempDir();
    sessions = path.join(root, 'sessions');
    fs.mkdirSync(sessions);
    const now = Date.now();
    dirs[FAIL_ID] = (
      await makeSession(sessions, FAIL_ID, { fail: true, startedAt: new Date(now - DAY) })
    ).dirName;
    dirs[PASS_ID] = (
      await makeSession(sessions, PASS_ID, { fail: false, startedAt: new Date(now - 2 * DAY) })
    ).dirName;
    dirs[OLD_PASS] = (
      await makeSession(sessions, OLD_PASS, { fail: false, startedAt: new Date(now - 30 * DAY) })
    ).dirName;
    dirs[OLD_FAIL] = (
      await makeSession(sessions, OLD_FAIL, { fail: true, startedAt: new Date(now - 40 * DAY) })
    ).dirName;
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  describe('help', () => {
    it('teaches every command with an example, and exits 0', () => {
      const res = run(['--help']);
      expect(res.code).toBe(0);
      for (const cmd of ['bundle', 'list', 'show', 'summary', 'issue-body', 'verify', 'prune']) {
        expect(res.stdout).toContain(cmd);
        expect(res.stdout).toMatch(new RegExp(`\\n  mcec-bundle ${cmd === 'bundle' ? '5f19c9' : cmd}`));
      }
      expect(res.stdout).toMatch(
        /Exit codes \(the same for mcec-record, mcec-bundle.*\n {2}0 {2}done\n {2}1 {2}[\s\S]*?\n {2}2 {2}bad usage/,
      );
      const prune = run(['prune', '--help']);
      expect(prune.code).toBe(0);
      expect(prune.stdout).toContain('mcec-bundle prune --older-than 7d');
      expect(prune.stdout).toMatch(/--keep-recent <duration>[\s\S]*default: 10m/);
      expect(run(['help', 'verify']).code).toBe(0);
    });

    it('starts without loading the heavy modules', () => {
      const trace = path.join(root, 'trace.txt');
      const res = run(['--help'], { node: ['--import', TRACE], env: { MCEC_TRACE_OUT: trace } });
      expect(res.code).toBe(0);
      const urls = fs.readFileSync(trace, 'utf8');
      // The built entry is bundled (scripts/build.mjs): the modules inside each loaded file of it are named by
      // esbuild's `// <path>` comments, read here as if they had been loaded one by one.
      const bundled = urls
        .split('\n')
        .filter((u) => /\/dist\/cli\/mcec-bundle[-.][^/]*js$/.test(u))
        .flatMap(
          // A checkout whose node_modules are links (CI's Node 22 copy) names them by their real path.
          (u) =>
            fs.readFileSync(fileURLToPath(u), 'utf8').match(/^\/\/ (?:\S*\/)?(?:node_modules|dist)\/\S+/gm) ??
            [],
        )
        .map((comment) => `/${comment.slice(3)}`);
      const loaded = [urls, ...bundled].join('\n');
      expect(loaded).toContain('commander');
      for (const heavy of [
        'better-sqlite3',
        'handlebars',
        'yazl',
        'yauzl',
        'date-fns',
        'sharp',
        '/dist/report/',
        '/dist/store/', // not '/store/': a checkout may live in a dir of that name
        'node:crypto', // 20 internal modules, 6.6 ms of the 173 (src/paths/derived-id.ts)
      ]) {
        expect(loaded, heavy).not.toContain(heavy);
      }
    });
  });

  describe('list start-up', () => {
    it('lists from a fresh catalog without the code of a sweep: no node:crypto, worker threads, fingerprints', () => {
      const dir = path.join(root, 'fresh-list');
      fs.mkdirSync(dir);
      fs.cpSync(path.join(sessions, dirs[PASS_ID]!), path.join(dir, dirs[PASS_ID]!), { recursive: true });
      // Times a minute old: the catalog trusts the sessions dir's time once settled (2 s), so the third list
      // finds nothing to sweep (the first builds the catalog, which moves the dir's time; the second stores it).
      const past = new Date(Date.now() - 60_000);
      fs.utimesSync(path.join(dir, dirs[PASS_ID]!), past, past);
      expect(run(['list', '--sessions', dir]).code).toBe(0);
      fs.utimesSync(dir, past, past);
      expect(run(['list', '--sessions', dir]).code).toBe(0);
      const trace = path.join(root, 'list-trace.txt');
      const builtins = path.join(root, 'list-builtins.txt');
      const builtinsPreload = fileURLToPath(new URL('./fixtures/builtins-at-exit.cjs', import.meta.url));
      const res = run(['list', '--sessions', dir], {
        node: ['--import', TRACE],
        env: { MCEC_TRACE_OUT: trace },
      });
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(PASS_ID);
      const urls = fs.readFileSync(trace, 'utf8');
      const bundled = urls
        .split('\n')
        .filter((u) => /\/dist\/cli\/mcec-bundle[-.][^/]*js$/.test(u))
        .flatMap((u) => fs.readFileSync(fileURLToPath(u), 'utf8').match(/^\/\/ (?:\S*\/)?dist\/\S+/gm) ?? [])
        .map((comment) => `/${comment.slice(3)}`);
      const loaded = [urls, ...bundled].join('\n');
      expect(loaded).toContain('/dist/store/catalog.js');
      for (const heavy of [
        '/dist/fleet/fingerprint.js',
        '/dist/store/entry-sidecar.js',
        '/dist/report/',
        'date-fns',
      ])
        expect(loaded, heavy).not.toContain(heavy);
      // Apart from the trace: its hooks run on a worker thread of their own.
      const again = run(['list', '--sessions', dir], {
        node: ['--require', builtinsPreload],
        env: { MCEC_BUILTINS_OUT: builtins },
      });
      expect(again).toMatchObject({ code: 0, stdout: res.stdout });
      const required = fs.readFileSync(builtins, 'utf8').split('\n');
      // node:crypto is 20 internal modules; `bindings` is how better-sqlite3 finds its addon when not told.
      for (const heavy of ['NativeModule crypto', 'NativeModule worker_threads', 'NativeModule os'])
        expect(required, heavy).not.toContain(heavy);
      expect(required.some((f) => f.includes(`${path.sep}better-sqlite3${path.sep}`))).toBe(true);
      expect(required.filter((f) => f.includes(`${path.sep}bindings${path.sep}`))).toEqual([]);
    });
  });

  describe('bundle', () => {
    it('bundles by unique id prefix into <sessions>/<dir>.zip and prints its path', async () => {
      const res = run([FAIL_ID.slice(0, 5), '--sessions', sessions]);
      const page = path.join(sessions, dirs[FAIL_ID]!, 'report.html');
      // stdout: the zip alone (for $(...)); the page written into the session dir is named on stderr.
      expect(res).toMatchObject({ code: 0, stderr: `report.html (open it in a browser): ${page}\n` });
      const zip = path.join(sessions, `${dirs[FAIL_ID]}.zip`);
      expect(res.stdout).toBe(`${zip}\n`);
      expect(fs.readFileSync(page, 'utf8')).toMatch(/^<!doctype html>/);
      const names = (await readZip(zip)).map((e) => e.name);
      expect(names).toContain(`${dirs[FAIL_ID]}/failure-summary.md`);
    });

    it('--json prints the result; -o writes where asked; MCEC_SESSIONS_DIR is honoured', () => {
      const out = path.join(root, 'elsewhere', 'bug.zip');
      fs.mkdirSync(path.dirname(out)); // -o into a missing directory is refused (test/cli/answers.test.ts)
      const res = run([PASS_ID, '-o', out, '--json', '--no-db', '--max-bytes', '10MB'], {
        env: { MCEC_SESSIONS_DIR: sessions },
      });
      expect(res.code).toBe(0);
      const json = JSON.parse(res.stdout);
      expect(Object.keys(json)).toEqual([
        'bundle',
        'sessionId',
        'bytes',
        'files',
        'verdict',
        'dropped',
        'limitMet',
        'reportHtml',
        'warnings',
      ]);
      expect(json).toMatchObject({ bundle: out, verdict: 'PASS', bytes: fs.statSync(out).size });
      expect(json.reportHtml).toBe(path.join(sessions, dirs[PASS_ID]!, 'report.html'));
      expect(json.dropped).toEqual([expect.objectContaining({ path: 'session.sqlite', reason: 'no-db' })]);
    });

    it('-o DIR/ names a directory: made when missing, the zip in it under its default name (junit: bad usage)', () => {
      const dir = path.join(root, 'new-dir');
      const res = run([PASS_ID, '-s', sessions, '-o', `${dir}/`, '--json']);
      expect(res.code).toBe(0);
      const zip = path.join(dir, `${dirs[PASS_ID]}.zip`);
      expect(JSON.parse(res.stdout)).toMatchObject({ bundle: zip });
      expect(fs.statSync(zip).isFile()).toBe(true);
      // Its parent must exist, as for -o FILE: a typo does not make a tree.
      const deep = run([PASS_ID, '-s', sessions, '-o', `${path.join(root, 'no', 'such')}/`]);
      expect(deep.code).toBe(2);
      expect(deep.stderr).toContain(`the directory ${path.join(root, 'no')} does not exist`);
      // junit writes one file: a directory there is bad usage, not an error opening a temp file in it.
      const junit = run(['junit', '-s', sessions, '-o', `${dir}/`]);
      expect(junit.code).toBe(2);
      expect(junit.stderr).toContain('names a directory: junit writes one file');
    });

    it('gives byte-identical zips whatever the time zone', () => {
      const a = path.join(root, 'tz-a.zip');
      const b = path.join(root, 'tz-b.zip');
      expect(run([FAIL_ID, '-s', sessions, '-o', a], { env: { TZ: 'UTC' } }).code).toBe(0);
      expect(run([FAIL_ID, '-s', sessions, '-o', b], { env: { TZ: 'Pacific/Kiritimati' } }).code).toBe(0);
      expect(sha256(fs.readFileSync(a))).toBe(sha256(fs.readFileSync(b)));
    });

    it('an unknown id names the sessions dir and the sessions there (exit 1)', () => {
      const res = run(['ffff', '-s', sessions]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(sessions);
      expect(res.stderr).toContain(dirs[FAIL_ID]);
      expect(res.stdout).toBe('');
    });

    it('an ambiguous prefix lists the candidates (exit 1)', () => {
      const res = run(['abc', '-s', sessions]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/ambiguous/);
      expect(res.stderr).toContain(dirs[OLD_PASS]);
      expect(res.stderr).toContain(dirs[OLD_FAIL]);
      expect(res.stderr).not.toContain(dirs[PASS_ID]);
    });

    it('a missing sessions dir is named (exit 1)', () => {
      const res = run(['abc', '-s', path.join(root, 'nope')]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(path.join(root, 'nope'));
    });

    it('refuses a hostile id (exit 2), reads a path as a session dir only when it is one, and writes nothing anywhere', async () => {
      const before = fs.readdirSync(root).sort();
      const beforeSessions = fs.readdirSync(sessions).sort();
      // Not path-safe and no path either: bad usage.
      const invalid = [['a'.repeat(70)], ['show', 'x;y']];
      // With a slash: a path (as mcec-replay takes it), which must be a session dir: else exit 1, naming it.
      const paths = [
        ...['../x', '../../etc/passwd', 'a/b', '/tmp', 'a\\b'].map((id) => [id]),
        ['show', '..'],
        ['summary', '../x'],
        ['issue-body', '../x'],
      ];
      const results = await Promise.all(
        [...invalid, ...paths].map((args) => runAsync([...args, '-s', sessions])),
      );
      results.forEach((res, i) => {
        const args = [...invalid, ...paths][i]!;
        if (i < invalid.length) {
          expect(res.code, args.join(' ')).toBe(2);
          expect(res.stderr).toMatch(/invalid session id/);
        } else {
          expect(res.code, args.join(' ')).toBe(1);
          expect(res.stderr).toMatch(/: no such directory|: no session\.sqlite in this directory/);
        }
      });
      expect(fs.readdirSync(root).sort()).toEqual(before);
      expect(fs.readdirSync(sessions).sort()).toEqual(beforeSessions);
    });

    it('bad usage exits 2: unknown option, missing id, bad size, too many arguments', async () => {
      const cases = [
        ['--bogus'],
        [FAIL_ID, '--max-bytes', 'lots', '-s', sessions],
        [FAIL_ID, '--max-bytes', '0', '-s', sessions],
        [FAIL_ID, 'extra', '-s', sessions],
        ['list', '--bogus'],
        ['verify'],
        ['prune', '-s', sessions],
        ['prune', '--older-than', 'soon', '-s', sessions],
      ];
      const results = await Promise.all(cases.map((args) => runAsync(args)));
      results.forEach((res, i) => {
        expect(res.code, cases[i]!.join(' ')).toBe(2);
        expect(res.stderr).toMatch(/error|invalid/);
      });
    });

    it('a template that fails fails the work (exit 1) and leaves no zip', () => {
      const tpl = path.join(root, 'tpl');
      fs.mkdirSync(tpl, { recursive: true });
      fs.writeFileSync(path.join(tpl, 'failure-summary.md.hbs'), '# {{noSuchField.deeper}}\n');
      const out = path.join(root, 'tpl.zip');
      const res = run([FAIL_ID, '-s', sessions, '--templates', tpl, '-o', out]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^mcec-bundle: /);
      expect(fs.existsSync(out)).toBe(false);
    });
  });

  describe('list, show, summary, issue-body', () => {
    it('list shows id, server, start, duration, calls, failures and verdict, newest first (as index.html)', () => {
      const res = run(['list', '-s', sessions]);
      expect(res.code).toBe(0);
      const lines = res.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+SERVER\s+START \(UTC\)\s+DURATION\s+CALLS\s+FAILURES\s+VERDICT$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([FAIL_ID, PASS_ID, OLD_PASS, OLD_FAIL]);
      expect(lines.find((l) => l.startsWith(FAIL_ID))).toMatch(/\s4\s+1\s+FAIL$/);
    });

    it('list --failed --json gives the FAIL sessions as JSON', () => {
      const res = run(['list', '--failed', '--json', '-s', sessions]);
      expect(res.code).toBe(0);
      const rows = JSON.parse(res.stdout);
      expect(rows.map((r: { id: string }) => r.id)).toEqual([FAIL_ID, OLD_FAIL]);
      expect(rows[0]).toMatchObject({ verdict: 'FAIL', calls: 4, failures: 1, dirName: dirs[FAIL_ID] });
    });

    it('show prints the failure summary; summary writes it into the session dir', () => {
      const shown = run(['show', FAIL_ID, '-s', sessions]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/^# scenario fa11ed000001; FAIL/);
      expect(shown.stdout).toContain('frame-all-black');
      const written = run(['summary', FAIL_ID, '-s', sessions]);
      expect(written.code).toBe(0);
      const file = path.join(sessions, dirs[FAIL_ID]!, 'failure-summary.md');
      expect(written.stdout).toBe(`${file}\n`);
      expect(fs.readFileSync(file, 'utf8')).toBe(shown.stdout);
    });

    it('issue-body prints the bug report for gh, ending with the zip to attach', () => {
      const res = run(['issue-body', FAIL_ID, '-s', sessions]);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('Describe the bug');
      expect(res.stdout).toContain(`${dirs[FAIL_ID]}.zip`);
      expect(res.stdout.length).toBeLessThanOrEqual(65_537);
      // One blank line under each heading: the image bullet follows its heading as every section's text does.
      expect(res.stdout).toContain('### Screenshots\n\n- Last image before the failure: ');
      expect(res.stdout).not.toContain('\n\n\n');
    });

    it('show of an unknown id exits 1', () => {
      expect(run(['show', 'ffff', '-s', sessions]).code).toBe(1);
    });
  });

  describe('verify', () => {
    it('exits 0 for a good bundle and 1 with the problems for a tampered one', async () => {
      const good = path.join(root, 'verify-good.zip');
      expect(run([FAIL_ID, '-s', sessions, '-o', good]).code).toBe(0);
      const ok = run(['verify', good]);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(/^ok: /);
      // Flip one byte inside the stored PNG's data: its CRC and manifest hash no longer match.
      const bytes = fs.readFileSync(good);
      const at = bytes.indexOf(Buffer.from('IDAT'));
      bytes[at + 8] = bytes[at + 8]! ^ 0xff;
      const bad = path.join(root, 'verify-bad.zip');
      fs.writeFileSync(bad, bytes);
      const res = run(['verify', bad]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/problem/);
      expect(res.stderr).toMatch(/sha256 does not match|CRC-32/);
      expect(run(['verify', path.join(root, 'missing.zip')]).code).toBe(1);
    });
  });

  // "Just written" is told by file times, which must agree with the clock (they do not under faketime).
  describe.skipIf(!fileTimesMatchClock())('prune', () => {
    it('--dry-run lists, --keep-failed keeps FAIL, and a real run deletes dirs and their zips', () => {
      const copy = path.join(root, 'prune');
      fs.cpSync(sessions, copy, { recursive: true });
      // Just written (the copy's file times are now): kept, whatever the recorded times say.
      const fresh = run(['prune', '--older-than', '7d', '--dry-run', '-s', copy]);
      expect(fresh).toMatchObject({ code: 0, stdout: '' });
      expect(fresh.stderr).toContain(`kept ${path.join(copy, dirs[OLD_PASS]!)}: its log was written at `);
      expect(fresh.stderr).toMatch(/nothing to prune/);
      const off = run(['prune', '--older-than', '7d', '--keep-recent', '0', '--dry-run', '-s', copy]);
      expect(off.stdout).toContain(`would remove ${path.join(copy, dirs[OLD_PASS]!)}`);
      // Files last written a month ago, as the sessions' own times say.
      const monthAgo = new Date(Date.now() - 30 * DAY);
      for (const dir of Object.values(dirs)) {
        for (const f of fs.readdirSync(path.join(copy, dir)))
          fs.utimesSync(path.join(copy, dir, f), monthAgo, monthAgo);
      }
      // A read is not a write: show and list open the logs and leave nothing beside them; an empty -wal made
      // now (by an older reader, or a read-only handle while a writer was alive) is not a write either.
      expect(run(['show', OLD_PASS, '-s', copy]).code).toBe(0);
      expect(run(['list', '-s', copy]).code).toBe(0);
      expect(fs.existsSync(path.join(copy, dirs[OLD_PASS]!, 'session.sqlite-wal'))).toBe(false);
      fs.writeFileSync(path.join(copy, dirs[OLD_PASS]!, 'session.sqlite-wal'), '');
      // A zip beside the old PASS session goes with it.
      fs.writeFileSync(path.join(copy, `${dirs[OLD_PASS]}.zip`), 'zip');
      const dry = run(['prune', '--older-than', '7d', '--dry-run', '-s', copy]);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain(`would remove ${path.join(copy, dirs[OLD_PASS]!)}`);
      expect(dry.stdout).toContain(dirs[OLD_FAIL]);
      expect(dry.stdout).not.toContain(dirs[PASS_ID]);
      expect(fs.existsSync(path.join(copy, dirs[OLD_PASS]!))).toBe(true);

      // 0 is a duration too: every session not written lately.
      const zero = run(['prune', '--older-than', '0m', '--dry-run', '-s', copy]);
      expect(zero.code, zero.stderr).toBe(0);
      expect(zero.stdout).toContain(dirs[OLD_PASS]);
      const keep = run(['prune', '--older-than', '7d', '--keep-failed', '-s', copy]);
      expect(keep.code).toBe(0);
      expect(keep.stdout).toContain(`removed ${path.join(copy, dirs[OLD_PASS]!)} and ${dirs[OLD_PASS]}.zip`);
      expect(fs.existsSync(path.join(copy, dirs[OLD_PASS]!))).toBe(false);
      expect(fs.existsSync(path.join(copy, `${dirs[OLD_PASS]}.zip`))).toBe(false);
      expect(fs.existsSync(path.join(copy, dirs[OLD_FAIL]!))).toBe(true);

      const all = run(['prune', '--older-than', '36h', '-s', copy]);
      expect(all.code).toBe(0);
      const left = fs.readdirSync(copy).filter((n) => !n.startsWith('catalog.sqlite'));
      expect(left.sort()).toEqual([dirs[FAIL_ID], `${dirs[FAIL_ID]}.zip`].sort());
      const none = run(['prune', '--older-than', '36h', '-s', copy]);
      expect(none).toMatchObject({ code: 0, stdout: '' });
      expect(none.stderr).toMatch(/nothing to prune/);
    });
  });
});
