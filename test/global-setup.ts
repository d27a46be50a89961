import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** CLI tests spawn the built `dist/` programs, so build once before any suite runs. */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
      cwd: root,
      stdio: 'inherit',
    });
  } catch {
    // tsc still emits on type errors; `npm run typecheck` is what fails the run for them.
    console.warn('global-setup: tsc reported errors; CLI tests run against what it emitted');
  }
}
