/** Commands on one session: `show`, `summary`, `report` (and `report --all`), `issue-body`, `verdict`. */
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../common.js';
import {
  locate,
  type SessionsOption,
  sessionsDir,
  TEMPLATES_HELP,
  templatesDir,
  withSessions,
} from './args.js';
import { plural, print, printErr, progressReporter, warn } from './io.js';

type RenderOptions = SessionsOption & { templates?: string; json?: boolean };

/** What `summary --json` and `report --json` print (schema/written-file.schema.json). */
function writtenFile(
  kind: 'failure-summary' | 'report-html' | 'index-html',
  file: string,
  session: { dirName: string; sessionId: string } | null,
): string {
  return JSON.stringify({
    kind,
    path: file,
    sessionId: session?.sessionId ?? null,
    dirName: session?.dirName ?? null,
  });
}

/** `show <sessionId>`: the failure summary in the terminal. */
export function addShowCommand(program: Command): void {
  withSessions(program.command('show <sessionId>').description('print the failure summary of a session'))
    .addHelpText('after', '\nExample:\n  mcec-bundle show 5f19c9 | less')
    .option('--templates <dir>', TEMPLATES_HELP)
    .option('--json', "print the summary's facts and its Markdown as JSON (schema/summary.schema.json)")
    .action(async (id: string, opts: RenderOptions) => {
      const session = await locate(id, opts);
      const sessions = await import('../../sessions/summarize.js');
      const render = { templatesDir: templatesDir(opts.templates) };
      if (opts.json) print(JSON.stringify(await sessions.failureSummaryFacts(session.dir, render)));
      else print(await sessions.failureSummaryText(session.dir, render));
    });
}

/** `summary <sessionId>`: failure-summary.md written into the session dir. */
export function addSummaryCommand(program: Command): void {
  withSessions(
    program
      .command('summary <sessionId>')
      .description('write failure-summary.md into the session dir and print its path'),
  )
    .option('--templates <dir>', TEMPLATES_HELP)
    .option(
      '--json',
      'print {"kind", "path", "sessionId", "dirName"} as JSON (schema/written-file.schema.json)',
    )
    .addHelpText('after', '\nExample:\n  mcec-bundle summary 5f19c9')
    .action(async (id: string, opts: RenderOptions) => {
      const session = await locate(id, opts);
      const { writeFailureSummary } = await import('../../sessions/summarize.js');
      const file = await writeFailureSummary(session.dir, { templatesDir: templatesDir(opts.templates) });
      print(opts.json ? writtenFile('failure-summary', file, session) : file);
    });
}

/** `report [sessionId] [--all]`: report.html of a session, or index.html of the sessions dir. */
export function addReportCommand(program: Command): void {
  withSessions(
    program
      .command('report [sessionId]')
      .description(
        'write report.html (the timeline page) into the session dir and print its path; --all: index.html of every session',
      ),
  )
    .option('--templates <dir>', TEMPLATES_HELP)
    .option(
      '--all',
      "write index.html in the sessions dir: every session, filters, the triage groups; and each listed session's report.html that is missing or older than its log",
    )
    .option(
      '--no-pages',
      'with --all: write index.html only (sessions without report.html say how to make it)',
    )
    .option(
      '--json',
      'print {"kind", "path", "sessionId", "dirName"} as JSON (schema/written-file.schema.json)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  xdg-open "$(mcec-bundle report 5f19c9)"\n  xdg-open "$(mcec-bundle report --all)"',
    )
    .action(async (id: string | undefined, opts: RenderOptions & { all?: boolean; pages?: boolean }) => {
      if (opts.all && id !== undefined)
        throw new UsageError('give a session or --all (the index page of every session), not both');
      if (!opts.all && id === undefined) {
        throw new UsageError('give a session, or --all for the index page of every session');
      }
      if (!opts.all && opts.pages === false)
        throw new UsageError('--no-pages goes with --all (index.html only)');
      if (opts.all) {
        const index = await writeIndexPage(sessionsDir(opts), {
          pages: opts.pages !== false,
          templatesDir: templatesDir(opts.templates),
          quiet: opts.json === true,
        });
        return print(opts.json ? writtenFile('index-html', index, null) : index);
      }
      const session = await locate(id!, opts);
      const { writeReportHtml } = await import('../../report/html/write-report.js');
      const file = await writeReportHtml(session.dir, { templatesDir: templatesDir(opts.templates) });
      print(opts.json ? writtenFile('report-html', file, session) : file);
    });
}

/**
 * index.html of every session in `dir`, with the triage groups; returns its path. With `pages`, each listed
 * session's report.html is written first where it is missing or older than its log (sessions recorded
 * through a proxy have none until then), so every link of the index opens a page.
 */
async function writeIndexPage(
  dir: string,
  options: { pages: boolean; templatesDir?: string; quiet: boolean },
): Promise<string> {
  const { withCatalog } = await import('../../fleet/catalog.js');
  const { triage, loadFingerprintRules, RULES_FILE } = await import('../../fleet/triage.js');
  const { writeIndexHtml, stalePages } = await import('../../fleet/index-html.js');
  return withCatalog(
    dir,
    async (res) => {
      if (res.warning) warn(res.warning);
      const sessions = res.catalog.sessions();
      if (options.pages) {
        const { writeReportHtml } = await import('../../report/html/write-report.js');
        const todo = stalePages(dir, sessions);
        const progress = progressReporter('report.html pages');
        let written = 0;
        try {
          for (const [i, dirName] of todo.entries()) {
            try {
              await writeReportHtml(path.join(dir, dirName), { templatesDir: options.templatesDir });
              written += 1;
            } catch (err) {
              warn(`${path.join(dir, dirName)}: report.html not written: ${(err as Error).message}`);
            }
            progress.onProgress?.(i + 1, todo.length);
          }
        } finally {
          progress.stop();
        }
        if (written > 0 && !options.quiet) printErr(`wrote ${plural(written, 'report.html page')}`);
      }
      const rules = loadFingerprintRules(path.join(dir, RULES_FILE), { optional: true });
      const report = triage(res.catalog, { rules, source: { kind: 'sessions', path: dir } });
      return writeIndexHtml(dir, sessions, report);
    },
    { onRebuild: warn },
  );
}

/** `issue-body <sessionId>`: the bug-report body in Markdown. */
export function addIssueBodyCommand(program: Command): void {
  withSessions(
    program
      .command('issue-body <sessionId>')
      .description('print the bug-report body (Markdown) for a GitHub issue'),
  )
    .option('--templates <dir>', TEMPLATES_HELP)
    .addHelpText(
      'after',
      '\nExample:\n  mcec-bundle issue-body 5f19c9 | gh issue create --title "agent failure" --body-file -',
    )
    .action(async (id: string, opts: RenderOptions) => {
      const session = await locate(id, opts);
      const { bugReportText } = await import('../../sessions/summarize.js');
      // The bundle is not built yet: bugReportText names every file it can hold (the default), each one not
      // always there with its condition.
      print(await bugReportText(session.dir, { templatesDir: templatesDir(opts.templates) }));
    });
}

/** `verdict <sessionId> <pass|fail>`: a declared verdict, stored in the log. */
export function addVerdictCommand(program: Command): void {
  withSessions(
    program
      .command('verdict <sessionId> <pass|fail>')
      .description('declare a session passed or failed (stored in its log; the newest declaration wins)')
      .option('-r, --reason <text>', 'why, in a sentence (shown beside the verdict everywhere)')
      .option(
        '--json',
        'print {"sessionId", "passed", "reason", "verdict", "verdictReason"} as JSON (schema/verdict.schema.json)',
      ),
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
  sid=$(mcec-bundle list --json | jq -r '.[0].id')  # the newest session
  ./check-invoice || mcec-bundle verdict "$sid" fail --reason "check-invoice failed"`,
    )
    .action(async (id: string, word: string, opts: SessionsOption & { reason?: string; json?: boolean }) => {
      const lowered = word.toLowerCase();
      if (lowered !== 'pass' && lowered !== 'fail') {
        throw new UsageError(`the verdict must be pass or fail, not ${JSON.stringify(word.slice(0, 40))}`);
      }
      const session = await locate(id, opts);
      const { declareVerdict } = await import('../../sessions/verdict.js');
      const res = await declareVerdict(session.dir, { passed: lowered === 'pass', reason: opts.reason });
      if (opts.json) {
        const { sessionId, passed, reason, verdict, verdictReason } = res;
        print(JSON.stringify({ sessionId, passed, reason, verdict, verdictReason }));
        return;
      }
      print(`${res.sessionId}: ${res.verdict}: ${res.verdictReason}`);
    });
}
