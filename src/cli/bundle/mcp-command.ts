/** `mcp`: the MCP server over the sessions dir (src/mcp-server), on stdio or Streamable HTTP. */
import type { Command } from 'commander';
import { parseListen, UsageError } from '../common.js';
import { type SessionsOption, sessionsDir, withSessions } from './args.js';
import { printErr } from './io.js';

interface McpCliOptions extends SessionsOption {
  listen?: string;
  allowRemote?: boolean;
}

/** `mcp [--listen HOST:PORT]`. */
export function addMcpCommand(program: Command): void {
  withSessions(
    program
      .command('mcp')
      .description(
        'serve the sessions dir to an agent as a read-only MCP server (stdio, or Streamable HTTP with --listen)',
      )
      .option('--listen <host:port>', 'serve Streamable HTTP on POST /mcp, e.g. 127.0.0.1:5153 (port 0: any)')
      .option('--allow-remote', 'allow a non-loopback --listen host (and skip the loopback Host check)'),
  )
    .addHelpText(
      'after',
      `
Tools: list_sessions, get_summary, get_call, get_image, triage, diff, bundle (the only one that writes: a zip
in the sessions dir). Resources: each session's failure-summary.md and report.html. Every answer is bounded.

MCP client config (stdio):
  { "mcpServers": { "mcec-evidence": { "command": "npx",
      "args": ["mcec-bundle", "mcp", "--sessions", "C:/mcec-sessions"] } } }

Examples:
  mcec-bundle mcp --sessions /srv/mcec-sessions
  mcec-bundle mcp --listen 127.0.0.1:5153`,
    )
    .action((opts: McpCliOptions) => mcp(opts));
}

async function mcp(opts: McpCliOptions): Promise<void> {
  const dir = sessionsDir(opts);
  const listen = opts.listen === undefined ? undefined : parseListen('--listen', opts.listen);
  if (listen && !opts.allowRemote) {
    const { isLoopbackHost } = await import('../../wire/gates.js');
    if (!isLoopbackHost(listen.host)) {
      throw new UsageError(
        `refusing to listen on non-loopback host ${listen.host} (--allow-remote allows it)`,
      );
    }
  }
  const server = await import('../../mcp-server/index.js');
  if (!listen) {
    await server.serveStdio({ sessionsDir: dir });
    return;
  }
  const running = await server.serveHttp({ sessionsDir: dir, ...listen, allowRemote: opts.allowRemote });
  printErr(`mcec-bundle mcp: serving ${dir} on ${running.url} (Ctrl-C stops)`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
}
