/**
 * A generated fleet of recorded sessions, written straight through the store's SessionLog (no recorder, no
 * dispatch), so thousands of sessions take seconds. Several scenarios, recurring failures injected with
 * volatile details (numbers, handles, ids, paths, times that differ per run), a flaky scenario, recovered
 * failures; what was injected is returned so tests can check triage's groups and counts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeSidecarOfClosedLog } from '../../src/fleet/catalog-entry.js';
import { ARTIFACTS_DIR, LOG_FILE, sessionDirName } from '../../src/paths/naming.js';
import { openSessionDb } from '../../src/store/open.js';
import type { CallRow, SessionRow } from '../../src/store/schema.js';
import { SessionLog } from '../../src/store/session-log.js';

/** The injected failure kinds, each meant to be one fingerprint. */
export type InjectedFailure = 'black-capture' | 'ambiguous-save' | 'stale-export';

export const SCENARIOS = {
  notepad: 'nightly: save the invoice in Notepad',
  player: 'nightly: check the video player',
  export: 'nightly: export the report',
  smoke: 'smoke: list windows',
} as const;

export interface FleetOptions {
  sessions: number;
  /** Start of the first session; sessions are spread `spacingMs` apart (default 60 s). */
  start?: Date;
  spacingMs?: number;
  seed?: number;
  /**
   * Write each session's catalog sidecar after its log is closed, as the recorder does when it closes
   * (default true); false leaves logs as a recorder before 2026-12-06 did (none).
   */
  sidecars?: boolean;
}

export interface FleetSession {
  dirName: string;
  sessionId: string;
  scenario: string;
  startedAt: string;
  passed: boolean;
  injected: InjectedFailure | null;
}

export interface Fleet {
  sessionsDir: string;
  sessions: FleetSession[];
  /** Sessions per injected failure kind. */
  injected: Record<InjectedFailure, number>;
}

/** A small deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Step {
  tool: string;
  args: Record<string, unknown>;
  ok: boolean;
  result?: unknown;
  error?: { code: string; category: string; detail: string; partialResult?: unknown };
}

const PLAYER = { title: 'Video Player', className: 'ApplicationFrameWindow', processName: 'Video.UI' };

function hex(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

/** The calls of one session of a scenario, with the failure injected (if any). */
function script(
  scenario: string,
  rand: () => number,
  inject: InjectedFailure | null,
  at: Date,
): { steps: Step[]; passed: boolean } {
  const handle = 100000 + Math.floor(rand() * 900000);
  const steps: Step[] = [
    { tool: 'session-start', args: {}, ok: true, result: { started: true } },
    { tool: 'windows', args: {}, ok: true, result: { windows: [{ handle, title: 'Untitled - Notepad' }] } },
  ];
  if (scenario === SCENARIOS.player) {
    steps.push({ tool: 'focus', args: { window: 'Video Player' }, ok: true, result: { window: PLAYER } });
    if (inject === 'black-capture') {
      const w = 1280 + Math.floor(rand() * 4) * 160;
      steps.push({
        tool: 'capture',
        args: { window: 'Video Player' },
        ok: false,
        error: {
          code: 'frame-all-black',
          category: 'capture-blank',
          detail: `all ${w * 720} pixels of the ${w}x720 frame are black (handle 0x${hex(rand, 6)}) at ${at.toISOString()}`,
          partialResult: { window: { ...PLAYER, handle } },
        },
      });
      return { steps, passed: false };
    }
    steps.push({ tool: 'capture', args: { window: 'Video Player' }, ok: true, result: { window: PLAYER } });
    return { steps, passed: true };
  }
  if (scenario === SCENARIOS.notepad) {
    steps.push({ tool: 'query', args: { window: 'Save As', maxNodes: 12 }, ok: true, result: { nodes: [] } });
    if (inject === 'ambiguous-save') {
      steps.push({
        tool: 'find',
        args: { window: 'Save As', className: '#32770', process: 'notepad', value: 'Save' },
        ok: false,
        error: {
          code: 'selector-matched-3',
          category: 'ambiguous-selector',
          detail: `3 elements match value 'Save' in window ${handle}; first at C:\\Users\\run${Math.floor(rand() * 99)}\\AppData\\tree-${hex(rand, 8)}.json`,
        },
      });
      return { steps, passed: false };
    }
    // A recovered failure: the ambiguous find, then a narrower one that succeeds.
    if (rand() < 0.5) {
      steps.push({
        tool: 'find',
        args: { window: 'Save As', value: 'Save' },
        ok: false,
        error: { code: 'selector-matched-3', category: 'ambiguous-selector', detail: '3 elements match' },
      });
    }
    steps.push({
      tool: 'find',
      args: { window: 'Save As', by: 'automationid', value: '1' },
      ok: true,
      result: {},
    });
    steps.push({
      tool: 'invoke',
      args: { window: 'Save As', by: 'automationid', value: '1' },
      ok: true,
      result: {},
    });
    return { steps, passed: true };
  }
  if (scenario === SCENARIOS.export) {
    if (inject === 'stale-export') {
      steps.push({
        tool: 'invoke',
        args: { window: 'Report', by: 'name', value: 'Export', className: 'ReportView', process: 'report' },
        ok: false,
        error: {
          code: 'element-stale',
          category: 'stale-element',
          detail: `element ${hex(rand, 8)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 4)}-${hex(rand, 12)} went away after ${Math.floor(rand() * 900)} ms`,
        },
      });
      return { steps, passed: false };
    }
    steps.push({
      tool: 'invoke',
      args: { window: 'Report', by: 'name', value: 'Export' },
      ok: true,
      result: {},
    });
    return { steps, passed: true };
  }
  return { steps, passed: true };
}

/** Write a fleet of `options.sessions` sessions into `sessionsDir` (created when missing). */
export function generateFleet(sessionsDir: string, options: FleetOptions): Fleet {
  fs.mkdirSync(sessionsDir, { recursive: true });
  const rand = prng(options.seed ?? 1);
  const start = (options.start ?? new Date('2026-11-25T00:00:00.000Z')).getTime();
  const spacing = options.spacingMs ?? 60_000;
  const names = Object.values(SCENARIOS);
  const injected: Record<InjectedFailure, number> = {
    'black-capture': 0,
    'ambiguous-save': 0,
    'stale-export': 0,
  };
  const sessions: FleetSession[] = [];
  const template = emptyLog(sessionsDir);
  for (let i = 0; i < options.sessions; i++) {
    const scenario = names[i % names.length]!;
    const at = new Date(start + i * spacing);
    const r = rand();
    // Recurring failures: the player is black 1 run in 4, Save is ambiguous 1 in 10, export is flaky (1 in 3).
    const inject: InjectedFailure | null =
      scenario === SCENARIOS.player && r < 0.25
        ? 'black-capture'
        : scenario === SCENARIOS.notepad && r < 0.1
          ? 'ambiguous-save'
          : scenario === SCENARIOS.export && r < 1 / 3
            ? 'stale-export'
            : null;
    if (inject) injected[inject] += 1;
    const sessionId = `f${i.toString(16).padStart(11, '0')}`;
    const { steps, passed } = script(scenario, rand, inject, at);
    const dir = writeSession(sessionsDir, template, { sessionId, scenario, at, steps, passed });
    if (options.sidecars !== false) writeSidecarOfClosedLog(dir);
    sessions.push({
      dirName: sessionDirName(at, sessionId),
      sessionId,
      scenario,
      startedAt: at.toISOString(),
      passed,
      injected: inject,
    });
  }
  fs.rmSync(path.dirname(template), { recursive: true, force: true });
  return { sessionsDir, sessions, injected };
}

/** An empty log at the current schema version, in a scratch dir beside the sessions (not a session dir). */
function emptyLog(sessionsDir: string): string {
  const scratch = fs.mkdtempSync(path.join(sessionsDir, '.fleet-template-'));
  const file = path.join(scratch, LOG_FILE);
  openSessionDb(file).close();
  return file;
}

function writeSession(
  sessionsDir: string,
  template: string,
  s: { sessionId: string; scenario: string; at: Date; steps: Step[]; passed: boolean },
): string {
  const dir = path.join(sessionsDir, sessionDirName(s.at, s.sessionId));
  fs.mkdirSync(path.join(dir, ARTIFACTS_DIR), { recursive: true });
  let clock = s.at.getTime() + 5;
  const iso = () => new Date(clock).toISOString();
  const session: SessionRow = {
    session_id: s.sessionId,
    original_id: null,
    scenario: s.scenario,
    started_at: s.at.toISOString(),
    ended_at: null,
    status: 'open',
    passed: null,
    end_reason: null,
    recorder_version: '0.1.0',
    writer_pid: process.pid,
    environment: JSON.stringify({
      os: 'Windows 11 Pro 10.0.26100 (x64)',
      node: 'v20.20.0',
      recorder: '0.1.0',
    }),
    last_observation: null,
  };
  // An empty migrated log copied in, and no fsync: creating and migrating a log syncs several times (about
  // 40 ms a session here), and a generated fleet need not survive a power cut.
  fs.copyFileSync(template, path.join(dir, LOG_FILE));
  const log = SessionLog.open({ dir, session, pragmas: ['synchronous = OFF'] });
  log.addEvent({ at: iso(), kind: 'session-start', detail: JSON.stringify({ sessionId: s.sessionId }) });
  s.steps.forEach((step, i) => {
    const startedAt = iso();
    clock += 40 + (i % 5) * 10;
    const envelope = step.ok
      ? { sessionId: s.sessionId, ok: true, result: step.result ?? {} }
      : { sessionId: s.sessionId, ok: false, result: null, error: step.error };
    const row: CallRow = {
      seq: i + 1,
      tool: step.tool,
      args: JSON.stringify({ ...step.args, sessionId: s.sessionId }),
      rpc_id: null,
      transport: 'wrap',
      started_at: startedAt,
      ended_at: iso(),
      duration_ms: 40 + (i % 5) * 10,
      status: step.ok ? 'ok' : 'failed',
      ok: step.ok ? 1 : 0,
      error_code: step.error?.code ?? null,
      error_category: step.error?.category ?? null,
      error_detail: step.error?.detail ?? null,
      output_kind: 'call-tool-result',
      envelope: JSON.stringify(envelope),
      response: null,
      violations: null,
      payload_dropped: 0,
    };
    log.beginCall(row);
    clock += 10;
  });
  log.addEvent({ at: iso(), kind: 'session-end', detail: JSON.stringify({ via: 'end' }) });
  log.setSessionFields({ status: 'ended', ended_at: iso(), writer_pid: process.pid });
  const outcome = log.commit();
  if (outcome.error) throw outcome.error;
  log.close();
  return dir;
}
