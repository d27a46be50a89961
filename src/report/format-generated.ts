/** The precompile scripts' last step: a generated module formatted as the repository's own code is. */
import { spawnSync } from 'node:child_process';
import { planSpawn } from '../util/windows-command.js';

/** Run `npx biome format --write file` (npx is npx.cmd on Windows: planSpawn runs it through cmd.exe there). */
export function formatGenerated(file: string): void {
  const biome = planSpawn('npx', ['biome', 'format', '--write', file]);
  const formatted = spawnSync(biome.file, biome.args, {
    stdio: 'inherit',
    windowsVerbatimArguments: biome.windowsVerbatimArguments,
  });
  if (formatted.error || formatted.status !== 0)
    throw formatted.error ?? new Error(`biome format exited ${formatted.status ?? formatted.signal}`);
}
