/** mcec-bundle says what happened: a typo in a path is an error naming it, never an empty answer with rc 0. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeFsError, makeDirectory } from '../../src/paths/disk-errors.js';
import { resolveSessionsDir } from '../../src/paths/sessions-dir.js';
import { tempDir } from '../bundle/helpers.js';
import { calls, FixtureSession } from '../support/fixture-session.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist/cli/mcec-bundle.js');
const ID = 'c11a05000001';

function run(args: string[], env: Record<string, string | undefined> = {}) {
  const merged: Record<string, string | undefined> = { ...process.env, MCEC_SESSIONS_DIR: undefined, ...env };
  for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
  const res = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: merged, cwd: root });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

let root: string;
let sessions: string;

beforeAll(async () => {
  root = tempDir();
  sessions = path.join(root, 'sessions');
  fs.mkdirSync(sessions);
  const s = FixtureSession.create(sessions, { sessionId: ID, scenario: 'answers' });
  s.call(calls.displays());
  const cap = await s.capture();
  await s.blankCapture(cap.summary as unknown as Record<string, unknown>);
  s.end();
  s.close();
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('mcec-bundle answers that say what happened', () => {
  it('a --sessions dir that does not exist is an error naming it (rc 1), for list, prune and a bundle', () => {
    const missing = path.join(root, 'sesions');
    for (const args of [
      ['list', '-s', missing],
      ['prune', '--older-than', '7d', '-s', missing],
      [ID, '-s', missing],
    ]) {
      const res = run(args);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stderr).toContain(`the sessions dir ${missing} (--sessions) does not exist`);
    }
    const viaEnv = run(['list'], { MCEC_SESSIONS_DIR: missing });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toContain('($MCEC_SESSIONS_DIR)');
  });

  it('an empty MCEC_SESSIONS_DIR means the default ./sessions, as for the recorder', () => {
    const res = run(['list', '--json'], { MCEC_SESSIONS_DIR: '' });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout).map((r: { id: string }) => r.id)).toEqual([ID]);
    const prev = process.env.MCEC_SESSIONS_DIR;
    process.env.MCEC_SESSIONS_DIR = '  ';
    try {
      expect(resolveSessionsDir()).toBe(path.resolve('./sessions'));
      expect(resolveSessionsDir('x')).toBe(path.resolve('x'));
    } finally {
      if (prev === undefined) delete process.env.MCEC_SESSIONS_DIR;
      else process.env.MCEC_SESSIONS_DIR = prev;
    }
  });

  it('--templates must be a directory and -o must go into one (rc 2, nothing written)', () => {
    const badTemplates = run(['show', ID, '-s', sessions, '--templates', path.join(root, 'nope')]);
    expect(badTemplates.code).toBe(2);
    expect(badTemplates.stderr).toContain('--templates');
    expect(badTemplates.stderr).toContain('is not a directory');

    const out = path.join(root, 'missing-dir', 'bug.zip');
    const badOut = run([ID, '-s', sessions, '-o', out]);
    expect(badOut.code).toBe(2);
    expect(badOut.stderr).toContain(`the directory ${path.dirname(out)} does not exist`);
    expect(fs.existsSync(path.dirname(out))).toBe(false);
  });

  it('a --max-bytes that cannot be met still writes the zip but exits 1 and says so', () => {
    const out = path.join(root, 'tiny.zip');
    const res = run([ID, '-s', sessions, '-o', out, '--max-bytes', '1KB', '--json']);
    expect(res.code).toBe(1);
    expect(fs.existsSync(out)).toBe(true);
    expect(JSON.parse(res.stdout).limitMet).toBe(false);
    expect(res.stderr).toMatch(/over --max-bytes 1024/);
    const fits = run([
      ID,
      '-s',
      sessions,
      '-o',
      path.join(root, 'fits.zip'),
      '--max-bytes',
      '50MB',
      '--json',
    ]);
    expect(fits.code).toBe(0);
    expect(JSON.parse(fits.stdout).limitMet).toBe(true);
  });

  it('an unknown id lists the one session there in the singular', () => {
    const res = run(['show', 'ffff', '-s', sessions]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('the one session there');
    expect(res.stderr).not.toContain('1 sessions');
  });
});

describe('file-system errors name their cause', () => {
  it('says permission denied, read-only or no space before the errno text', () => {
    const err = (code: string) => Object.assign(new Error(`${code}: boom, open '/x'`), { code });
    expect(describeFsError(err('EROFS'))).toBe("the file system is read-only: EROFS: boom, open '/x'");
    expect(describeFsError(err('ENOSPC'))).toMatch(/^no space left on the device: /);
    expect(describeFsError(err('EACCES'))).toMatch(/^permission denied: /);
    expect(describeFsError(err('EWHAT'))).toBe("EWHAT: boom, open '/x'");
  });

  it('makeDirectory says a file is in the way instead of a bare errno', () => {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, 'x');
    expect(() => makeDirectory(path.join(file, 'sub'))).toThrow(
      /cannot create .*a part of the path is a file/,
    );
    makeDirectory(path.join(root, 'a', 'b', 'c'));
    expect(fs.statSync(path.join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
  });
});
