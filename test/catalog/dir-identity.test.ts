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
import { readZip } from '../bundle/helpers.js';
import { FixtureSession } from '../support/fixture-session.js';
import { cli, scratchRoot, validator } from './helpers.js';

const ID = 'eff21b90798c';
const START = new Date('2026-12-06T18:50:22.000Z');
const DIR = `20261206-185022-${ID}`;
const COPY = `${DIR} (2)`;

/** A session that failed once (an unrecovered black capture), ended, its writer closed. */
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
