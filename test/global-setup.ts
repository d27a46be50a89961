import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** CLI tests spawn the built `dist/` programs, so build once before any suite runs. */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    // The same build as `npm run build`: tsc, then mcec-bundle bundled (scripts/build.mjs).
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  } catch {
    // tsc still emits on type errors; `npm run typecheck` is what fails the run for them.
    console.warn('global-setup: the build reported errors; CLI tests run against what it emitted');
  }
}
