/**
 * `list` names each session's MCP server (serverInfo.name from its initialize answer), so runs of a server that
 * is not MCEC are recognisable in the table and in --json; a catalog written before the column existed is
 * migrated and its rows read again to fill it.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { CATALOG_FILE } from '../../src/store/catalog.js';
import { answer, call, initialize } from '../support/mcp-messages.js';
import { cli, scratchRoot, validator } from './helpers.js';

const root = scratchRoot();
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** One session of a server named `name`, through the proxy's recorder API (handshake, then one call). */
async function recordRun(sessionsDir: string, name: string, mcpSessionId?: string): Promise<void> {
  const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
  const [init, initAnswer] = initialize(name);
  recorder.recordExchange(init, initAnswer, { transport: 'http' });
  recorder.recordExchange(
    call(1, 'echo', { message: 'hi' }),
    answer(1, { content: [{ type: 'text', text: 'hi' }] }),
    { transport: 'http', ...(mcpSessionId ? { mcpSessionId } : {}) },
  );
  await recorder.close();
}

describe('list names the server of each session', () => {
  it('in the table and in --json (schema-valid); an old catalog is migrated and its rows read again', async () => {
    const sessionsDir = path.join(root, 'sessions');
    await recordRun(sessionsDir, 'mcp-servers/everything', 'abc-123');
    const listed = JSON.parse(cli(['list', '--json', '--sessions', sessionsDir]).stdout) as Array<{
      server: string | null;
      id: string;
    }>;
    expect(validator('session-listing.schema.json')(listed)).toEqual([]);
    expect(listed.map((l) => l.server)).toEqual(['mcp-servers/everything']);
    const table = cli(['list', '--sessions', sessionsDir]).stdout.split('\n');
    expect(table[0]).toMatch(/^ID +SERVER +START \(UTC\) +DURATION +CALLS +FAILURES +VERDICT$/);
    expect(table[1]).toMatch(/^mcp-servers-everything-[0-9a-f]{16} {2}mcp-servers\/everything {2}\d{4}-/);

    // The catalog as the previous version wrote it: no server column, schema version 1.
    const db = new Database(path.join(sessionsDir, CATALOG_FILE));
    db.exec('ALTER TABLE sessions DROP COLUMN server');
    db.pragma('user_version = 1');
    db.close();
    const again = JSON.parse(cli(['list', '--json', '--sessions', sessionsDir]).stdout) as typeof listed;
    expect(again.map((l) => l.server)).toEqual(['mcp-servers/everything']);
  });
});
