/** Operations over a sessions dir that the CLI offers: list, write a summary, prune. */
import fs from 'node:fs';
import path from 'node:path';
import { renderBugReport, renderFailureSummary } from '../report/render.js';
import { buildSummary } from '../report/summary.js';
import type { SessionSummary, Verdict } from '../report/types.js';
import { writeFileAtomic } from '../report/write-atomic.js';
import { listSessions, type SessionLocation, SessionReader } from '../store/session-reader.js';

/** One line of `mcec-bundle list`. */
export interface SessionListing {
  id: string;
  dirName: string;
  dir: string;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  duration: string;
  calls: number;
  failures: number;
  status: 'open' | 'ended' | 'aborted' | null;
  verdict: Verdict | null;
  /** Set when the log could not be read; the other fields are then from the dir name only. */
  error?: string;
}

/** Summarize one session (opens and closes its log). */
export async function summarizeSession(dir: string): Promise<SessionSummary> {
  const reader = SessionReader.open(dir);
  try {
    return await buildSummary(reader);
  } finally {
    reader.close();
  }
}

/**
 * Every session under `sessionsDir` that holds a tool call (or cannot be read), oldest first, with its
 * verdict; `failedOnly` keeps FAIL ones.
 */
export async function listSessionSummaries(
  sessionsDir: string,
  options: { failedOnly?: boolean } = {},
): Promise<SessionListing[]> {
  const out: SessionListing[] = [];
  for (const loc of listSessions(sessionsDir)) {
    const row = await listing(loc);
    // A session without a tool call is not a run (the recorder writes none; older versions did).
    if (row.error === undefined && row.calls === 0) continue;
    if (options.failedOnly && row.verdict !== 'FAIL') continue;
    out.push(row);
  }
  return out;
}

async function listing(loc: SessionLocation): Promise<SessionListing> {
  try {
    const s = await summarizeSession(loc.dir);
    return {
      id: s.sessionId,
      dirName: loc.dirName,
      dir: loc.dir,
      startedAt: s.startedAt,
      endedAt: s.endedAt,
      durationMs: s.durationMs,
      duration: s.duration,
      calls: s.counts.calls,
      failures: s.counts.failures,
      status: s.status,
      verdict: s.verdict,
    };
  } catch (err) {
    return {
      id: loc.sessionId,
      dirName: loc.dirName,
      dir: loc.dir,
      startedAt: null,
      endedAt: null,
      durationMs: null,
      duration: '',
      calls: 0,
      failures: 0,
      status: null,
      verdict: null,
      error: (err as Error).message,
    };
  }
}

/** Write `failure-summary.md` into the session dir (atomically) and return its path. */
export async function writeFailureSummary(
  dir: string,
  options: { templatesDir?: string } = {},
): Promise<string> {
  const summary = await summarizeSession(dir);
  const text = await renderFailureSummary(summary, options);
  const file = path.join(dir, 'failure-summary.md');
  writeFileAtomic(file, text);
  return file;
}

/** The failure summary as Markdown. */
export async function failureSummaryText(
  dir: string,
  options: { templatesDir?: string } = {},
): Promise<string> {
  return renderFailureSummary(await summarizeSession(dir), options);
}

/** The bug-report body as Markdown (ends with the name of the zip to attach). */
export async function bugReportText(dir: string, options: { templatesDir?: string } = {}): Promise<string> {
  const summary = await summarizeSession(dir);
  return renderBugReport(summary, { ...options, bundleName: `${summary.dirName}.zip` });
}

/** A session that prune removes (or would remove on a dry run). */
export interface PrunedSession {
  dirName: string;
  dir: string;
  /** The bundle beside it, when there is one. */
  zip: string | null;
  /** When it last did something: its end, else its last call or event, else its start. */
  lastActivity: string;
  verdict: Verdict | null;
}

export interface PruneOptions {
  olderThanMs: number;
  keepFailed?: boolean;
  dryRun?: boolean;
  /** Reference time (default now). */
  now?: Date;
}

/**
 * Delete session dirs (and their zips) whose last activity is older than `olderThanMs`. Never touches a
 * session whose writer is still running, anything outside `sessionsDir`, or anything that is a symlink.
 */
export async function pruneSessions(sessionsDir: string, options: PruneOptions): Promise<PrunedSession[]> {
  const cutoff = (options.now ?? new Date()).getTime() - options.olderThanMs;
  const root = path.resolve(sessionsDir);
  const pruned: PrunedSession[] = [];
  for (const loc of listSessions(root)) {
    let lastActivity: string;
    let verdict: Verdict | null = null;
    try {
      const s = await summarizeSession(loc.dir);
      if (s.status === 'open') continue; // a live writer: never delete under it
      verdict = s.verdict;
      lastActivity = s.endedAt ?? lastActivityOf(s);
    } catch {
      // An unreadable log: judge by the dir name's UTC stamp.
      lastActivity = stampToIso(loc.stamp);
    }
    const t = Date.parse(lastActivity);
    if (!Number.isFinite(t) || t >= cutoff) continue;
    if (options.keepFailed && verdict !== 'PASS') continue;
    const zipPath = path.join(root, `${loc.dirName}.zip`);
    const zip = isRegularFile(zipPath) ? zipPath : null;
    pruned.push({ dirName: loc.dirName, dir: loc.dir, zip, lastActivity, verdict });
    if (options.dryRun) continue;
    // listSessions only yields real dirs directly under root; check again right before deleting.
    if (path.dirname(path.resolve(loc.dir)) !== root || fs.lstatSync(loc.dir).isSymbolicLink()) continue;
    fs.rmSync(loc.dir, { recursive: true, force: true });
    if (zip) fs.rmSync(zip, { force: true });
  }
  return pruned;
}

function lastActivityOf(s: SessionSummary): string {
  if (s.durationMs != null) return new Date(Date.parse(s.startedAt) + s.durationMs).toISOString();
  return s.startedAt;
}

function stampToIso(stamp: string): string {
  const m = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(stamp);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.000Z` : '';
}

function isRegularFile(p: string): boolean {
  try {
    return fs.lstatSync(p).isFile();
  } catch {
    return false;
  }
}
