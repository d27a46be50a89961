/**
 * A session dir's own catalog entry, `catalog-entry.json` beside its `session.sqlite`
 * (`schema/catalog-entry.schema.json`): the row a reader computed from the log while it was at rest, and
 * which log that was (its size, mtime and sha1, hashed before the entry was read). A reader of the catalog
 * trusts it instead of opening the log only when the log still is that log (`logAtRest` + `trustedEntry`);
 * anything that opens a log for writing removes it first (`removeEntrySidecar`, by `openLogForWriting`), so a stale one is never
 * kept by our own writers, and the hash catches the others (a copy, an older recorder, a SQLite shell).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { LOG_FILE } from '../paths/naming.js';
import { lstatOf, NO_FOLLOW_NO_BLOCK, statOf } from '../util/file-stat.js';
import { isRecord } from '../util/json.js';
import { removeBestEffort } from '../util/temp-files.js';
import type { CatalogEntry, CatalogFailure, CatalogSession, CatalogToolCount, LogCheck } from './catalog.js';
import { SETTLE_MS } from './settle.js';

export { SETTLE_MS };

export const ENTRY_SIDECAR_FILE = 'catalog-entry.json';
/** This file's own format; the entry's is the caller's `entryVersion` (fingerprint rules, entry code). */
const SIDECAR_FORMAT = 'mcec-catalog-entry/1';
/** Logs larger than this are not hashed: their sidecar is trusted on size + settled mtime, or not at all. */
const MAX_HASHED_BYTES = 64 * 1024 * 1024;

/** Which log an entry describes. */
export interface LogStamp {
  size: number;
  mtimeMs: number;
  /**
   * The log's mtime was at least SETTLE_MS old before its hash was taken, by this process's clock and by the
   * file system's (the sidecar's temp file's time): a later write cannot share its tick.
   */
  settled: boolean;
  /** sha1 of the log's bytes; null when it is larger than MAX_HASHED_BYTES. */
  sha1: string | null;
  /** This process's clock just before the hash was taken (not written: it decides `settled`). */
  hashedAtMs: number;
}

/**
 * The log's size, mtime and device when it is at rest (no `-wal` with content), else null; null too when the
 * log is missing or not a regular file itself (a symlink: the catalog never reads one), so a sidecar found
 * true says the dir holds a log.
 */
export function logAtRest(dir: string): { size: number; mtimeMs: number; dev: number } | null {
  const file = path.join(dir, LOG_FILE);
  const st = lstatOf(file);
  if (!st?.isFile() || !walAtRest(file)) return null;
  return { size: st.size, mtimeMs: st.mtimeMs, dev: st.dev };
}

/** Whether the log `file` has no `-wal` with content. */
function walAtRest(file: string): boolean {
  // No exception built for a missing file: the -wal of a log at rest is missing (half an index's stats).
  const wal = statOf(`${file}-wal`);
  return !wal || (wal.isFile() && wal.size === 0);
}

/** A stamp of the log at rest, hashed now (before its entry is read), or null when it is not at rest. */
export function stampLog(dir: string): LogStamp | null {
  const rest = logAtRest(dir);
  if (!rest) return null;
  const hashedAtMs = Date.now();
  const sha1 = rest.size <= MAX_HASHED_BYTES ? hashOf(path.join(dir, LOG_FILE), rest.size) : null;
  const after = logAtRest(dir);
  if (!after || after.size !== rest.size || after.mtimeMs !== rest.mtimeMs) return null;
  return { size: rest.size, mtimeMs: rest.mtimeMs, settled: false, sha1, hashedAtMs };
}

/**
 * The entry the sidecar in `dir` holds when it describes the log there as it is now, else null (no sidecar,
 * another format or entry version, another dir, the log written since or not at rest: read the log). A
 * sidecar is trusted on the log's size + mtime when its own stamp is settled and names that mtime, or when
 * `check` (the catalog's record of this sha1 checked against the log, its time settled then: `log_checks`)
 * names the sidecar's sha1 and the log's size and mtime now; any other (a fresh one, or a copy without kept
 * times) only when the log's sha1 is the one stamped.
 */
export function trustedEntry(
  dir: string,
  entryVersion: string,
  check: LogCheck | null = null,
): TrustedEntry | null {
  const text = readSmallFile(path.join(dir, ENTRY_SIDECAR_FILE));
  if (text === null) return null; // none or unreadable: read the log
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null; // not JSON (half written, damaged): read the log
  }
  const sidecar = asSidecar(parsed);
  if (!sidecar || sidecar.entry_version !== entryVersion) return null;
  if (sidecar.entry.session.dir_name !== path.basename(dir)) return null;
  const file = path.join(dir, LOG_FILE);
  const st = lstatOf(file);
  if (!st?.isFile() || st.size !== sidecar.log.size) return null;
  const { size, mtime_ms: mtimeMs, settled, sha1 } = sidecar.log;
  const by =
    settled && st.mtimeMs === mtimeMs
      ? 'settled'
      : check !== null &&
          sha1 !== null &&
          check.sha1 === sha1 &&
          check.size === size &&
          check.mtimeMs === st.mtimeMs
        ? 'checked'
        : null;
  if (by !== null) {
    if (!walAtRest(file)) return null;
    const stamp = { size, mtimeMs: st.mtimeMs, settled: by === 'settled', sha1, hashedAtMs: Number.NaN };
    return { entry: sidecar.entry, stamp, by, dev: st.dev };
  }
  if (sha1 === null || st.size > MAX_HASHED_BYTES) return null;
  const hashedAtMs = Date.now();
  if (hashOf(file, st.size) !== sha1) return null;
  // The log may have been written while it was hashed: then its time moved, or its WAL has content (a WAL
  // with content before the hash still has it, or was checkpointed into the log, which moved its time).
  const after = logAtRest(dir);
  if (!after || after.size !== st.size || after.mtimeMs !== st.mtimeMs) return null;
  return {
    entry: sidecar.entry,
    stamp: { size, mtimeMs: st.mtimeMs, settled: false, sha1, hashedAtMs },
    by: 'hash',
    dev: after.dev,
  };
}

/**
 * A sidecar's entry found true to the log, and the log as it is now; `by`: the sidecar's settled stamp, the
 * catalog's check, or the log's sha1 read now (`stamp.hashedAtMs` then says when); `dev` the log's device.
 */
export interface TrustedEntry {
  entry: CatalogEntry;
  stamp: LogStamp;
  by: 'settled' | 'checked' | 'hash';
  dev: number;
}

/**
 * The check a catalog may keep of a sidecar trusted by its hash (`log_checks`, so the next reader compares
 * times only), or null: only when the log's time was settled before the hash was taken, by this process's
 * clock and by the file system's (`fsClock`: a time the file system gave a file written before the hash, on
 * the log's device), as for a sidecar stamped settled. A check the sidecar was trusted by is kept as it was.
 */
export function checkToKeep(
  trusted: Pick<TrustedEntry, 'stamp' | 'by' | 'dev'>,
  fsClock: { ms: number; dev: number } | null,
): LogCheck | null {
  const { stamp, by, dev } = trusted;
  if (stamp.sha1 === null || by === 'settled') return null;
  const check = { size: stamp.size, mtimeMs: stamp.mtimeMs, sha1: stamp.sha1 };
  if (by === 'checked') return check;
  return fsClock !== null && fsClock.dev === dev && settledBeforeHash(stamp, fsClock.ms) ? check : null;
}

/**
 * Whether the log's time was settled before its hash was taken (a write after the hash in the same time tick
 * would otherwise keep its time): by this process's clock then, and by the file system's (`fsMs`, a time it
 * gave a file written since), in case the two disagree (a share, faketime).
 */
function settledBeforeHash(stamp: LogStamp, fsMs: number): boolean {
  return stamp.hashedAtMs - stamp.mtimeMs >= SETTLE_MS && fsMs - stamp.mtimeMs >= SETTLE_MS;
}

/**
 * Whether a sidecar trusted by its hash is worth writing again with the log's time now, so that the next
 * reader compares times only: when this process's clock says that time is settled (the file system's clock
 * decides what is written).
 */
export function worthRestamping(trusted: TrustedEntry, now = Date.now()): boolean {
  return !trusted.stamp.settled && now - trusted.stamp.mtimeMs >= SETTLE_MS;
}

/**
 * This module's writer among the threads of this process (each thread loads its own copy): an index's worker
 * thread and its main thread share a pid and may write one dir's sidecar. The write is synchronous, so one
 * name per thread is enough (a random id, as importing worker_threads for its threadId costs ~2 ms at start).
 */
const WRITER = crypto.randomBytes(4).toString('hex');

/**
 * Write the sidecar of `dir` (a temp file renamed over it: the sidecar is never held open by us, and a
 * reader that finds it half written reads the log). Removed again when the log changed meanwhile. Returns
 * whether it stays. Never throws: a sidecar is a shortcut, not a record.
 */
export function writeEntrySidecar(
  dir: string,
  entryVersion: string,
  entry: CatalogEntry,
  stamp: LogStamp,
): boolean {
  const file = path.join(dir, ENTRY_SIDECAR_FILE);
  const temp = `${file}.${process.pid}.${WRITER}.tmp`;
  const body = (settled: boolean) =>
    `${JSON.stringify({
      format: SIDECAR_FORMAT,
      entry_version: entryVersion,
      log: { size: stamp.size, mtime_ms: stamp.mtimeMs, settled, sha1: stamp.sha1 },
      entry,
    })}\n`;
  try {
    // Stamped settled by this process's clock first; the file system's is the temp file's time once written.
    const guess = stamp.hashedAtMs - stamp.mtimeMs >= SETTLE_MS;
    fs.writeFileSync(temp, body(guess));
    if (guess && !settledBeforeHash(stamp, fs.statSync(temp).mtimeMs)) fs.writeFileSync(temp, body(false));
    fs.renameSync(temp, file);
  } catch {
    removeBestEffort(temp);
    return false;
  }
  // A writer that opened the log after our stamp removed no sidecar yet: ours must not outlive its write.
  const after = logAtRest(dir);
  if (!after || after.size !== stamp.size || after.mtimeMs !== stamp.mtimeMs) {
    removeEntrySidecar(dir);
    return false;
  }
  return true;
}

/**
 * Remove the sidecar of the session dir `dir` before its log is written. False when one is still there (it
 * could not be removed): the log's hash and time still keep it from being trusted after the write.
 */
export function removeEntrySidecar(dir: string): boolean {
  try {
    fs.rmSync(path.join(dir, ENTRY_SIDECAR_FILE), { force: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * sha1 of the first `size` bytes of `file` (its size when stat-ed: the caller stats it again after, so a log
 * that grew or shrank meanwhile is caught there, and no read is spent finding the end). sha1: it tells a
 * changed log from the one stamped (accidents, not attacks: whoever can write the sidecar can write the log).
 */
function hashOf(file: string, size: number): string | null {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const hash = crypto.createHash('sha1');
    // One buffer for every log: an index hashes thousands, and a fresh one per file is mostly GC.
    hashBuffer ??= Buffer.allocUnsafe(HASH_SKEW + HASH_CHUNK);
    for (let done = 0; done < size; ) {
      const n = fs.readSync(fd, hashBuffer, HASH_SKEW, Math.min(HASH_CHUNK, size - done), null);
      if (n === 0) break;
      hash.update(hashBuffer.subarray(HASH_SKEW, HASH_SKEW + n));
      done += n;
    }
    return hash.digest('hex');
  } catch {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const HASH_CHUNK = 1024 * 1024;
/**
 * Where in the buffer a read lands: off the page boundary a large Buffer starts on. The kernel's copy from
 * the page cache into a page-aligned destination (the source's own offset in its page) took 2 to 2.5 times
 * as long on this project's VM (AMD EPYC; 4K aliasing between the copy's loads and stores): 70 against 30-38 us
 * for a 76 KB log, a quarter of an index's time per dir. Any offset that is not a multiple of 4096 did.
 */
const HASH_SKEW = 64;
let hashBuffer: Buffer | undefined;

/**
 * A small file's text (a sidecar), or null when it cannot be read. Read into one buffer kept for every file
 * (an index reads thousands), and a read shorter than asked is taken as the end (what a regular file gives):
 * no `fstat` for the size and no read of the end, two system calls of five (each 5-20 us on a busy VM). A
 * read cut short otherwise leaves text that does not parse, which a reader takes for no sidecar.
 */
function readSmallFile(file: string): string | null {
  let fd: number | undefined;
  try {
    // A sessions dir copied from elsewhere: a FIFO under the name blocked the open for ever (O_NONBLOCK: it
    // opens, reads as empty), a symlink is not followed (ELOOP), and a file past the cap is no sidecar (the
    // log is read instead) rather than a buffer of its size kept for the process's life.
    fd = fs.openSync(file, NO_FOLLOW_NO_BLOCK);
    textBuffer ??= Buffer.allocUnsafe(TEXT_CHUNK);
    let n = 0;
    for (;;) {
      const got = fs.readSync(fd, textBuffer, n, textBuffer.length - n, null);
      n += got;
      if (got === 0 || n < textBuffer.length) break;
      if (textBuffer.length >= MAX_SIDECAR_BYTES) return null;
      const larger = Buffer.allocUnsafe(textBuffer.length * 2);
      textBuffer.copy(larger, 0, 0, n);
      textBuffer = larger;
    }
    return textBuffer.toString('utf8', 0, n);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const TEXT_CHUNK = 64 * 1024;
/** A sidecar's largest size (200 failures with 1,000-char details take about 300 KB); over it, no sidecar. */
const MAX_SIDECAR_BYTES = 16 * 1024 * 1024;
let textBuffer: Buffer | undefined;

// The shape check: a sidecar goes into the catalog only when every field has the catalog's type (a foreign
// or damaged file is read past, never a crash). Kept by hand: the list path must not load a schema validator.

interface Sidecar {
  format: string;
  entry_version: string;
  log: { size: number; mtime_ms: number; settled: boolean; sha1: string | null };
  entry: CatalogEntry;
}

type Kind = 'string' | 'string?' | 'int' | 'int?';

const SESSION_FIELDS: Record<keyof CatalogSession, Kind> = {
  dir_name: 'string',
  session_id: 'string',
  scenario: 'string?',
  server: 'string?',
  host: 'string?',
  started_at: 'string?',
  ended_at: 'string?',
  duration_ms: 'int?',
  duration: 'string',
  last_activity_at: 'string?',
  status: 'string?',
  unchecked_host: 'string?',
  verdict: 'string?',
  verdict_reason: 'string?',
  calls: 'int',
  failures: 'int',
  recovered: 'int',
  pending: 'int',
  warnings: 'int',
  artifacts: 'int',
  fingerprints: 'string',
  error: 'string?',
};
const FAILURE_FIELDS: Record<keyof CatalogFailure, Kind> = {
  dir_name: 'string',
  seq: 'int',
  at: 'string?',
  tool: 'string',
  status: 'string',
  code: 'string?',
  category: 'string?',
  detail: 'string?',
  target: 'string',
  window: 'string?',
  class_name: 'string?',
  process: 'string?',
  recovered: 'int',
  fingerprint: 'string',
};
const TOOL_FIELDS: Record<keyof CatalogToolCount, Kind> = {
  dir_name: 'string',
  tool: 'string',
  calls: 'int',
  failures: 'int',
};

function fits(v: unknown, kind: Kind): boolean {
  if (v === null) return kind.endsWith('?');
  return kind.startsWith('string') ? typeof v === 'string' : Number.isSafeInteger(v);
}

function hasShape(v: unknown, fields: Record<string, Kind>): boolean {
  if (!isRecord(v)) return false;
  const keys = Object.keys(v);
  return (
    keys.length === Object.keys(fields).length && keys.every((k) => k in fields && fits(v[k], fields[k]!))
  );
}

function asSidecar(v: unknown): Sidecar | null {
  if (!isRecord(v) || v.format !== SIDECAR_FORMAT || typeof v.entry_version !== 'string') return null;
  const log = v.log;
  if (
    !isRecord(log) ||
    !Number.isSafeInteger(log.size) ||
    typeof log.mtime_ms !== 'number' ||
    typeof log.settled !== 'boolean' ||
    !(log.sha1 === null || (typeof log.sha1 === 'string' && /^[0-9a-f]{40}$/.test(log.sha1)))
  )
    return null;
  const entry = v.entry;
  // A sidecar written before the catalog had `unchecked_host`: null for every session a sidecar is written
  // for (none stored open), so it is still true to its log.
  if (isRecord(entry) && isRecord(entry.session) && !('unchecked_host' in entry.session)) {
    entry.session.unchecked_host = null;
  }
  if (!isRecord(entry) || !hasShape(entry.session, SESSION_FIELDS)) return null;
  const session = entry.session as unknown as CatalogSession;
  const name = session.dir_name;
  const ok =
    Array.isArray(entry.failures) &&
    Array.isArray(entry.tools) &&
    entry.failures.every(
      (f) =>
        hasShape(f, FAILURE_FIELDS) &&
        (f as CatalogFailure).dir_name === name &&
        ['failed', 'fault'].includes((f as CatalogFailure).status),
    ) &&
    entry.tools.every((t) => hasShape(t, TOOL_FIELDS) && (t as CatalogToolCount).dir_name === name) &&
    [null, 'open', 'ended', 'aborted'].includes(session.status) &&
    [null, 'PASS', 'FAIL'].includes(session.verdict);
  return ok ? (v as unknown as Sidecar) : null;
}
