/**
 * Starting a user-named program on Windows as cmd.exe would find it. libuv looks a bare name up on PATH with
 * `.com`/`.exe` only, so `npx` (a `.cmd` file) is ENOENT; and Node >= 20.12.2 refuses a `.cmd`/`.bat` file
 * without a shell (EINVAL, CVE-2024-27980). A batch file is therefore run as `cmd.exe /d /s /c "<line>"`
 * with every part of the line quoted for cmd.exe and for the program's own argument parsing.
 */

import fs from 'node:fs';
import path from 'node:path';

/** PATHEXT when the environment has none: cmd.exe's own default order. */
export const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';

/** cmd.exe refuses a longer command line ("The command line is too long."). */
export const CMD_LINE_LIMIT = 8191;

/** What to hand `spawn`: the program, its arguments, and whether they are already quoted. */
export interface SpawnPlan {
  file: string;
  args: string[];
  /** True only for a batch file run through cmd.exe: `args` carry their own quoting. */
  windowsVerbatimArguments: boolean;
  /** The batch file cmd.exe runs, when it is one. */
  batchFile?: string;
}

/** The machine the command is looked up on; each part defaults to this process's. */
export interface CommandHost {
  platform: NodeJS.Platform;
  /** The child's environment: PATH, PATHEXT and ComSpec are read from it, their names in any case. */
  env: NodeJS.ProcessEnv;
  /** The child's working directory: a relative path with a directory part is taken from here. */
  cwd: string;
  /** Whether a regular file is at this path (NTFS: in any case). */
  isFile: (file: string) => boolean;
}

/** A batch file's command line that cmd.exe cannot carry. */
export class WindowsCommandLineError extends Error {
  readonly code = 'ECMDLINE';
}

/** A value of `env` whose name matches `name` in any case (an env copied from Windows' keeps `Path`). */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  if (env[name] !== undefined) return env[name];
  const upper = name.toUpperCase();
  const key = Object.keys(env).find((k) => k.toUpperCase() === upper);
  return key === undefined ? undefined : env[key];
}

function defaultIsFile(file: string): boolean {
  try {
    return fs.statSync(file, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

function hostOf(host: Partial<CommandHost>): CommandHost {
  return {
    platform: host.platform ?? process.platform,
    env: host.env ?? process.env,
    cwd: host.cwd ?? process.cwd(),
    isFile: host.isFile ?? defaultIsFile,
  };
}

/**
 * The file cmd.exe would run for `command`, or null when none is found. A name whose extension is one of
 * PATHEXT's is looked for as given, any other with each PATHEXT extension appended in order; a name with a
 * directory part (or a drive) only there (relative to `cwd`), a bare name in each PATH directory in order
 * (not in the current directory). Extensions compare in any case.
 */
export function resolveWindowsCommand(command: string, hostParts: Partial<CommandHost> = {}): string | null {
  const host = hostOf(hostParts);
  const extensions = (envValue(host.env, 'PATHEXT') || DEFAULT_PATHEXT)
    .split(';')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const given = path.win32.extname(command).toLowerCase();
  const names =
    given !== '' && extensions.some((e) => e.toLowerCase() === given)
      ? [command]
      : extensions.map((e) => command + e);
  const dirs =
    /[\\/]/.test(command) || /^[A-Za-z]:/.test(command)
      ? [null]
      : (envValue(host.env, 'PATH') ?? '')
          .split(';')
          .map((d) => d.trim().replace(/^"(.*)"$/, '$1'))
          .filter((d) => d !== '');
  for (const dir of dirs) {
    for (const name of names) {
      const file = dir === null ? path.resolve(host.cwd, name) : path.resolve(host.cwd, dir, name);
      if (host.isFile(file)) return file;
    }
  }
  return null;
}

/** True for a file Windows runs through cmd.exe. */
export function isBatchFile(file: string): boolean {
  return /\.(?:cmd|bat)$/i.test(file);
}

/** Characters cmd.exe treats specially outside quotes (cross-spawn's set, after robvanderwoude.com). */
const CMD_META = /[()[\]%!^"`<>&|;, *?]/;

/**
 * `arg` as one argument for a program that splits its command line by the MSVCRT rules (CommandLineToArgvW):
 * always quoted; backslashes doubled where they come before a quote (an escaped one, or the closing one),
 * literal elsewhere; each quote escaped with a backslash.
 */
export function quoteForMsvcrt(arg: string): string {
  let out = '"';
  let backslashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      backslashes++;
      continue;
    }
    out += ch === '"' ? `${'\\'.repeat(backslashes * 2 + 1)}"` : `${'\\'.repeat(backslashes)}${ch}`;
    backslashes = 0;
  }
  return `${out}${'\\'.repeat(backslashes * 2)}"`;
}

/**
 * `text` with each cmd.exe metacharacter preceded by `carets` carets (1: read by one cmd.exe parse; 3: by
 * two, `^^^x` -> `^x` -> `x`). The character after a `%` gets them too: `%PATH:a=b%` would otherwise be
 * expanded by cmd's percent phase, which runs before carets are read, whatever escapes the `%` itself.
 */
export function caretEscape(text: string, carets: 1 | 3): string {
  const prefix = '^'.repeat(carets);
  let out = '';
  let afterPercent = false;
  for (const ch of text) {
    out += CMD_META.test(ch) || afterPercent ? prefix + ch : ch;
    afterPercent = ch === '%';
  }
  return out;
}

/**
 * The line cmd.exe runs for `batchFile` with `args`: the file's path caret-escaped once (only cmd.exe's own
 * parse reads it); each argument MSVCRT-quoted, then caret-escaped twice, because a batch file re-reads its
 * arguments when a line of it uses them (npm's shims and Node's npx.cmd: `"%_prog%" ... %*`).
 */
export function batchCommandLine(batchFile: string, args: readonly string[]): string {
  for (const part of [batchFile, ...args]) {
    if (/[\r\n]/.test(part))
      throw new WindowsCommandLineError(
        `an argument holds a line break, which cmd.exe cannot pass to a batch file (${path.win32.basename(batchFile)})`,
      );
  }
  const line = [caretEscape(batchFile, 1), ...args.map((a) => caretEscape(quoteForMsvcrt(a), 3))].join(' ');
  if (line.length > CMD_LINE_LIMIT)
    throw new WindowsCommandLineError(
      `its command line through cmd.exe is ${line.length} characters once quoted, over cmd.exe's limit of ${CMD_LINE_LIMIT}`,
    );
  return line;
}

/**
 * How to spawn `command` with `args`. On Windows, a command that resolves to a `.cmd`/`.bat` file runs as
 * `%ComSpec% /d /s /v:off /c "<batchCommandLine>"` (/d: no AutoRun commands; /v:off: no `!` expansion, even
 * when the registry turns it on; /s: the outer quotes are stripped, the rest read as is) with verbatim arguments; anything else (an `.exe`, a command not found, every other
 * platform) is spawned as given. Throws WindowsCommandLineError when the line cannot be built.
 */
export function planSpawn(
  command: string,
  args: readonly string[],
  hostParts: Partial<CommandHost> = {},
): SpawnPlan {
  const host = hostOf(hostParts);
  const asGiven = { file: command, args: [...args], windowsVerbatimArguments: false };
  if (host.platform !== 'win32') return asGiven;
  const file = resolveWindowsCommand(command, host);
  if (file === null || !isBatchFile(file)) return asGiven;
  return {
    file: envValue(host.env, 'ComSpec') || 'cmd.exe',
    args: ['/d', '/s', '/v:off', '/c', `"${batchCommandLine(file, args)}"`],
    windowsVerbatimArguments: true,
    batchFile: file,
  };
}
