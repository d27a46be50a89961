/** `mcp`: the MCP server over the sessions dir (src/mcp-server), on stdio or Streamable HTTP. */
import type { Command } from 'commander';
import { listenProblem, nonLoopbackRefusal, parseListen, UsageError } from '../common.js';
import { type SessionsOption, sessionsDir, withSessions } from './args.js';
import { printErr } from './io.js';

interface McpCliOptions extends SessionsOption {
  listen?: string;
  allowRemote?: boolean;
  token?: string;
  unauthenticated?: boolean;
}

/** Where the bearer token comes from when --token is not given (a token on a command line is visible in ps). */
const TOKEN_ENV = 'MCEC_MCP_TOKEN';

/** `mcp [--listen HOST:PORT]`. */
export function addMcpCommand(program: Command): void {
  withSessions(
    program
      .command('mcp')
      .description(
        'serve the sessions dir to an agent as a read-only MCP server (stdio, or Streamable HTTP with --listen)',
      )
      .option('--listen <host:port>', 'serve Streamable HTTP on POST /mcp, e.g. 127.0.0.1:5153 (port 0: any)')
      .option(
        '--allow-remote',
        'allow a non-loopback --listen host (and skip the loopback Host check); needs --token or --unauthenticated',
      )
      .option(
        '--token <token>',
        `with --listen: every request must send Authorization: Bearer <token> (default: $${TOKEN_ENV})`,
      )
      .option(
        '--unauthenticated',
        'with --allow-remote: serve without a token (anyone who reaches the port reads every recording and writes bundles)',
      ),
  )
    .addHelpText(
      'after',
      `
Tools: list_sessions, get_summary, get_call, get_image, triage, diff, bundle (the only one that writes: a zip
in the sessions dir and report.html beside the log, as mcec-bundle <id>; one call per zip at a time). Resources: each session's failure-summary.md, and its report.html once written.
Every answer is bounded: strings over 2,000 chars are clipped ("... [N more chars cut]"), and no answer is
over 4 MiB as JSON (one that would be is an error naming the argument that makes it smaller).

Over HTTP, --token (or $${TOKEN_ENV}) makes every request send Authorization: Bearer <token> (401 otherwise);
the token is never printed. A non-loopback host (--allow-remote) needs a token unless --unauthenticated.

MCP client config (stdio):
  { "mcpServers": { "mcec-evidence": { "command": "npx",
      "args": ["mcec-bundle", "mcp", "--sessions", "C:/mcec-sessions"] } } }

Examples:
  mcec-bundle mcp --sessions /srv/mcec-sessions
  mcec-bundle mcp --listen 127.0.0.1:5153
  ${TOKEN_ENV}=s3cret mcec-bundle mcp --listen 0.0.0.0:5153 --allow-remote`,
    )
    .action((opts: McpCliOptions) => mcp(opts));
}

async function mcp(opts: McpCliOptions): Promise<void> {
  const dir = sessionsDir(opts);
  const listen = opts.listen === undefined ? undefined : parseListen('--listen', opts.listen);
  if (!listen && (opts.token !== undefined || opts.unauthenticated)) {
    throw new UsageError(
      `${opts.token !== undefined ? '--token' : '--unauthenticated'} is for --listen (stdio has no other clients)`,
    );
  }
  const token = opts.token ?? (process.env[TOKEN_ENV] || undefined);
  if (opts.token === '') throw new UsageError('--token is empty');
  if (token !== undefined && opts.unauthenticated) {
    throw new UsageError(`--unauthenticated and a token (--token or $${TOKEN_ENV}) contradict each other`);
  }
  let remote = false;
  if (listen) {
    const { isLoopbackHost } = await import('../../wire/gates.js');
    remote = !isLoopbackHost(listen.host);
    if (remote && !opts.allowRemote) {
      throw nonLoopbackRefusal(listen.host, '--allow-remote');
    }
    if (remote && token === undefined && !opts.unauthenticated) {
      throw new UsageError(
        `--allow-remote needs a bearer token: --token <token> or $${TOKEN_ENV} (anyone who reaches ${listen.host}:${listen.port} would read every recording); --unauthenticated serves without one`,
      );
    }
  }
  const server = await import('../../mcp-server/index.js');
  if (!listen) {
    await server.serveStdio({ sessionsDir: dir });
    return;
  }
  const running = await server
    .serveHttp({
      sessionsDir: dir,
      ...listen,
      allowRemote: opts.allowRemote,
      token,
      unauthenticated: opts.unauthenticated,
    })
    .catch((err: unknown) => {
      // A taken port is said as every program says it, with what to do (exit 1).
      const why = listenProblem(err, opts.listen);
      throw why ? new Error(why) : err;
    });
  if (remote && token === undefined) {
    printErr(
      `mcec-bundle mcp: WARNING: serving WITHOUT AUTHENTICATION on ${running.url}: anyone who can reach it reads every recording in ${dir} and can write bundles there`,
    );
  }
  // Never the token itself: this line ends up in terminals and CI logs.
  printErr(
    `mcec-bundle mcp: serving ${dir} on ${running.url}${token !== undefined ? ' (bearer token required)' : ''} (Ctrl-C stops)`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
}
