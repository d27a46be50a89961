#!/usr/bin/env node
/** mcec-replay: serve a recorded session (id, dir or bundle zip) as MCEC over stdio or HTTP. */

import fs from 'node:fs';
import { Command, Option } from 'commander';
import { recorderVersion } from '../record/environment.js';
import { isLoopbackHost } from '../wire/gates.js';
import {
  DEFAULT_BODY_TIMEOUT,
  DEFAULT_WRITE_TIMEOUT,
  EXIT_CODES_HELP,
  nonLoopbackRefusal,
  parseBodyTimeout,
  parseListen,
  parseWriteTimeout,
  runProgram,
  sessionsArg,
  UsageError,
  windowsPathProblem,
} from './common.js';

function parseNumber(name: string, value: string, max: number): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > max)
    throw new UsageError(`${name} must be a number from 0 to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

interface ReplayCliOptions {
  stdio?: boolean;
  listen?: string;
  token?: string;
  bodyTimeout: string;
  writeTimeout: string;
  sessions?: string;
  order: 'any' | 'strict';
  lockdown?: boolean;
  speed: string;
  tolerance: string;
  inject: string[];
  json?: boolean;
  report?: string;
}

const HELP_AFTER = `
The replay answers every tools/call from the recording, on MCEC's real wire (the server's escaping, the
image block first, the envelope text last, isError), with the captured images put back byte for byte from
the session's artifacts/. initialize and tools/list are answered as recorded, and so is any other request
the recording holds an answer to (resources/list, resources/read, prompts/get, completion/complete, ...: the
first unused one with the same params). A session recorded in front of another MCP server is answered as
that server did: each CallToolResult as recorded, no envelope added (the replay's own failures are plain
tool errors there).

Matching: a live call takes the first unused recorded call of the same tool whose arguments match after the
recorder's own redaction: session ids are mapped, handles and ids from earlier answers recognized,
coordinates match within --tolerance pixels, a [redacted] value matches any live value of its kind and typed
text matches by length. Identical calls take their recordings in recorded order.

Examples:
  # record the demo, then let an MCP client (or the same agent) drive the recording over stdio
  npm run demo
  mcec-replay 5f19 --stdio

  # in an MCP client's config: the recording stands in for the MCEC server
  { "mcpServers": { "mcec": { "command": "npx", "args": ["mcec-replay", "/abs/sessions/<dir>.zip", "--stdio"] } } }

  # over HTTP, as MCEC listens (POST /mcp, MCEC's Host/Origin/body checks; a body must arrive within
  # --body-timeout, 10s, else 408; a client that takes none of its answer for --write-timeout, 30s, is hung
  # up on: slow clients cannot hold the 16 request slots); Ctrl+C prints the report
  mcec-replay sessions/20261202-101500-5f19c9c01a3f --listen 127.0.0.1:5151

  # a regression test in CI: any call the recording does not hold fails replay-unmatched, exit 1
  mcec-replay bug.zip --stdio --lockdown --json

  # the exact recorded sequence; the first divergence ends the replay (exit 1)
  mcec-replay 5f19 --stdio --order strict

  # test the agent's error branches: fail the 3rd capture black, every find ambiguous, the 5th call stopped
  mcec-replay 5f19 --stdio --inject 'capture#3=frame-all-black' --inject 'find=selector-matched-3' \\
    --inject '*@5=emergency-stopped'

  # recorded durations: --speed 1 real time, 2 twice as fast, 0 instant (default)
  mcec-replay 5f19 --listen 127.0.0.1:5151 --speed 1

Inject rules: SELECTOR=FAULT. SELECTOR is TOOL (every call of it), TOOL#N (its Nth call), *@N (the
replay's Nth call) or *. FAULT is an MCEC error code (frame-all-black, selector-matched-3, emergency-stopped,
target-elevated, ...), one of the 12 categories (timeout, ambiguous-selector, stale-element, no-target,
invalid-argument, capture-blank, focus, elevation, foreground, internal, ocr-blank, ocr-no-text: each gives
its usual code) or CODE:CATEGORY.

The report (on exit: on stdout with --listen, on stderr with --stdio, whose stdout is the wire; --json for
JSON, --report FILE to keep it) lists calls matched, unmatched with the nearest recorded call and why it did
not match, recordings never used, the first divergence, injected faults, and answers that hold a redaction
(replayed as recorded, never as real values).

${EXIT_CODES_HELP}
  mcec-replay exits 1 when a --lockdown replay met an unmatched call, a strict replay diverged, or the
  recording cannot be found or read (no such file, no such session or an ambiguous prefix, not a bundle)
  or the port is taken, and 2 for a non-loopback --listen without --token.
`;

/** Build the mcec-replay program (exported for tests). */
export function buildProgram(): Command {
  return new Command('mcec-replay')
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .description(
      'Serve a recorded session as MCEC: every recording becomes a mock server and a regression test.',
    )
    .argument('<source>', 'a session id (or unique prefix), a session dir, or a bundle .zip')
    .option('--stdio', 'serve newline-delimited JSON-RPC on stdin/stdout (for an MCP client config)')
    .option(
      '--listen <host:port>',
      'serve POST /mcp on a loopback address, e.g. 127.0.0.1:5151 (port 0: any)',
    )
    .option('--token <token>', 'require Authorization: Bearer <token> over HTTP; needed off loopback')
    .option(
      '--body-timeout <duration>',
      'over HTTP, how long a request body may take to arrive before the client gets 408',
      DEFAULT_BODY_TIMEOUT,
    )
    .option(
      '--write-timeout <duration>',
      'over HTTP, how long a client may take none of its answer before it is hung up on',
      DEFAULT_WRITE_TIMEOUT,
    )
    .option(
      '-s, --sessions <dir>',
      'where session ids are looked up (default: $MCEC_SESSIONS_DIR, else ./sessions)',
      sessionsArg,
    )
    .addOption(
      new Option('--order <order>', 'any: any unused matching recording; strict: the recorded sequence')
        .choices(['any', 'strict'])
        .default('any'),
    )
    .option(
      '--lockdown',
      'an unmatched call fails replay-unmatched (category internal) and the replay exits 1',
    )
    .option('--speed <factor>', 'recorded durations: 0 instant, 1 real time, 2 twice as fast', '0')
    .option('--tolerance <px>', 'pixels a coordinate argument may differ by and still match', '4')
    .option(
      '--inject <rule>',
      'answer chosen calls with an MCEC failure, e.g. capture#3=frame-all-black (repeatable)',
      (value: string, prev: string[]) => [...prev, value],
      [] as string[],
    )
    .option('--json', 'print the report as JSON (schema/replay-report.schema.json) instead of text')
    .option('--report <file>', 'also write the JSON report to this file')
    .addHelpText('after', HELP_AFTER)
    .showHelpAfterError('(run mcec-replay --help for examples)')
    .exitOverride()
    .action(runReplay);
}

type ReplayModule = typeof import('../replay/index.js');
type ReplayHandle = Awaited<ReturnType<ReplayModule['replaySession']>>;

/** The action: start the replay, serve it until it ends, print the report and exit with its code. */
async function runReplay(source: string, options: ReplayCliOptions): Promise<void> {
  if (Boolean(options.stdio) === Boolean(options.listen))
    throw new UsageError('choose exactly one transport: --stdio or --listen HOST:PORT');
  const listen = options.listen ? parseListen('--listen', options.listen) : undefined;
  // MCEC's own rule: off loopback only with a token (the replay would refuse it anyway, as exit 1).
  if (listen && !options.token && !isLoopbackHost(listen.host))
    throw nonLoopbackRefusal(listen.host, '--token');
  const speed = parseNumber('--speed', options.speed, 1000);
  const tolerance = parseNumber('--tolerance', options.tolerance, 10_000);
  const bodyTimeoutMs = parseBodyTimeout(options.bodyTimeout);
  const writeTimeoutMs = parseWriteTimeout(options.writeTimeout);
  // The replay (and through it SQLite, the redactor and sharp) loads only once the arguments are good.
  const replay = await import('../replay/index.js');
  const handle = await startReplay(replay, source, options, {
    speed,
    tolerance,
    http: listen
      ? {
          host: listen.host,
          port: listen.port,
          bodyTimeoutMs,
          writeTimeoutMs,
          ...(options.token ? { token: options.token } : {}),
        }
      : false,
  });
  if (options.stdio) await handle.serveStdio(process.stdin, process.stdout);
  else await serveHttpUntilStopped(handle);
  const report = await handle.close();
  if (options.report) fs.writeFileSync(options.report, `${JSON.stringify(report, null, 2)}\n`);
  // stdout carries the wire in --stdio mode: the report goes to stderr there.
  const out = options.stdio ? process.stderr : process.stdout;
  out.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : replay.formatReport(report));
  // Exit now: stdin may still be open after a divergence, and stdout must be flushed first.
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
  process.exit(report.exitCode);
}

/** Open the source and start the replay; a bad rule or source is a usage error. */
async function startReplay(
  replay: ReplayModule,
  source: string,
  options: ReplayCliOptions,
  parsed: {
    speed: number;
    tolerance: number;
    http:
      | { host: string; port: number; token?: string; bodyTimeoutMs: number; writeTimeoutMs: number }
      | false;
  },
): Promise<ReplayHandle> {
  let inject: ReturnType<ReplayModule['parseInjection']>[];
  try {
    inject = options.inject.map((r) => replay.parseInjection(r));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const foreign = windowsPathProblem(options.sessions);
  if (foreign) throw new UsageError(foreign);
  try {
    return await replay.replaySession(source, {
      ...(options.sessions !== undefined ? { sessionsDir: options.sessions } : {}),
      order: options.order,
      lockdown: options.lockdown === true,
      inject,
      ...parsed,
    });
  } catch (e) {
    // A source that is not an id, a dir or a file is bad usage; one that names nothing readable is a failure.
    if (e instanceof replay.SourceError && e.reason === 'invalid-id') throw new UsageError(e.message);
    throw e;
  }
}

/** Serve over HTTP until SIGINT, SIGTERM or a strict replay's divergence. */
async function serveHttpUntilStopped(handle: ReplayHandle): Promise<void> {
  await new Promise<void>((resolve) => {
    let stopped = false;
    const stop = (why: string) => {
      if (stopped) return;
      stopped = true;
      process.stderr.write(`mcec-replay: ${why}, closing\n`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    // `ended` also resolves when the replay is closed: only a divergence before any signal is one.
    handle.ended.then(() => stop('the replay diverged from the recorded sequence'));
    // After the handlers: whoever reads the notice may signal at once.
    process.stderr.write(`mcec-replay: serving ${handle.sessionId} on ${handle.url}\n`);
  });
}

await runProgram(buildProgram(), '(run mcec-replay --help for examples)');
