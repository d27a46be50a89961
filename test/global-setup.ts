import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * CLI tests spawn the built `dist/` programs, so build once before any suite runs. MCEC_TEST_PREBUILT=1 skips
 * it: CI's later runs (clock-shifted, Node 22) test the dist/ its first run built from the same checkout.
 */
export default function setup(): void {
  if (process.env.MCEC_TEST_PREBUILT === '1') return;
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    // The same build as `npm run build`: tsc, then mcec-bundle bundled (scripts/build.mjs).
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  } catch (err) {
    // CLI suites run against dist/: a failed build would test stale or half-written programs.
    throw new Error(`global-setup: the build failed (node scripts/build.mjs): ${(err as Error).message}`);
  }
}
