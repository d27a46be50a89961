/** The CLI figures run the built programs: rebuild `dist/` when any source file is newer than it. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

function newestMtime(dir: string, ext: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p, ext));
    else if (entry.name.endsWith(ext)) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** True when dist/ is missing or older than the newest file in src/. */
export function distIsStale(root: string): boolean {
  const dist = path.join(root, 'dist');
  if (!fs.existsSync(path.join(dist, 'cli', 'mcec-bundle.js'))) return true;
  // tsc rewrites every output, so one build leaves all of dist/ newer than all of src/.
  return newestMtime(path.join(root, 'src'), '.ts') > newestMtime(dist, '.js');
}

/** Build dist/ as `npm run build` does when it is stale; tsc still emits on type errors (not ours to judge here). */
export function ensureDist(root: string, log: (m: string) => void): void {
  if (!distIsStale(root)) return;
  log('dist/ is stale: building with scripts/build.mjs');
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  } catch {
    log('the build reported errors; measuring what it emitted');
  }
  if (!fs.existsSync(path.join(root, 'dist', 'cli', 'mcec-bundle.js')))
    throw new Error('dist/ could not be built');
}
