#!/usr/bin/env node
/**
 * `mcec-bundle`: bundle, summarize, list, verify and prune recorded sessions. A thin layer over src/bundle:
 * parse the arguments, call the library, print. Heavy modules load only inside the command that needs them,
 * so `--help` starts fast.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { describeFsError } from '../paths/disk-errors.js';
import { recorderVersion } from '../record/environment.js';
import { parseByteSize, parseDuration } from '../util/units.js';
import {
  commanderExitCode,
  EXIT_USAGE,
  resolveSessionsDir,
  sessionsDirOrigin,
  UsageError,
} from './common.js';

/** Exit codes: 0 done, 1 the work failed, 2 bad usage (EXIT_USAGE). */
const EXIT_FAILED = 1;

interface SessionsOption {
  sessions?: string;
}

/** The sessions dir to read; a missing one is an error (a typo must not read as "no sessions"). */
function sessionsDir(opts: SessionsOption): string {
  const dir = resolveSessionsDir(opts.sessions);
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const from = sessionsDirOrigin(opts.sessions);
  if (!stat) throw new Error(`the sessions dir ${dir} (${from}) does not exist`);
  if (!stat.isDirectory()) throw new Error(`the sessions dir ${dir} (${from}) is not a directory`);
  return dir;
}

/** `--templates DIR` must name a directory: a typo would silently fall back to the built-in templates. */
function templatesDir(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  const abs = path.resolve(dir);
  if (!fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`--templates ${abs} is not a directory`);
  }
  return abs;
}

/** `-o FILE` must go into an existing directory (or be one): a typo must not create a tree somewhere. */
function outputPath(output: string | undefined): string | undefined {
  if (output === undefined) return undefined;
  const abs = path.resolve(output);
  if (fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory()) return abs;
  if (!fs.statSync(path.dirname(abs), { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`-o ${abs}: the directory ${path.dirname(abs)} does not exist`);
  }
  return abs;
}

/** Find a session by id, unique prefix or dir name; a hostile id is a usage error, a missing one a failure. */
async function locate(idOrPrefix: string, opts: SessionsOption): Promise<{ dir: string; dirName: string }> {
  const { resolveSession } = await import('../store/session-reader.js');
  const found = resolveSession(sessionsDir(opts), idOrPrefix);
  if (found.ok) return found.session;
  if (found.reason === 'invalid-id') throw new UsageError(found.message);
  throw new Error(found.message);
}

function sizeArg(value: string): number {
  const bytes = parseByteSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size such as 25000000, 500KB or 10MB.');
  return bytes;
}

function durationArg(value: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new InvalidArgumentError('expected a duration such as 7d, 12h or 30m.');
  return ms;
}

/** A duration, or 0 to turn the check off. */
function durationOrZeroArg(value: string): number {
  return /^\s*0+\s*[smhdw]?\s*$/i.test(value) ? 0 : durationArg(value);
}

/** Shows control and bidi characters as `\\uXXXX` (report/text.ts, loaded by main unless only help is asked). */
let escapeFormatChars: (text: string) => string = (text) => text;

/** Write a line to stdout; control and bidi characters from recorded text are shown, never obeyed. */
function print(text: string): void {
  const safe = escapeFormatChars(text);
  process.stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`);
}

/** Write a line to stderr, neutralized like print. */
function printErr(text: string): void {
  process.stderr.write(`${escapeFormatChars(text)}\n`);
}

/** Progress on stderr, only for a terminal and only once the work has taken a while. */
function progressReporter(): { onProgress?: (done: number, total: number) => void; stop(): void } {
  if (!process.stderr.isTTY) return { stop() {} };
  const started = Date.now();
  let shown = false;
  return {
    onProgress(done, total) {
      if (Date.now() - started < 400) return;
      shown = true;
      const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
      process.stderr.write(`\rbundling... ${pct}% (${done}/${total})`);
    },
    stop() {
      if (shown) process.stderr.write('\r\x1b[K');
    },
  };
}

function withSessions(cmd: Command): Command {
  return cmd.option(
    '-s, --sessions <dir>',
    'the sessions dir (default: $MCEC_SESSIONS_DIR, else ./sessions)',
  );
}

interface BundleCliOptions extends SessionsOption {
  output?: string;
  json?: boolean;
  images: boolean;
  db: boolean;
  maxBytes?: number;
  templates?: string;
}

interface VerifyCliOptions {
  maxEntryBytes?: number;
  maxTotalBytes?: number;
  maxJsonBytes?: number;
  templates?: string;
}

async function bundleCommand(id: string, opts: BundleCliOptions): Promise<void> {
  const session = await locate(id, opts);
  const { buildBundle } = await import('../bundle/build.js');
  const progress = progressReporter();
  let result: Awaited<ReturnType<typeof buildBundle>>;
  try {
    result = await buildBundle(session.dir, {
      output: outputPath(opts.output),
      images: opts.images,
      db: opts.db,
      maxBytes: opts.maxBytes,
      templatesDir: templatesDir(opts.templates),
      reportHtmlInSessionDir: true,
      onProgress: progress.onProgress,
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_OUTPUT_IN_SESSION')
      throw new UsageError((err as Error).message);
    throw err;
  } finally {
    progress.stop();
  }
  for (const w of result.warnings) printErr(`mcec-bundle: warning: ${w}`);
  // The zip is written either way (it is still the evidence), but a cap that was not met is a failed job.
  if (result.limitMet === false) process.exitCode = EXIT_FAILED;
  if (opts.json) {
    const { bundle, bytes, files, verdict, dropped, limitMet, reportHtml } = result;
    print(JSON.stringify({ bundle, bytes, files, verdict, dropped, limitMet, reportHtml }));
    return;
  }
  // stdout stays the zip's path alone (scripts take it with $(...)); the page's path is for the person.
  if (result.reportHtml) printErr(`report.html (open it in a browser): ${result.reportHtml}`);
  print(result.bundle);
}

async function listCommand(opts: SessionsOption & { failed?: boolean; json?: boolean }): Promise<void> {
  const dir = sessionsDir(opts);
  const list = await import('../bundle/list.js');
  const onWarning = (w: string) => printErr(`mcec-bundle: warning: ${w}`);
  if (opts.json) {
    print(
      JSON.stringify(await list.listSessionSummaries(dir, { failedOnly: opts.failed, onWarning }), null, 2),
    );
    return;
  }
  const table = await list.sessionTable(dir, { failedOnly: opts.failed, onWarning });
  if (table === '') {
    process.stderr.write(`no ${opts.failed ? 'failed ' : ''}sessions in ${dir}\n`);
    return;
  }
  print(table);
}

interface TriageCliOptions extends SessionsOption {
  since?: number;
  scenario?: string;
  bundles?: string;
  rules?: string;
  includeRecovered?: boolean;
  json?: boolean;
  md?: boolean;
}

async function triageCommand(opts: TriageCliOptions): Promise<void> {
  if (opts.json && opts.md) throw new UsageError('give one of --json and --md');
  const t = await import('../report/triage.js');
  let source: { kind: 'sessions' | 'bundles'; path: string };
  let catalog: import('../store/catalog.js').Catalog;
  if (opts.bundles !== undefined) {
    const dir = path.resolve(opts.bundles);
    if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      throw new UsageError(`--bundles ${dir} is not a directory`);
    }
    const { catalogOfBundles } = await import('../bundle/bundles-catalog.js');
    const res = await catalogOfBundles(dir);
    for (const s of res.skipped) printErr(`mcec-bundle: skipped ${s.zip}: ${s.why}`);
    catalog = res.catalog;
    source = { kind: 'bundles', path: dir };
  } else {
    const dir = sessionsDir(opts);
    const { refreshCatalog } = await import('../report/catalog.js');
    const res = await refreshCatalog(dir);
    if (res.warning) printErr(`mcec-bundle: warning: ${res.warning}`);
    catalog = res.catalog;
    source = { kind: 'sessions', path: dir };
  }
  try {
    const rules =
      opts.rules !== undefined
        ? t.loadFingerprintRules(path.resolve(opts.rules))
        : source.kind === 'sessions'
          ? t.loadFingerprintRules(path.join(source.path, t.RULES_FILE), { optional: true })
          : [];
    const now = new Date();
    const report = t.triage(catalog, {
      since: opts.since !== undefined ? new Date(now.getTime() - opts.since).toISOString() : undefined,
      scenario: opts.scenario,
      rules,
      includeRecovered: opts.includeRecovered,
      source,
      now,
    });
    if (opts.json) print(JSON.stringify(report, null, 2));
    else if (opts.md) print(t.renderTriageMarkdown(report));
    else print(t.renderTriageText(report));
  } finally {
    catalog.close();
  }
}

interface DiffCliOptions extends SessionsOption {
  lastPass?: boolean;
  json?: boolean;
  output?: string;
  exitCode?: boolean;
  threshold?: number;
  maxChanged?: number;
}

function shareArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a number from 0 to 1.');
  return n;
}

async function diffCommand(a: string, b: string | undefined, opts: DiffCliOptions): Promise<void> {
  if (opts.lastPass ? b !== undefined : b === undefined) {
    throw new UsageError('give two sessions, or one with --last-pass');
  }
  const root = sessionsDir(opts);
  const d = await import('../report/diff.js');
  let dirA: string;
  let dirB: string;
  if (opts.lastPass) {
    const run = await locate(a, opts);
    const { refreshCatalog } = await import('../report/catalog.js');
    const { catalog } = await refreshCatalog(root);
    try {
      const pass = d.lastPassOf(catalog, run.dirName);
      if (!pass) {
        const scenario = catalog.session(run.dirName)?.scenario;
        throw new Error(
          `no passing run of ${scenario ? `scenario ${JSON.stringify(scenario)}` : 'sessions without a scenario'} before ${run.dirName}`,
        );
      }
      dirA = path.join(root, pass.dir_name);
    } finally {
      catalog.close();
    }
    dirB = run.dir;
  } else {
    dirA = (await locate(a, opts)).dir;
    dirB = (await locate(b!, opts)).dir;
  }
  const out =
    outputPath(opts.output) ?? path.join(root, 'diffs', `${path.basename(dirA)}--${path.basename(dirB)}`);
  const diff = await d.diffSessions(dirA, dirB, {
    outDir: out,
    threshold: opts.threshold,
    maxChangedShare: opts.maxChanged,
  });
  const { writeDiffHtml } = await import('../report/diff-html.js');
  const html = await writeDiffHtml(diff, dirA, dirB);
  if (opts.json) print(JSON.stringify(diff, null, 2));
  else print(`${d.renderDiffText(diff)}\n\n${html}`);
  if (opts.exitCode && diff.differs) process.exitCode = EXIT_FAILED;
}

async function pruneCommand(
  opts: SessionsOption & { olderThan: number; keepRecent?: number; keepFailed?: boolean; dryRun?: boolean },
): Promise<void> {
  const dir = sessionsDir(opts);
  const { pruneSessions } = await import('../bundle/sessions.js');
  const pruned = await pruneSessions(dir, {
    olderThanMs: opts.olderThan,
    recentMs: opts.keepRecent, // undefined: DEFAULT_PRUNE_RECENT_MS (10 min)
    keepFailed: opts.keepFailed,
    dryRun: opts.dryRun,
    onKept: (loc, why) =>
      printErr(
        `kept ${loc.dir}: ${why.kind === 'live-writer' ? why.detail : `its log was written at ${why.writtenAt} (within --keep-recent)`}`,
      ),
  });
  const verb = opts.dryRun ? 'would remove' : 'removed';
  for (const p of pruned) {
    print(
      `${verb} ${p.dir}${p.zip ? ` and ${path.basename(p.zip)}` : ''} (${p.verdict ?? 'unreadable'}, last active ${p.lastActivity})`,
    );
  }
  if (pruned.length === 0) process.stderr.write(`nothing to prune in ${dir}\n`);
}

/** The program with every command. */
function buildProgram(): Command {
  const program = new Command('mcec-bundle');
  program
    .version(recorderVersion(), '-V, --version', 'print the version of mcec-recorder')
    .usage('<sessionId> [options]  |  <command> [options]')
    .description('Bug bundles and failure summaries from sessions recorded by mcec-recorder.')
    .exitOverride()
    .showHelpAfterError('(run mcec-bundle --help for usage)')
    .configureOutput({
      writeErr: (s) => process.stderr.write(escapeFormatChars(s)),
      writeOut: (s) => process.stdout.write(s),
    })
    .addHelpText(
      'after',
      `
Examples:
  mcec-bundle 5f19c9                          bundle the session whose id starts with 5f19c9
  mcec-bundle 5f19c9 -o /tmp/bug.zip --json   bundle to a chosen file, print the result as JSON
  mcec-bundle 5f19c9 --max-bytes 10MB         drop the oldest images until the zip fits in 10 MB
  mcec-bundle list --failed                   sessions whose verdict is FAIL
  mcec-bundle index                           rebuild the sessions catalog (catalog.sqlite)
  mcec-bundle triage --since 7d --md          recurring failures, flaky scenarios, failure rate per tool
  mcec-bundle diff 5f19c9 --last-pass         what the latest passing run of the scenario did differently
  mcec-bundle show 5f19c9                     the failure summary in the terminal
  mcec-bundle summary 5f19c9                  write failure-summary.md into the session dir
  mcec-bundle report 5f19c9                   write report.html (the timeline page) into the session dir
  mcec-bundle verdict 5f19c9 fail -r "why"    declare the verdict (the newest declared one wins)
  mcec-bundle issue-body 5f19c9 | gh issue create --title "agent failure" --body-file -
  mcec-bundle verify sessions/20261202-101500-5f19c9c01a3f.zip
  mcec-bundle prune --older-than 7d --keep-failed --dry-run
  mcec-bundle export --since 7d --otlp http://collector:4318/v1/traces
  mcec-bundle junit --since 24h -o results.xml

Sessions live in --sessions DIR, else $MCEC_SESSIONS_DIR, else ./sessions.
Exit codes: 0 done, 1 the work failed, 2 bad usage. The work fails on an unknown session, a missing
sessions dir, a bad zip, an I/O error, or a --max-bytes that could not be met (the zip is still written).`,
    );

  withSessions(
    program
      .command('bundle <sessionId>', { isDefault: true })
      .description(
        'write the bug bundle (a zip) of a session and print its path (the default command); its report.html is also written into the session dir (path on stderr)',
      )
      .option('-o, --output <file>', 'where to write the zip (default: <sessions dir>/<session dir>.zip)')
      .option(
        '--json',
        'print {"bundle", "bytes", "files", "verdict", "dropped", "limitMet", "reportHtml"} as JSON',
      )
      .option('--no-images', 'leave the images out')
      .option('--no-db', 'leave session.sqlite out')
      .option(
        '--max-bytes <size>',
        'drop the oldest images until the zip fits (10MB, 500KB; K/M/G = 1024-based)',
        sizeArg,
      )
      .option('--templates <dir>', 'templates that override the built-in ones by file name'),
  )
    .addHelpText(
      'after',
      `
Examples:
  mcec-bundle 5f19c9
  mcec-bundle bundle 5f19c9c01a3f --no-db -o bug.zip
  mcec-bundle 5f19c9 --max-bytes 25MB --json`,
    )
    .action((id: string, opts: BundleCliOptions) => bundleCommand(id, opts));

  withSessions(
    program
      .command('list')
      .description(
        'list sessions that hold tool calls: id, start, duration, calls, failures, verdict (oldest first)',
      )
      .option('--failed', 'only sessions whose verdict is FAIL')
      .option('--json', 'print the list as JSON'),
  )
    .addHelpText('after', '\nExample:\n  mcec-bundle list --failed --json')
    .action((opts) => listCommand(opts));

  withSessions(
    program
      .command('index')
      .description(
        'rebuild the sessions catalog (catalog.sqlite in the sessions dir) from every session log',
      ),
  )
    .addHelpText(
      'after',
      `
list, prune and triage read the catalog and keep it up to date themselves (the recorder and mcec-bundle
verdict mark the sessions they change); index re-reads every session, for a dir changed by other tools.

Example:
  mcec-bundle index --sessions /srv/mcec-sessions`,
    )
    .action(async (opts: SessionsOption) => {
      const dir = sessionsDir(opts);
      const { refreshCatalog } = await import('../report/catalog.js');
      const res = await refreshCatalog(dir, { full: true });
      const total = res.catalog.sessions().length;
      res.catalog.close();
      if (res.warning) printErr(`mcec-bundle: warning: ${res.warning}`);
      print(`${res.catalog.file}: ${total} sessions (${res.indexed} read, ${res.removed} removed)`);
    });

  withSessions(
    program
      .command('triage')
      .description(
        'group recurring failures across sessions by fingerprint, with flaky scenarios and failure rate per tool',
      )
      .option('--since <duration>', 'only sessions started within this long (7d, 12h)', durationArg)
      .option('--scenario <name>', 'only sessions of this scenario')
      .option('--bundles <dir>', 'read a folder of bundle zips (collected from many machines) instead')
      .option('--rules <file>', 'fingerprint rules (default: fingerprint-rules.json in the sessions dir)')
      .option('--include-recovered', 'group recovered failures too')
      .option('--json', 'print the report as JSON (schema/triage.schema.json)')
      .option('--md', 'print the report as Markdown, to paste into an issue'),
  )
    .addHelpText(
      'after',
      `
A fingerprint is tool + code + category + the error detail without its numbers, handles, ids, paths and
times + the target window's class and process. Rules in a JSON file match on fields and set the
fingerprint or extend it (see the README).

Examples:
  mcec-bundle triage --since 7d
  mcec-bundle triage --since 24h --scenario "nightly: save the invoice" --md | gh issue create --title "nightly triage" --body-file -
  mcec-bundle triage --bundles ./collected-zips --json`,
    )
    .action(async (opts: TriageCliOptions) => triageCommand(opts));

  withSessions(
    program
      .command('diff <a> [b]')
      .description(
        'compare two runs: calls aligned, the first divergence, UI tree and screenshot differences (diff.html)',
      )
      .option('--last-pass', 'compare <a> with the latest passing run of the same scenario before it')
      .option('--json', 'print the diff as JSON (schema/diff.schema.json)')
      .option(
        '-o, --output <dir>',
        'where diff.html and the diff PNGs go (default: <sessions>/diffs/<A>--<B>)',
      )
      .option('--exit-code', 'exit 1 when the runs differ (for CI), 0 when they match')
      .option('--threshold <0-1>', "pixelmatch's colour threshold per pixel (default 0.1)", shareArg)
      .option(
        '--max-changed <0-1>',
        'a screenshot differs above this share of changed pixels (default 0.01)',
        shareArg,
      ),
  )
    .addHelpText(
      'after',
      `
A is the reference (with --last-pass: the latest passing run of <a>'s scenario), B the run under study.

Examples:
  mcec-bundle diff 5f19c9 --last-pass
  mcec-bundle diff 1a2b3c 5f19c9 --json
  mcec-bundle diff "$sid" --last-pass --exit-code || echo "the run differs from the last good one"`,
    )
    .action((a: string, b: string | undefined, opts: DiffCliOptions) => diffCommand(a, b, opts));

  withSessions(program.command('show <sessionId>').description('print the failure summary of a session'))
    .addHelpText('after', '\nExample:\n  mcec-bundle show 5f19c9 | less')
    .action(async (id: string, opts: SessionsOption & { templates?: string }) => {
      const session = await locate(id, opts);
      const { failureSummaryText } = await import('../bundle/sessions.js');
      print(await failureSummaryText(session.dir, { templatesDir: templatesDir(opts.templates) }));
    })
    .option('--templates <dir>', 'templates that override the built-in ones by file name');

  withSessions(
    program
      .command('summary <sessionId>')
      .description('write failure-summary.md into the session dir and print its path'),
  )
    .option('--templates <dir>', 'templates that override the built-in ones by file name')
    .addHelpText('after', '\nExample:\n  mcec-bundle summary 5f19c9')
    .action(async (id: string, opts: SessionsOption & { templates?: string }) => {
      const session = await locate(id, opts);
      const { writeFailureSummary } = await import('../bundle/sessions.js');
      print(await writeFailureSummary(session.dir, { templatesDir: templatesDir(opts.templates) }));
    });

  withSessions(
    program
      .command('report [sessionId]')
      .description(
        'write report.html (the timeline page) into the session dir and print its path; --all: index.html of every session',
      ),
  )
    .option('--templates <dir>', 'templates that override the built-in ones by file name')
    .option('--all', 'write index.html in the sessions dir: every session, filters, the triage groups')
    .addHelpText(
      'after',
      '\nExamples:\n  xdg-open "$(mcec-bundle report 5f19c9)"\n  xdg-open "$(mcec-bundle report --all)"',
    )
    .action(async (id: string | undefined, opts: SessionsOption & { templates?: string; all?: boolean }) => {
      if (opts.all ? id !== undefined : id === undefined) {
        throw new UsageError('give a session, or --all for the index page of every session');
      }
      if (opts.all) {
        const dir = sessionsDir(opts);
        const { refreshCatalog } = await import('../report/catalog.js');
        const { triage, loadFingerprintRules, RULES_FILE } = await import('../report/triage.js');
        const { writeIndexHtml } = await import('../report/index-html.js');
        const res = await refreshCatalog(dir);
        try {
          if (res.warning) printErr(`mcec-bundle: warning: ${res.warning}`);
          const rules = loadFingerprintRules(path.join(dir, RULES_FILE), { optional: true });
          const report = triage(res.catalog, { rules, source: { kind: 'sessions', path: dir } });
          print(writeIndexHtml(dir, res.catalog.sessions(), report));
        } finally {
          res.catalog.close();
        }
        return;
      }
      const session = await locate(id!, opts);
      const { writeReportHtml } = await import('../report/html/write-report.js');
      print(await writeReportHtml(session.dir, { templatesDir: templatesDir(opts.templates) }));
    });

  withSessions(
    program
      .command('issue-body <sessionId>')
      .description('print the bug-report body (Markdown) for a GitHub issue'),
  )
    .option('--templates <dir>', 'templates that override the built-in ones by file name')
    .addHelpText(
      'after',
      '\nExample:\n  mcec-bundle issue-body 5f19c9 | gh issue create --title "agent failure" --body-file -',
    )
    .action(async (id: string, opts: SessionsOption & { templates?: string }) => {
      const session = await locate(id, opts);
      const { bugReportText } = await import('../bundle/sessions.js');
      print(await bugReportText(session.dir, { templatesDir: templatesDir(opts.templates) }));
    });

  withSessions(
    program
      .command('verdict <sessionId> <pass|fail>')
      .description('declare a session passed or failed (stored in its log; the newest declaration wins)')
      .option('-r, --reason <text>', 'why, in a sentence (shown beside the verdict everywhere)')
      .option('--json', 'print {"sessionId", "passed", "reason", "verdict", "verdictReason"} as JSON'),
  )
    .addHelpText(
      'after',
      `
The verdict is stored as a 'verdict' event in the session's log, so it works while the recorder is still
writing the session or any time after. It overrides the recorder's own verdict (unrecovered failures,
pending calls, ...) in show, list, report.html and bundles; declaring again replaces it.

Examples:
  mcec-bundle verdict 5f19c9 fail --reason "the invoice total was wrong"
  mcec-bundle verdict 5f19c9 pass --reason "the elevated console is expected on this machine"
  # CI around an agent behind mcec-record: judge the run by your own check
  sid=$(mcec-bundle list --json | jq -r '.[-1].id')
  ./check-invoice || mcec-bundle verdict "$sid" fail --reason "check-invoice failed"`,
    )
    .action(async (id: string, word: string, opts: SessionsOption & { reason?: string; json?: boolean }) => {
      const lowered = word.toLowerCase();
      if (lowered !== 'pass' && lowered !== 'fail') {
        throw new UsageError(`the verdict must be pass or fail, not ${JSON.stringify(word.slice(0, 40))}`);
      }
      const session = await locate(id, opts);
      const { declareVerdict } = await import('../bundle/sessions.js');
      const res = await declareVerdict(session.dir, { passed: lowered === 'pass', reason: opts.reason });
      if (opts.json) {
        const { sessionId, passed, reason, verdict, verdictReason } = res;
        print(JSON.stringify({ sessionId, passed, reason, verdict, verdictReason }));
        return;
      }
      print(`${res.sessionId}: ${res.verdict}: ${res.verdictReason}`);
    });

  program
    .command('verify <zip>')
    .description('check a bundle: manifest hashes, layout, no image bytes in text, no unsafe entries')
    .option(
      '--max-entry-bytes <size>',
      'refuse an entry larger than this once inflated (default 1G)',
      sizeArg,
    )
    .option('--max-total-bytes <size>', 'refuse a zip larger than this once inflated (default 2G)', sizeArg)
    .option(
      '--max-json-bytes <size>',
      'largest .json/.jsonl file checked (default 16M; larger ones fail)',
      sizeArg,
    )
    .option('--templates <dir>', "the templates the bundle was built with (report.html's own scripts)")
    .addHelpText('after', '\nExample:\n  mcec-bundle verify sessions/20261202-101500-5f19c9c01a3f.zip')
    .action(async (zip: string, opts: VerifyCliOptions) => {
      const { verifyBundle } = await import('../bundle/verify.js');
      const res = await verifyBundle(zip, {
        maxEntryBytes: opts.maxEntryBytes,
        maxTotalBytes: opts.maxTotalBytes,
        maxJsonBytes: opts.maxJsonBytes,
        templatesDir: opts.templates,
      });
      if (res.ok) {
        print(`ok: ${zip} (${res.entries} entries)`);
        return;
      }
      printErr(`${zip}: ${res.problems.length} problem(s):`);
      for (const p of res.problems) printErr(`  - ${p}`);
      process.exitCode = EXIT_FAILED;
    });

  withSessions(
    program
      .command('prune')
      .description('delete sessions (and their zips) whose last activity is older than a duration')
      .requiredOption('--older-than <duration>', 'e.g. 7d, 12h, 30m', durationArg)
      .option(
        '--keep-recent <duration>',
        'keep any session whose log was written within this long, whatever its status (default: 10m; 0: off). ' +
          'A session whose writer is still running is always kept',
        durationOrZeroArg,
      )
      .option('--keep-failed', 'keep sessions whose verdict is FAIL')
      .option('--dry-run', 'list what would be deleted, delete nothing'),
  )
    .addHelpText('after', '\nExample:\n  mcec-bundle prune --older-than 7d --keep-failed --dry-run')
    .action((opts) => pruneCommand(opts));

  withSessions(
    program
      .command('export [sessionId]')
      .description(
        'send recorded sessions to an OpenTelemetry collector (OTLP/HTTP protobuf): a trace per session, a span per call',
      )
      .option(
        '--since <duration>',
        'every session started within this long (e.g. 7d), instead of one',
        durationArg,
      )
      .option(
        '--otlp <url>',
        'the traces endpoint (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else http://localhost:4318/v1/traces)',
      )
      .option('-H, --header <name=value>', 'an HTTP header for the collector (repeatable)', headerArg, {})
      .option('--include-arguments', "put each call's (redacted) arguments on its span")
      .option('--json', 'print the result as JSON'),
  )
    .addHelpText(
      'after',
      `
Trace and span ids come from the session id and the call numbers, so sending a session twice sends the same
spans (a backend keeps one copy). Images are never sent: a span names its images by sha256 and path.
Exit code 1 when a span could not be delivered.

Examples:
  mcec-bundle export 5f19c9 --otlp http://collector:4318/v1/traces
  mcec-bundle export --since 7d -H "authorization=Bearer $TOKEN"`,
    )
    .action(
      async (
        id: string | undefined,
        opts: SessionsOption & {
          since?: number;
          otlp?: string;
          header: Record<string, string>;
          includeArguments?: boolean;
          json?: boolean;
        },
      ) => {
        if ((id === undefined) === (opts.since === undefined)) {
          throw new UsageError(
            'name one session, or give --since for every session started within a duration',
          );
        }
        const dirs =
          id !== undefined ? [(await locate(id, opts)).dir] : await sinceDirs(opts, opts.since ?? 0);
        const { exportSessions } = await import('../export/backfill.js');
        const res = await exportSessions(dirs, {
          url: opts.otlp,
          headers: opts.header,
          includeArguments: opts.includeArguments,
        });
        if (opts.json) print(JSON.stringify(res));
        else {
          print(
            `sent ${res.exported} of ${res.spans} spans from ${plural(res.sessions, 'session')} to ${res.url}`,
          );
          for (const u of res.unreadable) printErr(`mcec-bundle: ${u.dir}: ${u.error}`);
          if (res.dropped > 0)
            printErr(`mcec-bundle: ${res.dropped} spans not delivered: ${res.lastError ?? 'export failed'}`);
        }
        if (res.dropped > 0 || res.unreadable.length > 0) process.exitCode = EXIT_FAILED;
      },
    );

  withSessions(
    program
      .command('junit')
      .description(
        'a JUnit XML report of recorded sessions (a testcase per session, FAIL a failure), or GitHub annotations',
      )
      .option('--since <duration>', 'only sessions started within this long (e.g. 24h)', durationArg)
      .option('--scenario <name>', 'only sessions of this scenario')
      .option('--format <format>', 'junit (XML) or github (workflow annotations)', formatArg, 'junit')
      .option('-o, --output <file>', 'write to a file instead of stdout')
      .option('--templates <dir>', 'templates that override the built-in ones by file name'),
  )
    .addHelpText(
      'after',
      `
Exit code 0 even when sessions failed: the report says so, and the CI's test reporter fails the job.

Examples:
  mcec-bundle junit --since 24h -o results.xml
  mcec-bundle junit --since 24h --format github      (in a GitHub Actions step)`,
    )
    .action(
      async (
        opts: SessionsOption & {
          since?: number;
          scenario?: string;
          format: 'junit' | 'github';
          output?: string;
          templates?: string;
        },
      ) => {
        const output = outputPath(opts.output);
        const { selectSessions, junitXml, githubAnnotations, scenarioOf } = await import(
          '../export/ci-report.js'
        );
        const { readCiSessions } = await import('../export/ci-sessions.js');
        const locations = selectSessions(sessionsDir(opts), { sinceMs: opts.since });
        let sessions = await readCiSessions(locations, { templatesDir: templatesDir(opts.templates) });
        if (opts.scenario !== undefined) sessions = sessions.filter((s) => scenarioOf(s) === opts.scenario);
        const os = await import('node:os');
        const text =
          opts.format === 'github'
            ? githubAnnotations(sessions)
            : junitXml(sessions, { hostname: os.hostname() });
        if (output) {
          const { writeFileAtomic } = await import('../report/write-atomic.js');
          writeFileAtomic(output, text);
          printErr(`wrote ${output} (${plural(sessions.length, 'session')})`);
        } else process.stdout.write(text);
      },
    );

  return program;
}

/** Session dirs started within `sinceMs`. */
async function sinceDirs(opts: SessionsOption, sinceMs: number): Promise<string[]> {
  const { selectSessions } = await import('../export/ci-report.js');
  return selectSessions(sessionsDir(opts), { sinceMs }).map((l) => l.dir);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function headerArg(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected name=value, e.g. authorization=Bearer abc.');
  return { ...previous, [value.slice(0, eq).trim()]: value.slice(eq + 1).trim() };
}

function formatArg(value: string): 'junit' | 'github' {
  if (value !== 'junit' && value !== 'github') throw new InvalidArgumentError('expected junit or github.');
  return value;
}

/** Run the program on `argv` and return the exit code. */
async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  // --help must start fast (no /report/ module); everything else may print recorded text.
  const helpOnly =
    argv.length === 0 || argv.some((a) => ['-h', '--help', '-V', '--version', 'help'].includes(a));
  if (!helpOnly) ({ escapeFormatChars } = await import('../report/text.js'));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const usage = commanderExitCode(err);
    if (usage !== undefined) return usage;
    printErr(`mcec-bundle: ${describeFsError(err)}`);
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
