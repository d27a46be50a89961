/** A read-only view of a directory for tests, whoever runs them (root writes through chmod). */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A read-only view of `dir` (a read-only bind mount: root writes through chmod), or null when none can be made. */
export function readOnly(dir: string): { undo(): void } | null {
  if (process.platform !== 'linux') return null;
  if (process.getuid?.() !== 0) {
    const all = [dir, ...fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f)))];
    const dirs = all.filter((p) => fs.statSync(p).isDirectory());
    for (const d of dirs) fs.chmodSync(d, 0o555);
    return {
      undo: () => {
        for (const d of dirs) fs.chmodSync(d, 0o755);
      },
    };
  }
  if (spawnSync('mount', ['--bind', dir, dir]).status !== 0) return null;
  if (spawnSync('mount', ['-o', 'remount,bind,ro', dir]).status !== 0) {
    spawnSync('umount', [dir]);
    return null;
  }
  return { undo: () => spawnSync('umount', [dir]) };
}
