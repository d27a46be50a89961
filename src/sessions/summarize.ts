/** One session summarized, and its failure summary and bug report as text or written into the session dir. */
import path from 'node:path';
import { checkBundleFiles, renderBugReport, renderFailureSummary } from '../report/render.js';
import { buildSummary } from '../report/summary.js';
import { FULL_FACTS, type SummaryFacts, summaryFacts } from '../report/summary-facts.js';
import type { BugReportOptions, SessionSummary } from '../report/types.js';
import { writeFileAtomic } from '../report/write-atomic.js';
import { SessionReader } from '../store/session-reader.js';
import { expectNonEmptyString, expectOptions, expectString } from '../util/expect.js';

/** Summarize one session (opens and closes its log). */
export async function summarizeSession(dir: string): Promise<SessionSummary> {
  expectNonEmptyString(dir, 'dir');
  const reader = SessionReader.open(dir);
  try {
    return await buildSummary(reader);
  } finally {
    reader.close();
  }
}

/** Write `failure-summary.md` into the session dir (atomically) and return its path. */
export async function writeFailureSummary(
  dir: string,
  options: { templatesDir?: string } = {},
): Promise<string> {
  checkDirAndTemplates(dir, options);
  const summary = await summarizeSession(dir);
  const text = await renderFailureSummary(summary, options);
  const file = path.join(dir, 'failure-summary.md');
  writeFileAtomic(file, text);
  return file;
}

/** The failure summary as Markdown. */
export async function failureSummaryText(
  dir: string,
  options: { templatesDir?: string } = {},
): Promise<string> {
  checkDirAndTemplates(dir, options);
  return renderFailureSummary(await summarizeSession(dir), options);
}

/** The failure summary's facts with its Markdown (`schema/summary.schema.json`): `mcec-bundle show --json`. */
export async function failureSummaryFacts(
  dir: string,
  options: { templatesDir?: string } = {},
): Promise<SummaryFacts> {
  const summary = await summarizeSession(dir);
  return summaryFacts(summary, await renderFailureSummary(summary, options), FULL_FACTS);
}

/**
 * The bug-report body as Markdown (ends with the name of the zip to attach). `bundleFiles`: the files that
 * zip holds, named under "Agent evidence"; absent, every file a bundle can hold (renderBugReport's default,
 * `bundleFileList()` of `src/contract/bundle-files.ts`), as `mcec-bundle issue-body` prints; `[]`: none.
 */
export async function bugReportText(
  dir: string,
  options: Pick<BugReportOptions, 'templatesDir' | 'bundleFiles'> = {},
): Promise<string> {
  checkDirAndTemplates(dir, options);
  checkBundleFiles(options.bundleFiles);
  const summary = await summarizeSession(dir);
  return renderBugReport(summary, { ...options, bundleName: `${summary.dirName}.zip` });
}

/** A session dir and `{templatesDir}`, checked at the boundary (TypeError/RangeError naming the argument). */
function checkDirAndTemplates(dir: unknown, options: unknown): void {
  expectNonEmptyString(dir, 'dir');
  expectString(expectOptions(options).templatesDir, 'options.templatesDir', { nonEmpty: true });
}
