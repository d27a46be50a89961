/**
 * One exit-code table for the four programs (0 done, 1 what was checked failed or was not found, 2 bad
 * usage), held through the built CLIs: each --help prints the table the README prints, and each program
 * exits by it, with messages that name what is wrong and what was meant.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES_HELP } from '../../src/cli/common.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { type ChildRun, ROOT, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

const PROGRAMS = ['mcec-record', 'mcec-bundle', 'mcec-replay', 'mcec-sim'] as const;
const cliPath = (name: string) => path.join(ROOT, 'dist', 'cli', `${name}.js`);
const run = (name: string, args: string[], cwd?: string): Promise<ChildRun> =>
  runNode([cliPath(name), ...args], cwd ? { cwd } : {});

let work: string;
let sessions: string;
let session: FixtureSession;

beforeAll(async () => {
  work = tempDir('mcec-exit-codes-');
  sessions = path.join(work, 'sessions');
  session = FixtureSession.create(sessions, { sessionId: 'c0de00000001' });
  session.call(calls.displays());
  session.end();
  session.close();
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('the exit-code table', () => {
  it('is in every --help and in the README, word for word', async () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(EXIT_CODES_HELP);
    for (const name of PROGRAMS) {
      const r = await run(name, ['--help']);
      expect(r.code, name).toBe(0);
      expect(r.stdout, name).toContain(EXIT_CODES_HELP);
    }
  });

  it('no arguments: the help on stdout, exit 2', async () => {
    for (const name of PROGRAMS) {
      const r = await run(name, []);
      expect(r.code, name).toBe(2);
      expect(r.stdout, name).toMatch(new RegExp(`^Usage: ${name}`));
    }
  });

  it('-v and -V print the version, exit 0', async () => {
    const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
    for (const name of PROGRAMS) {
      for (const flag of ['-v', '-V']) {
        const r = await run(name, [flag]);
        expect(r.code, `${name} ${flag}`).toBe(0);
        expect(r.stdout.trim()).toBe(version);
      }
    }
  });

  it('2 for a mistyped option, with what was meant', async () => {
    const cases: Array<[string, string[], string]> = [
      ['mcec-sim', ['--stdo'], '--stdio'],
      ['mcec-replay', ['x', '--stdio', '--lockdwn'], '--lockdown'],
      ['mcec-bundle', ['list', '--faild'], '--failed'],
      ['mcec-record', ['http', '--targt', 'http://127.0.0.1:1/mcp'], '--target'],
    ];
    for (const [name, args, meant] of cases) {
      const r = await run(name, args);
      expect(r.code, `${name} ${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/unknown option/);
      expect(r.stderr).toContain(`Did you mean ${meant}?`);
    }
  });

  it('2 for a mistyped command, with what was meant, even where a word may be a session id', async () => {
    const record = await run('mcec-record', ['htp']);
    expect(record.code).toBe(2);
    expect(record.stderr).toContain('Did you mean http?');
    for (const [args, meant] of [
      [['lsit', '-s', sessions], 'mcec-bundle list'],
      [['lsit'], 'mcec-bundle list'], // no ./sessions here: still the command, not "the dir does not exist"
      [['version'], 'mcec-bundle --version'],
      [['lst', '--failed', '-s', sessions], 'mcec-bundle list'],
      [['verfy', 'bug.zip'], 'mcec-bundle verify'],
    ] as const) {
      const r = await run('mcec-bundle', [...args], work);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`did you mean ${meant}?`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('2 for a blank value where a command or directory is needed, in one line before anything starts', async () => {
    const cases: Array<[string, string[], string]> = [
      ['mcec-record', ['stdio', '--sessions', sessions, '--', ' '], 'stdio needs a server command after --'],
      ['mcec-record', ['stdio', '--sessions', sessions, '--', ''], 'stdio needs a server command after --'],
      ['mcec-sim', ['--stdio', '--sessions', ''], '--sessions must name a directory'],
      ['mcec-sim', ['--stdio', '--sessions', '  '], '--sessions must name a directory'],
    ];
    for (const [name, args, named] of cases) {
      const r = await run(name, args);
      expect(r.code, `${name} ${JSON.stringify(args)}: ${r.stderr}`).toBe(2);
      expect(r.stderr.split('\n')[0]).toContain(`${name}: ${named}`);
      expect(r.stderr).not.toMatch(/recording stdio|\n\s+at /);
    }
  });

  it('1 for what is not there or cannot be read, naming it', async () => {
    const notZip = path.join(work, 'not-a-bundle.zip');
    fs.writeFileSync(notZip, 'hello');
    const cases: Array<[string, string[], string]> = [
      ['mcec-bundle', ['show', 'nope', '-s', sessions], `no session matching "nope" in ${sessions}`],
      ['mcec-bundle', ['list', '-s', path.join(work, 'nope')], `${path.join(work, 'nope')} (--sessions)`],
      ['mcec-bundle', ['verify', notZip], notZip],
      ['mcec-replay', [path.join(work, 'missing.zip'), '--stdio'], path.join(work, 'missing.zip')],
      ['mcec-replay', ['nope', '--stdio', '--sessions', sessions], 'no session matching "nope"'],
    ];
    for (const [name, args, named] of cases) {
      const r = await run(name, args);
      expect(r.code, `${name} ${args.join(' ')}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(named);
    }
  });

  it('1 when a port is taken (mcec-sim, mcec-record), saying what to do', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const sim = await run('mcec-sim', ['--http', `127.0.0.1:${port}`]);
      expect(sim.code).toBe(1);
      expect(sim.stderr).toMatch(/EADDRINUSE.*choose another port/);
      const record = await run('mcec-record', [
        'http',
        '--listen',
        `127.0.0.1:${port}`,
        '--target',
        'http://127.0.0.1:1/mcp',
        '--sessions',
        sessions,
      ]);
      expect(record.code).toBe(1);
      expect(record.stderr).toMatch(/cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    } finally {
      server.close();
    }
  });
});

describe('a damaged session.sqlite', () => {
  it('is named with its path by show, bundle and verdict (exit 1)', async () => {
    const broken = FixtureSession.create(path.join(work, 'broken'), { sessionId: 'bad000000001' });
    broken.call(calls.displays());
    broken.end();
    broken.close();
    const log = path.join(broken.dir, 'session.sqlite');
    for (const f of fs.readdirSync(broken.dir))
      if (f.startsWith('session.sqlite-')) fs.rmSync(path.join(broken.dir, f));
    fs.writeFileSync(log, Buffer.alloc(8192, 7));
    const dir = path.join(work, 'broken');
    for (const args of [
      ['show', 'bad0', '-s', dir],
      ['bad0', '-s', dir, '-o', path.join(work, 'b.zip')],
      ['verdict', 'bad0', 'fail', '-s', dir],
    ]) {
      const r = await run('mcec-bundle', args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(log);
      expect(r.stderr).toMatch(/file is not a database.*damaged/);
    }
  });
});

describe('an unexpected error', () => {
  it('is one line, `<program>: <message>`, exit 1 (mcec-record too: no stack trace)', async () => {
    // A broken install: the built programs with one module of the recorder missing.
    const install = tempDir('mcec-broken-install-');
    try {
      fs.cpSync(path.join(ROOT, 'dist'), path.join(install, 'dist'), { recursive: true });
      fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(install, 'package.json'));
      fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(install, 'node_modules'), 'dir');
      fs.rmSync(path.join(install, 'dist', 'record', 'recorder.js'));
      const r = await runNode(
        [
          path.join(install, 'dist', 'cli', 'mcec-record.js'),
          'stdio',
          '--sessions',
          path.join(install, 'sessions'),
          '--',
          process.execPath,
          '-e',
          '0',
        ],
        { cwd: install },
      );
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^mcec-record: Cannot find module '.*recorder\.js' imported from .*\n$/);
    } finally {
      fs.rmSync(install, { recursive: true, force: true });
    }
  });
});
