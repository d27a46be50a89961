/** Reads sessions for the CI outputs: each one's summary, and for a FAIL the failure summary's head. */

import { renderFailureSummary } from '../report/render.js';
import { summarizeSession } from '../sessions/summarize.js';
import type { SessionLocation } from '../store/session-reader.js';
import { bundleBeside, type CiSession } from './ci-report.js';

/** Lines of failure-summary.md carried by a JUnit failure or an annotation. */
export const SUMMARY_HEAD_LINES = 20;

/** One CiSession per location; an unreadable log is a result too (an error testcase), never a throw. */
export async function readCiSessions(
  locations: SessionLocation[],
  options: { templatesDir?: string } = {},
): Promise<CiSession[]> {
  const out: CiSession[] = [];
  for (const loc of locations) {
    const base = { dir: loc.dir, dirName: loc.dirName, bundle: bundleBeside(loc.dir) };
    try {
      const summary = await summarizeSession(loc.dir);
      // A session without a tool call is not a run (list leaves it out too).
      if (summary.counts.calls === 0) continue;
      let summaryHead: string | null = null;
      if (summary.verdict === 'FAIL' && summary.status !== 'open') {
        const text = await renderFailureSummary(summary, options);
        summaryHead = text.split('\n').slice(0, SUMMARY_HEAD_LINES).join('\n');
      }
      out.push({ ...base, summary, summaryHead });
    } catch (err) {
      out.push({ ...base, summary: null, summaryHead: null, error: (err as Error).message });
    }
  }
  return out;
}
