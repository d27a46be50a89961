#!/usr/bin/env node
/**
 * `npm run demo`: a scripted agent drives a simulated MCEC through the recorder, then the session is
 * summarized, bundled and verified. A thin layer over src/demo: parse the arguments, run, print.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import type { DemoResult } from '../demo/run-demo.js';
import { recorderVersion } from '../record/environment.js';
import { makeTempDir, removeBestEffort } from '../util/temp-files.js';
import {
  listenProblem,
  parseListen,
  resolveSessionsDir,
  sessionsArg,
  sessionsDirWriteProblem,
  UsageError,
  usageExitCode,
} from './common.js';
import { checkTracesEndpoint } from './otlp-endpoint.js';

/** Exit codes: 0 the demo ran (its recorded session fails by design), 1 the demo itself broke, 2 bad usage. */
const EXIT_BROKEN = 1;
/** failure-summary.md is shown up to this heading: the verdict, the failing call, its arguments and target. */
const SUMMARY_HEAD_END = '## Last good observation';
/** ... and at most this many lines of it. */
const SUMMARY_HEAD_LINES = 40;
const DEFAULT_LISTEN = '127.0.0.1:5151';

interface DemoCliOptions {
  sessions?: string;
  keepRunning?: boolean;
  serve?: boolean;
  listen: string;
  quiet?: boolean;
  json?: boolean;
  otlp?: string;
}

const HELP_AFTER = `
What it does:
  1. starts a simulated MCEC (a fake Windows desktop behind the real MCEC wire) in this process;
  2. a scripted agent drives it through the recorder (recorder.wrap around its dispatch): it opens a
     session, looks around (windows, displays, a capture of Notepad, its UI tree), hits the ambiguous
     selector on 'Save As' (three buttons named Save: selector-matched-3) and recovers by automationId,
     then fails on the black capture of 'Video Player' (frame-all-black) and ends the session;
  3. writes failure-summary.md and report.html into the session dir, builds the bug bundle (a zip beside
     it), verifies it;
  4. prints where the session dir, failure-summary.md, report.html and the zip are, and the summary's head.

The recorded session FAILS on purpose: that is what the demo shows. The demo itself succeeds (exit 0)
when the bundle was written and verifies.

Examples:
  npm run demo
  npm run demo -- --sessions /tmp/sessions --json
  npm run demo -- --serve            then try the simulator yourself on http://${DEFAULT_LISTEN}/mcp

Exit codes: 0 the demo ran, 1 the demo broke (no bundle, or it does not verify) or the sessions dir cannot
be written (created when missing, else it must be a writable directory), 2 bad usage.`;

function print(text = ''): void {
  process.stdout.write(`${text}\n`);
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

/** The human report: the calls, the steps, the paths and the head of the summary. */
function printReport(result: DemoResult, sessionsDir: string): void {
  const { run } = result;
  print('mcec-recorder demo: a scripted agent drives a simulated MCEC through the recorder.');
  print();
  print('Calls (as the agent saw them):');
  const toolWidth = Math.max(...run.calls.map((c) => c.tool.length));
  run.calls.forEach((c, i) => {
    const outcome = c.ok ? 'ok    ' : 'FAILED';
    const warned = c.warnings.length > 0 ? ` [warning: ${c.warnings.join(', ')}]` : '';
    const line = c.ok ? c.line : (c.line.split(':')[0] ?? c.line);
    print(`  ${pad(`#${i + 1}`, 4)}${pad(c.tool, toolWidth)}  ${outcome}  ${line}${warned}`);
  });
  print();
  print('Steps (declared with recorder.step):');
  for (const s of run.steps) print(`  [${s.status}] ${s.name}: ${s.detail}`);
  print();
  print(`The recorded session ${result.verdict === 'FAIL' ? 'FAILS, on purpose' : 'passed'}: ${run.reason}.`);
  print();
  print(`Session dir:      ${result.sessionDir}`);
  print(`Failure summary:  ${result.failureSummary}`);
  print(`Report page:      ${result.reportHtml}`);
  print(`Bug bundle:       ${result.bundle}`);
  print(`                  ${result.bundleFiles} files; mcec-bundle verify: ok`);
  print();
  print('First lines of failure-summary.md:');
  print();
  const all = result.summaryText.split('\n');
  const end = all.indexOf(SUMMARY_HEAD_END);
  const lines = all.slice(0, Math.min(SUMMARY_HEAD_LINES, end === -1 ? all.length : end));
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) print(line ? `  ${line}` : '');
  print('  ...');
  print();
  const sessionsArg = sessionsArgument(sessionsDir);
  print('Next:');
  const bundleCli = cliCommand('mcec-bundle');
  print(`  ${bundleCli} show ${result.sessionId}${sessionsArg}     the whole summary`);
  print(`  ${bundleCli} verify ${quoteArg(result.bundle)}`);
  print(
    '  npm run demo -- --serve      keep a simulator running to try it (and the recording proxy) yourself',
  );
}

/** ` --sessions DIR` unless DIR is what mcec-bundle would use by default. */
function sessionsArgument(sessionsDir: string): string {
  const fallback = resolveSessionsDir();
  return sessionsDir === fallback ? '' : ` --sessions ${quoteArg(sessionsDir)}`;
}

/**
 * How to run one of the package's CLIs from here: `node dist/cli/<name>.js` in a checkout (npx would look
 * the name up in the registry there), `npx <name>` where the package is installed.
 */
function cliCommand(name: string): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const file of [
    path.join(here, `${name}.js`),
    path.join(here, '..', '..', 'dist', 'cli', `${name}.js`),
  ]) {
    if (!fs.existsSync(file)) continue;
    const rel = path.relative(process.cwd(), file);
    return `node ${quoteArg(rel.startsWith('..') || path.isAbsolute(rel) ? file : rel)}`;
  }
  return `npx ${name}`;
}

function quoteArg(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Serve a fresh simulator over HTTP until SIGINT/SIGTERM; the instructions go to `say`. */
async function serve(listen: string, sessionsDir: string, say: (line: string) => void): Promise<void> {
  const { host, port } = parseListen('--listen', listen);
  const { createSimulator } = await import('../sim/index.js');
  const simDir = makeTempDir('mcec-demo-sim');
  const sim = createSimulator({ sessionsRoot: simDir });
  let listener: Awaited<ReturnType<typeof sim.listenHttp>>;
  try {
    listener = await sim.listenHttp({ host, port });
  } catch (err) {
    removeBestEffort(simDir);
    throw new Error(
      `cannot serve the simulator: ${listenProblem(err, listen) ?? `${listen}: ${(err as Error).message}`}`,
    );
  }
  const url = listener.url;
  const proxyPort = listener.port === 5152 ? 5153 : 5152;
  const sessionsArg = quoteArg(sessionsDir);
  say('');
  say(`Simulator listening on ${url} (a fresh desktop: Save As is back). Ctrl+C stops it.`);
  say('');
  say('Call it (one JSON-RPC request per POST):');
  say(
    `  curl -s -X POST ${url} -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"windows","arguments":{}}}'`,
  );
  say(
    `  curl -s -X POST ${url} -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find","arguments":{"window":"Save As","value":"Save"}}}'`,
  );
  say('');
  say('Record through the proxy (in another terminal), then send the same requests to its port instead:');
  say(`  npx mcec-record http --listen 127.0.0.1:${proxyPort} --target ${url} --sessions ${sessionsArg}`);
  say(
    `  curl -s -X POST http://127.0.0.1:${proxyPort}/mcp -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session-start","arguments":{}}}'`,
  );
  say(`  npx mcec-bundle list --sessions ${sessionsArg}`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await listener.close();
  removeBestEffort(simDir);
}

async function demoCommand(opts: DemoCliOptions): Promise<number> {
  if (opts.quiet && opts.json) throw new UsageError('--quiet and --json do not go together');
  const keepRunning = Boolean(opts.keepRunning || opts.serve);
  // A bad address is bad usage, before the demo runs; the simulator takes no token here, so loopback only.
  if (keepRunning) {
    const { host } = parseListen('--listen', opts.listen);
    const { isLoopbackHost } = await import('../wire/gates.js');
    if (!isLoopbackHost(host))
      throw new UsageError(
        `refusing to listen on non-loopback host ${host} (the demo's simulator serves loopback only; mcec-sim --token serves others)`,
      );
  }
  if (opts.otlp !== undefined) checkTracesEndpoint(opts.otlp); // so is an endpoint that is not http(s)
  const { runDemo, defaultSessionsDir } = await import('../demo/run-demo.js');
  const sessionsDir = path.resolve(opts.sessions ?? defaultSessionsDir());
  // A dir that cannot take the session is said in one line, not as the error of whichever write met it first.
  const cannotWrite = sessionsDirWriteProblem(sessionsDir, opts.sessions);
  if (cannotWrite) {
    process.stderr.write(`demo: ${cannotWrite}\n`);
    return EXIT_BROKEN;
  }
  let result: DemoResult;
  try {
    result = await runDemo({ sessionsDir, ...(opts.otlp ? { otlp: { url: opts.otlp } } : {}) });
  } catch (err) {
    process.stderr.write(`demo: the demo broke: ${(err as Error).message}\n`);
    return EXIT_BROKEN;
  }
  const bundleThere = fs.existsSync(result.bundle);
  const broken = !bundleThere || !result.verify.ok;

  if (opts.json) {
    print(
      JSON.stringify({
        sessionId: result.sessionId,
        sessionDir: result.sessionDir,
        failureSummary: result.failureSummary,
        reportHtml: result.reportHtml,
        bundle: result.bundle,
        bundleFiles: result.bundleFiles,
        verdict: result.verdict,
        verified: result.verify.ok,
        problems: result.verify.problems,
        steps: result.run.steps,
      }),
    );
  } else if (opts.quiet) {
    print(result.sessionDir);
    print(result.failureSummary);
    print(result.bundle);
    print(result.reportHtml);
  } else {
    printReport(result, sessionsDir);
  }
  if (broken) {
    const why = bundleThere
      ? `it does not verify: ${result.verify.problems.join('; ')}`
      : 'it was not written';
    process.stderr.write(`demo: the demo broke: bundle ${result.bundle}: ${why}\n`);
    return EXIT_BROKEN;
  }
  if (keepRunning) {
    // Keep stdout clean for --json and --quiet: the instructions then go to stderr.
    const say = opts.json || opts.quiet ? (l: string) => process.stderr.write(`${l}\n`) : print;
    try {
      await serve(opts.listen, sessionsDir, say);
    } catch (err) {
      process.stderr.write(`demo: ${(err as Error).message}\n`);
      return EXIT_BROKEN;
    }
  }
  return 0;
}

/** Build the demo program; `onExit` receives the exit code of the action. */
function buildProgram(onExit: (code: number) => void): Command {
  return new Command('demo')
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .description(
      "mcec-recorder's demo: record a scripted agent's session against a simulated MCEC, then summarize, bundle and verify it.",
    )
    .usage('[options]   (npm run demo -- [options])')
    .option(
      '-s, --sessions <dir>',
      'where the session dir and the zip go (default: $MCEC_SESSIONS_DIR, else ./sessions)',
      sessionsArg,
    )
    .option(
      '--keep-running',
      `after the demo, keep a simulator running over HTTP for manual use (see --listen), until Ctrl+C`,
    )
    .option('--serve', 'the same as --keep-running')
    .option('--listen <host:port>', 'where --keep-running serves POST /mcp', DEFAULT_LISTEN)
    .option(
      '--otlp <url>',
      'also send the session live to an OpenTelemetry collector (OTLP/HTTP traces endpoint)',
    )
    .option('-q, --quiet', 'print only the paths: session dir, failure-summary.md, zip, report.html')
    .option(
      '--json',
      'print {sessionId, sessionDir, failureSummary, reportHtml, bundle, verdict, verified, ...} as one JSON line (schema/demo-result.schema.json)',
    )
    .addHelpText('after', HELP_AFTER)
    .showHelpAfterError('(run npm run demo -- --help for usage)')
    .configureOutput({ writeErr: (s) => process.stderr.write(s), writeOut: (s) => process.stdout.write(s) })
    .exitOverride()
    .allowExcessArguments(false)
    .action(async (opts: DemoCliOptions) => onExit(await demoCommand(opts)));
}

async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => {
    code = c;
  });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    const usage = usageExitCode(err, 'demo', '(run npm run demo -- --help for usage)');
    if (usage !== undefined) return usage;
    process.stderr.write(`demo: ${(err as Error).stack ?? String(err)}\n`);
    return EXIT_BROKEN;
  }
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`demo: ${String(err)}\n`);
    process.exitCode = EXIT_BROKEN;
  },
);
