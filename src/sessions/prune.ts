/** Prune: old session dirs (and their zips) deleted, never one still being written. */
import fs from 'node:fs';
import path from 'node:path';
import { withCatalog } from '../fleet/catalog.js';
import { describeFsError } from '../paths/disk-errors.js';
import {
  isOwnSessionDir,
  isSafeSessionId,
  LOG_FILE,
  parseSessionDirName,
  runKey,
  type SessionDirIdentity,
  sessionDirName,
} from '../paths/naming.js';
import { buildSummary } from '../report/summary.js';
import type { Verdict } from '../report/types.js';
import { Catalog, type CatalogSession } from '../store/catalog.js';
import type { WriterRow } from '../store/schema.js';
import { type SessionLocation, SessionReader } from '../store/session-reader.js';
import {
  expectBoolean,
  expectFunction,
  expectInstance,
  expectNonEmptyString,
  expectNumber,
  expectObject,
} from '../util/expect.js';
import { isRegularFile } from '../util/file-stat.js';
import { pidAlive, removeDeadPartials, removeDeadTempDirs, TEMP_DIR_PREFIXES } from '../util/temp-files.js';

/** A session that prune removes (or would remove on a dry run). */
export interface PrunedSession {
  dirName: string;
  dir: string;
  /** The bundle beside it, when there is one. */
  zip: string | null;
  /** When it last did something: its newest call, event or end, else its start. */
  lastActivity: string;
  verdict: Verdict | null;
}

/** Why prune kept a session that its age alone would have removed. */
export type KeptReason =
  | { kind: 'live-writer'; detail: string }
  | { kind: 'recently-written'; writtenAt: string }
  /** Its log is still open on another host, whose writer cannot be checked from here, and was written lately. */
  | { kind: 'unchecked-writer'; host: string; pid: number; writtenAt: string | null }
  /** A file in it (or its zip) is open in another program: Windows refused to move it, so it is kept whole. */
  | { kind: 'in-use'; error: string }
  /** It could not be moved aside or deleted (permissions, say); `partly`: some of it was deleted. */
  | { kind: 'not-removed'; error: string; partly: boolean };

/**
 * A session dir old enough to remove that prune did not consider: it is not named as the recorder names its
 * log's session (`<stamp>-<id>`, `isOwnSessionDir`): a copy (`... (2)`, `... - Copy`), a renamed dir or one
 * named by hand. Prune removes only a session's own dir, so a copy or a dir kept under a name of one's own is
 * never deleted by accident; the user is told it is there and what to do.
 */
export interface SkippedSession {
  dirName: string;
  dir: string;
  /** Its log's session id (the dir name when the log cannot be read). */
  sessionId: string;
  /** The session's own dir when it is there too: this dir is a copy of it. Null when there is none. */
  copyOf: string | null;
  /** The name the recorder gives this session's dir (`<stamp>-<id>`), null when its log's start is unknown. */
  ownName: string | null;
  /** Its last activity as the catalog has it, null when unknown (an unreadable log). */
  lastActivity: string | null;
}

/** Default of `PruneOptions.recentMs`: a session whose log was written in the last 10 minutes is kept. */
export const DEFAULT_PRUNE_RECENT_MS = 10 * 60_000;

export interface PruneOptions {
  olderThanMs: number;
  /**
   * Keep any session whose log or its WAL was modified within this many ms, whatever its status says
   * (default DEFAULT_PRUNE_RECENT_MS; 0 turns the check off).
   */
  recentMs?: number;
  keepFailed?: boolean;
  dryRun?: boolean;
  /** Reference time (default now). */
  now?: Date;
  /** Told about each session that was old enough to remove but kept because it is still being written. */
  onKept?: (session: SessionLocation, reason: KeptReason) => void;
  /** Told when the catalog had to be rebuilt (it was damaged). */
  onWarning?: (message: string) => void;
  /** Told about each dir old enough (and, with keepFailed, PASS) that was not considered: not its session's own. */
  onSkipped?: (session: SkippedSession) => void;
}

/**
 * Delete session dirs (and their zips) whose last activity is older than `olderThanMs`. Never touches a
 * session whose writer is still running, whose log was written within `recentMs` (file times of the log
 * and its WAL), anything outside `sessionsDir`, or anything that is a symlink.
 */
export async function pruneSessions(sessionsDir: string, options: PruneOptions): Promise<PrunedSession[]> {
  expectNonEmptyString(sessionsDir, 'sessionsDir');
  expectObject(options, 'options');
  expectNumber(options.olderThanMs, 'options.olderThanMs', { min: 0, required: true });
  expectNumber(options.recentMs, 'options.recentMs', { min: 0 });
  expectBoolean(options.keepFailed, 'options.keepFailed');
  expectBoolean(options.dryRun, 'options.dryRun');
  if (options.now !== undefined) expectInstance(options.now, 'options.now', Date);
  expectFunction(options.onKept, 'options.onKept');
  expectFunction(options.onWarning, 'options.onWarning');
  expectFunction(options.onSkipped, 'options.onSkipped');
  const now = (options.now ?? new Date()).getTime();
  const cutoff = now - options.olderThanMs;
  const recentMs = Math.max(0, options.recentMs ?? DEFAULT_PRUNE_RECENT_MS);
  const root = path.resolve(sessionsDir);
  const pruned: PrunedSession[] = [];
  const removed: string[] = [];
  const rows: CatalogSession[] = await withCatalog(root, ({ catalog }) => catalog.sessions(), {
    onRebuild: options.onWarning,
  });
  const ownDirs = new Map<string, string>();
  for (const row of rows)
    if (isOwnSessionDir(identityOf(row))) ownDirs.set(runKey(identityOf(row)), row.dir_name);
  for (const row of rows) {
    // The catalog picks the candidates; each one's log is read again below before anything is removed.
    const cataloged = Date.parse(row.last_activity_at ?? '');
    if (Number.isFinite(cataloged) && cataloged >= cutoff) continue;
    if (options.keepFailed && row.verdict !== 'PASS') continue;
    const parsed = parseSessionDirName(row.dir_name);
    if (!parsed || !isOwnSessionDir(identityOf(row))) {
      // Not the session's own dir (a copy, a renamed dir): never removed, but said, so the user knows.
      options.onSkipped?.(skippedOf(root, row, ownDirs.get(runKey(identityOf(row))) ?? null));
      continue;
    }
    const loc: SessionLocation = {
      dir: path.join(root, row.dir_name),
      dirName: row.dir_name,
      sessionId: parsed.sessionId,
      stamp: parsed.stamp,
    };
    if (!isRegularFile(path.join(loc.dir, LOG_FILE))) continue;
    // Before this reader opens the log: opening one (re)creates its -wal file with a fresh time.
    const written = logWrittenAt(loc.dir);
    let lastActivity: string;
    let verdict: Verdict | null = null;
    let liveWriter: string | null = null;
    let unchecked: WriterRow | null = null;
    try {
      const reader = SessionReader.open(loc.dir);
      try {
        const s = await buildSummary(reader);
        verdict = s.verdict;
        const live = reader.liveWriters()[0];
        liveWriter =
          s.status === 'open'
            ? 'the session is open and its writer is running'
            : live
              ? `its writer, pid ${live.pid} on ${live.host}, is still running and has not closed it`
              : null;
        unchecked = reader.uncheckedWriters().at(-1) ?? null;
        // Calls and events after the end (a writer that kept writing) count as activity too.
        lastActivity = latestIso([s.startedAt, s.endedAt, reader.stats().lastActivityAt]);
      } finally {
        reader.close();
      }
    } catch {
      // An unreadable log: judge by the dir name's UTC stamp.
      lastActivity = stampToIso(loc.stamp);
    }
    const t = Date.parse(lastActivity);
    if (!Number.isFinite(t) || t >= cutoff) continue;
    if (options.keepFailed && verdict !== 'PASS') continue;
    if (liveWriter) {
      options.onKept?.(loc, { kind: 'live-writer', detail: liveWriter });
      continue;
    }
    // A writer on another host that never closed the log may be writing it still (a container, a share), or
    // have crashed there: its pid cannot be checked, so only the files' times tell. At least the default window,
    // whatever --keep-recent says; an unreadable file time keeps it too.
    if (unchecked && (written === null || now - written < Math.max(recentMs, DEFAULT_PRUNE_RECENT_MS))) {
      options.onKept?.(loc, {
        kind: 'unchecked-writer',
        host: unchecked.host,
        pid: unchecked.pid,
        writtenAt: written === null ? null : new Date(written).toISOString(),
      });
      continue;
    }
    if (written !== null && now - written < recentMs) {
      options.onKept?.(loc, { kind: 'recently-written', writtenAt: new Date(written).toISOString() });
      continue;
    }
    const zipPath = path.join(root, `${loc.dirName}.zip`);
    const zip = isRegularFile(zipPath) ? zipPath : null;
    pruned.push({ dirName: loc.dirName, dir: loc.dir, zip, lastActivity, verdict });
    if (options.dryRun) continue;
    // Only real dirs directly under root: check again right before deleting.
    if (path.dirname(path.resolve(loc.dir)) !== root || fs.lstatSync(loc.dir).isSymbolicLink()) continue;
    const kept = removeWhole(root, loc.dirName, zip ? [zip, loc.dir] : [loc.dir]);
    if (kept) {
      pruned.pop();
      options.onKept?.(loc, kept);
      continue;
    }
    removed.push(loc.dirName);
  }
  if (removed.length > 0) {
    try {
      const after = Catalog.open(root);
      try {
        after.remove(removed);
      } finally {
        after.close();
      }
    } catch {
      // a catalog we cannot write: the next reader's sweep drops the rows of the removed dirs
    }
  }
  // What killed runs left: bundle and page partials beside the sessions (named for their dead writer's pid)
  // and this package's temp dirs of dead processes.
  if (!options.dryRun) {
    removeDeadPartials(root);
    for (const prefix of TEMP_DIR_PREFIXES) removeDeadTempDirs(prefix);
    removeDeadAsides(root);
  }
  return pruned;
}

function identityOf(row: CatalogSession): SessionDirIdentity {
  return { dirName: row.dir_name, sessionId: row.session_id, startedAt: row.started_at };
}

function skippedOf(root: string, row: CatalogSession, ownDir: string | null): SkippedSession {
  const started = row.started_at === null ? Number.NaN : Date.parse(row.started_at);
  return {
    dirName: row.dir_name,
    dir: path.join(root, row.dir_name),
    sessionId: row.session_id,
    copyOf: ownDir,
    ownName:
      row.error === null && Number.isFinite(started) && isSafeSessionId(row.session_id)
        ? sessionDirName(new Date(started), row.session_id)
        : null,
    lastActivity: row.error === null ? row.last_activity_at : null,
  };
}

/** A session dir or zip moved aside to be removed: `.<name>.pruned-<pid>` (a dot name: never read as a session). */
const PRUNED_SUFFIX = '.pruned-';

/**
 * Remove a session's zip and dir whole or not at all: each is first renamed aside, which Windows refuses while
 * a file in it is open in another program (a reader's log handle, a zip viewer), and only then deleted. A
 * delete that fails part way (permissions) puts what is left back under its name. Null once removed, else why
 * it was kept.
 */
function removeWhole(root: string, dirName: string, paths: readonly string[]): KeptReason | null {
  const moved: Array<[string, string]> = [];
  const putBack = () => {
    for (const [from, aside] of moved) {
      try {
        fs.renameSync(aside, from);
      } catch {
        // left aside: removeDeadAsides removes it once this process is gone
      }
    }
  };
  for (const p of paths) {
    const aside = path.join(root, `.${path.basename(p)}${PRUNED_SUFFIX}${process.pid}`);
    try {
      fs.renameSync(p, aside);
      moved.push([p, aside]);
    } catch (err) {
      putBack();
      const code = (err as NodeJS.ErrnoException).code;
      const inUse =
        code === 'EBUSY' || (process.platform === 'win32' && (code === 'EPERM' || code === 'EACCES'));
      return inUse
        ? { kind: 'in-use', error: describeFsError(err) }
        : { kind: 'not-removed', error: describeFsError(err), partly: false };
    }
  }
  // The dir first: when its delete fails, the zip is still whole and goes back beside it.
  for (const [, aside] of [...moved].reverse()) {
    try {
      fs.rmSync(aside, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      putBack();
      return { kind: 'not-removed', error: `${dirName}: ${describeFsError(err)}`, partly: true };
    }
  }
  return null;
}

/** The dirs moved aside by prunes whose process is gone, and not removed then. */
function removeDeadAsides(root: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const at = name.lastIndexOf(PRUNED_SUFFIX);
    if (!name.startsWith('.') || at < 0) continue;
    const pid = Number(name.slice(at + PRUNED_SUFFIX.length));
    if (!Number.isSafeInteger(pid) || pidAlive(pid)) continue;
    try {
      fs.rmSync(path.join(root, name), { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // tried again by the next prune
    }
  }
}

/**
 * The newest modification time (ms) of a session's log and its WAL, or null when neither can be read. An
 * empty WAL holds no write: any reader (list, show, a catalog sweep) creates one when it opens the log.
 */
function logWrittenAt(dir: string): number | null {
  let newest: number | null = null;
  for (const name of [LOG_FILE, `${LOG_FILE}-wal`]) {
    try {
      const stat = fs.lstatSync(path.join(dir, name));
      if (name !== LOG_FILE && stat.size === 0) continue;
      if (newest === null || stat.mtimeMs > newest) newest = stat.mtimeMs;
    } catch {
      // no WAL once the writer closed cleanly
    }
  }
  return newest;
}

/** The latest of some ISO times (UTC strings of one shape order like the times they name). */
function latestIso(times: Array<string | null | undefined>): string {
  return (
    times
      .filter((t): t is string => typeof t === 'string' && Number.isFinite(Date.parse(t)))
      .sort((a, b) => Date.parse(a) - Date.parse(b))
      .at(-1) ?? ''
  );
}

function stampToIso(stamp: string): string {
  const m = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(stamp);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.000Z` : '';
}
