/**
 * mcec-recorder's public API: what a consumer records with, reads a session with and bundles it with.
 * An explicit list (README "Library API"; test/package/consumer.test.ts checks it): internals stay reachable
 * only by their module paths inside this repository. The simulator and the demo are `mcec-recorder/sim`.
 * One composition besides: `createRecorder`, the recorder with fleet's catalog sidecars wired in.
 */

import { writeCatalogSidecars } from './fleet/catalog-sidecars.js';
import { createRecorder as createRecorderWithHandler } from './record/recorder.js';
import type { Recorder, RecorderOptions } from './record/types.js';

// Bundles and the sessions dir (what mcec-bundle does).
export { type BundleOptions, type BundleResult, buildBundle } from './bundle/build.js';
export type { EnvironmentJson, ManifestJson, SessionJson } from './bundle/documents.js';
export { type VerifyResult, verifyBundle } from './bundle/verify.js';
// The envelope contract: read any result shape, find its session id, validate it.
export { readToolOutput } from './contract/read-tool-output.js';
export { sessionIdOf } from './contract/session-id.js';
export {
  type BlankCheck,
  type CaptureSummary,
  type Envelope,
  ERROR_CATEGORIES,
  type ErrorCategory,
  type FailureEnvelope,
  type MaskedRegion,
  type SuccessEnvelope,
  type ToolError,
  type ToolOutput,
  type ToolOutputKind,
  type ValidationResult,
  type Violation,
  type Warning,
  type WindowInfo,
} from './contract/types.js';
export { validateCaptureSummary, validateEnvelope } from './contract/validate.js';
// Secrets out of the pixels: the masking options and the user's rules (a rules file's JSON).
export { MaskRuleError, parseMaskRules } from './mask/rules.js';
export type { MaskMode, MaskOptions, MaskRule } from './mask/types.js';
export { type HttpProxy, type HttpProxyOptions, ProxyConfigError, startHttpProxy } from './proxy/http.js';
export { runStdioProxy, type StdioProxyOptions } from './proxy/stdio.js';
// Recording: wrap a dispatch, or put a proxy on the wire.
export { recorderVersion, type ServerInfo } from './record/environment.js';
export { DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_MAX_LOG_BYTES } from './record/recorder.js';
export type {
  CloseOptions,
  Dispatch,
  Recorder,
  RecorderOptions,
  SessionCounts,
  SessionInfo,
  Transport,
} from './record/types.js';

/**
 * Create a recorder (src/record/README.md; bad options throw at once). The sessions it closes get their
 * catalog sidecars (`catalog-entry.json`): this entry point wires fleet's writer in (src/record/README.md
 * "Closed sessions").
 */
export function createRecorder(options?: RecorderOptions): Recorder {
  return createRecorderWithHandler(options, writeCatalogSidecars);
}

// Redaction (the recorder applies it; exported for checking text the same way).
export { createRedactor, type RedactOptions, type Redactor } from './redact/redactor.js';
// Replaying a recorded session as MCEC.
export {
  type ReplayHandle,
  type ReplayReport,
  type ReplaySessionOptions,
  replaySession,
} from './replay/index.js';
export { type ReportHtmlOptions, renderReportHtml } from './report/html/render-html.js';
export { writeReportHtml } from './report/html/write-report.js';
export { renderBugReport, renderFailureSummary } from './report/render.js';
export { buildSummary } from './report/summary.js';
export type {
  BugReportOptions,
  CallDigest,
  ImageDigest,
  ObservationDigest,
  RenderOptions,
  SessionSummary,
  SummaryOptions,
  TargetDigest,
  TimelineLine,
  Verdict,
} from './report/types.js';
export { listSessionSummaries, type SessionListing } from './sessions/list.js';
export { type PrunedSession, type PruneOptions, pruneSessions } from './sessions/prune.js';
export {
  bugReportText,
  failureSummaryText,
  summarizeSession,
  writeFailureSummary,
} from './sessions/summarize.js';
export { type DeclaredVerdictResult, declareVerdict } from './sessions/verdict.js';
// Reading a session: the summary model and its documents.
export { SessionReader } from './store/session-reader.js';
