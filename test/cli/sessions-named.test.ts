/**
 * How mcec-bundle names sessions and their troubles, through the built CLI: `list` newest first (as
 * index.html) with the reason of each UNREADABLE session, a session given by its dir's path, a read-only
 * sessions dir named with what to do, a bundle of a session still being recorded said to be a snapshot.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, type ChildRun, runNode } from '../support/programs.js';
import { readOnly } from '../support/read-only.js';
import { tempDir } from '../support/temp.js';

const run = (args: string[], cwd?: string): Promise<ChildRun> =>
  runNode([BUNDLE_CLI, ...args], cwd ? { cwd } : {});

let work: string;
let sessions: string;
const dirs: Record<string, string> = {};

beforeAll(() => {
  work = tempDir('mcec-sessions-named-');
  sessions = path.join(work, 'sessions');
  const days = ['2026-11-28', '2026-11-30', '2026-11-29'];
  for (const [i, id] of ['a11ce0000001', 'b0b000000002', 'ca7000000003'].entries()) {
    const s = FixtureSession.create(sessions, { sessionId: id, startedAt: new Date(`${days[i]}T09:00:00Z`) });
    s.call(calls.displays());
    s.end();
    s.close();
    dirs[id] = s.dir;
  }
  // ca7 becomes unreadable: its log overwritten with bytes that are no database.
  for (const f of fs.readdirSync(dirs.ca7000000003!))
    if (f.startsWith('session.sqlite-')) fs.rmSync(path.join(dirs.ca7000000003!, f));
  fs.writeFileSync(path.join(dirs.ca7000000003!, 'session.sqlite'), Buffer.alloc(8192, 7));
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('mcec-bundle list', () => {
  it('is newest first, table and --json alike, and says so in its help', async () => {
    const table = await run(['list', '-s', sessions]);
    expect(table.code, table.stderr).toBe(0);
    const ids = table.stdout
      .split('\n\n')[0]!
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0]);
    expect(ids).toEqual(['b0b000000002', 'ca7000000003', 'a11ce0000001']);
    const json = JSON.parse((await run(['list', '--json', '-s', sessions])).stdout) as Array<{ id: string }>;
    expect(json.map((l) => l.id)).toEqual(ids);
    expect((await run(['list', '--help'])).stdout).toContain('newest first');
  });

  it('says why a session is UNREADABLE: the log and the error, under the table and in --json', async () => {
    const log = path.join(dirs.ca7000000003!, 'session.sqlite');
    const table = await run(['list', '-s', sessions]);
    expect(table.stdout).toMatch(/^ca7000000003 .*UNREADABLE$/m);
    // Its START as every row's: the dir name's stamp (UTC) formatted, not the bare stamp.
    const [, y, mo, d, h, mi, sec] = /^(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)-/.exec(
      path.basename(dirs.ca7000000003!),
    )!;
    expect(table.stdout).toMatch(
      new RegExp(`^ca7000000003 +\\S+ +${y}-${mo}-${d} ${h}:${mi}:${sec}Z +- `, 'm'),
    );
    const [, notes] = table.stdout.split('\n\n');
    expect(notes!.trim()).toBe(
      `UNREADABLE ca7000000003: ${log}: file is not a database (SQLITE_NOTADB): the file is damaged or is not a log mcec-recorder wrote; its artifacts/ are still readable`,
    );
    const json = JSON.parse((await run(['list', '--json', '-s', sessions])).stdout) as Array<{
      id: string;
      error?: string;
    }>;
    expect(json.find((l) => l.id === 'ca7000000003')?.error).toContain(`${log}: file is not a database`);
    expect(json.filter((l) => l.error !== undefined)).toHaveLength(1);
  });
});

describe('a session named by the path of its dir', () => {
  it('show, summary and verdict take it, absolute or relative, inside --sessions or not', async () => {
    const byId = await run(['show', 'a11ce', '-s', sessions]);
    expect(byId.code).toBe(0);
    const abs = await run(['show', dirs.a11ce0000001!]);
    expect(abs.code, abs.stderr).toBe(0);
    expect(abs.stdout).toBe(byId.stdout);
    const rel = await run(['show', path.join('sessions', path.basename(dirs.a11ce0000001!))], work);
    expect(rel.stdout).toBe(byId.stdout);
    const summary = await run(['summary', dirs.a11ce0000001!, '--json']);
    expect(JSON.parse(summary.stdout)).toMatchObject({
      sessionId: 'a11ce0000001',
      path: path.join(dirs.a11ce0000001!, 'failure-summary.md'),
    });
  });

  it('a path that is no session dir: exit 1 (as mcec-replay), naming it and what to give', async () => {
    const missing = await run(['show', path.join(work, 'nope', 'x')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`${path.join(work, 'nope', 'x')}: no such directory`);
    const notSession = await run(['show', work]);
    expect(notSession.code).toBe(1);
    expect(notSession.stderr).toContain(`${work}: no session.sqlite in this directory; give a session dir`);
  });
});

describe('a read-only sessions dir', () => {
  it('verdict names the log and what to make writable; list still lists, naming the catalog it cannot write', async () => {
    const ro = path.join(work, 'ro');
    fs.cpSync(sessions, ro, { recursive: true });
    const view = readOnly(ro);
    if (!view) return; // neither chmod (root) nor a bind mount works here
    try {
      const verdict = await run(['verdict', 'b0b0', 'fail', '-s', ro]);
      expect(verdict.code).toBe(1);
      const dir = path.join(ro, path.basename(dirs.b0b000000002!));
      expect(verdict.stderr).toContain(`${path.join(dir, 'session.sqlite')}: `); // SQLite's words vary with how
      expect(verdict.stderr).toContain(`make ${dir} and the files in it writable by this user`);
      const list = await run(['list', '-s', ro]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^b0b000000002 .*PASS$/m);
      expect(list.stderr).toContain(`the catalog ${path.join(ro, 'catalog.sqlite')} cannot be written`);
    } finally {
      view.undo();
    }
  });
});

describe('a sessions dir that cannot be read', () => {
  // Root reads any dir whatever its mode: the commands then run as nobody (uid 65534).
  const asRoot = process.getuid?.() === 0;
  it.skipIf(process.platform === 'win32')(
    'every reading command fails in one line (exit 1), never an empty list, an empty report or "nothing to prune"',
    () => {
      const locked = path.join(work, 'locked');
      fs.cpSync(sessions, locked, { recursive: true });
      fs.chmodSync(work, 0o755);
      fs.chmodSync(locked, 0o000);
      try {
        for (const args of [
          ['list'],
          ['list', '--json'],
          ['show', 'b0b0'],
          ['triage', '--json'],
          ['junit'],
          ['index'],
          ['prune', '--older-than', '0', '--dry-run'],
          ['report', '--all'],
        ]) {
          const r = spawnSync(process.execPath, [BUNDLE_CLI, ...args, '-s', locked], {
            encoding: 'utf8',
            ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
          });
          expect(r.status, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(1);
          expect(r.stdout, args.join(' ')).toBe('');
          expect(r.stderr.trim().split('\n'), args.join(' ')).toEqual([
            expect.stringMatching(
              new RegExp(
                `^mcec-bundle: the sessions dir ${locked} \\(--sessions\\) cannot be read: .*EACCES`,
              ),
            ),
          ]);
        }
      } finally {
        fs.chmodSync(locked, 0o755);
      }
    },
  );
});

describe('a session dir that cannot be read', () => {
  const asRoot = process.getuid?.() === 0;
  it.skipIf(process.platform === 'win32')(
    'is listed UNREADABLE with why, and show says why (exit 1): it never vanishes from the list',
    () => {
      const root = path.join(work, 'one-locked');
      fs.cpSync(sessions, root, { recursive: true });
      fs.chmodSync(work, 0o755);
      for (const e of fs.readdirSync(root, { recursive: true }))
        fs.chmodSync(
          path.join(root, String(e)),
          fs.statSync(path.join(root, String(e))).isDirectory() ? 0o777 : 0o666,
        );
      fs.chmodSync(root, 0o777);
      const locked = path.join(root, path.basename(dirs.b0b000000002!));
      fs.chmodSync(locked, 0o000);
      const bundle = (args: string[]) =>
        spawnSync(process.execPath, [BUNDLE_CLI, ...args, '-s', root], {
          encoding: 'utf8',
          ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
        });
      try {
        const list = bundle(['list']);
        expect(list.status, list.stderr).toBe(0);
        expect(list.stdout).toMatch(/^b0b000000002 .*UNREADABLE$/m);
        expect(list.stdout).toMatch(/^UNREADABLE b0b000000002: .*EACCES/m);
        const show = bundle(['show', 'b0b0']);
        expect(show.status).toBe(1);
        expect(show.stderr).toMatch(/^mcec-bundle: .*EACCES/);
      } finally {
        fs.chmodSync(locked, 0o755);
      }
    },
  );
});

describe('bundling a session still being recorded', () => {
  it('warns that the bundle is a snapshot (stderr and --json), and still writes it', async () => {
    const live = FixtureSession.create(path.join(work, 'live'), { sessionId: '11fe00000001' }); // writer: this process
    live.call(calls.displays());
    live.close();
    const out = path.join(work, 'live.zip');
    const res = await run([live.dir, '-o', out, '--no-gif']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(
      /warning: the session is still being recorded.*: the bundle holds its calls up to now; bundle it again once the run ended/,
    );
    expect(fs.existsSync(out)).toBe(true);
    const json = await run([live.dir, '-o', out, '--no-gif', '--json']);
    expect(JSON.parse(json.stdout).warnings[0]).toMatch(/^the session is still being recorded/);
    const ended = await run([dirs.a11ce0000001!, '-o', path.join(work, 'ended.zip'), '--no-gif', '--json']);
    expect(JSON.parse(ended.stdout).warnings).toEqual([]);
  });
});

describe('a sessions dir that cannot be meant here', () => {
  it.skipIf(process.platform === 'win32')(
    'a Windows path on POSIX is bad usage in every program, naming what it would become',
    async () => {
      const cases: Array<[string, string[]]> = [
        ['mcec-bundle', ['list', '--sessions', 'C:/mcec-sessions']],
        ['mcec-bundle', ['show', 'abc', '-s', 'D:\\runs']],
        ['mcec-replay', ['abc', '--stdio', '--sessions', 'C:/mcec-sessions']],
        ['mcec-record', ['stdio', '--sessions', 'C:/mcec-sessions', '--', process.execPath, '-e', '0']],
        ['mcec-record', ['http', '--sessions', '\\\\server\\share', '--listen', '127.0.0.1:0']],
      ];
      for (const [name, args] of cases) {
        const r = await runNode([path.join(path.dirname(BUNDLE_CLI), `${name}.js`), ...args], { cwd: work });
        expect(r.code, `${name} ${args.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(
          /--sessions ".*" is a Windows path, but this system is \w+: it would become /,
        );
        expect(r.stderr).toContain('give a path of this system');
      }
      expect(fs.readdirSync(work).filter((f) => /^[A-Z]:|^\\/.test(f))).toEqual([]);
      const fromEnv = await runNode([BUNDLE_CLI, 'list'], { cwd: work, env: { MCEC_SESSIONS_DIR: 'C:\\s' } });
      expect(fromEnv.code).toBe(2);
      expect(fromEnv.stderr).toContain('$MCEC_SESSIONS_DIR "C:\\\\s" is a Windows path');
    },
  );

  it('a session dir given as the sessions dir: every program says so and names its parent; nothing is written in it', async () => {
    const dir = dirs.a11ce0000001!;
    const before = fs.readdirSync(dir).sort();
    const bin = (name: string) => path.join(path.dirname(BUNDLE_CLI), `${name}.js`);
    const said = `the sessions dir ${dir} (--sessions) is a session dir (it holds session.sqlite): give its parent, ${sessions}, as --sessions`;
    for (const args of [['list'], ['index'], ['report', '--all'], ['triage'], ['show', 'a11ce']]) {
      const r = await run([...args, '--sessions', dir]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(said);
    }
    const record = await runNode([
      bin('mcec-record'),
      'stdio',
      '--sessions',
      dir,
      '--',
      process.execPath,
      '-e',
      '0',
    ]);
    expect(record.code).toBe(2);
    expect(record.stderr).toContain(said);
    expect(fs.readdirSync(dir).sort()).toEqual(before);
  });

  it('mcec-record stdio warns when the sessions dir is relative (the MCP client picks the working dir)', async () => {
    const record = path.join(path.dirname(BUNDLE_CLI), 'mcec-record.js');
    const server = ['--', process.execPath, '-e', '0'];
    const relative = await runNode([record, 'stdio', '--sessions', 'rel-sessions', ...server], { cwd: work });
    expect(relative.stderr).toContain(
      `mcec-record: warning: the sessions dir "rel-sessions" (--sessions) is relative: sessions go to ${path.join(work, 'rel-sessions')}, under the working directory the MCP client started this server in; give --sessions an absolute path`,
    );
    const byDefault = await runNode([record, 'stdio', ...server], { cwd: work });
    expect(byDefault.stderr).toContain('the sessions dir "./sessions" (the default) is relative');
    const absolute = await runNode([record, 'stdio', '--sessions', sessions, ...server], { cwd: work });
    expect(absolute.stderr).not.toContain('warning');
  });
});

describe('verify of a zip whose every entry was refused', () => {
  it('says so, not "the zip is empty" (exit 1); an empty zip is still empty', async () => {
    const { rawZip } = await import('../bundle/helpers.js');
    const hostile = path.join(work, 'all-refused.zip');
    fs.writeFileSync(
      hostile,
      rawZip([
        { name: '../evil.txt', data: Buffer.from('x') },
        { name: '/etc/evil.txt', data: Buffer.from('y') },
      ]),
    );
    const r = await run(['verify', hostile]);
    expect(r.code).toBe(1);
    const said = r.stdout + r.stderr;
    expect(said).toContain('no entry left to check: all 2 entries were refused (above)');
    expect(said).not.toContain('the zip is empty');
    // A stored entry that declares 4 GiB: the listing stops at it, so nothing is said missing or empty.
    const lying = path.join(work, 'lying.zip');
    fs.writeFileSync(lying, rawZip([{ name: 'top/a.txt', data: Buffer.from('abc'), size: 0xfffffff0 }]));
    const l = await run(['verify', lying]);
    expect(l.code).toBe(1);
    expect(l.stdout + l.stderr).toContain('zip structure: ');
    expect(l.stdout + l.stderr).not.toMatch(/the zip is empty|missing /);
    const empty = path.join(work, 'empty.zip');
    fs.writeFileSync(empty, rawZip([]));
    const e = await run(['verify', empty]);
    expect(e.code).toBe(1);
    expect(e.stdout + e.stderr).toContain('the zip is empty');
  });
});
