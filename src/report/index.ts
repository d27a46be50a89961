/** Reports: the summary model built from a session log and its Markdown renderings. */

export { safeRelativePath } from '../paths/naming.js';
export { RECOVERY_BY_CATEGORY, recoveryFor } from './recovery.js';
export {
  BUG_REPORT_TEMPLATE,
  BUILTIN_TEMPLATES_DIR,
  FAILURE_SUMMARY_TEMPLATE,
  renderBugReport,
  renderFailureSummary,
  resolveTemplate,
} from './render.js';
export { summarizeCall } from './summarize-call.js';
export { buildSummary } from './summary.js';
export { formatDurationMs, loadTimeFormat, type TimeFormat } from './time.js';
export * from './types.js';
export {
  type CallFact,
  type DeclaredVerdict,
  decideVerdict,
  readVerdictFacts,
  type VerdictDecision,
  type VerdictFacts,
  type VerdictSource,
} from './verdict.js';
