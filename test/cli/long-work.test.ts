/**
 * Long work is not silent (issue 29): progress on stderr for a catalog sweep, index and bundling, only when
 * stderr is a terminal (a real pty from script(1)) and never in --json's stdout; the HTTP proxy says on its own
 * stderr when its target is down; `report --all` gives every listed session (proxied ones too) a page.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, ROOT, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

const HAS_SCRIPT =
  process.platform === 'linux' && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
const SESSIONS = 70; // more than one batch of the catalog's 64

let work: string;
let sessions: string;

beforeAll(() => {
  work = tempDir('mcec-long-work-');
  sessions = path.join(work, 'sessions');
  for (let i = 0; i < SESSIONS; i++) {
    const s = FixtureSession.create(sessions, {
      sessionId: `a0${String(i).padStart(10, '0')}`,
      startedAt: new Date(Date.parse('2026-11-20T08:00:00Z') + i * 60_000),
    });
    s.call({ ...calls.displays(), transport: 'http' }); // as recorded through the HTTP proxy
    s.end();
    s.close();
  }
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const sh = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** Run mcec-bundle with stderr on a pty (script(1)) and stdout into a file: what a terminal shows, and stdout. */
function onTerminal(args: string[]): { terminal: string; stdout: string; code: number | null } {
  const out = path.join(work, `stdout-${Math.random().toString(36).slice(2)}`);
  const command = `${sh(process.execPath)} ${sh(BUNDLE_CLI)} ${args.map(sh).join(' ')} > ${sh(out)}`;
  const r = spawnSync('script', ['-qec', command, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, MCEC_PROGRESS_AFTER_MS: '0' }, // show it at once: the work here is short
    timeout: 120_000,
  });
  const stdout = fs.readFileSync(out, 'utf8');
  fs.rmSync(out);
  return { terminal: r.stdout, stdout, code: r.status };
}

describe.runIf(HAS_SCRIPT)('progress on a terminal', () => {
  it('the first list of many sessions shows progress on stderr; --json on stdout stays clean', () => {
    const r = onTerminal(['list', '--json', '-s', sessions]);
    expect(r.code).toBe(0);
    expect(r.terminal).toMatch(new RegExp(`reading sessions\\.\\.\\. \\d+% \\(64/${SESSIONS}\\)`));
    expect(r.terminal).toContain('\x1b[K'); // the progress line is cleared when done
    expect(JSON.parse(r.stdout)).toHaveLength(SESSIONS);
  });

  it('index and bundling show theirs too', () => {
    const index = onTerminal(['index', '--json', '-s', sessions]);
    expect(index.terminal).toMatch(/reading sessions\.\.\. \d+%/);
    expect(JSON.parse(index.stdout)).toMatchObject({ sessions: SESSIONS, indexed: SESSIONS });
    const zip = path.join(work, 'one.zip');
    const bundle = onTerminal(['a00000000001', '-s', sessions, '-o', zip, '--no-gif']);
    expect(bundle.code).toBe(0);
    expect(bundle.terminal).toMatch(/bundling\.\.\. \d+% \(\d+\/\d+\)/);
    expect(bundle.stdout).toBe(`${zip}\n`);
  });
});

describe('no progress where no one watches', () => {
  it('a pipe gets none, even when the work is long enough', async () => {
    const copy = path.join(work, 'piped');
    fs.cpSync(sessions, copy, { recursive: true });
    fs.rmSync(path.join(copy, 'catalog.sqlite'), { force: true });
    const r = await runNode([BUNDLE_CLI, 'list', '-s', copy], { env: { MCEC_PROGRESS_AFTER_MS: '0' } });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toHaveLength(SESSIONS + 1);
  });
});

describe('report --all', () => {
  it('writes the missing report.html of every listed session, so each link of index.html opens a page', async () => {
    const copy = path.join(work, 'pages');
    fs.cpSync(sessions, copy, { recursive: true });
    // The bundle test above left a report.html in its session dir, copied with it (its mtime the copy's, so
    // newer or older than the log by luck): every page starts missing here.
    for (const d of fs.readdirSync(copy).filter((n) => /^\d{8}-/.test(n)))
      fs.rmSync(path.join(copy, d, 'report.html'), { force: true });
    const r = await runNode([BUNDLE_CLI, 'report', '--all', '-s', copy]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(path.join(copy, 'index.html'));
    expect(r.stderr).toContain(`wrote ${SESSIONS} report.html pages`);
    const dirs = fs.readdirSync(copy).filter((d) => /^\d{8}-/.test(d));
    for (const d of dirs) expect(fs.existsSync(path.join(copy, d, 'report.html')), d).toBe(true);
    const index = fs.readFileSync(path.join(copy, 'index.html'), 'utf8');
    expect(index).not.toContain('no report.html');
    expect(index.match(/\/report\.html"/g)?.length).toBeGreaterThanOrEqual(SESSIONS);
    // Nothing changed: no page is written again.
    const again = await runNode([BUNDLE_CLI, 'report', '--all', '-s', copy]);
    expect(again.stderr).not.toContain('wrote');
  });

  it('--no-pages writes the index only, and a session without a page says how to make one', async () => {
    const copy = path.join(work, 'no-pages');
    fs.cpSync(sessions, copy, { recursive: true });
    const r = await runNode([BUNDLE_CLI, 'report', '--all', '--no-pages', '-s', copy]);
    expect(r.code, r.stderr).toBe(0);
    const index = fs.readFileSync(path.join(copy, 'index.html'), 'utf8');
    expect(index).toContain('no report.html yet: <code>mcec-bundle report a00000000002</code> writes it');
    const dir = fs.readdirSync(copy).find((d) => d.endsWith('-a00000000002'))!;
    expect(fs.existsSync(path.join(copy, dir, 'report.html'))).toBe(false);
  });
});

describe('mcec-record http with its target down', () => {
  it('says so on its own stderr, once, while each client still gets its 502', async () => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'dist/cli/mcec-record.js'),
        'http',
        '--listen',
        '127.0.0.1:0',
        '--target',
        'http://127.0.0.1:9/mcp', // discard: nothing listens there
        '--sessions',
        path.join(work, 'proxied'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
    });
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    try {
      for (let i = 0; i < 600 && !/recording (http:\S+)/.test(stderr); i++)
        await new Promise((r) => setTimeout(r, 50));
      const url = /recording (http:\S+)/.exec(stderr)![1]!;
      const call = (id: number) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'windows' } }),
        });
      expect((await call(1)).status).toBe(502);
      expect((await call(2)).status).toBe(502);
      const lines = stderr.split('\n').filter((l) => l.includes('unreachable'));
      expect(lines).toEqual([
        'mcec-record: the target http://127.0.0.1:9/mcp is unreachable (ECONNREFUSED): clients get 502 until it answers; is MCEC (or the server) running there?',
      ]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
