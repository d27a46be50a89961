/**
 * A session's catalog entry (src/store/catalog.ts), read from its log: its verdict by `decideVerdict` (the
 * one rule), counts, its failures with the facts fingerprints are made of, and its calls per tool.
 */
import path from 'node:path';
import { idOfDirName } from '../paths/derived-id.js';
import { parseSessionDirName } from '../paths/naming.js';
import { categoryLine } from '../report/recovery.js';
import { readFailures } from '../report/server-kind.js';
import { targetOf } from '../report/target.js';
import { asRecord, clip, oneLine, parseJson } from '../report/text.js';
import { formatDurationMs } from '../report/time.js';
import { decideVerdict, readVerdictFacts } from '../report/verdict.js';
import type { CatalogEntry, CatalogFailure, CatalogSession } from '../store/catalog.js';
import { type LogStamp, logAtRest, stampLog, writeEntrySidecar } from '../store/entry-sidecar.js';
import type { CallRow } from '../store/schema.js';
import { type FailureRow, SessionReader } from '../store/session-reader.js';
import { ENTRY_VERSION } from './catalog.js';
import { defaultFingerprint, type FingerprintInput } from './fingerprint.js';
import { entryFromSidecar, type SessionDirEntry } from './sidecar-entry.js';

/** Failures kept per session in the catalog, newest first (the session row counts them all). */
export const MAX_CATALOG_FAILURES = 200;
/** Failures per session whose target window is looked up in earlier results (the walk reads up to 200 calls). */
const TARGET_LOOKUPS = 20;
/** Longest error detail kept in the catalog. */
const MAX_DETAIL = 1000;

function str(v: unknown, max = 200): string | null {
  return typeof v === 'string' && v.trim() !== '' ? oneLine(v, max) : null;
}

function isoOrNull(v: string | null | undefined): string | null {
  return typeof v === 'string' && Number.isFinite(Date.parse(v)) ? v : null;
}

/** The newest of some ISO times. */
function latest(...times: Array<string | null | undefined>): string | null {
  let best: string | null = null;
  let bestT = Number.NEGATIVE_INFINITY;
  for (const t of times) {
    const ms = typeof t === 'string' ? Date.parse(t) : Number.NaN;
    if (Number.isFinite(ms) && ms > bestT) {
      best = t!;
      bestT = ms;
    }
  }
  return best;
}

/** The window facts of a failed call: from its arguments, its error's partialResult, or earlier results. */
function windowFacts(
  reader: SessionReader,
  f: FailureRow,
  lookUp: boolean,
): { window: string | null; className: string | null; process: string | null } {
  const args = asRecord(parseJson(f.args, 64 * 1024)) ?? {};
  let window = str(args.window) ?? str(args.title);
  let className = str(args.className, 120);
  let process = str(args.process, 120);
  if (className && process) return { window, className, process };
  const full: CallRow | undefined = reader.call(f.seq);
  const error = asRecord(asRecord(parseJson(full?.envelope ?? null, 4 * 1024 * 1024))?.error);
  const partial = asRecord(error?.partialResult);
  const win = asRecord(partial?.window) ?? asRecord(asRecord(partial?.captureSummary)?.window);
  window ??= str(win?.title);
  className ??= str(win?.className, 120);
  process ??= str(win?.processName, 120) ?? str(win?.process, 120);
  if ((!className || !process) && lookUp && full) {
    const target = targetOf(reader, full);
    if (target) {
      window ??= target.title;
      className ??= target.className;
      process ??= target.process;
    }
  }
  return { window, className, process };
}

/**
 * A session's catalog entry, read from its log in one snapshot. The verdict is `decideVerdict`'s (the one
 * rule); each failure carries the facts fingerprints are made of and its built-in fingerprint.
 */
/** The server's name as the session's environment holds it (from its initialize answer), or null. */
function serverNameOf(environment: string | null): string | null {
  if (environment === null) return null;
  try {
    const server = (JSON.parse(environment) as { server?: { name?: unknown } } | null)?.server;
    return typeof server?.name === 'string' ? oneLine(server.name, 120) : null;
  } catch {
    return null; // an unreadable environment names no server
  }
}

export function catalogEntryOf(reader: SessionReader, dirName: string): CatalogEntry {
  return reader.snapshot(() => {
    const session = reader.session();
    const stats = reader.stats();
    // Most sessions have no failed call: the counts say so, and the recovery statement (the costliest to
    // prepare and run of a log's) is skipped.
    const {
      failures: failureRows,
      outcome,
      plainServer,
    } = readFailures(reader, session, stats, MAX_CATALOG_FAILURES);
    const facts = readVerdictFacts(reader, { session, stats, outcome, plainServer });
    const decision = decideVerdict(facts);
    const host = reader.writers()[0]?.host ?? null;
    const failures: CatalogFailure[] = [];
    const unrecovered: string[] = [];
    failureRows.forEach((f, i) => {
      const win = windowFacts(reader, f, i < TARGET_LOOKUPS);
      const input: FingerprintInput = {
        tool: f.tool,
        code: f.error_code,
        category: f.error_category,
        detail: f.error_detail,
        className: win.className,
        process: win.process,
        window: win.window,
        target: f.target,
        status: f.status,
      };
      const fp = defaultFingerprint(input);
      failures.push({
        dir_name: dirName,
        seq: f.seq,
        at: f.started_at,
        tool: oneLine(f.tool, 120),
        status: f.status === 'fault' ? 'fault' : 'failed',
        code: f.error_code === null ? null : oneLine(f.error_code, 120),
        // As the fingerprint has it: a plain tool result has none (old logs stored the stand-in 'internal').
        category: categoryLine(f),
        detail: f.error_detail === null ? null : clip(f.error_detail, MAX_DETAIL),
        target: oneLine(f.target, 300),
        window: win.window,
        class_name: win.className,
        process: win.process,
        recovered: f.recovered ? 1 : 0,
        fingerprint: fp.id,
      });
      if (!f.recovered) unrecovered.push(fp.id);
    });
    const lastActivity = latest(session.started_at, session.ended_at, stats.lastActivityAt);
    const end = session.ended_at ?? stats.lastRunActivityAt;
    const durationMs =
      end && Number.isFinite(Date.parse(end)) && Number.isFinite(Date.parse(session.started_at))
        ? Date.parse(end) - Date.parse(session.started_at)
        : null;
    const row: CatalogSession = {
      dir_name: dirName,
      session_id: session.session_id,
      scenario: session.scenario,
      server: serverNameOf(session.environment),
      host,
      started_at: isoOrNull(session.started_at),
      ended_at: isoOrNull(session.ended_at),
      duration_ms: durationMs,
      duration: formatDurationMs(durationMs),
      last_activity_at: lastActivity,
      status: session.status,
      unchecked_host: facts.openElsewhere?.host ?? null,
      verdict: decision.verdict,
      verdict_reason: decision.reason,
      calls: stats.calls,
      failures: facts.failures,
      recovered: facts.recovered,
      pending: stats.pending,
      warnings: stats.warnings,
      artifacts: stats.artifacts,
      // Oldest failure first, each once.
      fingerprints: JSON.stringify([...new Set(unrecovered.reverse())]),
      error: null,
    };
    return {
      session: row,
      failures: failures.reverse(),
      tools: reader.toolCounts().map((t) => ({ ...t, dir_name: dirName })),
    };
  });
}

/** The entry of a session whose log cannot be read: what its dir name says, and why. */
export function unreadableEntry(dirName: string, error: string): CatalogEntry {
  const parsed = parseSessionDirName(dirName);
  const m = parsed ? /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(parsed.stamp) : null;
  const started = m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.000Z` : null;
  return {
    session: {
      dir_name: dirName,
      session_id: idOfDirName(dirName),
      scenario: null,
      server: null,
      host: null,
      started_at: started,
      ended_at: null,
      duration_ms: null,
      duration: '',
      last_activity_at: started,
      status: null,
      unchecked_host: null,
      verdict: null,
      verdict_reason: null,
      calls: 0,
      failures: 0,
      recovered: 0,
      pending: 0,
      warnings: 0,
      artifacts: 0,
      fingerprints: '[]',
      error: clip(oneLine(error, 1000), 1000),
    },
    failures: [],
    tools: [],
  };
}

/** Read one session dir's entry from its log (an unreadable log gives an entry with its error). */
export function readCatalogEntry(dir: string): CatalogEntry {
  return readEntryFromLog(dir).entry;
}

/** The entry and the session row's status as stored (an `open` one may read as `aborted`). */
function readEntryFromLog(
  dir: string,
  options: { tidy?: boolean } = {},
): { entry: CatalogEntry; storedStatus: string | null } {
  const dirName = path.basename(dir);
  try {
    const reader = SessionReader.open(dir, options);
    try {
      return reader.snapshot(() => ({
        entry: catalogEntryOf(reader, dirName),
        storedStatus: reader.storedStatus(),
      }));
    } finally {
      reader.close();
    }
  } catch (err) {
    return { entry: unreadableEntry(dirName, (err as Error).message), storedStatus: null };
  }
}

/**
 * A session dir's entry read from its log; a log at rest whose session is no longer open (its entry cannot
 * change without a write) gets its sidecar written. The hash is taken before the log is read: a write in
 * between makes the sidecar describe bytes the log no longer has, so it is never trusted.
 */
export function entryFromLog(dir: string): SessionDirEntry {
  const stamp = stampLog(dir);
  const { entry, storedStatus } = readEntryFromLog(dir);
  const wroteSidecar = stamp !== null && keepEntry(dir, stamp, entry, storedStatus);
  return { entry, wroteSidecar };
}

/** One session dir's entry: from its sidecar when that is true to the log, else from the log. */
export function entryOfSessionDir(
  dir: string,
  options: { now?: number; restamp?: boolean } = { restamp: true },
): SessionDirEntry & { fromSidecar: boolean } {
  const fromSidecar = entryFromSidecar(dir, { ...options, entryVersion: ENTRY_VERSION });
  return fromSidecar ? { ...fromSidecar, fromSidecar: true } : { ...entryFromLog(dir), fromSidecar: false };
}

/** Write the sidecar when the entry cannot change without a write (session not open) and the log is as stamped. */
function keepEntry(dir: string, stamp: LogStamp, entry: CatalogEntry, storedStatus: string | null): boolean {
  if (storedStatus === null || storedStatus === 'open' || entry.session.error !== null) return false;
  const rest = logAtRest(dir);
  return (
    rest !== null &&
    rest.size === stamp.size &&
    rest.mtimeMs === stamp.mtimeMs &&
    writeEntrySidecar(dir, ENTRY_VERSION, entry, stamp)
  );
}

/**
 * The closed-sessions handler (catalog-sidecars.ts), right after the recorder closed a session's log: write
 * its sidecar, so an `index` or a copy of the dir elsewhere need not open the log. The log is read only when
 * at rest, through a handle that leaves no -wal, -shm behind. Returns whether the sidecar was written.
 */
export function writeSidecarOfClosedLog(dir: string): boolean {
  const stamp = stampLog(dir);
  if (!stamp) return false;
  const { entry, storedStatus } = readEntryFromLog(dir, { tidy: true });
  return keepEntry(dir, stamp, entry, storedStatus);
}
