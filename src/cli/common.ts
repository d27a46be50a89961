/** What every program shares: usage errors and their exit code, `--listen HOST:PORT`, the sessions dir. */
import { type Command, CommanderError } from 'commander';
import { MAX_TIMEOUT_MS } from '../proxy/timeouts.js';
import { parseDuration } from '../util/units.js';
import { DEFAULT_WRITE_TIMEOUT_MS } from '../wire/write-deadline.js';

export {
  relativeSessionsWarning,
  resolveSessionsDir,
  sessionDirAsRootProblem,
  sessionsDirOrigin,
  sessionsDirProblem,
  sessionsDirWriteProblem,
  windowsPathProblem,
} from '../paths/sessions-dir.js';

/** The exit code of bad usage (unknown option, bad value). */
export const EXIT_USAGE = 2;

/**
 * The parser of every program's `--sessions <dir>`: the dir as given. A blank one (`--sessions ""`, an unset
 * shell variable) is bad usage: resolveSessionsDir would silently read it as "not given" and use ./sessions.
 */
export function sessionsArg(value: string): string {
  if (!value.trim())
    throw new UsageError(
      '--sessions is empty: give a directory, or leave the option out to use $MCEC_SESSIONS_DIR, else ./sessions',
    );
  return value;
}

/** The exit codes all four programs share, as every --help and the README print them. */
export const EXIT_CODES_HELP = `Exit codes (the same for mcec-record, mcec-bundle, mcec-replay and mcec-sim):
  0  done
  1  what was checked failed, or what was named was not found or cannot be
     read or written
  2  bad usage: an unknown command or option, a missing or bad value (the
     message says which)`;

/**
 * Every subcommand's --help ends with the exit-code table, and its usage errors point to its own --help
 * (`(run mcec-bundle list --help for usage)`). Call once all commands are added.
 */
export function withSubcommandHelp(program: Command): void {
  for (const sub of program.commands) {
    sub.showHelpAfterError(subcommandHint(program, sub.name()));
    sub.addHelpText('after', `\n${EXIT_CODES_HELP}`);
  }
}

/** The hint under a usage error of one subcommand. */
export function subcommandHint(program: Command, command: string): string {
  return `(run ${program.name()} ${command} --help for usage)`;
}

/** Bad usage: printed with a hint and exit code 2. */
export class UsageError extends Error {}

/**
 * One HTTP header option (`name=value`, or curl's `name: value`) added to those before it. A value with
 * neither is refused without being echoed: it may be the secret itself (`Bearer abc`).
 */
export function addHeader(
  option: string,
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  const eq = value.indexOf('=');
  const colon = value.indexOf(':');
  const at = eq > 0 && (colon <= 0 || eq < colon) ? eq : colon;
  const name = at > 0 ? value.slice(0, at).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
    throw new UsageError(
      `${option} must be NAME=VALUE or "NAME: VALUE" (e.g. ${option} "authorization=Bearer abc"); the value given is not shown, it may hold a secret`,
    );
  return { ...previous, [name]: value.slice(at + 1).trim() };
}

/** `host:port` (IPv6 in brackets) into its parts; `option` names the flag in the usage error. */
export function parseListen(option: string, value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535) throw new UsageError(`${option} must be HOST:PORT, got ${JSON.stringify(value)}`);
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return { host, port };
}

/** What to do when a listen fails with these codes (the others need no advice beyond Node's message). */
const LISTEN_ADVICE: Readonly<Record<string, string>> = {
  EADDRINUSE: 'another program listens there; choose another port (0 picks a free one)',
  EADDRNOTAVAIL: "the host is not one of this machine's addresses (127.0.0.1: this machine only)",
  EACCES: 'permission denied (ports below 1024 need privileges); choose a port above 1023',
};

/**
 * Why a server could not listen, as every program says it: `cannot listen on HOST:PORT: CODE: what to do`.
 * `where` is the address as given (else the error's own). Null for an error that is not a failed listen.
 */
export function listenProblem(err: unknown, where?: string): string | null {
  const e = err as (NodeJS.ErrnoException & { address?: string; port?: number }) | undefined;
  if (e?.syscall !== 'listen' && e?.code !== 'EADDRINUSE') return null;
  const host = e.address?.includes(':') ? `[${e.address}]` : e.address;
  const at =
    where ?? (host !== undefined && e.port !== undefined ? `${host}:${e.port}` : 'the address given');
  const advice = LISTEN_ADVICE[e.code ?? ''];
  return `cannot listen on ${at}: ${advice ? `${e.code}: ${advice}` : e.message}`;
}

/**
 * The usage error of a non-loopback listen address without the option that allows it, in every program's
 * words: `refusing to listen on non-loopback host HOST (OPTION allows it)`.
 */
export function nonLoopbackRefusal(host: string, allowedBy: string): UsageError {
  return new UsageError(`refusing to listen on non-loopback host ${host} (${allowedBy} allows it)`);
}

/** Default of `--body-timeout` (mcec-record http, mcec-replay --listen). */
export const DEFAULT_BODY_TIMEOUT = '10s';

/** `--body-timeout <duration>`: how long a request body may take to arrive (1 ms to 1 h). */
export function parseBodyTimeout(value: string): number {
  const ms = parseDuration(value);
  if (ms === null || ms > 3_600_000)
    throw new UsageError(
      `--body-timeout ${JSON.stringify(value)}: expected a duration such as 10s, 500ms or 2m (at most 1h)`,
    );
  return ms;
}

/** Default of `--write-timeout` (the HTTP proxy's and the replay's `writeTimeoutMs`). */
export const DEFAULT_WRITE_TIMEOUT = `${DEFAULT_WRITE_TIMEOUT_MS / 1000}s`;

/** `--write-timeout`: how long a client may take none of an answer's bytes before it is hung up on. */
export function parseWriteTimeout(value: string): number {
  const ms = parseDuration(value);
  if (ms === null || ms < 1 || ms > MAX_TIMEOUT_MS)
    throw new UsageError(
      `--write-timeout ${JSON.stringify(value)}: expected a duration such as 30s, 2m or 500ms (at most 24h)`,
    );
  return ms;
}

/**
 * The exit code of an error commander threw under exitOverride, or undefined for any other: 0 for --help and
 * --version (commander ends them by throwing), 2 for everything it rejects (commander printed why).
 */
export function commanderExitCode(err: unknown): number | undefined {
  if (!(err instanceof CommanderError)) return undefined;
  return err.exitCode === 0 ? 0 : EXIT_USAGE;
}

/**
 * The exit code for a usage problem, or undefined for any other error: commander's (above), or 2 for a
 * UsageError, whose message goes to stderr as `<program>: <message>` with the hint on the next line.
 */
export function usageExitCode(err: unknown, program: string, hint: string): number | undefined {
  const commander = commanderExitCode(err);
  if (commander !== undefined) return commander;
  if (!(err instanceof UsageError)) return undefined;
  process.stderr.write(`${program}: ${err.message}\n${hint}\n`);
  return EXIT_USAGE;
}

/** `-v` alone means `--version` (the programs' short flag is -V, but -v is what people type first). */
export function versionAlias(args: string[]): string[] {
  return args.length === 1 && args[0] === '-v' ? ['--version'] : args;
}

/** Edits between two short words (command names), a swap of neighbours counting one: for "did you mean". */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The name in `names` that `word` is most likely a typo of (at most 2 edits, or a prefix), or null. */
export function similarName(word: string, names: readonly string[]): string | null {
  const w = word.toLowerCase();
  let best: { name: string; d: number } | null = null;
  for (const name of names) {
    const d = name.startsWith(w) && w.length >= 3 ? 0 : editDistance(w, name);
    if (d <= Math.min(2, Math.max(1, Math.floor(name.length / 3))) && (!best || d < best.d))
      best = { name, d };
  }
  return best?.name ?? null;
}

/**
 * Run a program on `process.argv` and exit the way every program does: 0/2 for --help and usage problems
 * (with `hint`), 1 with `<program>: <message>` on stderr, one line, for any other error.
 */
export async function runProgram(program: Command, hint: string): Promise<void> {
  const args = process.argv.slice(2);
  // Nothing given: the help, as a usage problem (exit 2) that teaches.
  if (args.length === 0) {
    program.outputHelp();
    process.exit(EXIT_USAGE);
  }
  try {
    await program.parseAsync(versionAlias(args), { from: 'user' });
  } catch (err) {
    const usage = usageExitCode(err, program.name(), hint);
    if (usage !== undefined) process.exit(usage);
    process.stderr.write(`${program.name()}: ${listenProblem(err) ?? (err as Error).message}\n`);
    process.exit(1);
  }
}
