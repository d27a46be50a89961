/**
 * A session dir whose name is not `<yyyyMMdd-HHmmss>-<its log's id>` (a copy's `... (2)`, a renamed dir) and
 * two copies of one session, through the built mcec-bundle: each copy's zip is its own, never another's;
 * every dir holding a log is listed with its log's id; an id the listing shows resolves, and an id two dirs
 * hold is an error naming both; triage counts a session once and says it saw copies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPortableDirName } from '../../src/paths/naming.js';
import { listSessions, resolveSession } from '../../src/store/session-reader.js';
import { readZip } from '../bundle/helpers.js';
import { FixtureSession } from '../support/fixture-session.js';
import { cli, scratchRoot, validator } from './helpers.js';

const ID = 'eff21b90798c';
const START = new Date('2020-12-06T18:50:22.000Z');
const DIR = `20201206-185022-${ID}`;
const COPY = `${DIR} (2)`;

/** A session (dates long past: triage's window ends now) that failed once (an unrecovered black capture), ended, its writer closed. */
function failedSession(sessionsDir: string, sessionId = ID, startedAt = START): string {
  const s = FixtureSession.create(sessionsDir, { sessionId, startedAt, status: 'ended' });
  s.call({ tool: 'windows', result: { windows: [] } });
  s.call({
    tool: 'capture',
    args: { window: 'Video Player' },
    error: { code: 'frame-all-black', category: 'capture-blank', detail: 'Captured frame is blank.' },
  });
  s.end();
  s.close();
  return s.dir;
}

/** `cp -r`: a copy as a file manager makes one (the log and artifacts, no catalog row). */
function copyDir(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true });
}

async function topOf(zip: string): Promise<string[]> {
  return [...new Set((await readZip(zip)).map((e) => e.name.split('/')[0]!))];
}

describe('isPortableDirName: which dir names a zip keeps as its top folder', () => {
  it('keeps session dirs and their copies, not names that would not unzip everywhere', () => {
    for (const name of [DIR, COPY, `${DIR} - Copy`, `${DIR} copy`, `${DIR} - コピー`, 'run_1', '[ci] run.2'])
      expect(isPortableDirName(name), name).toBe(true);
    for (const name of [
      '',
      '.',
      '..',
      '.hidden',
      'a/b',
      'a\\b',
      'a:b',
      'trailing.',
      'trailing ',
      ' lead',
      'CON',
      'nul.txt',
      'COM¹',
      'lpt³.x',
      'CON .x',
      'RUN~1',
      "it's",
      'x'.repeat(129),
    ])
      expect(isPortableDirName(name), name).toBe(false);
  });
});

describe('two copies of one session, one re-judged PASS: their bundles', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  beforeAll(() => {
    failedSession(sessionsDir);
    copyDir(path.join(sessionsDir, DIR), path.join(sessionsDir, COPY));
    const judged = cli(['verdict', path.join(sessionsDir, COPY), 'pass', '--sessions', sessionsDir]);
    expect(judged.stderr).toBe('');
    expect(judged.code).toBe(0);
  });

  it('writes each copy to a zip named after its own dir, with that dir as its top folder', async () => {
    const first = cli(['bundle', path.join(sessionsDir, DIR), '--json', '--sessions', sessionsDir]);
    expect(first.code, first.stderr).toBe(0);
    const second = cli(['bundle', path.join(sessionsDir, COPY), '--json', '--sessions', sessionsDir]);
    expect(second.code, second.stderr).toBe(0);
    const firstZip = path.join(sessionsDir, `${DIR}.zip`);
    const copyZip = path.join(sessionsDir, `${COPY}.zip`);
    expect(JSON.parse(first.stdout)).toMatchObject({ bundle: firstZip, verdict: 'FAIL' });
    expect(JSON.parse(second.stdout)).toMatchObject({ bundle: copyZip, verdict: 'PASS' });
    expect(await topOf(firstZip)).toEqual([DIR]);
    expect(await topOf(copyZip)).toEqual([COPY]);
    const manifest = (await readZip(copyZip)).find((e) => e.name === `${COPY}/manifest.json`)!;
    expect(validator('manifest.schema.json')(JSON.parse(manifest.data.toString('utf8')))).toEqual([]);
    for (const zip of [firstZip, copyZip]) {
      const verified = cli(['verify', zip]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    }
    // Deterministic: the same dir bundled again gives the same bytes.
    const bytes = fs.readFileSync(copyZip);
    expect(cli(['bundle', path.join(sessionsDir, COPY), '--sessions', sessionsDir]).code).toBe(0);
    expect(fs.readFileSync(copyZip).equals(bytes)).toBe(true);
  });

  it("refuses to replace another dir's zip with -o, and leaves it as it was", () => {
    const firstZip = path.join(sessionsDir, `${DIR}.zip`);
    const before = fs.readFileSync(firstZip);
    const res = cli(['bundle', path.join(sessionsDir, COPY), '-o', firstZip, '--sessions', sessionsDir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`is the bundle of "${DIR}", not of this session dir "${COPY}"`);
    expect(fs.readFileSync(firstZip).equals(before)).toBe(true);
  });

  it('triage --bundles counts the session once and names the repeated zip', () => {
    const zips = path.join(root, 'zips');
    fs.mkdirSync(zips);
    for (const name of [`${DIR}.zip`, `${COPY}.zip`])
      fs.copyFileSync(path.join(sessionsDir, name), path.join(zips, name));
    const res = cli(['triage', '--bundles', zips, '--json']);
    expect(res.code, res.stderr).toBe(0);
    expect(validator('triage.schema.json')(JSON.parse(res.stdout))).toEqual([]);
    const report = JSON.parse(res.stdout) as { sessions: { total: number } };
    expect(report.sessions.total).toBe(1);
    expect(res.stderr).toMatch(/skipped .*\.zip: the same session \(eff21b90798c\) as an earlier bundle/);
  });
});

describe('a copy, a renamed dir and a dir named by hand: list, show, MCP, triage', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  const RENAMED = '20201207-000000-0123456789ab';
  const BY_HAND = 'nightly run';
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  beforeAll(() => {
    failedSession(sessionsDir);
    copyDir(path.join(sessionsDir, DIR), path.join(sessionsDir, COPY));
    const b = failedSession(sessionsDir, 'bbbbbbbbbbbb', new Date('2020-12-07T00:00:00.000Z'));
    fs.renameSync(b, path.join(sessionsDir, RENAMED));
    const c = failedSession(sessionsDir, 'cccccccccccc', new Date('2020-12-07T01:00:00.000Z'));
    fs.renameSync(c, path.join(sessionsDir, BY_HAND));
  });

  it('lists every dir holding a log, by its log id, and warns of the copies naming both dirs', () => {
    const res = cli(['list', '--json', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    const rows = JSON.parse(res.stdout) as Array<{ id: string; dirName: string }>;
    const validate = validator('session-listing.schema.json');
    expect(validate(rows)).toEqual([]);
    expect(rows.map((r) => [r.id, r.dirName]).sort()).toEqual(
      [
        [ID, DIR],
        [ID, COPY],
        ['bbbbbbbbbbbb', RENAMED],
        ['cccccccccccc', BY_HAND],
      ].sort(),
    );
    expect(res.stderr).toContain(
      `session ${ID} is in 2 dirs (copies of one session), each listed: "${DIR}", "${COPY}"`,
    );
    const table = cli(['list', '--sessions', sessionsDir]);
    expect(table.stdout).toContain('cccccccccccc');
    expect(table.stdout).toContain('bbbbbbbbbbbb');
  });

  it('resolves every id the listing shows; an id two dirs hold is an error naming both', () => {
    // Ids resolve through the catalog `list` made (without one, by dir names: see catalogLocations).
    expect(cli(['list', '--sessions', sessionsDir]).code).toBe(0);
    for (const [id, dirName] of [
      ['bbbbbbbbbbbb', RENAMED],
      ['bbbb', RENAMED],
      ['cccccccccccc', BY_HAND],
      [COPY, COPY],
      [path.join(sessionsDir, COPY), COPY],
    ]) {
      const res = cli(['show', id!, '--json', '--sessions', sessionsDir]);
      expect(res.code, `${id}: ${res.stderr}`).toBe(0);
      expect(validator('summary.schema.json')(JSON.parse(res.stdout))).toEqual([]);
      expect(JSON.stringify(JSON.parse(res.stdout))).toContain(dirName!);
    }
    // The renamed dir's name is still a name: it picks that dir, whose log is bbbbbbbbbbbb's.
    expect(cli(['show', RENAMED, '--sessions', sessionsDir]).code).toBe(0);
    const both = cli(['show', ID, '--sessions', sessionsDir]);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain(
      `session id "${ID}" is in 2 dirs of ${sessionsDir} (copies of one session)`,
    );
    expect(both.stderr).toContain(`  ${DIR}\n`);
    expect(both.stderr).toContain(`  ${COPY}`);
  });

  it('the MCP server resolves what list_sessions shows, and names both copies', async () => {
    const { stdioClient } = await import('../mcp-server/helpers.js');
    const { client, close } = await stdioClient(sessionsDir);
    try {
      const listed = (await client.callTool({ name: 'list_sessions', arguments: {} })) as {
        structuredContent?: { sessions: Array<{ id: string }> };
      };
      const ids = listed.structuredContent!.sessions.map((s) => s.id);
      expect(ids).toContain('bbbbbbbbbbbb');
      const summary = (await client.callTool({
        name: 'get_summary',
        arguments: { session: 'bbbbbbbbbbbb' },
      })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(summary.isError, summary.content[0]?.text).toBeFalsy();
      const ambiguous = (await client.callTool({ name: 'get_summary', arguments: { session: ID } })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(ambiguous.isError).toBe(true);
      expect(ambiguous.content[0]!.text).toContain(COPY);
    } finally {
      await close();
    }
  });

  it('triage counts the copied session once and says which dirs it left out', () => {
    const res = cli(['triage', '--json', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as {
      sessions: { total: number };
      groups: Array<{ count: number; sessions: number }>;
      copies: Array<{ sessionId: string; dirNames: string[] }>;
    };
    expect(validator('triage.schema.json')(report)).toEqual([]);
    expect(report.sessions.total).toBe(3);
    expect(report.groups.map((g) => [g.count, g.sessions])).toEqual([[3, 3]]);
    expect(report.copies).toEqual([{ sessionId: ID, dirNames: [DIR, COPY] }]);
    const text = cli(['triage', '--sessions', sessionsDir]);
    expect(text.stdout).toContain(
      `session ${ID} is in 2 dirs (copies of one run), counted once from "${DIR}"; left out: "${COPY}"`,
    );
  });

  it('listSessions (no catalog: CI reports, replay) names a dir named otherwise by its log', () => {
    const found = listSessions(sessionsDir).map((l) => [l.dirName, l.sessionId, l.stamp]);
    expect(found).toContainEqual([COPY, ID, '20201206-185022']);
    expect(found).toContainEqual([BY_HAND, 'cccccccccccc', '20201207-010000']);
    const both = resolveSession(sessionsDir, ID);
    expect(both.ok).toBe(false);
    if (!both.ok) expect(both.candidates.map((c) => c.dirName)).toEqual([DIR, COPY]);
  });

  it('a copy made after the catalog exists is listed by the next list', () => {
    expect(cli(['list', '--sessions', sessionsDir]).code).toBe(0);
    const later = `${DIR} - Copy`;
    copyDir(path.join(sessionsDir, DIR), path.join(sessionsDir, later));
    const res = cli(['list', '--json', '--sessions', sessionsDir]);
    const rows = JSON.parse(res.stdout) as Array<{ id: string; dirName: string }>;
    expect(
      rows
        .filter((r) => r.id === ID)
        .map((r) => r.dirName)
        .sort(),
    ).toEqual([DIR, COPY, later].sort());
    fs.rmSync(path.join(sessionsDir, later), { recursive: true });
  });
});
