/**
 * The demo's recorded session (`runDemo`: the scripted agent through the recorder against the simulator, then
 * failure-summary.md, report.html and the verified bug bundle beside the session dir), recorded once per test
 * file and handed out read-only. A test that changes a session (builds a bundle into it, masks it, writes a
 * verdict, records more sessions beside it) takes {@link copyOfDemoSession}. When the file's suites are done
 * the shared session is checked unchanged (files and SQLite rows), so a test that wrote into it fails there.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll } from 'vitest';
import { type DemoResult, runDemo } from '../../src/demo/index.js';
import { createRecorder } from '../../src/record/index.js';
import { tempDir } from './temp.js';

/** What runDemo returned, and the sessions root holding the session dir and its bundle. */
export interface DemoSession extends Readonly<DemoResult> {
  sessionsDir: string;
}

interface Recording {
  root: string;
  demo: DemoSession;
  fingerprint: string;
}

// One recording per test file: Vitest gives each test file its own module instances.
let recording: Promise<Recording> | undefined;
let users = 0;

async function record(): Promise<Recording> {
  const root = tempDir('mcec-demo-session-');
  const sessionsDir = path.join(root, 'sessions');
  const result = await runDemo({ sessionsDir, stderr: () => {} });
  const demo = Object.freeze({ ...result, sessionsDir });
  return { root, demo, fingerprint: fingerprintOf(demo) };
}

/**
 * The demo session shared by this test file: recorded in a `beforeAll` of the suite this is called in, checked
 * unchanged and removed in its `afterAll` (call it once, at the top of the file or in the one suite that reads
 * it; nested calls share the recording). The getter throws before the recording is there.
 */
export function useDemoSession(): () => DemoSession {
  let demo: DemoSession | undefined;
  beforeAll(async () => {
    users++;
    recording ??= record();
    demo = (await recording).demo;
  }, 120_000);
  afterAll(async () => {
    if (--users > 0 || !recording) return;
    const done = await recording;
    recording = undefined;
    const now = fingerprintOf(done.demo);
    fs.rmSync(done.root, { recursive: true, force: true });
    if (now !== done.fingerprint)
      throw new Error(
        `a test changed the shared demo session ${done.demo.sessionDir}: take copyOfDemoSession() to change one`,
      );
  });
  return () => {
    if (!demo) throw new Error('the demo session is recorded in beforeAll: read it inside a hook or a test');
    return demo;
  };
}

/** A copy of the demo's session dir and its bundle under `sessionsDir` (made if missing), for a test to change. */
export function copyOfDemoSession(demo: DemoSession, sessionsDir: string): DemoSession {
  fs.mkdirSync(sessionsDir, { recursive: true });
  const sessionDir = path.join(sessionsDir, path.basename(demo.sessionDir));
  fs.cpSync(demo.sessionDir, sessionDir, { recursive: true });
  const bundle = path.join(sessionsDir, path.basename(demo.bundle));
  fs.copyFileSync(demo.bundle, bundle);
  const inSession = (file: string) => path.join(sessionDir, path.relative(demo.sessionDir, file));
  return {
    ...demo,
    sessionsDir,
    sessionDir,
    bundle,
    failureSummary: inSession(demo.failureSummary),
    reportHtml: inSession(demo.reportHtml),
  };
}

/**
 * What a test could change in the demo: every file's bytes (the SQLite files aside), the bundle's, the names in
 * the sessions root, and every row of every table (a reader may checkpoint the WAL into session.sqlite, changing its bytes but no row).
 */
function fingerprintOf(demo: DemoSession): string {
  const hash = createHash('sha256');
  const walk = (dir: string): void => {
    for (const entry of fs
      .readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (!/^session\.sqlite(-wal|-shm|-journal)?$/.test(entry.name))
        hash.update(`${path.relative(demo.sessionDir, file)}\0`).update(fs.readFileSync(file));
    }
  };
  walk(demo.sessionDir);
  hash.update(fs.readFileSync(demo.bundle));
  hash.update(fs.readdirSync(demo.sessionsDir).sort().join('\0')); // nothing recorded or written beside it
  const db = new Database(path.join(demo.sessionDir, 'session.sqlite'), { readonly: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all() as string[];
    for (const table of tables)
      hash.update(table).update(JSON.stringify(db.prepare(`SELECT * FROM "${table}"`).raw().all()));
  } finally {
    db.close();
  }
  return hash.digest('hex');
}

/**
 * A passing run recorded beside the demo by the real recorder: one `windows` call of MCEC session `pass-1`,
 * declared passed. Returns its session dir's name.
 */
export async function recordPassingRun(sessionsDir: string, scenario: string): Promise<string> {
  const recorder = createRecorder({ sessionsDir, scenario, stderr: () => {} });
  const envelope = { sessionId: 'pass-1', ok: true, result: { windows: [] } };
  const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    content: [{ type: 'text', text: JSON.stringify(envelope) }],
  }));
  await call('windows', { sessionId: 'pass-1' });
  await recorder.end('pass-1', { passed: true });
  await recorder.close();
  return fs.readdirSync(sessionsDir).find((n) => n.endsWith('-pass-1'))!;
}
