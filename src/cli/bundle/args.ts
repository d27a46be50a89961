/** The arguments mcec-bundle commands share: the sessions dir, a session, paths and value parsers. */
import fs from 'node:fs';
import path from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { LOG_FILE, parseSessionDirName } from '../../paths/naming.js';
import { parseByteSize, parseDuration } from '../../util/units.js';
import {
  addHeader,
  resolveSessionsDir,
  sessionsArg,
  sessionsDirProblem,
  UsageError,
  windowsPathProblem,
} from '../common.js';

export interface SessionsOption {
  sessions?: string;
}

/** Add `-s, --sessions <dir>` to a command. */
export function withSessions(cmd: Command): Command {
  return cmd.option(
    '-s, --sessions <dir>',
    'the sessions dir (default: $MCEC_SESSIONS_DIR, else ./sessions)',
    sessionsArg,
  );
}

/**
 * The usage error for a file an option names (`--rules`, `--mask-rules`) that cannot be read: one line naming
 * the option and the file, without Node's errno wording for the common cases.
 */
export function optionFileError(option: string, file: string, err: unknown): UsageError {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT'
      ? 'does not exist'
      : code === 'EISDIR'
        ? 'is a directory, not a file'
        : `cannot be read: ${(err as Error).message}`;
  return new UsageError(`${option} ${file} ${why}`);
}

/** The help line of `--templates <dir>`, the same on every command that renders. */
export const TEMPLATES_HELP = 'templates that override the built-in ones by file name';

/** The sessions dir to read; a missing one is an error (a typo must not read as "no sessions"). */
export function sessionsDir(opts: SessionsOption): string {
  const foreign = windowsPathProblem(opts.sessions);
  if (foreign) throw new UsageError(foreign);
  const dir = resolveSessionsDir(opts.sessions);
  const problem = sessionsDirProblem(dir, opts.sessions);
  if (problem) throw new Error(problem);
  return dir;
}

/** `--templates DIR` must name a directory: a typo would silently fall back to the built-in templates. */
export function templatesDir(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  // A blank one would resolve to the current directory and take its files as templates.
  if (!dir.trim()) throw new UsageError('--templates is empty: give a directory, or leave the option out');
  const abs = path.resolve(dir);
  if (!fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`--templates ${abs} is not a directory`);
  }
  return abs;
}

/**
 * `-o FILE` must go into an existing directory (or be one): a typo must not create a tree somewhere. `-o DIR/`
 * (a trailing separator) names a directory, made when its parent exists: it keeps its separator, which
 * `path.resolve` drops, so the bundle goes in it as `<session dir>.zip` rather than to a file named DIR.
 */
export function outputPath(output: string | undefined): string | undefined {
  if (output === undefined) return undefined;
  // A blank one (`-o ""`, an unset shell variable) would resolve to the current directory.
  if (!output.trim())
    throw new UsageError('-o is empty: give a file or a directory, or leave the option out');
  const abs = path.resolve(output);
  if (fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory()) return abs;
  if (!fs.statSync(path.dirname(abs), { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`-o ${abs}: the directory ${path.dirname(abs)} does not exist`);
  }
  return output.endsWith('/') || output.endsWith(path.sep) ? abs + path.sep : abs;
}

/** A session as a command finds it. */
export interface LocatedSession {
  dir: string;
  dirName: string;
  sessionId: string;
}

/**
 * Find a session by id, unique prefix, dir name, or the path of its dir (as mcec-replay takes it, e.g.
 * sessions/20261202-101500-5f19c9c01a3f); an id that is neither path-safe nor a path is a usage error, a
 * missing session a failure.
 */
export async function locate(idOrPrefix: string, opts: SessionsOption): Promise<LocatedSession> {
  if (/[\\/]/.test(idOrPrefix) || idOrPrefix === '.' || idOrPrefix === '..') {
    return sessionDirAt(idOrPrefix);
  }
  const { resolveSession } = await import('../../store/session-reader.js');
  const { catalogLocations } = await import('../../fleet/catalog.js');
  const dir = sessionsDir(opts);
  // By the catalog: an id `list` shows (a log's, whatever its dir is named) resolves, copies are ambiguous.
  const found = resolveSession(dir, idOrPrefix, await catalogLocations(dir));
  if (found.ok) return found.session;
  if (found.reason === 'invalid-id') throw new UsageError(found.message);
  throw new Error(found.message);
}

/**
 * The session whose dir is at `input` (any path, not only under --sessions), as mcec-replay takes it: a path
 * that is not there, or a dir without a log, is a failure naming it (exit 1), as for an unknown id.
 */
async function sessionDirAt(input: string): Promise<LocatedSession> {
  const dir = path.resolve(input);
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`${dir}: no such directory; give a session dir, a session id or a unique prefix of one`);
  }
  if (!fs.statSync(path.join(dir, LOG_FILE), { throwIfNoEntry: false })?.isFile()) {
    throw new Error(
      `${dir}: no ${LOG_FILE} in this directory; give a session dir (sessions/<yyyyMMdd-HHmmss>-<id>) or a session id`,
    );
  }
  const dirName = path.basename(dir);
  // Its id is its log's (a dir renamed by hand, a copy), the dir name's when the log cannot be read.
  const { SessionReader } = await import('../../store/session-reader.js');
  try {
    const reader = SessionReader.open(dir);
    try {
      return { dir, dirName, sessionId: reader.session().session_id };
    } finally {
      reader.close();
    }
  } catch (err) {
    const parsed = parseSessionDirName(dirName);
    if (parsed) return { dir, dirName, sessionId: parsed.sessionId };
    throw err;
  }
}

/** Session dirs started within `sinceMs`. */
export async function sinceDirs(opts: SessionsOption, sinceMs: number): Promise<string[]> {
  const { selectSessions } = await import('../../export/ci-report.js');
  return selectSessions(sessionsDir(opts), { sinceMs }).map((l) => l.dir);
}

/** `--max-bytes` and friends: 25000000, 500KB, 10MB. */
export function sizeArg(value: string): number {
  const bytes = parseByteSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size such as 25000000, 500KB or 10MB.');
  return bytes;
}

/** `--since`, `--older-than`: 7d, 12h, 30m. */
export function durationArg(value: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new InvalidArgumentError('expected a duration such as 7d, 12h or 30m.');
  return ms;
}

/** A duration, or 0 to turn the check off. */
export function durationOrZeroArg(value: string): number {
  return /^\s*0+\s*[smhdw]?\s*$/i.test(value) ? 0 : durationArg(value);
}

/** A share from 0 to 1. */
export function shareArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a number from 0 to 1.');
  return n;
}

/** `-H name=value` (or `name: value`), repeatable: the headers so far plus this one. */
export function headerArg(value: string, previous: Record<string, string>): Record<string, string> {
  return addHeader('-H', value, previous);
}

/** `--format`: junit or github. */
export function formatArg(value: string): 'junit' | 'github' {
  if (value !== 'junit' && value !== 'github') throw new InvalidArgumentError('expected junit or github.');
  return value;
}
