/**
 * The files of a bug bundle, the bundle's documented contents: the one list of them. src/bundle/build.ts names
 * the zip's entries by it (a name not here does not typecheck), `verifyBundle` requires the `required` ones,
 * bug-report.md's "Agent evidence" (renderBugReport: every file unless told which) and the MCP server's
 * `bundle` tool name them from it; test/bundle/contents.test.ts holds it to a real bundle's manifest. Here, not
 * in src/bundle/, so the report names them without importing the builder; imports nothing.
 */

/** One file at the top of a bundle's folder. */
export interface BundleFile {
  /** Its path in the bundle's folder; `artifacts/` stands for the images under it. */
  name: string;
  /** What it holds, in a few words (shown in bug-report.md and the MCP tool's description). */
  holds: string;
  /** The bundle has it always, or only when the session and the options give it one. */
  when: 'always' | 'images' | 'gif' | 'db';
  /** verifyBundle fails a bundle without it (report.html came later: older bundles verify without one). */
  required: boolean;
}

/** Every file a bundle can hold, in the order a reader is told of them. */
export const BUNDLE_FILES = [
  {
    name: 'failure-summary.md',
    holds: 'the run in short: its verdict and what failed',
    when: 'always',
    required: true,
  },
  { name: 'bug-report.md', holds: 'the issue body', when: 'always', required: true },
  {
    name: 'report.html',
    holds: 'the run as one page: every call, its images, the player',
    when: 'always',
    required: false,
  },
  { name: 'run.gif', holds: 'the run as an animated GIF', when: 'gif', required: false },
  {
    name: 'session.json',
    holds: 'the verdict, the counts, the failing call, the steps',
    when: 'always',
    required: true,
  },
  {
    name: 'tool-calls.jsonl',
    holds: 'the JSON-RPC messages, one per line, secrets redacted',
    when: 'always',
    required: true,
  },
  {
    name: 'environment.json',
    holds: 'where it ran: host, OS, server, versions',
    when: 'always',
    required: true,
  },
  { name: 'artifacts/', holds: 'the captured images', when: 'images', required: false },
  { name: 'session.sqlite', holds: 'the session log', when: 'db', required: false },
  {
    name: 'manifest.json',
    holds: "every other file's size and sha256, and what was left out",
    when: 'always',
    required: true,
  },
] as const satisfies readonly BundleFile[];

/** The name of a file a bundle can hold. */
export type BundleFileName = (typeof BUNDLE_FILES)[number]['name'];

/** When a bundle has a file that is not always there (each can be turned off: `gif`, `images`, `db`). */
const CONDITIONS: Readonly<Record<Exclude<BundleFile['when'], 'always'>, string>> = {
  gif: 'when the session has two still images or more, unless turned off',
  images: 'unless turned off',
  db: 'unless turned off',
};

/** What the bundle being built holds: whether it has images, run.gif and the log. */
export interface BundleHas {
  images: boolean;
  gif: boolean;
  db: boolean;
}

/**
 * The files to name to a reader, each with what it holds: with `has`, exactly the files that bundle holds;
 * without (a bundle not built yet), every file, each one not always there with its condition.
 */
export function bundleFileList(has?: BundleHas): Array<{ name: string; holds: string }> {
  const out: Array<{ name: string; holds: string }> = [];
  for (const f of BUNDLE_FILES as readonly BundleFile[]) {
    if (f.when === 'always') out.push({ name: f.name, holds: f.holds });
    else if (!has) out.push({ name: f.name, holds: `${f.holds}; ${CONDITIONS[f.when]}` });
    else if (has[f.when]) out.push({ name: f.name, holds: f.holds });
  }
  return out;
}

/** The files as one phrase for a description: `` `a` (what), `b` (what) and `c` (what) ``. */
export function bundleFilesPhrase(files: ReadonlyArray<{ name: string; holds: string }>): string {
  const items = files.map((f) => `\`${f.name}\` (${f.holds})`);
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
