#!/usr/bin/env node
/**
 * `mcec-bundle`: bundle, summarize, list, verify and prune recorded sessions. A thin layer over src/bundle,
 * src/report and src/export: one file of commands per concern under ./bundle/ (parse, call the library,
 * print). Heavy modules load only inside the command that needs them, so `--help` starts fast.
 */
import { Command } from 'commander';
import { describeFsError } from '../paths/disk-errors.js';
import { recorderVersion } from '../record/environment.js';
import { addBundleCommand, addVerifyCommand } from './bundle/bundle-commands.js';
import { addExportCommand, addJunitCommand } from './bundle/export-commands.js';
import {
  addDiffCommand,
  addIndexCommand,
  addListCommand,
  addPruneCommand,
  addTriageCommand,
} from './bundle/fleet-commands.js';
import { EXIT_FAILED, neutralized, printErr } from './bundle/io.js';
import { addMcpCommand } from './bundle/mcp-command.js';
import {
  addIssueBodyCommand,
  addReportCommand,
  addShowCommand,
  addSummaryCommand,
  addVerdictCommand,
} from './bundle/session-commands.js';
import {
  commanderExitCode,
  EXIT_CODES_HELP,
  EXIT_USAGE,
  listenProblem,
  similarName,
  subcommandHint,
  UsageError,
  versionAlias,
  withSubcommandHelp,
} from './common.js';

/** The commands, in the order `--help` lists them. */
const COMMANDS: ReadonlyArray<(program: Command) => void> = [
  addBundleCommand,
  addListCommand,
  addIndexCommand,
  addTriageCommand,
  addDiffCommand,
  addShowCommand,
  addSummaryCommand,
  addReportCommand,
  addIssueBodyCommand,
  addVerdictCommand,
  addVerifyCommand,
  addPruneCommand,
  addExportCommand,
  addJunitCommand,
  addMcpCommand,
];

/** `<name>`, `[name]` or `<name...>`, as commander writes an argument in usage. */
function argumentTerm(name: string, required: boolean, variadic: boolean): string {
  const text = `${name}${variadic ? '...' : ''}`;
  return required ? `<${text}>` : `[${text}]`;
}

/** The program with every command; commander's complaints go to `writeErr`. */
function buildProgram(writeErr: (s: string) => void): Command {
  const program = new Command('mcec-bundle');
  program
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .usage('<sessionId> [options]  |  <command> [options]')
    .description('Bug bundles and failure summaries from sessions recorded by mcec-recorder.')
    .exitOverride()
    .showHelpAfterError('(run mcec-bundle --help for usage)')
    // Each command's name and arguments without "[options]" (every one has some): the descriptions beside
    // them get room to wrap at the terminal's width (80 in a pipe) instead of running on to 200 columns.
    .configureHelp({
      subcommandTerm: (cmd) =>
        [
          cmd.name(),
          ...cmd.registeredArguments.map((a) => argumentTerm(a.name(), a.required, a.variadic)),
        ].join(' '),
    })
    .configureOutput({
      writeErr: (s) => writeErr(neutralized(s)),
      writeOut: (s) => process.stdout.write(s),
    })
    .addHelpText(
      'after',
      `
Examples:
  mcec-bundle 5f19c9                        the zip of the session 5f19c9...
  mcec-bundle 5f19c9 -o /tmp/bug.zip --json to a chosen file, the result as JSON
  mcec-bundle 5f19c9 --max-bytes 10MB       the oldest images dropped to fit
  mcec-bundle list --failed                 sessions whose verdict is FAIL
  mcec-bundle list --since 24h              sessions started in the last day
  mcec-bundle index                         rebuild catalog.sqlite
  mcec-bundle triage --since 7d --md        recurring failures, flaky scenarios
  mcec-bundle diff 5f19c9 --last-pass       against the last passing run
  mcec-bundle show 5f19c9                   the failure summary in the terminal
  mcec-bundle summary 5f19c9                failure-summary.md beside the log
  mcec-bundle report 5f19c9                 report.html in the session dir
  mcec-bundle verdict 5f19c9 fail -r "why"  the newest declared verdict wins
  mcec-bundle issue-body 5f19c9 | gh issue create --title "agent failure" \\
    --body-file -
  mcec-bundle verify sessions/20261202-101500-5f19c9c01a3f.zip
  mcec-bundle prune --older-than 7d --keep-failed --dry-run
  mcec-bundle export --since 7d --otlp http://collector:4318/v1/traces
  mcec-bundle junit --since 24h -o results.xml
  mcec-bundle mcp --sessions /srv/mcec-sessions   the sessions to an agent (MCP)

Options may come before the command too (mcec-bundle --sessions DIR list).
Sessions live in --sessions DIR, else $MCEC_SESSIONS_DIR, else ./sessions.
A <sessionId> is an id, a unique prefix of one, a session dir name, or the
path of a session dir (sessions/20261202-101500-5f19c9c01a3f).

${EXIT_CODES_HELP}
  mcec-bundle exits 1 for an unknown or ambiguous session, a sessions dir that
  is missing or cannot be read, a zip that fails verify, an I/O error, or a
  --max-bytes that could not be met (the zip is still written). Each command's
  --help ends with this table.`,
    );

  for (const add of COMMANDS) add(program);
  withSubcommandHelp(program);
  return program;
}

/** Options every command takes that carry a value: skipped when finding the command word after them. */
const SESSIONS_OPTIONS = ['--sessions', '-s'];

/** Where the first word that is not an option (nor the value of --sessions) is: the command, or a session id. */
function commandWordAt(argv: string[]): number {
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith('-') && argv[i] !== '--') {
    i += SESSIONS_OPTIONS.includes(argv[i]!) ? 2 : 1;
  }
  return i;
}

/**
 * `--sessions DIR list` or `--json list`: options before the command word. Commander would hand them all to
 * the default command (`bundle list`), so the command word is moved to the front.
 */
function commandFirst(argv: string[], names: readonly string[]): string[] {
  const i = commandWordAt(argv);
  if (i === 0 || i >= argv.length || !names.includes(argv[i]!)) return argv;
  return [argv[i]!, ...argv.slice(0, i), ...argv.slice(i + 1)];
}

/** Run the program on `argv` and return the exit code. */
async function main(given: string[]): Promise<number> {
  // Commander's own complaint is held back until it is known not to be about a mistyped command word.
  let held = '';
  const program = buildProgram((s) => {
    held += s;
  });
  // Nothing given: the help, as a usage problem (exit 2) that teaches.
  if (given.length === 0) {
    program.outputHelp();
    return EXIT_USAGE;
  }
  const names = program.commands.map((c) => c.name());
  const argv = commandFirst(versionAlias(given), [...names, 'help']);
  if (argv[0] === 'help' && argv[1] !== undefined && !names.includes(argv[1])) {
    const meant = similarName(argv[1], names);
    const hint = meant
      ? `did you mean mcec-bundle help ${meant}?`
      : 'run mcec-bundle --help for the commands';
    printErr(`mcec-bundle: unknown command "${argv[1]}": ${hint}`);
    return EXIT_USAGE;
  }
  let ran = '';
  program.hook('preAction', (_program, action) => {
    ran = action.name();
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    process.stderr.write(held);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const usage = commanderExitCode(err);
    if (usage !== undefined) {
      // `lst --failed`, `shwo 5f19`: the default command took the word for a session id and refused the rest.
      const word = argv[commandWordAt(argv)] ?? '';
      const meant = usage === EXIT_USAGE && word && !names.includes(word) ? similarName(word, names) : null;
      if (meant) printErr(`mcec-bundle: unknown command "${word}": did you mean mcec-bundle ${meant}?`);
      else process.stderr.write(held);
      return usage;
    }
    process.stderr.write(held);
    printErr(`mcec-bundle: ${listenProblem(err) ?? describeFsError(err)}`);
    // A mistyped command word (`lsit`) needs no hint about the default command it fell into.
    const mistyped = (err as Error).message.startsWith('unknown command');
    if (err instanceof UsageError && ran && !mistyped) printErr(subcommandHint(program, ran));
    return err instanceof UsageError ? EXIT_USAGE : EXIT_FAILED;
  }
}

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  // A closed pipe (`| head`) is not an error worth a stack trace.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    printErr(`mcec-bundle: ${(err as Error).message}`);
    process.exitCode = EXIT_FAILED;
  },
);
