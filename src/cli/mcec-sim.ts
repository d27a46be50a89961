#!/usr/bin/env node
/** mcec-sim: a simulated MCEC server (fake desktop, real wire) over stdio or HTTP. */

import { Command } from 'commander';
import { recorderVersion } from '../record/environment.js';
import { isLoopbackHost } from '../wire/gates.js';
import { EXIT_CODES_HELP, nonLoopbackRefusal, parseListen, runProgram, UsageError } from './common.js';

function parseSeed(value: string): number {
  if (!/^\d{1,10}$/.test(value))
    throw new UsageError(`--seed must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

interface SimCliOptions {
  stdio?: boolean;
  http?: string;
  /** The same as --http: the name mcec-record, mcec-replay and mcec-bundle mcp give their address. */
  listen?: string;
  token?: string;
  seed?: string;
  sessions?: string;
}

const HELP_AFTER = `
The simulator speaks MCEC 3.0's wire: newline-delimited JSON-RPC 2.0 on stdio, or POST /mcp over HTTP,
with the real envelopes, error codes and escaping. Its fake desktop holds 'Untitled - Notepad', a 'Save As'
dialog with three buttons named Save, an elevated 'Administrator: Command Prompt' and a 'Video Player'
whose capture comes back black.

Examples:
  # as an MCP server an agent launches (one JSON-RPC message per line on stdin/stdout)
  mcec-sim --stdio

  # over HTTP, as MCEC listens by default; stop with Ctrl+C
  mcec-sim --http 127.0.0.1:5151
  curl -s -X POST http://127.0.0.1:5151/mcp -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'

  # require a bearer token (or set MCEC_SIM_TOKEN), and keep session ids the same on every run
  mcec-sim --http 127.0.0.1:5151 --token s3cret --seed 7

  # try the failures: ambiguous selector, black capture, elevated target
  {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find","arguments":{"window":"Save As","value":"Save"}}}
  {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"capture","arguments":{"window":"Video Player"}}}
  {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"invoke","arguments":{"window":"Administrator","value":"Close"}}}

Simulator controls (through send_command; they bypass every gate):
  sim:emergency-stop on|off   latch or release the operator's emergency stop (every call fails emergency-stopped)
  sim:throw                   make the handler fault (-32603 on stdio, HTTP 500)

${EXIT_CODES_HELP}
  mcec-sim exits 1 when it cannot serve (the port is taken, the address is not this machine's), and 2
  for a non-loopback address without --token.
`;

/** Build the mcec-sim program (exported for tests). */
export function buildProgram(): Command {
  const program = new Command('mcec-sim')
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .description('A simulated MCEC server: a deterministic fake desktop behind the real MCEC wire.')
    .option('--stdio', 'serve newline-delimited JSON-RPC on stdin/stdout')
    .option(
      '--http <host:port>',
      'serve POST /mcp on a loopback address, e.g. 127.0.0.1:5151 (port 0 = any free port)',
    )
    .option('--listen <host:port>', 'the same as --http')
    .option(
      '--token <token>',
      'require Authorization: Bearer <token> over HTTP (default: $MCEC_SIM_TOKEN); needed off loopback',
    )
    .option('--seed <n>', 'seed of the session-id generator (same seed, same ids)')
    .option(
      '--sessions <dir>',
      'root of the session artifact directories (default: a folder in the OS temp dir)',
    )
    .addHelpText('after', HELP_AFTER)
    .showHelpAfterError('(run mcec-sim --help for examples)')
    .exitOverride()
    .action(async (options: SimCliOptions) => {
      const address = options.http ?? options.listen;
      if (Boolean(options.stdio) === Boolean(address) || (options.http && options.listen))
        throw new UsageError(
          'choose exactly one transport: --stdio or --http HOST:PORT (or --listen HOST:PORT)',
        );
      const listen = address ? parseListen(options.http ? '--http' : '--listen', address) : undefined;
      const seed = options.seed !== undefined ? parseSeed(options.seed) : undefined;
      if (options.sessions !== undefined && options.sessions.trim() === '')
        throw new UsageError(`--sessions must name a directory, got ${JSON.stringify(options.sessions)}`);
      const token = options.token ?? process.env.MCEC_SIM_TOKEN ?? undefined;
      // Like the real server: off loopback only with a token (the simulator would refuse it anyway, as exit 1).
      if (listen && !token && !isLoopbackHost(listen.host))
        throw nonLoopbackRefusal(listen.host, '--token or $MCEC_SIM_TOKEN');
      // The simulator (and through it sharp) loads only once the arguments are known to be good.
      const { createSimulator } = await import('../sim/index.js');
      const sim = createSimulator({
        ...(seed !== undefined ? { seed } : {}),
        ...(options.sessions !== undefined ? { sessionsRoot: options.sessions } : {}),
        ...(token ? { token } : {}),
      });
      if (options.stdio) {
        await sim.serveStdio(process.stdin, process.stdout);
        return;
      }
      const listener = await sim.listenHttp({ host: listen!.host, port: listen!.port });
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          process.stderr.write(`mcec-sim: ${signal}, closing\n`);
          listener.close().then(resolve, resolve);
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
        // After the handlers: whoever reads the notice may signal at once.
        process.stderr.write(
          `mcec-sim: listening on ${listener.url}${token ? ' (bearer token required)' : ''}\n`,
        );
        process.stderr.write(`mcec-sim: sessions under ${sim.sessionsRoot}\n`);
      });
    });
  return program;
}

await runProgram(buildProgram(), '(run mcec-sim --help for examples)');
