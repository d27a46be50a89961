#!/usr/bin/env node
/** mcec-record: record MCEC tool calls on the wire (HTTP or stdio) without changing the agent's code. */

import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { recorderVersion } from '../record/environment.js';
import type { Recorder } from '../record/index.js';

const EXIT_USAGE = 2;

/** Bad usage: printed with a hint and exit code 2. */
class UsageError extends Error {}

function fail(message: string, code: number): never {
  process.stderr.write(`mcec-record: ${message}\n`);
  process.exit(code);
}

/** `host:port` (IPv6 in brackets) into its parts. */
function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535) throw new UsageError(`--listen must be HOST:PORT, got ${JSON.stringify(value)}`);
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return { host, port };
}

function parsePositiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n <= 0) {
    throw new UsageError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

interface CommonOptions {
  sessions?: string;
  scenario?: string;
  hostPathMap?: Array<{ from: string; to: string }>;
  hostFiles?: boolean;
  maxHostFileBytes?: string;
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
    .option('--sessions <dir>', 'sessions root (default $MCEC_SESSIONS_DIR or ./sessions)')
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
    .option('--max-host-file-bytes <bytes>', 'largest host file copied', String(64 * 1024 * 1024));
}

async function openRecorder(options: CommonOptions, transport: 'http' | 'stdio'): Promise<Recorder> {
  const maxHostFileBytes = parsePositiveInt('--max-host-file-bytes', options.maxHostFileBytes ?? '67108864');
  const { createRecorder } = await import('../record/index.js');
  return createRecorder({
    transport,
    copyHostFiles: options.hostFiles !== false,
    hostPathMap: options.hostPathMap ?? [],
    limits: { maxHostFileBytes },
    ...(options.sessions !== undefined ? { sessionsDir: options.sessions } : {}),
    ...(options.scenario !== undefined ? { scenario: options.scenario } : {}),
    stderr: (line: string) => process.stderr.write(line.endsWith('\n') ? line : `${line}\n`),
  });
}

interface HttpCommandOptions extends CommonOptions {
  listen: string;
  target: string;
  allowRemote?: boolean;
  maxBody: string;
  timeout: string;
}

async function runHttp(options: HttpCommandOptions): Promise<void> {
  const listen = parseListen(options.listen);
  const maxBodyBytes = parsePositiveInt('--max-body', options.maxBody);
  const timeoutMs = parsePositiveInt('--timeout', options.timeout);
  const { startHttpProxy, ProxyConfigError } = await import('../proxy/index.js');
  const recorder = await openRecorder(options, 'http');
  let proxy: Awaited<ReturnType<typeof startHttpProxy>>;
  try {
    proxy = await startHttpProxy({
      listen,
      target: options.target,
      recorder,
      maxBodyBytes,
      timeoutMs,
      allowNonLoopback: options.allowRemote ?? false,
    });
  } catch (err) {
    await recorder.close().catch(() => {});
    if (err instanceof ProxyConfigError) fail(err.message, EXIT_USAGE);
    fail(
      `cannot listen on ${options.listen}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      1,
    );
  }
  const sessionsDir = path.resolve(recorder.sessionsDir);
  process.stderr.write(
    `mcec-record: recording ${proxy.url} -> ${options.target}\nmcec-record: sessions in ${sessionsDir}\n`,
  );
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`mcec-record: ${signal}: closing sessions\n`);
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
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

async function runStdio(command: string, args: string[], options: CommonOptions): Promise<void> {
  const { runStdioProxy } = await import('../proxy/index.js');
  const recorder = await openRecorder(options, 'stdio');
  const sessionsDir = path.resolve(recorder.sessionsDir);
  // stdout is the protocol: everything of ours goes to stderr.
  process.stderr.write(`mcec-record: recording stdio of ${command}; sessions in ${sessionsDir}\n`);
  const code = await runStdioProxy({ command, args, recorder });
  // Let the last protocol bytes reach the client before exiting.
  const exit = () => process.exit(code);
  setTimeout(exit, 2000).unref();
  if (process.stdout.writableLength === 0) exit();
  else process.stdout.write('', exit);
}

function buildProgram(): Command {
  const program = new Command();
  program
    .name('mcec-record')
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .description(
      'Record MCEC tool calls on the wire, without changing the agent: a proxy for HTTP (/mcp) or stdio.\n' +
        'Each session lands in <sessions>/<yyyyMMdd-HHmmss>-<sessionId>/session.sqlite; bundle it with mcec-bundle.',
    )
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })
    .addHelpText(
      'after',
      `
Examples:
  # MCEC listens on 5151; point the MCP client at 5152 instead
  mcec-record http --listen 127.0.0.1:5152 --target http://127.0.0.1:5151/mcp --sessions ./sessions

  # in the MCP client's server config, put the recorder in front of the real server command
  mcec-record stdio --sessions /abs/sessions -- <MCEC server command> [its args]
  mcec-record stdio --sessions ./sessions -- mcec-sim --stdio      # the bundled simulator

Exit codes: 2 bad usage; stdio mode exits with the server's own exit code (128+signal when killed).`,
    );

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
    .addOption(new Option('--max-body <bytes>', 'largest request body forwarded').default('1048576'))
    .addOption(
      new Option(
        '--timeout <ms>',
        'answer 504 when the target takes longer (raise it for long waits)',
      ).default('60000'),
    )
    .addHelpText(
      'after',
      `
Example:
  mcec-record http --listen 127.0.0.1:5152 --target http://127.0.0.1:5151/mcp
  # then POST to http://127.0.0.1:5152/mcp with the same Authorization header as before;
  # Ctrl-C ends the open sessions so mcec-bundle can pack them at once`,
    )
    .action(async (options: HttpCommandOptions) => runHttp(options));

  addCommonOptions(
    program
      .command('stdio')
      .description('run the MCP server as a child, relay its stdio unchanged and record every exchange')
      .usage('[options] -- <command> [args...]')
      .argument('<command>', 'the real server program')
      .argument('[args...]', 'its arguments'),
  )
    .passThroughOptions()
    .addHelpText(
      'after',
      `
Example (an MCP client's server entry):
  { "command": "npx", "args": ["mcec-record", "stdio", "--sessions", "C:/mcec-sessions", "--", "<server>", "<args>"] }
Give --sessions an absolute path: MCP clients start servers in a working directory of their choosing.
Everything mcec-record says goes to stderr; stdout carries only the server's bytes.`,
    )
    .action(async (command: string, args: string[], options: CommonOptions) =>
      runStdio(command, args, options),
    );

  return program;
}

async function main(): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') {
        process.exit(0);
      }
      process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
    }
    if (err instanceof UsageError) {
      process.stderr.write(`mcec-record: ${err.message}\n(run mcec-record --help for usage)\n`);
      process.exit(EXIT_USAGE);
    }
    fail((err as Error).stack ?? String(err), 1);
  }
}

void main();
