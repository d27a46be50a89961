/** Commands across sessions: `list`, `index`, `triage`, `diff`, `prune`. All read the sessions catalog. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Catalog } from '../../store/catalog.js';
import { UsageError } from '../common.js';
import {
  durationArg,
  durationOrZeroArg,
  locate,
  optionFileError,
  outputPath,
  type SessionsOption,
  sessionsDir,
  shareArg,
  withSessions,
} from './args.js';
import { EXIT_FAILED, print, printErr, progressReporter, warn } from './io.js';

/** `list [--failed] [--json]`. */
export function addListCommand(program: Command): void {
  withSessions(
    program
      .command('list')
      .description(
        'list sessions that hold tool calls: id, MCP server, start, duration, calls, failures, verdict (newest first, as index.html)',
      )
      .option('--failed', 'only sessions whose verdict is FAIL')
      .option(
        '--since <duration>',
        'only sessions started within this long (7d, 12h), as triage',
        durationArg,
      )
      .option('--json', 'print the list as JSON (schema/session-listing.schema.json)'),
  )
    .addHelpText('after', '\nExamples:\n  mcec-bundle list --failed --json\n  mcec-bundle list --since 24h')
    .action((opts) => list(opts));
}

async function list(
  opts: SessionsOption & { failed?: boolean; since?: number; json?: boolean },
): Promise<void> {
  const dir = sessionsDir(opts);
  const { listSessionSummaries, sessionTable } = await import('../../sessions/list.js');
  const progress = progressReporter('reading sessions');
  const options = {
    failedOnly: opts.failed,
    ...(opts.since === undefined ? {} : { since: new Date(Date.now() - opts.since).toISOString() }),
    onWarning: warn,
    onProgress: progress.onProgress,
  };
  let table: string;
  try {
    if (opts.json) {
      const listed = await listSessionSummaries(dir, options);
      progress.stop();
      print(JSON.stringify(listed, null, 2));
      return;
    }
    table = await sessionTable(dir, options);
  } finally {
    progress.stop();
  }
  if (table === '') {
    const within = opts.since === undefined ? '' : ' started within --since';
    process.stderr.write(`no ${opts.failed ? 'failed ' : ''}sessions${within} in ${dir}\n`);
    return;
  }
  print(table);
}

/** `index`: rebuild catalog.sqlite from every log. */
export function addIndexCommand(program: Command): void {
  withSessions(
    program
      .command('index')
      .description('rebuild the sessions catalog (catalog.sqlite in the sessions dir) from every session log')
      .option('--json', 'print the result as JSON (schema/index.schema.json)'),
  )
    .addHelpText(
      'after',
      `
list, prune and triage read the catalog and keep it up to date themselves (the recorder and mcec-bundle
verdict mark the sessions they change); index re-reads every session, for a dir changed by other tools:
from its log, or from the catalog-entry.json beside it while that still describes the log (same size, and
the same settled time or the same sha1).

Example:
  mcec-bundle index --sessions /srv/mcec-sessions`,
    )
    .action(async (opts: SessionsOption & { json?: boolean }) => {
      const dir = sessionsDir(opts);
      const { withCatalog } = await import('../../fleet/catalog.js');
      const progress = progressReporter('reading sessions');
      const line = await withCatalog(
        dir,
        (res) => {
          if (res.warning) warn(res.warning);
          const total = res.catalog.sessionCount(); // not every row read to count them
          if (opts.json) {
            const { file: catalog } = res.catalog;
            const { indexed, removed } = res;
            return JSON.stringify({
              catalog,
              sessions: total,
              indexed,
              removed,
              warning: res.warning ?? null,
            });
          }
          return `${res.catalog.file}: ${total} sessions (${res.indexed} read, ${res.removed} removed)`;
        },
        { full: true, onRebuild: warn, onProgress: progress.onProgress },
      ).finally(() => progress.stop());
      print(line);
    });
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

/** `triage`: recurring failures grouped by fingerprint, flaky scenarios, failure rate per tool. */
export function addTriageCommand(program: Command): void {
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
    .action((opts: TriageCliOptions) => triage(opts));
}

async function triage(opts: TriageCliOptions): Promise<void> {
  if (opts.json && opts.md) throw new UsageError('give one of --json and --md');
  const t = await import('../../fleet/triage.js');
  // Rules the user named are checked before any session is read: a missing or bad file is bad usage.
  const given = opts.rules === undefined ? undefined : givenRules(opts.rules, t.loadFingerprintRules);
  const render = (catalog: Catalog, source: { kind: 'sessions' | 'bundles'; path: string }): string => {
    const rules =
      given !== undefined
        ? given
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
    if (opts.json) return JSON.stringify(report, null, 2);
    return opts.md ? t.renderTriageMarkdown(report) : t.renderTriageText(report);
  };
  // A folder of bundle zips (collected from many machines), read into a catalog in memory.
  if (opts.bundles !== undefined) {
    const dir = path.resolve(opts.bundles);
    if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      throw new UsageError(`--bundles ${dir} is not a directory`);
    }
    const { catalogOfBundles } = await import('../../fleet/bundles-catalog.js');
    const progress = progressReporter('reading bundles');
    const res = await catalogOfBundles(dir, { onProgress: progress.onProgress }).finally(() =>
      progress.stop(),
    );
    for (const s of res.skipped) printErr(`mcec-bundle: skipped ${s.zip}: ${s.why}`);
    try {
      print(render(res.catalog, { kind: 'bundles', path: dir }));
    } finally {
      res.catalog.close();
    }
    return;
  }
  const dir = sessionsDir(opts);
  const { withCatalog } = await import('../../fleet/catalog.js');
  const progress = progressReporter('reading sessions');
  const text = await withCatalog(
    dir,
    (res) => {
      progress.stop();
      if (res.warning) warn(res.warning);
      return render(res.catalog, { kind: 'sessions', path: dir });
    },
    { onRebuild: warn, onProgress: progress.onProgress },
  ).finally(() => progress.stop());
  print(text);
}

interface DiffCliOptions extends SessionsOption {
  lastPass?: boolean;
  json?: boolean;
  output?: string;
  exitCode?: boolean;
  threshold?: number;
  maxChanged?: number;
}

/** `diff <a> [b]` and `diff <a> --last-pass`. */
export function addDiffCommand(program: Command): void {
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
        "where diff.html and the diff PNGs go (default: diffs/<A>--<B> in B's sessions dir)",
      )
      .option(
        '--exit-code',
        'exit 1 when the runs differ (for CI), 0 when they match (2, as without it, when --last-pass finds no passing run)',
      )
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
  mcec-bundle diff "$sid" --last-pass --exit-code; [ $? -eq 1 ] && echo "the run differs from the last good one"`,
    )
    .action((a: string, b: string | undefined, opts: DiffCliOptions) => diff(a, b, opts));
}

/** The dir of the latest passing run of `run`'s scenario before it; an error when there is none. */
async function lastPassDir(root: string, run: { dirName: string }): Promise<string> {
  const { withCatalog } = await import('../../fleet/catalog.js');
  const { lastPassOf } = await import('../../fleet/diff.js');
  return withCatalog(
    root,
    ({ catalog }) => {
      const pass = lastPassOf(catalog, run.dirName);
      if (pass) return path.join(root, pass.dir_name);
      const scenario = catalog.session(run.dirName)?.scenario;
      // Nothing to compare with is not "the runs differ" (exit 1 under --exit-code): it is bad usage, exit 2.
      throw new UsageError(
        `no passing run of ${scenario ? `scenario ${JSON.stringify(scenario)}` : 'sessions without a scenario'} before ${run.dirName}: ` +
          'declare one (mcec-bundle verdict <id> pass) or give two sessions (mcec-bundle diff <a> <b>)',
      );
    },
    { onRebuild: warn },
  );
}

async function diff(a: string, b: string | undefined, opts: DiffCliOptions): Promise<void> {
  if (opts.lastPass ? b !== undefined : b === undefined) {
    throw new UsageError('give two sessions, or one with --last-pass');
  }
  const d = await import('../../fleet/diff.js');
  let dirA: string;
  let dirB: string;
  if (opts.lastPass) {
    const run = await locate(a, opts);
    dirA = await lastPassDir(sessionsDir(opts), run);
    dirB = run.dir;
  } else {
    // Two session dirs given by their paths need no sessions dir: the diff goes beside B's.
    dirA = (await locate(a, opts)).dir;
    dirB = (await locate(b!, opts)).dir;
  }
  const out =
    diffOutputDir(opts.output) ??
    path.join(path.dirname(dirB), 'diffs', `${path.basename(dirA)}--${path.basename(dirB)}`);
  const result = await d.diffSessions(dirA, dirB, {
    outDir: out,
    threshold: opts.threshold,
    maxChangedShare: opts.maxChanged,
  });
  const { writeDiffHtml } = await import('../../fleet/diff-html.js');
  const html = await writeDiffHtml(result, dirA, dirB);
  if (opts.json) print(JSON.stringify(result, null, 2));
  else print(`${d.renderDiffText(result)}\n\n${html}`);
  if (opts.exitCode && result.differs) process.exitCode = EXIT_FAILED;
}

/** `triage --rules FILE`: its rules, or one line of bad usage naming the file and what is wrong with it. */
function givenRules<T>(file: string, load: (file: string) => T): T {
  const abs = path.resolve(file);
  try {
    return load(abs);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== undefined) throw optionFileError('--rules', abs, err);
    throw new UsageError(`--rules ${(err as Error).message}`);
  }
}

/** `diff -o DIR`: as any -o, and not a file (diff writes a directory: diff.html and its PNGs). */
function diffOutputDir(output: string | undefined): string | undefined {
  const dir = outputPath(output);
  if (dir !== undefined && fs.statSync(dir, { throwIfNoEntry: false })?.isFile())
    throw new UsageError(`-o ${dir} is a file: diff writes a directory (diff.html and its PNGs) there`);
  return dir;
}

interface PruneCliOptions extends SessionsOption {
  olderThan: number;
  keepRecent?: number;
  keepFailed?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

/** `prune --older-than <duration>`. */
export function addPruneCommand(program: Command): void {
  withSessions(
    program
      .command('prune')
      .description('delete sessions (and their zips) whose last activity is older than a duration')
      .requiredOption('--older-than <duration>', 'e.g. 7d, 12h, 30m (0: any age)', durationOrZeroArg)
      .option(
        '--keep-recent <duration>',
        'keep any session whose log was written within this long, whatever its status (default: 10m; 0: off). ' +
          'A session whose writer is still running is always kept while it may still write it (open, or ended and ' +
          'written within the last 10m: an ended session idle that long is released by a long-running writer); one ' +
          'still open on another host, whose writer cannot be checked from here, while written within this (10m at least)',
        durationOrZeroArg,
      )
      .option('--keep-failed', 'keep sessions whose verdict is FAIL')
      .option('--dry-run', 'list what would be deleted, delete nothing')
      .option('--json', 'print what was removed and kept as JSON (schema/prune.schema.json)'),
  )
    .addHelpText(
      'after',
      `
Only a session's own dir (<yyyyMMdd-HHmmss>-<id> of its log) is removed: a copy ("<dir> (2)", "<dir> - Copy"),
a renamed dir or one named by hand never is; those old enough are said on stderr ("not considered <dir>").

Example:
  mcec-bundle prune --older-than 7d --keep-failed --dry-run`,
    )
    .action((opts: PruneCliOptions) => prune(opts));
}

async function prune(opts: PruneCliOptions): Promise<void> {
  const dir = sessionsDir(opts);
  const { pruneSessions } = await import('../../sessions/prune.js');
  const kept: Array<{ dir: string; reason: string; detail: string }> = [];
  const skipped: Array<{
    dir: string;
    dirName: string;
    sessionId: string;
    copyOf: string | null;
    reason: 'not-own-dir';
    detail: string;
  }> = [];
  const pruned = await pruneSessions(dir, {
    olderThanMs: opts.olderThan,
    recentMs: opts.keepRecent, // undefined: DEFAULT_PRUNE_RECENT_MS (10 min)
    keepFailed: opts.keepFailed,
    dryRun: opts.dryRun,
    onWarning: warn,
    onKept: (loc, why) => {
      const detail =
        why.kind === 'live-writer'
          ? why.detail
          : why.kind === 'unchecked-writer'
            ? `its log is still open on ${why.host}, where its writer (pid ${why.pid}) cannot be checked from here, ` +
              `and was written ${why.writtenAt === null ? 'at a time that cannot be read' : `at ${why.writtenAt}`} ` +
              '(within --keep-recent, 10 min at least): that writer may still be writing it'
            : why.kind === 'in-use'
              ? `a file in it or its zip is open in another program (${why.error}): kept whole; prune again once it is closed`
              : why.kind === 'not-removed'
                ? `it could not be removed (${why.error})${why.partly ? ': part of it was deleted, what is left is back under its name' : '; nothing was deleted'}`
                : `its log was written at ${why.writtenAt} (within --keep-recent)`;
      kept.push({ dir: loc.dir, reason: why.kind, detail });
      if (!opts.json) printErr(`kept ${loc.dir}: ${detail}`);
    },
    onSkipped: (s) => {
      const detail =
        s.copyOf !== null
          ? `a copy of ${JSON.stringify(s.copyOf)} (session ${s.sessionId}): prune removes only a session's own ` +
            '<stamp>-<id> dir, never a copy; delete it by hand when it is not needed'
          : s.ownName !== null
            ? `session ${s.sessionId} in a dir not named as the recorder names it: prune removes only such dirs; ` +
              `rename it to ${JSON.stringify(s.ownName)} to let prune judge it by its age, or delete it by hand`
            : 'its log cannot be read and it is not named <stamp>-<id>, so neither its session nor its age is ' +
              "known: prune removes only a session's own dir; delete it by hand when it is not needed";
      skipped.push({
        dir: s.dir,
        dirName: s.dirName,
        sessionId: s.sessionId,
        copyOf: s.copyOf,
        reason: 'not-own-dir',
        detail,
      });
      if (!opts.json) printErr(`not considered ${s.dir}: ${detail}`);
    },
  });
  if (opts.json) {
    const removed = pruned.map(({ dirName, dir, zip, lastActivity, verdict }) => ({
      dirName,
      dir,
      zip,
      lastActivity,
      verdict,
    }));
    print(JSON.stringify({ sessionsDir: dir, dryRun: opts.dryRun === true, removed, kept, skipped }));
    return;
  }
  const verb = opts.dryRun ? 'would remove' : 'removed';
  for (const p of pruned) {
    print(
      `${verb} ${p.dir}${p.zip ? ` and ${path.basename(p.zip)}` : ''} (${p.verdict ?? 'unreadable'}, last active ${p.lastActivity})`,
    );
  }
  if (pruned.length === 0) process.stderr.write(`nothing to prune in ${dir}\n`);
}
