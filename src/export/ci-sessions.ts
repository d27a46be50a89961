/** Reads sessions for the CI outputs: each one's summary, and for a FAIL the failure summary's head. */

import { oneDirPerSession } from '../paths/naming.js';
import { renderFailureSummary } from '../report/render.js';
import { summarizeSession } from '../sessions/summarize.js';
import type { SessionLocation } from '../store/session-reader.js';
import { bundleBeside, type CiSession } from './ci-report.js';

/** Lines of failure-summary.md carried by a JUnit failure or an annotation. */
export const SUMMARY_HEAD_LINES = 20;

/**
 * The first `maxLines` lines of a failure summary, cut where a paragraph ends outside a code fence and without
 * a last paragraph that only introduces what was cut (a heading, `Its arguments (secrets redacted):`): a cut
 * inside a fence left CI's Markdown an unclosed block swallowing what follows.
 */
export function summaryHead(text: string, maxLines = SUMMARY_HEAD_LINES): string {
  const lines = text.split('\n');
  if (lines.length <= maxLines) return text;
  // Paragraph ends (a non-blank line before a blank one) outside a fence, within the budget.
  const ends: number[] = [];
  let fenced = false;
  for (let i = 0; i < maxLines; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && line.trim() !== '' && (lines[i + 1] ?? '').trim() === '') ends.push(i + 1);
  }
  // Drop trailing paragraphs that introduce what follows them.
  while (ends.length > 0) {
    const end = ends[ends.length - 1]!;
    const last = lines[end - 1]!;
    if (!last.startsWith('#') && !last.trimEnd().endsWith(':')) break;
    ends.pop();
  }
  const cut = ends[ends.length - 1];
  if (cut === undefined) return lines.slice(0, maxLines).join('\n');
  return lines.slice(0, cut).join('\n');
}

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
      let head: string | null = null;
      if (summary.verdict === 'FAIL' && summary.status !== 'open') {
        head = summaryHead(await renderFailureSummary(summary, options));
      }
      out.push({ ...base, summary, summaryHead: head });
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
