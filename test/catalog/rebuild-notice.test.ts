/** A catalog.sqlite that is not a database when a command opens it is rebuilt, and stderr says so once. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../../bench/lib/fleet.js';
import { CATALOG_FILE } from '../../src/store/catalog.js';
import { cli, scratchRoot } from './helpers.js';

describe('catalog: a garbage catalog.sqlite at open', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  generateFleet(sessionsDir, { sessions: 3, seed: 11 });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('is rebuilt with one notice line naming the file; a missing one (first run) is created silently', () => {
    const file = path.join(sessionsDir, CATALOG_FILE);
    const first = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('');
    const listed = JSON.parse(first.stdout).length as number;

    for (const f of fs.readdirSync(sessionsDir).filter((n) => n.startsWith(CATALOG_FILE)))
      fs.rmSync(path.join(sessionsDir, f));
    fs.writeFileSync(file, 'not a database, just bytes '.repeat(200));
    const rebuilt = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(JSON.parse(rebuilt.stdout).length).toBe(listed);
    const lines = rebuilt.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(file);
    expect(lines[0]).toMatch(/^mcec-bundle: warning: the catalog .* rebuilt from the session logs$/);

    const again = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(again.stderr).toBe('');
  });
});
