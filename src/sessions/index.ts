/** Operations over a sessions dir behind `mcec-bundle`, the MCP server and the CI export: summarize, verdict, prune, list. */

export {
  type ListOptions,
  listingOf,
  listSessionSummaries,
  type SessionListing,
  sessionTable,
} from './list.js';
export {
  DEFAULT_PRUNE_RECENT_MS,
  type KeptReason,
  type PrunedSession,
  type PruneOptions,
  pruneSessions,
} from './prune.js';
export {
  bugReportText,
  failureSummaryFacts,
  failureSummaryText,
  summarizeSession,
  writeFailureSummary,
} from './summarize.js';
export { type DeclaredVerdictResult, declareVerdict, MAX_VERDICT_REASON } from './verdict.js';
