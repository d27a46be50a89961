/**
 * What the programs check before they serve, through the built CLIs: mcec-record's sessions dir (created when
 * missing, else a writable directory, else exit 1 in one line before a client is served or the server started),
 * the demo's likewise; a taken port said the same way, with what to do, by every program that listens;
 * mcec-record's usage errors followed by the hint of the mode's help, and each mode's help by the exit codes;
 * the options the programs share spelled alike: a non-loopback address refused as usage naming the option
 * that allows it, `-s` for `--sessions`, `--listen` for mcec-sim's `--http`.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES_HELP } from '../../src/cli/common.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { type ChildRun, ROOT, runNode } from '../support/programs.js';
import { readOnly } from '../support/read-only.js';
import { tempDir } from '../support/temp.js';

const cliPath = (name: string) => path.join(ROOT, 'dist', 'cli', `${name}.js`);
/** A program that serves forever when it should not start is cut off: the test then fails on its exit code. */
const run = (name: string, args: string[]): Promise<ChildRun> =>
  runNode([cliPath(name), ...args], { timeoutMs: 20_000 });

let work: string;
let aFile: string;
let sessions: string;
beforeAll(() => {
  work = tempDir('mcec-startup-checks-');
  aFile = path.join(work, 'a-file');
  fs.writeFileSync(aFile, 'not a dir\n');
  sessions = path.join(work, 'sessions');
  const s = FixtureSession.create(sessions, { sessionId: 'b00700000001' });
  s.call(calls.displays());
  s.end();
  s.close();
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** A stdio server command that leaves `marker` behind when it is started at all. */
const markingServer = (marker: string) => [
  '--',
  process.execPath,
  '-e',
  "require('fs').writeFileSync(process.argv[1], '')",
  marker,
];

/** Exit 1 with one line naming the dir, and nothing served or started. */
function expectRefused(r: ChildRun, program: string, dir: string, why: RegExp): void {
  expect(r.code, r.stderr).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toContain(`${program}: `);
  expect(lines[0]).toContain(dir);
  expect(lines[0]).toMatch(why);
  expect(r.stderr).not.toMatch(/recording|\n\s+at /);
}

describe('mcec-record checks its sessions dir before it serves', () => {
  it('http: a file as --sessions is exit 1 in one line, before listening', async () => {
    const r = await run('mcec-record', [
      'http',
      '--listen',
      '127.0.0.1:0',
      '--target',
      'http://127.0.0.1:1/mcp',
      '--sessions',
      aFile,
    ]);
    expectRefused(r, 'mcec-record', aFile, /is a file, not a directory/);
  });

  it('stdio: a path under a file is exit 1 in one line, and the server is never started', async () => {
    const marker = path.join(work, 'started');
    const under = path.join(aFile, 'sessions');
    const r = await run('mcec-record', ['stdio', '--sessions', under, ...markingServer(marker)]);
    expectRefused(r, 'mcec-record', under, /a part of the path is a file/);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('stdio: a read-only dir is exit 1 in one line, and the server is never started', async (ctx) => {
    const dir = path.join(work, 'read-only');
    fs.mkdirSync(dir);
    const view = readOnly(dir);
    if (!view) return ctx.skip();
    const marker = path.join(work, 'started-ro');
    try {
      const r = await run('mcec-record', ['stdio', '--sessions', dir, ...markingServer(marker)]);
      expectRefused(
        r,
        'mcec-record',
        dir,
        /cannot be written: (the file system is read-only|permission denied)/,
      );
      expect(fs.existsSync(marker)).toBe(false);
    } finally {
      view.undo();
    }
  });

  it('stdio: a missing dir is created (with its parents) and the server runs', async () => {
    const dir = path.join(work, 'new', 'sessions');
    const marker = path.join(work, 'started-new');
    const r = await run('mcec-record', ['stdio', '--sessions', dir, ...markingServer(marker)]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(marker)).toBe(true);
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    // The write check leaves nothing behind.
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });
});

describe('the demo checks its sessions dir first', () => {
  it('a file as --sessions is exit 1 in one line naming it', async () => {
    const r = await run('demo', ['--sessions', aFile]);
    expectRefused(r, 'demo', aFile, /is a file, not a directory/);
    expect(r.stderr).not.toMatch(/EEXIST|the demo broke/);
  });
});

describe('a port another program listens on', () => {
  it('is exit 1 with the same line and hint from every program that listens', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const at = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      const cases: Array<[string, string[]]> = [
        [
          'mcec-record',
          ['http', '--listen', at, '--target', 'http://127.0.0.1:1/mcp', '--sessions', sessions],
        ],
        ['mcec-bundle', ['mcp', '--listen', at, '--sessions', sessions]],
        ['mcec-sim', ['--http', at]],
        ['mcec-replay', ['b007', '--sessions', sessions, '--listen', at]],
      ];
      for (const [name, args] of cases) {
        const r = await run(name, args);
        expect(r.code, `${name}: ${r.stderr}`).toBe(1);
        expect(r.stderr.trim(), name).toBe(
          `${name}: cannot listen on ${at}: EADDRINUSE: another program listens there; choose another port (0 picks a free one)`,
        );
      }
    } finally {
      server.close();
    }
  });
});

describe("mcec-record's usage errors", () => {
  it('end with the hint of the help that explains them; stdio says the server command goes after --', async () => {
    const cases: Array<[string[], string, string]> = [
      [['http', '--bogus'], "unknown option '--bogus'", '(run mcec-record http --help for usage)'],
      [
        ['stdio', '--sessions', sessions],
        "missing required argument 'command'",
        'the server command goes after --',
      ],
      [
        ['stdio'],
        "missing required argument 'command'",
        'mcec-record stdio [options] -- <command> [args...]',
      ],
      [['bogus'], "unknown command 'bogus'", '(run mcec-record --help for usage)'],
      // A bad value found by the mode's own checks, not by the option parser: the same mode's hint.
      [
        ['http', '--timeout', 'soon', '-s', sessions],
        '--timeout "soon"',
        '(run mcec-record http --help for usage)',
      ],
      [
        ['http', '--target', 'nowhere', '-s', sessions],
        'target is not a URL',
        '(run mcec-record http --help for usage)',
      ],
    ];
    for (const [args, error, hint] of cases) {
      const r = await run('mcec-record', args);
      expect(r.code, args.join(' ')).toBe(2);
      const [first, second] = r.stderr.trim().split('\n');
      expect(first).toContain(error);
      expect(second, args.join(' ')).toContain(hint);
    }
  });

  it("each mode's --help ends with the exit codes and that mode's own", async () => {
    for (const mode of ['http', 'stdio']) {
      const r = await run('mcec-record', [mode, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(EXIT_CODES_HELP);
      const after = r.stdout.slice(r.stdout.indexOf(EXIT_CODES_HELP) + EXIT_CODES_HELP.length);
      expect(after.trimStart()).toMatch(new RegExp(`^mcec-record ${mode} `));
    }
  });
});

describe('the options the programs share', () => {
  it('a non-loopback address without the option that allows it: exit 2, one wording naming the option', async () => {
    const cases: Array<[string, string[], string]> = [
      ['mcec-record', ['http', '--listen', '0.0.0.0:0', '--sessions', aFile], '--allow-remote'],
      ['mcec-bundle', ['mcp', '--listen', '0.0.0.0:0', '--sessions', sessions], '--allow-remote'],
      ['mcec-sim', ['--http', '0.0.0.0:0'], '--token or $MCEC_SIM_TOKEN'],
      ['mcec-sim', ['--listen', '0.0.0.0:0'], '--token or $MCEC_SIM_TOKEN'],
      ['mcec-replay', ['b007', '--sessions', sessions, '--listen', '0.0.0.0:0'], '--token'],
    ];
    for (const [name, args, option] of cases) {
      const r = await run(name, args);
      expect(r.code, `${name} ${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr.split('\n')[0]).toBe(
        `${name}: refusing to listen on non-loopback host 0.0.0.0 (${option} allows it)`,
      );
    }
  });

  it("the demo's --serve off loopback: exit 2 before the demo runs", async () => {
    const dir = path.join(work, 'demo-remote');
    const r = await run('demo', ['--serve', '--listen', '0.0.0.0:0', '--sessions', dir]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(/^demo: refusing to listen on non-loopback host 0\.0\.0\.0 \(/);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('-s is --sessions for mcec-record and mcec-replay, as for mcec-bundle and the demo', async () => {
    const dir = path.join(work, 'short-s');
    const marker = path.join(work, 'started-short-s');
    const record = await run('mcec-record', ['stdio', '-s', dir, ...markingServer(marker)]);
    expect(record.code, record.stderr).toBe(0);
    expect(record.stderr).toContain(`sessions in ${dir}`);
    expect(fs.existsSync(marker)).toBe(true);
    // stdin is closed at once: the replay serves nothing and reports its one recording unused.
    const replay = await run('mcec-replay', ['b007', '-s', sessions, '--stdio', '--json']);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stderr).source.sessionId).toBe('b00700000001');
  });

  it("--listen is mcec-sim's --http; both at once is bad usage", async () => {
    const both = await run('mcec-sim', ['--http', '127.0.0.1:0', '--listen', '127.0.0.1:0']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('choose exactly one transport');
  });
});
