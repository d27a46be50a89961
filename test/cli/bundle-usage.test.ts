/**
 * mcec-bundle as a new user meets it, through the built CLI: options before the command word, mistyped
 * commands, a short ambiguous prefix, `diff --last-pass` with nothing to compare, a blank --sessions, wrong
 * or missing paths, each subcommand's --help and hint, and the temp files a killed bundle left.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES_HELP } from '../../src/cli/common.js';
import { calls, deadPid, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, type ChildRun, ROOT, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

let work: string;
let sessions: string;
const dirs: string[] = [];
const START = Date.parse('2026-03-01T10:00:00Z');
const SESSION_COUNT = 12;

const bundle = (args: string[], env: Record<string, string> = {}): Promise<ChildRun> =>
  runNode([BUNDLE_CLI, ...args], { env, cwd: work });
const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

beforeAll(() => {
  work = tempDir('mcec-bundle-usage-');
  sessions = path.join(work, 'sessions');
  // Runs of one scenario, all failing: ids share the prefix "ab", so "ab" matches every one.
  for (let i = 0; i < SESSION_COUNT; i++) {
    const s = FixtureSession.create(sessions, {
      sessionId: `ab${i.toString(16).padStart(10, '0')}`,
      startedAt: new Date(START + i * 60_000),
      status: 'ended',
    });
    s.call(calls.displays());
    s.end({ passed: false, reason: 'the check failed' });
    s.close();
    dirs.push(s.dir);
  }
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('mcec-bundle command words', () => {
  it('takes options placed before the command', async () => {
    const listed = await bundle(['--sessions', sessions, 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('ab0000000000');
    const json = await bundle(['--json', 'list'], { MCEC_SESSIONS_DIR: sessions });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toHaveLength(SESSION_COUNT);
  });

  it('names a mistyped command in one line, with no complaint about the default command', async () => {
    for (const args of [['lsit'], ['shwo', 'ab00'], ['lst', '--failed']]) {
      const r = await bundle(['--sessions', sessions, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(lines(r.stderr), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(/unknown command "\w+": did you mean mcec-bundle (list|show)\?/);
      expect(r.stderr).not.toMatch(/bundle'|there:\)/);
    }
  });

  it('help of an unknown command says so, exit 2', async () => {
    const r = await bundle(['help', 'bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "bogus"');
    expect(r.stdout).toBe('');
  });
});

describe('mcec-bundle answers', () => {
  it('an ambiguous prefix names the 10 most recent matches, not all', async () => {
    const r = await bundle(['show', 'ab', '--sessions', sessions]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${SESSION_COUNT} sessions match`);
    expect(r.stderr).toContain('the 10 most recent');
    expect(lines(r.stderr)).toHaveLength(11);
    expect(r.stderr).toContain(path.basename(dirs.at(-1)!));
    expect(r.stderr).not.toContain(path.basename(dirs[0]!));
  });

  it('diff --last-pass --exit-code with no passing run: exit 2 (not "differs"), saying what to do', async () => {
    const r = await bundle(['diff', 'ab000000000b', '--last-pass', '--exit-code', '--sessions', sessions]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no passing run');
    expect(r.stderr).toContain('mcec-bundle verdict <id> pass');
  });

  it('a blank --sessions is bad usage, exit 2, whichever command', async () => {
    for (const args of [
      ['list', '--sessions', ''],
      ['ab00', '-s', ''],
      ['show', 'ab00', '--sessions= '],
    ]) {
      const r = await bundle(args, { MCEC_SESSIONS_DIR: sessions });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain('--sessions is empty');
    }
    // The other programs take --sessions through the same parser.
    for (const args of [
      [path.join(ROOT, 'dist/cli/mcec-record.js'), 'stdio', '--sessions', '', '--', 'true'],
      [path.join(ROOT, 'dist/cli/mcec-record.js'), 'http', '--target', 'http://127.0.0.1:9/mcp', '-s', ''],
      [path.join(ROOT, 'dist/cli/mcec-replay.js'), 'ab00', '--sessions', ''],
    ]) {
      const r = await runNode(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain('--sessions is empty');
    }
  });

  it('a blank -o is bad usage, exit 2, never the current directory', async () => {
    const cwdBefore = fs.readdirSync(work).sort();
    for (const args of [
      ['ab0000000000', '-o', ''],
      ['diff', 'ab0000000000', 'ab0000000001', '-o', ' '],
      ['junit', '--output=', '--json'],
    ]) {
      const r = await bundle([...args, '--sessions', sessions]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(lines(r.stderr)[0], args.join(' ')).toBe(
        'mcec-bundle: -o is empty: give a file or a directory, or leave the option out',
      );
    }
    expect(fs.readdirSync(work).sort()).toEqual(cwdBefore);
    const t = await bundle(['ab0000000000', '--templates', '', '--sessions', sessions]);
    expect(t.code).toBe(2);
    expect(lines(t.stderr)[0]).toBe(
      'mcec-bundle: --templates is empty: give a directory, or leave the option out',
    );
  });

  it('diff -o at a file and verify of a missing zip: one line each, exit 2 and 1', async () => {
    const file = path.join(work, 'a-file');
    fs.writeFileSync(file, 'x');
    const d = await bundle(['diff', 'ab0000000000', 'ab0000000001', '-o', file, '--sessions', sessions]);
    expect(d.code).toBe(2);
    expect(lines(d.stderr)[0]).toBe(
      `mcec-bundle: -o ${file} is a file: diff writes a directory (diff.html and its PNGs) there`,
    );
    const v = await bundle(['verify', path.join(work, 'none.zip')]);
    expect(v.code).toBe(1);
    expect(lines(v.stderr)).toEqual([`mcec-bundle: verify: ${path.join(work, 'none.zip')} does not exist`]);
  });

  it('bundling removes the temp files a killed run left beside report.html, never a live writer', async () => {
    const dir = dirs[3]!;
    const dead = path.join(dir, `report.html.${deadPid()}.0123abcd.partial`);
    const live = path.join(dir, `report.html.${process.pid}.89abcdef.partial`);
    fs.writeFileSync(dead, '<html>half');
    fs.writeFileSync(live, '<html>half');
    const r = await bundle([path.basename(dir), '-o', path.join(work, 'b.zip'), '--sessions', sessions]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    fs.rmSync(live);
  });
});

describe('mcec-bundle subcommand help', () => {
  it("every subcommand's --help ends with the exit-code table", async () => {
    const top = await bundle(['--help']);
    const commands = top.stdout.slice(top.stdout.indexOf('Commands:'), top.stdout.indexOf('Examples:'));
    const names = [...commands.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!).filter((n) => n !== 'help');
    expect(names).toContain('list');
    expect(names).toContain('mcp');
    for (const name of names) {
      const r = await bundle([name, '--help']);
      expect(r.code, name).toBe(0);
      expect(r.stdout.trimEnd().endsWith(EXIT_CODES_HELP), name).toBe(true);
      expect(r.stdout, name).not.toMatch(/\(default: (\[\]|\{\})\)/);
    }
  });

  it('the top-level help fits 80 columns when not on a terminal', async () => {
    const r = await bundle(['--help']);
    const wide = r.stdout.split('\n').filter((l) => l.length > 80);
    expect(wide).toEqual([]);
  });

  it('report --no-pages without --all is bad usage', async () => {
    const r = await bundle(['report', 'ab0000000000', '--no-pages', '--sessions', sessions]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--no-pages goes with --all');
  });

  it('report with a session and --all says to give one of them, not to give a session', async () => {
    const r = await bundle(['report', 'ab0000000000', '--all', '--sessions', sessions]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)[0]).toBe(
      'mcec-bundle: give a session or --all (the index page of every session), not both',
    );
  });

  it("a subcommand's usage error points to its own --help", async () => {
    const option = await bundle(['list', '--bogus']);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('(run mcec-bundle list --help for usage)');
    const value = await bundle(['diff', 'ab00', '--sessions', sessions]);
    expect(value.code).toBe(2);
    expect(value.stderr).toContain('(run mcec-bundle diff --help for usage)');
  });
});

describe('mcec-bundle list --since and triage --rules', () => {
  it('list --since keeps the sessions started within it, as triage does', async () => {
    const recent = path.join(work, 'recent');
    for (const [id, ageMs] of [
      ['feed00000001', 60_000],
      ['feed00000002', 30 * 86_400_000],
    ] as const) {
      const s = FixtureSession.create(recent, { sessionId: id, startedAt: new Date(Date.now() - ageMs) });
      s.call(calls.displays());
      s.end({ passed: false });
      s.close();
    }
    const table = await bundle(['list', '--since', '7d', '--sessions', recent]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('feed00000001');
    expect(table.stdout).not.toContain('feed00000002');
    const json = await bundle(['list', '--since', '7d', '--json', '--sessions', recent]);
    expect((JSON.parse(json.stdout) as Array<{ id: string }>).map((l) => l.id)).toEqual(['feed00000001']);
    const triage = await bundle(['triage', '--since', '7d', '--sessions', recent]);
    expect(triage.stdout).toMatch(/^1 session \(since /);
    const all = await bundle(['list', '--json', '--sessions', recent]);
    expect(JSON.parse(all.stdout)).toHaveLength(2);
    const bad = await bundle(['list', '--since', 'soon', '--sessions', recent]);
    expect(bad.code).toBe(2);
  });

  it('triage --rules: a missing file or bad JSON is bad usage in one line, as --mask-rules', async () => {
    const missing = path.join(work, 'no-rules.json');
    const notJson = path.join(work, 'bad-rules.json');
    fs.writeFileSync(notJson, '{ nope');
    const none = await bundle(['triage', '--rules', missing, '--sessions', sessions]);
    expect(none.code).toBe(2);
    expect(lines(none.stderr)[0]).toBe(`mcec-bundle: --rules ${missing} does not exist`);
    const bad = await bundle(['triage', '--rules', notJson, '--sessions', sessions]);
    expect(bad.code).toBe(2);
    expect(lines(bad.stderr)[0]).toMatch(/^mcec-bundle: --rules .*bad-rules\.json: not JSON/);
    const mask = await bundle(['ab0000000000', '--mask-rules', missing, '--sessions', sessions]);
    expect(mask.code).toBe(2);
    expect(lines(mask.stderr)[0]).toBe(`mcec-bundle: --mask-rules ${missing} does not exist`);
  });
});

describe('mcec-bundle mcp --listen on a taken port', () => {
  it('exits 1 saying what to do, as mcec-sim and mcec-replay do', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const r = await bundle(['mcp', '--sessions', sessions, '--listen', `127.0.0.1:${port}`]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('EADDRINUSE');
      expect(r.stderr).toContain('choose another port (0 picks a free one)');
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
