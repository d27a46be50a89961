/**
 * Keeping the sessions catalog (src/store/catalog.ts) true to the session logs. Every reader of the catalog
 * calls `refreshCatalog` first. It re-reads only what may have changed: sessions still open, rows a writer
 * touched (the recorder when a session ends or gets a verdict, `mcec-bundle verdict`), and, when the
 * sessions dir's time moved, what that says: names came or went. A names sweep reads the dirs without a row
 * and the rows stored without a dir time, drops the rows without a dir, and stats nothing else; a full sweep
 * stats every session dir and reads those newer than their row. Full: for `index`, a new or rebuilt catalog,
 * every SWEEP_EVERY_MS, on a writer's sweep request (a hand-off), and when the time moved (or was not
 * trusted) but no name came or went (a dir replaced under its name, say). A dir replaced under its name while other names change too is caught by the next
 * full sweep, as any writer that does not know the catalog. Light to import: the code that reads a log
 * or checks a sidecar (node:crypto, the fingerprints, worker threads) loads only when there is one to read
 * (`list` must start fast).
 */
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE, parseSessionDirName, utcStamp } from '../paths/naming.js';
import {
  CATALOG_FILE,
  Catalog,
  type CatalogEntry,
  type CatalogRowState,
  isCatalogDamage,
  type LogCheck,
  SWEEP_REQUEST_FILE,
} from '../store/catalog.js';
import type { SessionLocation } from '../store/session-reader.js';
import { SETTLE_MS } from '../store/settle.js';
import { isRegularFile, lstatOf, mtimeOf } from '../util/file-stat.js';
import { FINGERPRINT_RULES_VERSION } from './fingerprint-version.js';
import type { SidecarStep } from './sidecar-entry.js';

/**
 * A full sweep also runs when the last one is older than this: a writer that does not know the catalog (an
 * older recorder, a copied-in dir) changes a session dir without touching its row or the sessions dir, and a
 * dir replaced under its name while other names came or went looks like a names change only.
 */
export const SWEEP_EVERY_MS = 10 * 60_000;
/** Sessions stepped together (the unit a worker thread takes). */
const BATCH = 64;
/**
 * Sessions written to the catalog in one transaction: a few milliseconds' lock. Four chunks, not one: each
 * commit rewrites the table and index pages it touched, and the statements and pages stay warm between rows.
 */
const PUT_BATCH = 256;
/** From this many sessions to read, the catalog's sidecar checks are read in one query, not one by one. */
const CHECKS_AT_ONCE = 512;
/** What a catalog built with other fingerprint rules or entry code must be rebuilt for. */
export const ENTRY_VERSION = `entry1-fp${FINGERPRINT_RULES_VERSION}`;

/** Told how many of the sessions to read have been read (a first sweep of thousands takes seconds). */
export type Progress = (done: number, total: number) => void;

/** What a refresh did. */
export interface RefreshResult {
  /** The catalog, up to date; the caller closes it. */
  catalog: Catalog;
  /**
   * `full`: every session dir's time was compared with its row; `names`: the sessions dir's time had moved,
   * and only the dirs without a row and the rows without a dir were looked at; null: neither (dirty rows only).
   */
  sweep: 'full' | 'names' | null;
  /** Sessions read from their logs. */
  indexed: number;
  /** Rows removed because their session dir is gone. */
  removed: number;
  /** Set when the catalog file could not be used and an in-memory one was built instead. */
  warning?: string;
}

/** A time settled enough to compare later: null when it is so recent that a change could share its tick. */
function settled(mtime: number | null, now: number): string | null {
  return mtime !== null && now - mtime >= SETTLE_MS ? String(mtime) : null;
}

function sweepDue(sweptAt: string | null, now: number): boolean {
  const t = sweptAt === null ? Number.NaN : Date.parse(sweptAt);
  return !Number.isFinite(t) || now - t > SWEEP_EVERY_MS || t > now + SETTLE_MS;
}

function needsReading(st: CatalogRowState | undefined, dirMtime: number): boolean {
  return (
    !st ||
    st.status === 'open' ||
    st.uncheckedHost !== null ||
    st.touched !== st.indexedTouched ||
    st.dirMtime === null ||
    st.dirMtime !== dirMtime
  );
}

/**
 * Bring the catalog of `sessionsDir` up to date and return it open (read-only when nothing had to change).
 * Creates it when missing; `full` re-reads every session (`mcec-bundle index`). Fast when nothing changed:
 * one stat of the sessions dir and one query. Throws only when the catalog itself cannot be opened.
 */
export async function refreshCatalog(
  sessionsDir: string,
  options: {
    full?: boolean;
    now?: () => number;
    onProgress?: Progress;
    /** Check sidecars on a worker thread too: true whenever one starts (tests), false never; default: many. */
    sidecarWorker?: boolean;
    /** Told why when the catalog file was damaged or not ours at open, and so rebuilt. */
    onRebuild?: (why: string) => void;
  } = {},
): Promise<RefreshResult> {
  const root = path.resolve(sessionsDir);
  const now = options.now ?? Date.now;
  if (!options.full) {
    const fresh = openIfFresh(root, now);
    if (fresh) return { catalog: fresh, sweep: null, indexed: 0, removed: 0 };
  }
  let catalog: Catalog;
  let warning: string | undefined;
  try {
    catalog = openWritable(root, options.onRebuild);
  } catch (err) {
    // A sessions dir we cannot write (a read-only share) still lists: from a catalog in memory.
    warning = `the catalog ${path.join(root, CATALOG_FILE)} cannot be written (${(err as Error).message}); read every session instead`;
    catalog = Catalog.memory();
  }
  try {
    // Taken after opening: the catalog's own WAL files exist now, so they do not move the time later.
    const rootMtime = mtimeOf(root);
    const rereadAll = options.full === true || catalog.meta('entry_version') !== ENTRY_VERSION;
    // swept_at is the last full sweep's time (a names sweep does not put the next one off).
    const fullDue = rereadAll || sweepDue(catalog.meta('swept_at'), now());
    const storedRoot = catalog.meta('root_mtime');
    let work: RefreshWork | null = null;
    if (fullDue || storedRoot === null || storedRoot !== String(rootMtime)) {
      // The time moved (or the last reader could not trust it: null): when no name came or went, what changed
      // is not known (a dir replaced under its name, a hand-off, a copy finished), so every dir is compared.
      if (!fullDue) work = sweepNames(catalog, root);
      work ??= sweepSessionDirs(catalog, root, rereadAll);
    } else work = dirtySessions(catalog, root);
    const { todo, gone, sweep } = work;
    // `index` keeps the checks of the sidecars it trusted by hash (the next index compares times only).
    const indexed = await indexSessions(catalog, root, todo, gone, now(), {
      keepChecks: options.full === true,
      worker: options.sidecarWorker,
      onProgress: options.onProgress,
    });
    const removed = catalog.remove(gone);
    catalog.setMeta({
      entry_version: ENTRY_VERSION,
      // Removing a sweep request moved the sessions dir's time to now: not settled.
      ...(sweep ? { root_mtime: work.requestRemoved ? null : settled(rootMtime, now()) } : {}),
      ...(sweep === 'full' ? { swept_at: new Date(now()).toISOString() } : {}),
    });
    return { catalog, sweep, indexed, removed, ...(warning ? { warning } : {}) };
  } catch (err) {
    catalog.close();
    throw err;
  }
}

/** The catalog opened read-only when nothing has to change (same entry code, sessions dir time, no dirty row). */
function openIfFresh(root: string, now: () => number): Catalog | null {
  const ro = Catalog.open(root, { readonly: true });
  if (!ro) return null;
  let fresh = false;
  try {
    const stored = ro.meta('root_mtime');
    fresh =
      ro.meta('entry_version') === ENTRY_VERSION &&
      stored !== null &&
      stored === String(mtimeOf(root)) &&
      !sweepDue(ro.meta('swept_at'), now()) &&
      ro.dirtyRows().length === 0;
  } catch {
    fresh = false;
  }
  if (fresh) return ro;
  ro.close();
  return null;
}

/** Session dirs to read, and rows whose dir is gone. */
interface RefreshWork {
  /**
   * `stored`: the row's dir time, when it has one (a time accepted before, unchanged since, can be kept);
   * `touched`: the row's counter when the sweep read every row's state (else it is read before the session).
   */
  todo: Array<{
    name: string;
    mtime: number | null;
    stored?: number | null;
    touched?: number;
    check?: LogCheck | null;
  }>;
  gone: string[];
  sweep: RefreshResult['sweep'];
  /** The sweep removed a writer's sweep request (which moved the sessions dir's time). */
  requestRemoved?: boolean;
}

/**
 * Only the names: dirs without a row to read, rows without a dir gone, the dirty rows, and the rows read
 * while their dir's time was not settled (a copy still being written then). Null when a full sweep is needed
 * instead: a writer asked for one, or no name came or went.
 */
function sweepNames(catalog: Catalog, root: string): RefreshWork | null {
  const { added, gone } = catalog.compareNames(readNames(root));
  const todo: RefreshWork['todo'] = [];
  // Plain names: a row's name is taken to be its dir still (a dir turned file under it waits for a full
  // sweep); only a name without a row is lstat-ed (a symlink is not a session dir: none leads outside).
  for (const name of added) {
    if (name === SWEEP_REQUEST_FILE) return null;
    // The zips beside the dirs (one per bundled session) are not stat-ed: they are thousands, and no dir.
    if (!parseSessionDirName(name) && name.toLowerCase().endsWith('.zip')) continue;
    const st = lstatOf(path.join(root, name));
    if (st?.isDirectory() && isSessionDirName(root, name)) todo.push({ name, mtime: st.mtimeMs });
  }
  // A dir without a log (being created, not a session) has no row and never gets one: not a name change.
  const namesChanged = gone.length > 0 || todo.some((t) => isRegularFile(path.join(root, t.name, LOG_FILE)));
  if (!namesChanged) return null;
  const goneSet = new Set(gone);
  for (const name of new Set([...catalog.dirtyRows(), ...catalog.unsettledRows()]))
    if (!goneSet.has(name)) todo.push({ name, mtime: mtimeOf(path.join(root, name)) });
  return { todo, gone, sweep: 'names' };
}

/** Every session dir compared with its row: new or changed ones to read, rows without a dir gone. */
function sweepSessionDirs(catalog: Catalog, root: string, rereadAll: boolean): RefreshWork {
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    entries = [];
  }
  // Removed before any dir is stat-ed: a writer's hand-off moves its dir's time before it leaves the request.
  const requestRemoved = entries.some((e) => e.name === SWEEP_REQUEST_FILE) && removeSweepRequest(root);
  const states = catalog.rowStates();
  const seen = new Set<string>();
  const todo: RefreshWork['todo'] = [];
  // Dirent.isDirectory() does not follow symlinks: a link cannot lead outside the sessions dir.
  for (const e of entries) {
    if (!e.isDirectory() || !isSessionDirName(root, e.name)) continue;
    const name = e.name;
    const mtime = mtimeOf(path.join(root, name));
    if (mtime === null) continue;
    seen.add(name);
    const st = states.get(name);
    if (rereadAll || needsReading(st, mtime))
      todo.push({ name, mtime, stored: st?.dirMtime ?? null, touched: st?.touched ?? 0 });
  }
  return {
    todo,
    gone: [...states.keys()].filter((name) => !seen.has(name)),
    sweep: 'full',
    requestRemoved,
  };
}

/**
 * Whether the dir `name` under `root` is a session dir: named `<stamp>-<id>` (no stat: a name without a log
 * is dropped when read), or named otherwise (a copy `... (2)`, a renamed dir) and holding a log.
 */
function isSessionDirName(root: string, name: string): boolean {
  return parseSessionDirName(name) !== null || isRegularFile(path.join(root, name, LOG_FILE));
}

/** Remove a writer's sweep request; false when it cannot be (a read-only share: the next reader tries again). */
function removeSweepRequest(root: string): boolean {
  try {
    fs.rmSync(path.join(root, SWEEP_REQUEST_FILE), { force: true });
    return true;
  } catch {
    return false;
  }
}

/** Only the rows a writer touched (the sessions dir did not change). */
function dirtySessions(catalog: Catalog, root: string): RefreshWork {
  return {
    todo: catalog.dirtyRows().map((name) => ({ name, mtime: mtimeOf(path.join(root, name)) })),
    gone: [],
    sweep: null,
  };
}

/**
 * Read each session into its row (from its sidecar when that is true to the log, else from the log), in
 * chunks of BATCH, PUT_BATCH rows per write transaction; a dir without a log (or gone meanwhile) is added to
 * `gone`. The sidecars are read and checked on two threads when there are many (sidecar-worker.ts). With `keepChecks`
 * (`index`), a sidecar trusted by its log's hash, the log's time settled, is recorded as checked
 * (`log_checks`), so the next reader compares times only. Returns how many were read.
 */
async function indexSessions(
  catalog: Catalog,
  root: string,
  todo: RefreshWork['todo'],
  gone: string[],
  t: number,
  options: { keepChecks: boolean; worker?: boolean; onProgress?: Progress },
): Promise<number> {
  if (todo.length === 0) return 0;
  // The file system's clock before any log is hashed (a check is kept only when the log's time was settled
  // by it too); a refresh that keeps no checks needs none.
  const fsClock = options.keepChecks ? catalog.fileClock() : null;
  const { stepSessionDirs } = await import('./sidecar-worker.js');
  const { checkToKeep } = await import('../store/entry-sidecar.js');
  // The code that reads a log loads only when a sidecar cannot be trusted (most sweeps find them true).
  let readLog: typeof import('./catalog-entry.js').entryFromLog | undefined;
  let indexed = 0;
  let done = 0;
  const chunks: Array<RefreshWork['todo']> = [];
  for (let i = 0; i < todo.length; i += BATCH) chunks.push(todo.slice(i, i + BATCH));
  const checks = todo.length >= CHECKS_AT_ONCE ? catalog.logChecks() : null;
  // Before a session is read, its row's counter (a writer that touches it meanwhile leaves it stale), and
  // the check of its sidecar the catalog kept.
  const prepare = (chunk: RefreshWork['todo']) => {
    for (const item of chunk) {
      item.touched ??= catalog.touchedOf(item.name);
      item.check ??= checks ? (checks.get(item.name) ?? null) : catalog.logCheckOf(item.name);
    }
  };
  let items: Array<{
    entry: CatalogEntry;
    touched: number;
    dirMtime: number | null;
    check: LogCheck | null;
  }> = [];
  const put = () => {
    catalog.put(items);
    indexed += items.length;
    items = [];
  };
  const finish = async (chunk: RefreshWork['todo'], steps: SidecarStep[]) => {
    for (const [k, { name, mtime, stored, touched = 0 }] of chunk.entries()) {
      const step = steps[k]!;
      if (mtime === null || step.kind === 'gone') {
        gone.push(name); // not a session (no log) or gone meanwhile
        continue;
      }
      const dir = path.join(root, name);
      // The dir's time before reading can be kept: settled, or the row's already (accepted then, unchanged).
      const beforeKept = settled(mtime, t) !== null || (stored != null && stored === mtime);
      if (step.kind === 'sidecar') {
        // Nothing of ours changed the dir: its time from the sweep (a later change makes the next sweep read it).
        const check = checkToKeep(step.trust, fsClock);
        items.push({ entry: step.entry, touched, dirMtime: beforeKept ? mtime : null, check });
        continue;
      }
      // The dir's time after reading: the reader's handle makes the log's -wal and -shm files and removes them
      // at its close, and writing the sidecar replaces a file, both of which move it to now. Kept when that is
      // all that changed it (the time before was settled, and we wrote the sidecar, or there were no WAL files
      // before the read and none after): else every session index read is read again by the next sweep.
      const walFilesBefore = walFilesOf(dir);
      readLog ??= (await import('./catalog-entry.js')).entryFromLog;
      const { entry, wroteSidecar } = readLog(dir);
      const after = mtimeOf(dir);
      const onlyOurFiles = beforeKept && (wroteSidecar || (walFilesBefore === 0 && walFilesOf(dir) === 0));
      items.push({
        entry,
        touched,
        dirMtime: after !== null && (settled(after, t) !== null || onlyOurFiles) ? after : null,
        check: null, // a sidecar written now (settled when the log's time was) vouches for itself
      });
    }
    if (items.length >= PUT_BATCH) put();
    done += chunk.length;
    options.onProgress?.(done, todo.length);
  };
  await stepSessionDirs(root, chunks, ENTRY_VERSION, { prepare, finish }, options.worker);
  put();
  return indexed;
}

/**
 * Open the catalog for writing; a file that is damaged or not ours (a cache, after all) is rebuilt, and
 * `onRebuild` told so, as a catalog found damaged later is. A missing one (a first run) is created silently.
 */
function openWritable(root: string, onRebuild?: (why: string) => void): Catalog {
  try {
    return Catalog.open(root);
  } catch (err) {
    if (!isCatalogDamage(err)) throw err;
    removeCatalogFiles(root);
    const catalog = Catalog.open(root);
    onRebuild?.(rebuildNotice(root, err));
    return catalog;
  }
}

/** What `onRebuild` is told: the catalog's file, why it could not be used, that it was rebuilt. */
function rebuildNotice(root: string, err: unknown): string {
  return `the catalog ${path.join(root, CATALOG_FILE)} was damaged (${(err as Error).message}); rebuilt from the session logs`;
}

function removeCatalogFiles(root: string): void {
  for (const suffix of ['', '-wal', '-shm'])
    fs.rmSync(path.join(root, CATALOG_FILE + suffix), { force: true });
}

/**
 * Every session dir of `sessionsDir` as the refreshed catalog knows it: by its log's id (what `list` shows),
 * a copy's or a renamed dir's too; for `resolveSession`. Its stamp: the log's start, else the dir name's.
 * Without a catalog (nothing listed yet), `listSessions`: looking a session up creates none, and leaves the
 * session dirs as found (no sidecars); a dir renamed to another `<stamp>-<id>` is then known by its name.
 */
export async function catalogLocations(sessionsDir: string): Promise<SessionLocation[]> {
  const root = path.resolve(sessionsDir);
  if (!fs.existsSync(path.join(root, CATALOG_FILE))) {
    const { listSessions } = await import('../store/session-reader.js');
    return listSessions(root);
  }
  const rows = await withCatalog(root, ({ catalog }) => catalog.identities());
  return rows.map((r) => {
    const started = r.started_at === null ? Number.NaN : Date.parse(r.started_at);
    return {
      dir: path.join(root, r.dir_name),
      dirName: r.dir_name,
      sessionId: r.session_id,
      stamp: Number.isFinite(started)
        ? utcStamp(new Date(started))
        : (parseSessionDirName(r.dir_name)?.stamp ?? ''),
    };
  });
}

/**
 * Refresh the catalog of `sessionsDir`, give it to `use`, close it. A catalog found damaged on the way (a bad
 * page met by any query, here or in `use`) is removed and rebuilt from the session logs, once, and `use` runs
 * again: a cache never makes a command fail on every run. `onRebuild` is told why.
 */
export async function withCatalog<T>(
  sessionsDir: string,
  use: (res: RefreshResult) => T | Promise<T>,
  options: {
    full?: boolean;
    now?: () => number;
    onRebuild?: (why: string) => void;
    onProgress?: Progress;
    sidecarWorker?: boolean;
  } = {},
): Promise<T> {
  const root = path.resolve(sessionsDir);
  for (let attempt = 0; ; attempt++) {
    let res: RefreshResult | null = null;
    try {
      res = await refreshCatalog(root, { ...options, full: options.full || attempt > 0 });
      return await use(res);
    } catch (err) {
      if (attempt > 0 || !isCatalogDamage(err)) throw err;
      res?.catalog.close();
      res = null;
      removeCatalogFiles(root);
      options.onRebuild?.(rebuildNotice(root, err));
    } finally {
      res?.catalog.close();
    }
  }
}

/** How many of the log's -wal and -shm files are in `dir`. */
function walFilesOf(dir: string): number {
  const log = path.join(dir, LOG_FILE);
  return (isRegularFile(`${log}-wal`) ? 1 : 0) + (isRegularFile(`${log}-shm`) ? 1 : 0);
}

function readNames(root: string): string[] {
  try {
    return fs.readdirSync(root);
  } catch {
    return [];
  }
}
