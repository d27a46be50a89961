/** A verdict declared after the fact: a `verdict` event in the session's log. */
import path from 'node:path';
import { createRedactor } from '../redact/redactor.js';
import type { Verdict } from '../report/types.js';
import { appendSessionEvent } from '../store/append-event.js';
import { touchCatalogSession } from '../store/catalog.js';
import {
  expectBoolean,
  expectNonEmptyString,
  expectObject,
  expectOneOf,
  expectString,
} from '../util/expect.js';
import { summarizeSession } from './summarize.js';

/** Who declared a verdict: `mcec-bundle verdict`, the recorder's API, a notification through a proxy. */
const VIAS = ['cli', 'recorder', 'notification'] as const;

/** Longest reason kept with a declared verdict. */
export const MAX_VERDICT_REASON = 2000;

/** What `declareVerdict` stored and the verdict the session now has. */
export interface DeclaredVerdictResult {
  sessionId: string;
  dir: string;
  passed: boolean;
  /** The reason as stored (secrets scrubbed, clipped), or null. */
  reason: string | null;
  /** The session's verdict after the declaration (the newest declared verdict wins). */
  verdict: Verdict;
  verdictReason: string;
}

/**
 * Declare a session passed or failed after the fact: a `verdict` event `{passed, reason?, via}` in its log
 * (safe while the recorder still writes it). The newest declared verdict wins over the recording's own.
 */
export async function declareVerdict(
  dir: string,
  verdict: { passed: boolean; reason?: string | null; via?: (typeof VIAS)[number] },
): Promise<DeclaredVerdictResult> {
  expectNonEmptyString(dir, 'dir');
  expectObject(verdict, 'verdict');
  expectBoolean(verdict.passed, 'verdict.passed', { required: true });
  if (verdict.reason !== null) expectString(verdict.reason, 'verdict.reason');
  expectOneOf(verdict.via, 'verdict.via', VIAS);
  const detail: Record<string, unknown> = { passed: verdict.passed, via: verdict.via ?? 'cli' };
  let reason: string | null = null;
  if (typeof verdict.reason === 'string' && verdict.reason.trim() !== '') {
    // Inline secrets (password=..., bearer tokens) and image bytes never reach the log.
    const scrubbed = createRedactor().scrubText(verdict.reason.trim());
    reason = scrubbed.length > MAX_VERDICT_REASON ? `${scrubbed.slice(0, MAX_VERDICT_REASON)}...` : scrubbed;
    detail.reason = reason;
  }
  appendSessionEvent(dir, 'verdict', detail);
  // The catalog reads the session again (the dir's time does not move while a recorder holds the log).
  touchCatalogSession(path.dirname(path.resolve(dir)), path.resolve(dir));
  const summary = await summarizeSession(dir);
  return {
    sessionId: summary.sessionId,
    dir,
    passed: verdict.passed,
    reason,
    verdict: summary.verdict,
    verdictReason: summary.verdictReason,
  };
}
