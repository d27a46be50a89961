import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const { version } = JSON.parse(fs.readFileSync(`${root}package.json`, 'utf8')) as { version: string };

describe('--version', () => {
  it.each(['mcec-bundle', 'mcec-record', 'mcec-replay', 'mcec-sim'])(
    '%s prints the package version and exits 0',
    (cli) => {
      for (const flag of ['--version', '-V']) {
        const r = spawnSync(process.execPath, [`dist/cli/${cli}.js`, flag], { cwd: root, encoding: 'utf8' });
        expect(r.status).toBe(0);
        expect(r.stdout.trim()).toBe(version);
      }
    },
  );
});
