/** Commands that send sessions elsewhere: `export` (OTLP traces) and `junit` (CI test reports). */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../common.js';
import { checkTracesEndpoint } from '../otlp-endpoint.js';
import {
  durationArg,
  formatArg,
  headerArg,
  locate,
  outputPath,
  type SessionsOption,
  sessionsDir,
  sinceDirs,
  TEMPLATES_HELP,
  templatesDir,
  withSessions,
} from './args.js';
import { EXIT_FAILED, plural, print, printErr, progressReporter } from './io.js';

interface ExportCliOptions extends SessionsOption {
  since?: number;
  otlp?: string;
  header?: Record<string, string>;
  includeArguments?: boolean;
  json?: boolean;
}

/** `export [sessionId] [--since]`: a trace per session to an OTLP collector. */
export function addExportCommand(program: Command): void {
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
        'the traces endpoint, an http(s) URL (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else http://localhost:4318/v1/traces); credentials in it are shown as ***',
      )
      .option(
        '-H, --header <name=value>',
        'an HTTP header for the collector (name=value, or "name: value" as curl takes it; repeatable)',
        headerArg,
      )
      .option('--include-arguments', "put each call's (redacted) arguments on its span")
      .option('--json', 'print the result as JSON (schema/export.schema.json)'),
  )
    .addHelpText(
      'after',
      `
Trace and span ids come from the session id and the call numbers, so sending a session twice sends the same
spans (a backend keeps one copy). Images are never sent: a span names its images by sha256 and path.
Exit code 1 when a span could not be delivered. A session still being recorded is not sent (its root span
is not final): with --since it is left out and named on stderr (stillRecording in --json), named alone it is
exit 1.

Examples:
  mcec-bundle export 5f19c9 --otlp http://collector:4318/v1/traces
  mcec-bundle export --since 7d -H "authorization=Bearer $TOKEN"`,
    )
    .action((id: string | undefined, opts: ExportCliOptions) => exportTraces(id, opts));
}

async function exportTraces(id: string | undefined, opts: ExportCliOptions): Promise<void> {
  if ((id === undefined) === (opts.since === undefined)) {
    throw new UsageError('name one session, or give --since for every session started within a duration');
  }
  checkTracesEndpoint(opts.otlp);
  const named = id !== undefined ? [(await locate(id, opts)).dir] : await sinceDirs(opts, opts.since ?? 0);
  // A session still being recorded has no final root span yet (same id, another content): it waits.
  const recording = await stillRecording(named);
  if (id !== undefined && recording.length > 0)
    throw new Error(
      `${named[0]}: the session is still being recorded; export it once it has ended (or send it live: mcec-record --otlp)`,
    );
  const dirs = named.filter((d) => !recording.includes(d));
  const { exportSessions } = await import('../../export/backfill.js');
  const progress = progressReporter('exporting sessions');
  const res = await exportSessions(dirs, {
    url: opts.otlp,
    headers: opts.header ?? {},
    includeArguments: opts.includeArguments,
    onProgress: progress.onProgress,
  }).finally(() => progress.stop());
  if (opts.json) print(JSON.stringify({ ...res, stillRecording: recording }));
  else {
    for (const d of recording)
      printErr(`mcec-bundle: ${d}: still being recorded, not exported (its root span is not final)`);
    print(`sent ${res.exported} of ${res.spans} spans from ${plural(res.sessions, 'session')} to ${res.url}`);
    for (const u of res.unreadable) printErr(`mcec-bundle: ${u.dir}: ${u.error}`);
    if (res.copies.length > 0) {
      const { copiesLine } = await import('../../paths/naming.js');
      for (const c of res.copies) printErr(`mcec-bundle: ${copiesLine(c)}`);
    }
    if (res.dropped > 0)
      printErr(`mcec-bundle: ${res.dropped} spans not delivered: ${res.lastError ?? 'export failed'}`);
  }
  if (res.dropped > 0 || res.unreadable.length > 0) process.exitCode = EXIT_FAILED;
}

/** The dirs among `dirs` whose session is still being recorded here: open, its writer running. */
async function stillRecording(dirs: string[]): Promise<string[]> {
  const { SessionReader } = await import('../../store/session-reader.js');
  return dirs.filter((dir) => {
    try {
      const reader = SessionReader.open(dir);
      try {
        return reader.session().status === 'open';
      } finally {
        reader.close();
      }
    } catch {
      return false; // unreadable: the export says so
    }
  });
}

interface JunitCliOptions extends SessionsOption {
  since?: number;
  scenario?: string;
  format: 'junit' | 'github';
  output?: string;
  templates?: string;
  json?: boolean;
}

/** `junit`: a testcase per session, or GitHub workflow annotations. */
export function addJunitCommand(program: Command): void {
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
      .option('--templates <dir>', TEMPLATES_HELP)
      .option(
        '--json',
        'with -o: print what was written as JSON (schema/junit-summary.schema.json) instead of a line on stderr',
      ),
  )
    .addHelpText(
      'after',
      `
Exit code 0 even when sessions failed: the report says so, and the CI's test reporter fails the job.

Examples:
  mcec-bundle junit --since 24h -o results.xml
  mcec-bundle junit --since 24h --format github      (in a GitHub Actions step)`,
    )
    .action((opts: JunitCliOptions) => junit(opts));
}

async function junit(opts: JunitCliOptions): Promise<void> {
  const output = outputPath(opts.output);
  const isDir = (p: string) =>
    p.endsWith(path.sep) || fs.statSync(p, { throwIfNoEntry: false })?.isDirectory();
  if (output !== undefined && isDir(output))
    throw new UsageError(`-o ${output} names a directory: junit writes one file (-o results.xml)`);
  if (opts.json && !output)
    throw new UsageError('--json needs -o FILE: without it stdout is the report itself');
  const { selectSessions, junitXml, githubAnnotations, scenarioOf, copiesOfCi } = await import(
    '../../export/ci-report.js'
  );
  const { readCiSessions } = await import('../../export/ci-sessions.js');
  const locations = selectSessions(sessionsDir(opts), { sinceMs: opts.since });
  let sessions = await readCiSessions(locations, { templatesDir: templatesDir(opts.templates) });
  if (opts.scenario !== undefined) sessions = sessions.filter((s) => scenarioOf(s) === opts.scenario);
  const os = await import('node:os');
  const text =
    opts.format === 'github' ? githubAnnotations(sessions) : junitXml(sessions, { hostname: os.hostname() });
  if (output) {
    const { writeFileAtomic } = await import('../../report/write-atomic.js');
    writeFileAtomic(output, text);
    if (opts.json) {
      const passed = sessions.filter((s) => s.summary?.verdict === 'PASS').length;
      const unreadable = sessions.filter((s) => s.summary === null).length;
      const failed = sessions.length - passed - unreadable;
      print(
        JSON.stringify({
          format: opts.format,
          output,
          sessions: sessions.length,
          passed,
          failed,
          unreadable,
          copies: sessions.map(copiesOfCi).filter((c) => c !== null),
        }),
      );
    } else printErr(`wrote ${output} (${plural(sessions.length, 'session')})`);
  } else process.stdout.write(text);
  // A copied session is one testcase: which dirs were left out, on stderr beside the report (and in it).
  if (!opts.json) {
    const { copiesLine } = await import('../../paths/naming.js');
    for (const s of sessions) {
      const copies = copiesOfCi(s);
      if (copies) printErr(`mcec-bundle: ${copiesLine(copies)}`);
    }
  }
}
