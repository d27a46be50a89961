/** Reads sessions for the CI outputs: each one's summary, and for a FAIL the failure summary's head. */

import { oneDirPerSession } from '../paths/naming.js';
import { renderFailureSummary } from '../report/render.js';
import { summarizeSession } from '../sessions/summarize.js';
import type { SessionLocation } from '../store/session-reader.js';
import { bundleBeside, type CiSession } from './ci-report.js';

/** Lines of failure-summary.md carried by a JUnit failure or an annotation. */
export const SUMMARY_HEAD_LINES = 20;

/**
 * One CiSession per session: an unreadable log is a result too (an error testcase), never a throw; the
 * copies of one session (dirs whose logs have the same id and start) are counted once, as triage counts them
 * (`oneDirPerSession`), and named in the kept one's `copies`.
 */
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
  const { kept, copies } = oneDirPerSession(out, ciIdentity);
  const copiesOf = new Map(copies.map((c) => [c.dirNames[0]!, c.dirNames.slice(1)]));
  return kept.map((s) => {
    const left = copiesOf.get(s.dirName);
    return left ? { ...s, copies: left } : s;
  });
}

/** A CI session as the copy rule sees it: an unreadable log is known by its dir name only, never a copy. */
function ciIdentity(s: CiSession) {
  return s.summary
    ? { dirName: s.dirName, sessionId: s.summary.sessionId, startedAt: s.summary.startedAt }
    : { dirName: s.dirName, sessionId: s.dirName, startedAt: null };
}
