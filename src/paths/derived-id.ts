/**
 * The ids that stand for a session in paths when its own may not appear there. Apart from naming.ts so that what
 * only names things (every CLI's start-up) does not load node:crypto: 6.6 ms of `mcec-bundle --help`'s 173.
 */
import { createHash } from 'node:crypto';
import { isSafeSessionId, parseSessionDirName } from './naming.js';

/** A path-safe stand-in for an id that is not safe: `unsafe-<12 hex of its sha256>`, stable per id. */
export function safeDerivedId(id: string): string {
  return `unsafe-${createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 12)}`;
}

/** The id a session dir's name stands for until its log is read: `<stamp>-<id>`'s id, else a path-safe name. */
export function idOfDirName(dirName: string): string {
  const parsed = parseSessionDirName(dirName);
  if (parsed) return parsed.sessionId;
  return isSafeSessionId(dirName) ? dirName : safeDerivedId(dirName);
}
