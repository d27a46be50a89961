/**
 * mcec-replay's exit codes and messages as a newcomer meets them, through the built CLI: what cannot be
 * found or read exits 1 and names the path and the next step; only bad usage exits 2. A clean --listen run
 * stopped by a signal does not claim a divergence.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { REPLAY_CLI, root, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();

const cli = (...args: string[]) =>
  spawnSync(process.execPath, [REPLAY_CLI, ...args], { cwd: fixture.work, encoding: 'utf8' });

describe('mcec-replay: what cannot be found or read exits 1, naming it', () => {
  it('a missing .zip is a missing file, not an invalid session id', () => {
    const r = cli('missing.zip', '--stdio');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${path.join(fixture.work, 'missing.zip')}: no such file or directory`);
    expect(r.stderr).not.toMatch(/invalid session id/);
  });

  it('a missing --sessions dir says so, as mcec-bundle does', () => {
    const r = cli('5f19', '--stdio', '--sessions', path.join(fixture.work, 'nope'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `the sessions dir ${path.join(fixture.work, 'nope')} (--sessions) does not exist`,
    );
    expect(r.stderr).toContain('give --sessions DIR');
  });

  it('a session that is not there, or an ambiguous prefix, exits 1 like mcec-bundle', () => {
    const missing = cli('nope', '--stdio', '--sessions', fixture.demo.sessionsDir);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no session matching "nope"/);
    // Two sessions whose ids share the prefix "5f".
    const two = path.join(fixture.work, 'two');
    fs.mkdirSync(two);
    for (const name of ['20261202-101500-5f19aaaaaaaa', '20261202-101600-5f19bbbbbbbb'])
      fs.cpSync(fixture.demo.sessionDir, path.join(two, name), { recursive: true });
    const ambiguous = cli('5f19', '--stdio', '--sessions', two);
    expect(ambiguous.status).toBe(1);
    expect(ambiguous.stderr).toMatch(/is ambiguous/);
  });

  it('an id with characters no id has is bad usage (2)', () => {
    const r = cli('a b', '--stdio', '--sessions', fixture.demo.sessionsDir);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/invalid session id/);
  });

  it('a file that is not a zip, a truncated zip, a zip that is not a bundle and a --no-db bundle exit 1', async () => {
    const notZip = path.join(fixture.work, 'not-a.zip');
    fs.writeFileSync(notZip, 'hello');
    const full = path.join(fixture.work, 'full.zip');
    await buildBundle(fixture.demo.sessionDir, { output: full });
    const truncated = path.join(fixture.work, 'truncated.zip');
    const bytes = fs.readFileSync(full);
    fs.writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const noDb = path.join(fixture.work, 'no-db.zip');
    await buildBundle(fixture.demo.sessionDir, { output: noDb, db: false });
    for (const [zip, said] of [
      [notZip, /not a readable (zip|bundle)/],
      [truncated, /not a readable (zip|bundle)/],
      [noDb, /holds no session\.sqlite \(built with --no-db\?\).*bundle the session again without --no-db/],
    ] as const) {
      const r = cli(zip, '--stdio');
      expect(r.status, `${zip}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(path.basename(zip));
      expect(r.stderr).toMatch(said);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
  });

  it('a corrupt session.sqlite is named with its path', () => {
    const broken = path.join(fixture.work, 'broken', '20261202-101500-5f19c9c01a3f');
    fs.mkdirSync(path.dirname(broken), { recursive: true });
    fs.cpSync(fixture.demo.sessionDir, broken, { recursive: true });
    for (const f of fs.readdirSync(broken))
      if (f.startsWith('session.sqlite-')) fs.rmSync(path.join(broken, f));
    fs.writeFileSync(path.join(broken, 'session.sqlite'), Buffer.alloc(8192, 7));
    const r = cli(broken, '--stdio');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(path.join(broken, 'session.sqlite'));
    expect(r.stderr).toMatch(/file is not a database/);
  });
});

describe('mcec-replay --listen', () => {
  it('a clean run stopped by SIGINT says SIGINT only, and prints its report on stdout', async () => {
    const child = spawn(process.execPath, [REPLAY_CLI, fixture.demo.sessionDir, '--listen', '127.0.0.1:0'], {
      cwd: root,
    });
    let stderr = '';
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    await new Promise<void>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (s: string) => {
        stderr += s;
        if (/on http:\/\//.test(stderr)) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.kill('SIGINT');
    const code = await exited;
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('mcec-replay: SIGINT, closing');
    expect(stderr).not.toMatch(/diverged/);
    expect(stdout).toMatch(/0 calls|calls: 0|no calls/i);
  });
});
