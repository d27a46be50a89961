#!/usr/bin/env node
/** mcec-record: record MCEC tool calls on the wire (HTTP or stdio) without changing the agent's code. */

import path from 'node:path';
import { Command, Option } from 'commander';
import { liveExportOptions, type OtlpExportOptions } from '../export/live-options.js';
import { parseMaskArg, parseMaskRulesText } from '../mask/rules.js';
import type { MaskOptions, MaskRule } from '../mask/types.js';
import { MAX_TIMEOUT_MS } from '../proxy/timeouts.js';
import type { ClosedSessionsModule } from '../record/closed-sessions.js';
import { recorderVersion } from '../record/environment.js';
import type { WorkerRecorder } from '../record/worker-recorder.js';
import { isOptionError } from '../util/expect.js';
import { endBySignal, isNewStop } from '../util/stop-signal.js';
import { readTextFile } from '../util/text-file.js';
import { formatBytes, parseByteSize, parseDuration } from '../util/units.js';
import {
  addHeader,
  DEFAULT_BODY_TIMEOUT,
  DEFAULT_WRITE_TIMEOUT,
  EXIT_CODES_HELP,
  EXIT_USAGE,
  listenProblem,
  nonLoopbackRefusal,
  parseBodyTimeout,
  parseListen,
  parseWriteTimeout,
  relativeSessionsWarning,
  resolveSessionsDir,
  runProgram,
  sessionDirAsRootProblem,
  sessionsArg,
  sessionsDirWriteProblem,
  UsageError,
  windowsPathProblem,
} from './common.js';
import { checkTracesEndpoint } from './otlp-endpoint.js';

function fail(message: string, code: number): never {
  process.stderr.write(`mcec-record: ${message}\n`);
  process.exit(code);
}

/** Bad usage of a mode found past the option parser (its options check): the message, then that mode's hint. */
function failUsage(message: string, mode: 'http' | 'stdio'): never {
  process.stderr.write(`mcec-record: ${message}\n${MODE_HELP[mode]!.hint}\n`);
  process.exit(EXIT_USAGE);
}

/** A size in bytes: `1048576`, `512KB`, `256MiB`. */
function parseSize(name: string, value: string): number {
  const bytes = parseByteSize(value);
  if (bytes === null) {
    throw new UsageError(
      `${name} must be a size such as 1048576, 512KB or 256MiB, got ${JSON.stringify(value)}`,
    );
  }
  return bytes;
}

// Mirrors src/proxy/timeouts.ts and bounded.ts, which load lazily with the proxy.
const DEFAULT_TIMEOUT = '150s';
const DEFAULT_MAX_RECORD = '256MiB';

/** `--timeout` values (repeatable): `DURATION` sets the default, `TOOL=DURATION` one tool's. */
function parseTimeouts(values: string[]): { defaultMs: number; perTool: Record<string, number> } {
  let defaultMs: number | undefined;
  const perTool: Record<string, number> = {};
  for (const value of values) {
    const eq = value.indexOf('=');
    const tool = eq < 0 ? undefined : value.slice(0, eq).trim();
    const text = eq < 0 ? value : value.slice(eq + 1);
    if (tool !== undefined && !/^[A-Za-z0-9_./-]+$/.test(tool)) {
      throw new UsageError(
        `--timeout ${JSON.stringify(value)}: before "=" goes a tool name such as record or wait-for`,
      );
    }
    const ms = parseDuration(text);
    if (ms === null) {
      const bare = /^\s*\d+(\.\d+)?\s*$/.test(text);
      throw new UsageError(
        `--timeout ${JSON.stringify(value)}: ${bare ? 'give a unit: ' : ''}expected a duration such as 150s, ` +
          `2m, 90000ms or 1h${tool === undefined ? ', or TOOL=DURATION such as record=90s' : ''}`,
      );
    }
    if (ms > MAX_TIMEOUT_MS) throw new UsageError(`--timeout ${JSON.stringify(value)}: at most 24h`);
    if (tool === undefined) defaultMs = ms;
    else perTool[tool] = ms;
  }
  return { defaultMs: defaultMs ?? parseDuration(DEFAULT_TIMEOUT)!, perTool };
}

function checkRecordLimit(bytes: number, limit: number): void {
  if (bytes > limit) {
    throw new UsageError(`--max-record-bytes must be at most ${limit} bytes (one V8 string), got ${bytes}`);
  }
}

function describeTimeouts(t: { defaultMs: number; perTool: Record<string, number> }): string {
  const s = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);
  const tools = Object.entries(t.perTool).map(([tool, ms]) => `, ${tool} ${s(ms)}`);
  return `${s(t.defaultMs)}${tools.join('')}`;
}

interface CommonOptions {
  sessions?: string;
  scenario?: string;
  hostPathMap?: Array<{ from: string; to: string }>;
  hostFiles?: boolean;
  maxHostFileBytes?: string;
  maxRecordBytes: string;
  otlp?: string;
  otlpHeader?: Record<string, string>;
  otlpShutdownTimeout?: string;
  mask?: MaskRule[];
  maskRules?: string;
  maskMode?: string;
  /** false with --no-masking. */
  masking?: boolean;
}

/** `--mask 'key=value;...'` (repeatable): one mask rule. */
function collectMask(value: string, previous: MaskRule[] = []): MaskRule[] {
  try {
    return [...previous, parseMaskArg(value)];
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** The recorder's mask options from --mask, --mask-rules, --mask-mode and --no-masking. */
function maskOptions(options: CommonOptions): MaskOptions {
  if (options.masking === false) return { enabled: false };
  const mode = options.maskMode ?? 'before-write';
  if (mode !== 'before-write' && mode !== 'on-export')
    throw new UsageError(`--mask-mode must be before-write or on-export, got ${JSON.stringify(mode)}`);
  const rules = [...(options.mask ?? [])];
  if (options.maskRules !== undefined) {
    let text: string;
    try {
      text = readTextFile(options.maskRules);
    } catch (e) {
      throw new UsageError(`--mask-rules ${options.maskRules}: ${(e as Error).message}`);
    }
    try {
      rules.push(...parseMaskRulesText(text, `--mask-rules ${options.maskRules}`));
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  return { mode, rules };
}

/** `--host-path-map FROM=TO` (repeatable): FROM as the MCEC host writes it, TO where it is readable here. */
function collectMapping(
  value: string,
  previous: Array<{ from: string; to: string }> = [],
): Array<{ from: string; to: string }> {
  const at = value.indexOf('=');
  const from = at > 0 ? value.slice(0, at).trim() : '';
  const to = at > 0 ? value.slice(at + 1).trim() : '';
  if (!from || !to) throw new UsageError(`--host-path-map must be FROM=TO, got ${JSON.stringify(value)}`);
  return [...previous, { from, to: path.resolve(to) }];
}

/** The options every mode shares: where sessions go and how host-side evidence files are copied. */
function addCommonOptions(command: Command): Command {
  return command
    .option(
      '-s, --sessions <dir>',
      'sessions root, created when missing (default $MCEC_SESSIONS_DIR or ./sessions)',
      sessionsArg,
    )
    .option('--scenario <name>', 'scenario name stored with each session')
    .option(
      '--host-path-map <from=to>',
      'where a folder of the MCEC host is readable here, e.g. C:\\mcec\\sessions=/mnt/mcec (repeatable)',
      collectMapping,
    )
    .option(
      '--no-host-files',
      'do not copy the evidence files MCEC writes on its host (path-only captures, GIFs)',
    )
    .option('--max-host-file-bytes <size>', 'largest host file copied (a size: 67108864, 64MiB)', '64MiB')
    .option(
      '--otlp <url>',
      'send spans live to an OpenTelemetry collector, an http(s) URL, e.g. http://collector:4318/v1/traces (also: OTEL_TRACES_EXPORTER=otlp with OTEL_EXPORTER_OTLP_*); credentials in it are shown as ***',
    )
    .option(
      '--otlp-header <name=value>',
      'an HTTP header for the collector (name=value, or "name: value" as curl takes it), with --otlp or OTEL_TRACES_EXPORTER=otlp, on top of OTEL_EXPORTER_OTLP_HEADERS (repeatable)',
      collectHeader,
    )
    .option(
      '--otlp-shutdown-timeout <duration>',
      'at exit, how long to wait for the collector to take the last spans (default 1s for stdio: an MCP client sends SIGTERM 2s after closing stdin; 5s for http)',
    )
    .option(
      '--mask <rule>',
      "paint over a region of every capture: 'window=TITLE', 'window=TITLE;by=automationid;value=ID', 'process=NAME;rect=X,Y,W,H' (repeatable; typed secrets and secret fields are masked anyway)",
      collectMask,
    )
    .option('--mask-rules <file>', 'mask rules from a JSON file (schema/mask-rules.schema.json)')
    .option(
      '--mask-mode <mode>',
      'before-write (masks painted before an image is written) or on-export (originals kept here, bundles masked)',
      'before-write',
    )
    .option('--no-masking', 'do not mask captures (typed secrets stay visible in screenshots)');
}

/**
 * The recorder's `otlp` option: --otlp with --otlp-header; or, when OTEL_TRACES_EXPORTER=otlp turns the export
 * on, --otlp-header on top of the OTEL_EXPORTER_OTLP_* variables. Usage errors (exit 2): an endpoint that is
 * not an http(s) URL, and --otlp-header with no export to apply it to.
 */
function otlpOption(options: CommonOptions): OtlpExportOptions | undefined {
  const headers = options.otlpHeader ? { headers: options.otlpHeader } : {};
  const wait =
    options.otlpShutdownTimeout === undefined
      ? {}
      : { shutdownTimeoutMs: parseOtlpShutdownTimeout(options.otlpShutdownTimeout) };
  if (options.otlp !== undefined) {
    checkTracesEndpoint(options.otlp);
    return { url: options.otlp, ...headers, ...wait };
  }
  if (liveExportOptions(undefined) === null) {
    const flag = options.otlpHeader
      ? '--otlp-header'
      : options.otlpShutdownTimeout
        ? '--otlp-shutdown-timeout'
        : null;
    if (flag)
      throw new UsageError(`${flag} needs an export: give --otlp URL, or set OTEL_TRACES_EXPORTER=otlp`);
    return undefined;
  }
  checkTracesEndpoint(undefined);
  return { ...headers, ...wait };
}

/** `--otlp-shutdown-timeout`: a duration up to 10 minutes (the recorder's own default when not given). */
function parseOtlpShutdownTimeout(value: string): number {
  const ms = parseDuration(value);
  if (ms === null || ms > 600_000)
    throw new UsageError(
      `--otlp-shutdown-timeout ${JSON.stringify(value)}: expected a duration such as 1s, 500ms or 1m (at most 10m)`,
    );
  return ms;
}

function collectHeader(value: string, previous: Record<string, string> = {}): Record<string, string> {
  return addHeader('--otlp-header', value, previous);
}

/**
 * What the recorder's worker does with the sessions it closed: fleet's catalog sidecars, loaded there at close
 * (a function cannot cross threads; src/record/README.md "Closed sessions").
 */
const CATALOG_SIDECARS: ClosedSessionsModule = {
  url: new URL('../fleet/catalog-sidecars.js', import.meta.url).href,
  name: 'writeCatalogSidecars' satisfies keyof typeof import('../fleet/catalog-sidecars.js'),
};

/**
 * The recorder. For http in a worker thread: this thread only forwards bytes, the recording's work (parse,
 * redact, commit) never delays the next request. For stdio on this thread (`createRecorder`): one client's
 * calls come one line at a time, and handing each to a worker (a batch's JSON both ways, a handle per call,
 * a second heap) cost more CPU per call than it saved; measured in src/proxy/README.md.
 */
async function openRecorder(
  options: CommonOptions,
  transport: 'http' | 'stdio',
): Promise<Pick<WorkerRecorder, Exclude<keyof WorkerRecorder, 'ready'>>> {
  const foreign = windowsPathProblem(options.sessions);
  if (foreign) throw new UsageError(foreign);
  const asSession = sessionDirAsRootProblem(resolveSessionsDir(options.sessions), options.sessions);
  if (asSession) throw new UsageError(asSession);
  const maxHostFileBytes = parseSize('--max-host-file-bytes', options.maxHostFileBytes ?? '64MiB');
  const otlp = otlpOption(options);
  const mask = maskOptions(options);
  // Before any client is served (or the server started): a recorder that cannot write records nothing.
  const cannotWrite = sessionsDirWriteProblem(resolveSessionsDir(options.sessions), options.sessions);
  if (cannotWrite) fail(`cannot record: ${cannotWrite}`, 1);
  const recorderOptions = {
    transport,
    mask,
    copyHostFiles: options.hostFiles !== false,
    hostPathMap: options.hostPathMap ?? [],
    limits: { maxHostFileBytes },
    ...(options.sessions !== undefined ? { sessionsDir: options.sessions } : {}),
    ...(options.scenario !== undefined ? { scenario: options.scenario } : {}),
    ...(otlp ? { otlp } : {}),
    stderr: (line: string) => process.stderr.write(line.endsWith('\n') ? line : `${line}\n`),
  };
  if (transport === 'stdio') {
    const { createRecorder } = await import('../record/recorder.js');
    const { writeCatalogSidecars } = await import('../fleet/catalog-sidecars.js');
    try {
      return createRecorder(recorderOptions, writeCatalogSidecars);
    } catch (err) {
      return fail(`cannot record: ${(err as Error).message}`, 1);
    }
  }
  const { createWorkerRecorder } = await import('../record/worker-recorder.js');
  const recorder = createWorkerRecorder(recorderOptions, CATALOG_SIDECARS);
  // Listening (or starting the server) waits for it: the first calls find it ready, and a recorder that
  // cannot start is exit 1 before any client relies on it.
  await recorder.ready().catch((err: Error) => fail(`cannot record: ${err.message}`, 1));
  return recorder;
}

interface HttpCommandOptions extends CommonOptions {
  listen: string;
  target: string;
  allowRemote?: boolean;
  maxBody?: string;
  server: 'auto' | 'mcec' | 'mcp';
  timeout: string[];
  bodyTimeout: string;
  writeTimeout: string;
}

async function runHttp(options: HttpCommandOptions): Promise<void> {
  const listen = parseListen('--listen', options.listen);
  // Before the sessions dir is touched: usage first, as in every program.
  const { isLoopbackHost } = await import('../wire/gates.js');
  if (!isLoopbackHost(listen.host) && !options.allowRemote)
    throw nonLoopbackRefusal(listen.host, '--allow-remote');
  const maxBodyBytes = options.maxBody === undefined ? undefined : parseSize('--max-body', options.maxBody);
  const maxRecordBytes = parseSize('--max-record-bytes', options.maxRecordBytes);
  const timeouts = parseTimeouts(options.timeout);
  const bodyTimeoutMs = parseBodyTimeout(options.bodyTimeout);
  const writeTimeoutMs = parseWriteTimeout(options.writeTimeout);
  const { startHttpProxy, ProxyConfigError, MAX_RECORD_BYTES_LIMIT } = await import('../proxy/index.js');
  checkRecordLimit(maxRecordBytes, MAX_RECORD_BYTES_LIMIT);
  // Unless given, the limit in front of MCEC is MCEC's own 1 MiB.
  const bodyLimit = maxBodyBytes ?? 1024 * 1024;
  if (bodyLimit > maxRecordBytes) {
    throw new UsageError(
      `--max-body (${bodyLimit} bytes) cannot exceed --max-record-bytes (${maxRecordBytes} bytes): ` +
        'a request is read whole before it is forwarded',
    );
  }
  const recorder = await openRecorder(options, 'http');
  let proxy: Awaited<ReturnType<typeof startHttpProxy>>;
  try {
    proxy = await startHttpProxy({
      listen,
      target: options.target,
      recorder,
      ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
      server: options.server,
      maxRecordBytes,
      timeoutMs: timeouts.defaultMs,
      toolTimeoutsMs: timeouts.perTool,
      bodyTimeoutMs,
      writeTimeoutMs,
      allowNonLoopback: options.allowRemote ?? false,
      onNotice: (line) => process.stderr.write(`mcec-record: ${line}\n`),
    });
  } catch (err) {
    await recorder.close().catch(() => {});
    // Options that cannot work (above all a non-loopback --listen without --allow-remote) are usage: exit 2, as
    // is the options check's own TypeError/RangeError; any other error is a failure (exit 1).
    if (err instanceof ProxyConfigError || isOptionError(err)) failUsage(err.message, 'http');
    fail(
      listenProblem(err, options.listen) ??
        `cannot listen on ${options.listen}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      1,
    );
  }
  const sessionsDir = path.resolve(recorder.sessionsDir);
  let stoppingAt: number | null = null;
  const handlers = new Map<NodeJS.Signals, () => void>();
  const removeHandlers = () => {
    for (const [s, handler] of handlers) process.off(s, handler);
  };
  const stop = async (signal: NodeJS.Signals) => {
    // A second stop ends the process by its signal (a close that waits on a collector or a slow share can be
    // cut short); the same Ctrl+C delivered twice (the terminal's and npx's) is not a second stop.
    if (stoppingAt !== null) {
      if (isNewStop(stoppingAt)) endBySignal(signal, removeHandlers);
      return;
    }
    stoppingAt = Date.now();
    process.stderr.write(
      `mcec-record: ${signal}: closing sessions (send it again to stop now; the sessions may be incomplete)\n`,
    );
    await proxy.close();
    try {
      await recorder.close();
    } catch (err) {
      process.stderr.write(`mcec-record: closing the recorder failed: ${(err as Error).message}\n`);
      process.exit(1);
    }
    process.stderr.write(`mcec-record: sessions closed in ${sessionsDir}\n`);
    process.exit(0);
  };
  // Before the notice: whoever reads it may signal at once.
  // SIGHUP: the terminal went away (on Windows, the console window closed: a few seconds to close the
  // sessions); SIGBREAK: Ctrl-Break on Windows. SIGTERM never arrives on Windows.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const) {
    handlers.set(signal, () => void stop(signal));
    process.on(signal, handlers.get(signal)!);
  }
  process.stderr.write(
    `mcec-record: recording ${proxy.url} -> ${options.target}\nmcec-record: sessions in ${sessionsDir}\n` +
      `mcec-record: timeouts ${describeTimeouts(timeouts)}; answers over ${formatBytes(maxRecordBytes)} pass unrecorded\n`,
  );
}

/** `mcec-record stdio`'s own options. */
interface StdioCommandOptions extends CommonOptions {
  stopGrace: string;
}

// Mirrors src/proxy/server-stop.ts, which loads lazily with the proxy.
const DEFAULT_STOP_GRACE = '2s';

/**
 * `--stop-grace`: how long the server has to exit once a stop closed its stdin (at most 10 minutes); 0 (`0`,
 * `0s`) is no grace: SIGTERM at once, and SIGKILL right after it.
 */
function parseStopGrace(value: string): number {
  if (/^\s*0+(?:\.0+)?\s*(?:ms|[smhdw])?\s*$/i.test(value)) return 0;
  const ms = parseDuration(value);
  if (ms === null || ms > 600_000)
    throw new UsageError(
      `--stop-grace ${JSON.stringify(value)}: expected a duration such as 2s, 500ms or 1m (at most 10m), or 0 for none`,
    );
  return ms;
}

async function runStdio(command: string, args: string[], options: StdioCommandOptions): Promise<void> {
  // Before the recorder starts: a blank command cannot be run.
  if (command.trim() === '')
    throw new UsageError(`stdio needs a server command after --, got ${JSON.stringify(command)}`);
  const maxRecordBytes = parseSize('--max-record-bytes', options.maxRecordBytes);
  const stopGraceMs = parseStopGrace(options.stopGrace);
  const { runStdioProxy, MAX_RECORD_BYTES_LIMIT } = await import('../proxy/index.js');
  checkRecordLimit(maxRecordBytes, MAX_RECORD_BYTES_LIMIT);
  const recorder = await openRecorder(options, 'stdio');
  const sessionsDir = path.resolve(recorder.sessionsDir);
  // Started before the notice (its signal handlers are set synchronously): whoever reads it may signal.
  const running = runStdioProxy({ command, args, recorder, maxRecordBytes, stopGraceMs }).catch(
    async (err: unknown) => {
      // Its options check's TypeError/RangeError is usage (exit 2, one line), as for http.
      if (!isOptionError(err)) throw err;
      await recorder.close().catch(() => {});
      return failUsage(err.message, 'stdio');
    },
  );
  // stdout is the protocol: everything of ours goes to stderr.
  process.stderr.write(`mcec-record: recording stdio of ${command}; sessions in ${sessionsDir}\n`);
  const relative = relativeSessionsWarning(options.sessions);
  if (relative) process.stderr.write(`mcec-record: warning: ${relative}\n`);
  const code = await running;
  // Let the last protocol bytes reach the client before exiting.
  const exit = () => process.exit(code);
  setTimeout(exit, 2000).unref();
  if (process.stdout.writableLength === 0) exit();
  else process.stdout.write('', exit);
}

const HTTP_EXITS = `  mcec-record http exits 1 when it cannot listen or record (the port is taken, the sessions dir cannot be
  written: it is checked before serving, created when missing, and must be a writable directory).`;
const STDIO_EXITS = `  mcec-record stdio stands in for the server, so once the server ran it exits with the server's
  own exit code (128+signal when killed, 127 when it cannot be started); 1 and 2 as above before
  the server starts (a sessions dir that cannot be written is 1).`;

/** Each mode's hint after a usage error, and the end of its --help: the exit codes. */
const MODE_HELP: Record<string, { hint: string; exits: string }> = {
  http: { hint: '(run mcec-record http --help for usage)', exits: `\n${EXIT_CODES_HELP}\n${HTTP_EXITS}` },
  stdio: {
    hint: '(the server command goes after --: mcec-record stdio [options] -- <command> [args...]; run mcec-record stdio --help for usage)',
    exits: `\n${EXIT_CODES_HELP}\n${STDIO_EXITS}`,
  },
};

const PROGRAM_HELP = `
Examples:
  # MCEC listens on 5151; point the MCP client at 5152 instead
  mcec-record http --listen 127.0.0.1:5152 --target http://127.0.0.1:5151/mcp --sessions ./sessions

  # in the MCP client's server config, put the recorder in front of the real server command
  mcec-record stdio --sessions /abs/sessions -- <MCEC server command> [its args]
  mcec-record stdio --sessions ./sessions -- mcec-sim --stdio      # the bundled simulator

${EXIT_CODES_HELP}
${HTTP_EXITS}
${STDIO_EXITS}`;

const HTTP_HELP = `
Examples:
  mcec-record http --listen 127.0.0.1:5152 --target http://127.0.0.1:5151/mcp
  # then POST to http://127.0.0.1:5152/mcp with the same Authorization header as before;
  # Ctrl-C ends the open sessions so mcec-bundle can pack them at once (a second Ctrl-C: stop now,
  # the sessions may be incomplete)

  mcec-record http --timeout 150s --timeout record=90s --timeout wait-for=10m

Timeouts: a DURATION is a number with a unit: 500ms, 90s, 2m, 1h (at most 24h). --timeout DURATION sets
the default (150s: above MCEC's own longest wait, request-command-access, which holds a call up to 120 s
for the operator); --timeout TOOL=DURATION sets one tool's. A tools/call with its own timeout or timeoutMs
argument (wait-for, find, windows), or a record with durationMs, and no TOOL= setting waits that long plus
30 s if that is longer. MCEC's own send_command wait is fixed at 30 s (then send-command-timeout).
Past the timeout the client gets 504 with a JSON {"error"} naming the tool, but MCEC may still run the
call: the proxy keeps waiting up to 10 min, and a late answer replaces the 504 in the recording (with a
late-answer event saying the client got 504). A request body must arrive within --body-timeout (10s)
of its headers, else the client gets 408 and is hung up on: clients that trickle their bodies cannot hold
the 16 requests MCEC serves at once. A client that takes none of an answer's bytes for --write-timeout
(30s) while the proxy has some for it is hung up on (a proxy-error event; the answer is still recorded),
so clients that stop reading cannot hold those 16 requests either; one that reads slowly is never cut.

Oversize answers: an answer over --max-record-bytes (a size: 1048576, 64MiB; default 256MiB, at most
about 512MiB) reaches the client unchanged but is not recorded: its call gets a row without payload
(status from its isError when readable) and an oversize-message event. Memory use is bounded by this size
per answer in flight.

Streamed answers: an answer of Content-Type text/event-stream (an MCP server's Streamable HTTP) passes
through live, headers at once and each event as it comes; the timeout bounds only the wait for an answer
to begin, never a live stream (a streamed answer, a GET stream). GET and DELETE to the target's path pass
through after the Host/Origin checks.

Server kind (--server): the front door applies MCEC's rules in front of MCEC (at most 16 requests in
flight, else 503; 1 MiB bodies, else 413; Host, then Origin, else 403; MCEC's own texts), and the MCP
specification's in front of any other server (Host and Origin validation, 403 with a JSON-RPC error; the
--max-body limit, 4MiB unless given). auto (the default) applies MCEC's until an initialize answer through
the proxy names another server (serverInfo.name other than "MCEC"); mcec or mcp fix it.

Paths and methods: only the target's exact path (query allowed) is forwarded: POST (recorded), GET and
DELETE, each after the Host/Origin checks. Any other path, whatever the method (/./mcp, /%2e/mcp, //mcp,
/mcp/, /admin), gets the server's refusal from the proxy (MCEC: 405 unless POST, then 404; another
server: 404), and other methods on the path get 405: MCEC would normalize some paths and run the call
unchecked, and no route it adds later is reachable through the proxy unchecked.`;

const STDIO_HELP = `
Example (an MCP client's server entry):
  { "command": "npx", "args": ["mcec-record", "stdio", "--sessions", "C:/mcec-sessions", "--", "<server>", "<args>"] }
Give --sessions an absolute path: MCP clients start servers in a working directory of their choosing
(a relative one, the default ./sessions included, is warned about on stderr). A Windows path (C:/x) on
Linux or macOS is refused: it would become a folder named C: in the working directory.
Everything mcec-record says goes to stderr; stdout carries only the server's bytes.
On Windows a server command that is a .cmd or .bat file (npx, npm, pnpm, a globally installed Node server)
is found on PATH as cmd.exe finds it (PATHEXT) and run through cmd.exe, each argument passed unchanged.

Stopping (the MCP specification's stdio shutdown): when the client closes mcec-record's stdin, the server's
is closed too and mcec-record exits when the server does, with its exit code. On SIGINT, SIGTERM, SIGHUP or
SIGBREAK the server's stdin is closed; a server that has not exited --stop-grace (default 2s) after its
stdin closed gets SIGTERM, and half that later SIGKILL (on Windows both are TerminateProcess); 0 is no
grace. A second signal takes the next step at once. Calls still in flight are recorded as failed: "server
exited", saying how mcec-record stopped it when it did. Once the server has exited, the first signal is
ignored while the sessions are written (one line on stderr): an MCP client's SIGTERM, 2s after it closed
stdin, must not cut them short; a second one ends mcec-record by that signal at once (the sessions may be
incomplete). With --otlp the close waits at most 1s for the collector (--otlp-shutdown-timeout; more than
about 1s does not fit before an MCP client's SIGTERM). A SIGTERM after the client closed stdin (an MCP
client's second step; its SIGKILL comes 2s later) sends the server SIGTERM at once and SIGKILL at most
0.5s later, and ends the collector's wait in time for mcec-record to exit before that SIGKILL.

There is no proxy timeout on stdio: the client's own applies, and an answer that comes after the client gave
up is still recorded. A line over --max-record-bytes (a size: 1048576, 64MiB; default 256MiB) is passed
through unchanged, never held whole, and recorded as oversize: the call it answers (by the id at the line's
start) gets a row without payload and an oversize-message event.`;

/** The program and its two modes. */
function buildProgram(): Command {
  const program = new Command()
    .name('mcec-record')
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .description(
      'Record MCEC tool calls on the wire, without changing the agent: a proxy for HTTP (/mcp) or stdio.\n' +
        'Each session lands in <sessions>/<yyyyMMdd-HHmmss>-<sessionId>/session.sqlite; bundle it with mcec-bundle.',
    )
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError('(run mcec-record --help for usage)')
    .addHelpText('after', PROGRAM_HELP);
  addHttpCommand(program);
  addStdioCommand(program);
  for (const mode of program.commands) {
    const help = MODE_HELP[mode.name()];
    if (help) mode.showHelpAfterError(help.hint).addHelpText('after', help.exits);
  }
  return program;
}

/** `mcec-record http`: the HTTP proxy's options. */
function addHttpCommand(program: Command): void {
  addCommonOptions(
    program
      .command('http')
      .description('listen for MCP-over-HTTP requests, forward them to MCEC unchanged and record them')
      .option(
        '--listen <host:port>',
        'where to listen (loopback only unless --allow-remote)',
        '127.0.0.1:5152',
      )
      .option('--target <url>', 'the MCEC endpoint', 'http://127.0.0.1:5151/mcp'),
  )
    .option('--allow-remote', 'allow a non-loopback --listen host (no loopback Host check then)')
    .addOption(
      new Option(
        '--max-body <size>',
        'largest request body forwarded (413 past it); default 1MiB for MCEC (its own), 4MiB for other servers',
      ),
    )
    .addOption(
      new Option('--server <kind>', "whose rules the front door applies: MCEC's, the MCP spec's, or auto")
        .choices(['auto', 'mcec', 'mcp'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '--timeout <[tool=]duration>',
        'how long MCEC may take to answer before the client gets 504; repeat it per tool',
      )
        .default([], DEFAULT_TIMEOUT)
        .argParser((value: string, previous: string[]) => [...previous, value]),
    )
    .option(
      '--body-timeout <duration>',
      'how long a request body may take to arrive before the client gets 408',
      DEFAULT_BODY_TIMEOUT,
    )
    .option(
      '--write-timeout <duration>',
      'how long a client may take none of an answer before the proxy hangs up on it',
      DEFAULT_WRITE_TIMEOUT,
    )
    .addOption(
      new Option('--max-record-bytes <size>', 'answers larger than this pass through unrecorded').default(
        DEFAULT_MAX_RECORD,
      ),
    )
    .addHelpText('after', HTTP_HELP)
    .action(async (options: HttpCommandOptions) => runHttp(options));
}

/** `mcec-record stdio -- <command> [args...]`: the stdio proxy's options. */
function addStdioCommand(program: Command): void {
  addCommonOptions(
    program
      .command('stdio')
      .description('run the MCP server as a child, relay its stdio unchanged and record every exchange')
      .usage('[options] -- <command> [args...]')
      .argument('<command>', 'the real server program')
      .argument('[args...]', 'its arguments'),
  )
    .addOption(
      new Option(
        '--max-record-bytes <size>',
        'lines longer than this pass through unrecorded (never held whole)',
      ).default(DEFAULT_MAX_RECORD),
    )
    .option(
      '--stop-grace <duration>',
      'on a stop signal, how long the server has to exit once its stdin is closed before SIGTERM',
      DEFAULT_STOP_GRACE,
    )
    .passThroughOptions()
    .addHelpText('after', STDIO_HELP)
    .action(async (command: string, args: string[], options: StdioCommandOptions) =>
      runStdio(command, args, options),
    );
}

// A UsageError of a mode's action (a bad --timeout) points to that mode's --help, as the parser's own do.
void runProgram(
  buildProgram(),
  MODE_HELP[process.argv[2] ?? '']?.hint ?? '(run mcec-record --help for usage)',
);
