/** The bug bundle: builder and verifier (the sessions-dir operations are `src/sessions/`). */

export { formatBytes, parseByteSize, parseDuration } from '../util/units.js';
export { type BundleOptions, type BundleResult, buildBundle } from './build.js';
export { snapshotSessionDb } from './db-snapshot.js';
export type {
  DroppedFile,
  EnvironmentJson,
  ManifestFile,
  ManifestJson,
  SessionJson,
} from './documents.js';
export { REDACTED_BASE64, scrubImageBytes } from './scrub.js';
export { buildToolCallLog, TOOL_CALL_LOG_CAP, TRUNCATION_LINE } from './tool-call-log.js';
export { REQUIRED_FILES, type VerifyResult, verifyBundle } from './verify.js';
