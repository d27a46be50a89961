/**
 * Cleanup that the file system refuses never decides a command's outcome. On Windows an antivirus scanner
 * or the search indexer holds a file just written (EBUSY, EPERM), so removing a temp dir in a `finally`
 * can fail after the work succeeded, or in place of the real error of work that failed. Here the refusal
 * is real: a mount point inside the temp dir when root (rmdir: EBUSY), a dir this user may not empty
 * otherwise (EACCES). The leftover carries this process's pid in its name, for the sweep of dead writers.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { writeFileAtomic } from '../../src/report/write-atomic.js';
import { removeBestEffort, removeDeadTempDirs } from '../../src/util/temp-files.js';
import { calls, deadPid, FixtureSession } from '../support/fixture-session.js';
import { removeDir, tempDir } from '../support/temp.js';

const AS_ROOT = process.getuid?.() === 0;
const undo: Array<() => void> = [];
afterEach(() => {
  for (const f of undo.splice(0).reverse()) f();
});

/** A dir `held` in `dir` that cannot be removed until the returned function runs. */
function blockRemoval(dir: string): void {
  const held = path.join(dir, 'held');
  fs.mkdirSync(held);
  fs.writeFileSync(path.join(held, 'open-in-a-scanner'), 'x');
  if (AS_ROOT) {
    expect(spawnSync('mount', ['--bind', held, held]).status).toBe(0);
    undo.push(() => spawnSync('umount', [held]));
  } else {
    fs.chmodSync(held, 0o555);
    undo.push(() => fs.chmodSync(held, 0o755));
  }
}

/** A finished session with a failure, in a fresh root. */
function session(root: string): FixtureSession {
  const s = FixtureSession.create(path.join(root, 'sessions'), { sessionId: 'c1ea00000001' });
  s.call(calls.displays());
  s.call(calls.waitForTimeout());
  s.end();
  s.close();
  return s;
}

/** Run `work` with the OS temp dir at `tmp` (os.tmpdir() reads TMPDIR at each call). */
async function withTempDir<T>(tmp: string, work: () => Promise<T>): Promise<T> {
  const before = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    return await work();
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
}

/** onProgress that makes the bundle's temp dir (the one under `tmp`) unremovable, once. */
function blockBundleTempDir(tmp: string): () => void {
  let blocked = false;
  return () => {
    if (blocked) return;
    const [name] = fs.readdirSync(tmp).filter((n) => n.startsWith(`mcec-bundle-${process.pid}-`));
    expect(name).toBeDefined();
    blockRemoval(path.join(tmp, name!));
    blocked = true;
  };
}

describe('cleanup the file system refuses', () => {
  it('a bundle is still written and verifies; its temp dir is left for the sweep, named for this process', async () => {
    const root = tempDir('mcec-cleanup-');
    undo.push(() => removeDir(root));
    const s = session(root);
    const tmp = path.join(root, 'tmp');
    fs.mkdirSync(tmp);
    const result = await withTempDir(tmp, () =>
      buildBundle(s.dir, {
        output: path.join(root, 'b.zip'),
        gif: false,
        onProgress: blockBundleTempDir(tmp),
      }),
    );
    expect(result.bundle).toBe(path.join(root, 'b.zip'));
    expect((await verifyBundle(result.bundle)).ok).toBe(true);
    const left = fs.readdirSync(tmp);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(new RegExp(`^mcec-bundle-${process.pid}-[A-Za-z0-9]{6}$`));
  });

  it('a bundle that fails reports its own error, not the refused cleanup', async () => {
    const root = tempDir('mcec-cleanup-');
    undo.push(() => removeDir(root));
    const s = session(root);
    const tmp = path.join(root, 'tmp');
    fs.mkdirSync(tmp);
    // Its folder is a file: the zip cannot be written (ENOTDIR), a real failure of the bundle itself.
    fs.writeFileSync(path.join(root, 'not-a-dir'), '');
    const output = path.join(root, 'not-a-dir', 'b.zip');
    const failed = withTempDir(tmp, () =>
      buildBundle(s.dir, { output, gif: false, onProgress: blockBundleTempDir(tmp) }),
    );
    await expect(failed).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTDIR|EEXIST)$/) });
    await expect(failed).rejects.toThrow(/not-a-dir/);
  });

  it('removeBestEffort says false and throws nothing; a dead writer’s leftover is swept once removable', () => {
    const root = tempDir('mcec-cleanup-');
    undo.push(() => removeDir(root));
    const leftover = path.join(root, `mcec-bundle-${deadPid()}-AbC123`);
    fs.mkdirSync(leftover);
    blockRemoval(leftover);
    expect(removeBestEffort(leftover)).toBe(false);
    expect(fs.existsSync(leftover)).toBe(true);
    expect(removeDeadTempDirs('mcec-bundle', root)).toBe(0); // still refused: kept, no error
    undo.pop()!(); // the scanner let go
    expect(removeDeadTempDirs('mcec-bundle', root)).toBe(1);
    expect(fs.existsSync(leftover)).toBe(false);
    expect(removeBestEffort(path.join(root, 'never-there'))).toBe(true);
  });

  it('a page written atomically first removes the temp files dead writers left beside it', () => {
    const root = tempDir('mcec-cleanup-');
    undo.push(() => removeDir(root));
    const file = path.join(root, 'report.html');
    const dead = `${file}.${deadPid()}.0123abcd.partial`;
    const live = `${file}.${process.pid}.4567cdef.partial`;
    for (const f of [dead, live]) fs.writeFileSync(f, 'half a page');
    writeFileAtomic(file, 'the page');
    expect(fs.readFileSync(file, 'utf8')).toBe('the page');
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true); // a live writer's: never touched
  });
});
