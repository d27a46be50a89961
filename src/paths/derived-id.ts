/**
 * The ids that stand for a session in paths when its own may not appear there. Apart from naming.ts so that what
 * only names things (every CLI's start-up) does not load node:crypto: 6.6 ms of `mcec-bundle --help`'s 173.
 * node:crypto itself loads on the first unsafe id: the catalog imports this module, and `list` hashes nothing.
 */
import { createRequire } from 'node:module';
import { isSafeSessionId, parseSessionDirName } from './naming.js';

let createHash: typeof import('node:crypto').createHash | undefined;

/** A path-safe stand-in for an id that is not safe: `unsafe-<12 hex of its sha256>`, stable per id. */
export function safeDerivedId(id: string): string {
  createHash ??= (createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto')).createHash;
  return `unsafe-${createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 12)}`;
}

/** The id a session dir's name stands for until its log is read: `<stamp>-<id>`'s id, else a path-safe name. */
export function idOfDirName(dirName: string): string {
  const parsed = parseSessionDirName(dirName);
  if (parsed) return parsed.sessionId;
  return isSafeSessionId(dirName) ? dirName : safeDerivedId(dirName);
}
