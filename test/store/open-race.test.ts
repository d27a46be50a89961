/** Several processes creating the same new log at the same moment: every one opens it, none fails. */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/schema.js';
import { tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const root = tempDir('mcec-open-race-');
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

// Each child waits for the same wall-clock instant, then opens (creating and migrating) the log.
const CHILD = `
import { openSessionDb } from ${JSON.stringify(path.join(ROOT, 'dist/store/open.js'))};
const [file, at] = process.argv.slice(2);
while (Date.now() < Number(at)) {}
try { openSessionDb(file).close(); console.log('ok'); } catch (err) { console.log('fail ' + err.message); }
`;

describe('openSessionDb from several processes at once', () => {
  it('creates the schema once: every process opens the log', async () => {
    const child = path.join(root, 'child.mjs');
    fs.writeFileSync(child, CHILD);
    const results: string[] = [];
    for (let round = 0; round < 12; round += 1) {
      const file = path.join(root, `round-${round}.sqlite`);
      const at = Date.now() + 700;
      const runs = await Promise.all(
        Array.from({ length: 4 }, () => promisify(execFile)(process.execPath, [child, file, String(at)])),
      );
      results.push(...runs.map((r) => r.stdout.trim()));
      const db = new Database(file, { readonly: true });
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      db.close();
    }
    expect(results.filter((r) => r !== 'ok')).toEqual([]);
  }, 60_000);
});
