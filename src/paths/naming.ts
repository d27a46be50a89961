/**
 * How the project names what it writes: session dirs, artifact files, the log file, and the relative paths it
 * accepts from a log. A leaf (no project imports): store, artifacts, sim, report and bundle all name things here.
 */
import { createHash } from 'node:crypto';

/** Session ids used in paths must match this (mcec-wire §5 ids are 12 hex; runners may pick their own). */
export const SAFE_SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Name of the log file inside a session dir. */
export const LOG_FILE = 'session.sqlite';
/** Name of the artifact folder inside a session dir. */
export const ARTIFACTS_DIR = 'artifacts';
/** The folder beside `artifacts/` where thumbnails of its images are kept, by the sha256 of each image. */
export const THUMBNAILS_DIR = 'thumbnails';

/** `thumbnails/<sha256>-<width>.webp`: a kept thumbnail, relative to the session dir. */
export function thumbnailRelativePath(sha256: string, width: number): string {
  return `${THUMBNAILS_DIR}/${sha256}-${width}.webp`;
}

/** True when `id` may appear in a path as is. */
export function isSafeSessionId(id: unknown): id is string {
  return typeof id === 'string' && SAFE_SESSION_ID.test(id);
}

/** A path-safe stand-in for an id that is not safe: `unsafe-<12 hex of its sha256>`, stable per id. */
export function safeDerivedId(id: string): string {
  return `unsafe-${createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 12)}`;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `yyyyMMdd-HHmmss` in UTC (never local time: names must not depend on TZ). */
export function utcStamp(date: Date): string {
  return (
    `${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}-` +
    `${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}`
  );
}

/** `yyyyMMdd-HHmmssfff` in UTC, for artifact names. */
export function utcStampMillis(date: Date): string {
  return `${utcStamp(date)}${pad(date.getUTCMilliseconds(), 3)}`;
}

/** The session directory's name: `<yyyyMMdd-HHmmss UTC>-<sessionId>`. */
export function sessionDirName(startedAt: Date, sessionId: string): string {
  if (!isSafeSessionId(sessionId))
    throw new Error(`session id is not path-safe: ${JSON.stringify(sessionId)}`);
  return `${utcStamp(startedAt)}-${sessionId}`;
}

/** Split a session dir name into its stamp and id, or null when it is not one. */
export function parseSessionDirName(name: string): { stamp: string; sessionId: string } | null {
  const m = /^(\d{8}-\d{6})-([A-Za-z0-9_-]{1,64})$/.exec(name);
  return m ? { stamp: m[1]!, sessionId: m[2]! } : null;
}

/**
 * True for a dir name that travels as a zip's top folder and unzips as is on Windows, macOS and Linux: a
 * session dir's own name (`<stamp>-<id>`) or a copy's (`... (2)`, `... - Copy`, `... copy`). Letters and digits
 * of any script, space and `_-.()[]+,=@~`; up to 128 characters, not starting or ending with a space or a dot.
 */
export function isPortableDirName(name: string): boolean {
  return (
    /^[\p{L}\p{N}_([][\p{L}\p{N}\p{M} _.()[\]+,=@~-]{0,127}$/u.test(name) &&
    !/[ .]$/.test(name) &&
    !/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i.test(name)
  );
}

/** The id a session dir's name stands for until its log is read: `<stamp>-<id>`'s id, else a path-safe name. */
export function idOfDirName(dirName: string): string {
  const parsed = parseSessionDirName(dirName);
  if (parsed) return parsed.sessionId;
  return isSafeSessionId(dirName) ? dirName : safeDerivedId(dirName);
}

/** An artifact's file name: `<prefix>-<UTC yyyyMMdd-HHmmssfff>-<n>.<extension>` (`capture`, `recording`). */
export function artifactFileName(prefix: string, at: Date, n: number, extension: string): string {
  return `${prefix}-${utcStampMillis(at)}-${n}.${extension}`;
}

/** A relative path that stays inside the session dir, with `/` separators; null otherwise. */
export function safeRelativePath(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 500) return null;
  const p = value.replaceAll('\\', '/');
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p) || p.includes('\0')) return null;
  const parts = p.split('/');
  if (parts.some((s) => s === '..' || s === '')) return null;
  return parts.filter((s) => s !== '.').join('/');
}
