/** `mcec-bundle [bundle] <id>` writes a session's bug bundle; `verify <zip>` checks one. */
import fs from 'node:fs';
import type { Command } from 'commander';
import { similarName, UsageError } from '../common.js';
import {
  locate,
  optionFileError,
  outputPath,
  type SessionsOption,
  sizeArg,
  TEMPLATES_HELP,
  templatesDir,
  withSessions,
} from './args.js';
import { EXIT_FAILED, print, printErr, progressReporter, warn } from './io.js';

interface BundleCliOptions extends SessionsOption {
  output?: string;
  json?: boolean;
  images: boolean;
  db: boolean;
  gif: boolean;
  maxBytes?: number;
  templates?: string;
  maskRules?: string;
}

interface VerifyCliOptions {
  json?: boolean;
  maxEntryBytes?: number;
  maxTotalBytes?: number;
  maxJsonBytes?: number;
  templates?: string;
}

/** `bundle <sessionId>`, the default command. */
export function addBundleCommand(program: Command): void {
  withSessions(
    program
      .command('bundle <sessionId>', { isDefault: true })
      .description(
        'write the bug bundle (a zip) of a session and print its path (the default command); its report.html is also written into the session dir (path on stderr)',
      )
      .option(
        '-o, --output <file>',
        'where to write the zip: a file, or a directory (an existing one, or DIR/, made then) to hold <session dir>.zip (default: <sessions dir>/<session dir>.zip)',
      )
      .option('--json', 'print the result as JSON (schema/bundle-result.schema.json)')
      .option(
        '--no-images',
        'leave the image files out (report.html keeps its small inline thumbnails and run.gif is still drawn: --no-gif leaves it out too)',
      )
      .option('--no-db', 'leave session.sqlite out')
      .option('--no-gif', "leave run.gif out (the run as an animated GIF with the agent's actions drawn in)")
      .option(
        '--max-bytes <size>',
        'drop the oldest images until the zip fits (10MB, 500KB; K/M/G = 1024-based)',
        sizeArg,
      )
      .option('--templates <dir>', TEMPLATES_HELP)
      .option(
        '--mask-rules <file>',
        "paint these mask rules (JSON, schema/mask-rules.schema.json) over the session's images in the bundle; the session is not changed",
      ),
  )
    .addHelpText(
      'after',
      `
Examples:
  mcec-bundle 5f19c9
  mcec-bundle bundle 5f19c9c01a3f --no-db -o bug.zip
  mcec-bundle bundle 5f19c9 --mask-rules mask-rules.json
  mcec-bundle 5f19c9 --max-bytes 25MB --json`,
    )
    .action((id: string, opts: BundleCliOptions) => bundle(id, opts, program));
}

/**
 * The session to bundle. The default command reads any word as a session id, so a word that names no
 * session but looks like a mistyped command (`lsit`, `version`) is said to be one: bad usage, exit 2.
 */
async function locateOrSuggest(id: string, opts: BundleCliOptions, program: Command) {
  try {
    return await locate(id, opts);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const names = program.commands.map((c) => c.name()).filter((n) => n !== 'bundle');
    const command = similarName(id, [...names, 'help']);
    const flag = similarName(id, ['version']) ? '--version' : null;
    const meant = command ? `mcec-bundle ${command}` : flag ? `mcec-bundle ${flag}` : null;
    if (meant)
      throw new UsageError(
        `unknown command "${id}": did you mean ${meant}? (no session id starts with ${JSON.stringify(id)} either)`,
      );
    throw err;
  }
}

async function bundle(id: string, opts: BundleCliOptions, program: Command): Promise<void> {
  const session = await locateOrSuggest(id, opts, program);
  const maskRules = opts.maskRules === undefined ? undefined : await readMaskRules(opts.maskRules);
  const { buildBundle } = await import('../../bundle/build.js');
  const progress = progressReporter();
  let result: Awaited<ReturnType<typeof buildBundle>>;
  try {
    result = await buildBundle(session.dir, {
      output: outputPath(opts.output),
      images: opts.images,
      db: opts.db,
      gif: opts.gif,
      maxBytes: opts.maxBytes,
      templatesDir: templatesDir(opts.templates),
      reportHtmlInSessionDir: true,
      onProgress: progress.onProgress,
      ...(maskRules ? { maskRules } : {}),
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_OUTPUT_IN_SESSION')
      throw new UsageError((err as Error).message);
    throw err;
  } finally {
    progress.stop();
  }
  for (const w of result.warnings) warn(w);
  // The zip is written either way (it is still the evidence), but a cap that was not met is a failed job.
  if (result.limitMet === false) process.exitCode = EXIT_FAILED;
  if (opts.json) {
    const { bundleResultJson } = await import('../../bundle/build.js');
    print(JSON.stringify(bundleResultJson(result)));
    return;
  }
  // stdout stays the zip's path alone (scripts take it with $(...)); the page's path is for the person.
  if (result.reportHtml) printErr(`report.html (open it in a browser): ${result.reportHtml}`);
  print(result.bundle);
}

/** `verify <zip>`. */
export function addVerifyCommand(program: Command): void {
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
    .option('--json', 'print {"zip", "ok", "entries", "problems"} as JSON (schema/verify.schema.json)')
    .addHelpText('after', '\nExample:\n  mcec-bundle verify sessions/20261202-101500-5f19c9c01a3f.zip')
    .action((zip: string, opts: VerifyCliOptions) => verify(zip, opts));
}

async function verify(zip: string, opts: VerifyCliOptions): Promise<void> {
  // Nothing to check is "not found" (exit 1) in one line, not a problem list quoting Node's ENOENT.
  const stat = fs.statSync(zip, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new Error(`verify: ${zip} ${stat ? 'is not a file' : 'does not exist'}`);
  const { verifyBundle } = await import('../../bundle/verify.js');
  const res = await verifyBundle(zip, {
    maxEntryBytes: opts.maxEntryBytes,
    maxTotalBytes: opts.maxTotalBytes,
    maxJsonBytes: opts.maxJsonBytes,
    templatesDir: opts.templates,
  });
  if (opts.json) {
    print(JSON.stringify({ zip, ok: res.ok, entries: res.entries, problems: res.problems }));
    if (!res.ok) process.exitCode = EXIT_FAILED;
    return;
  }
  if (res.ok) {
    print(`ok: ${zip} (${res.entries} entries)`);
    return;
  }
  printErr(`${zip}: ${res.problems.length} problem(s):`);
  for (const p of res.problems) printErr(`  - ${p}`);
  process.exitCode = EXIT_FAILED;
}

/** `--mask-rules FILE`: the rules, or a usage error naming the file and what is wrong in it. */
async function readMaskRules(file: string) {
  const { parseMaskRulesText } = await import('../../mask/rules.js');
  const { readTextFile } = await import('../../util/text-file.js');
  let text: string;
  try {
    text = readTextFile(file);
  } catch (e) {
    throw optionFileError('--mask-rules', file, e);
  }
  try {
    return parseMaskRulesText(text, `--mask-rules ${file}`);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}
