/** The recorder: wrap a dispatch (or feed it a proxy's exchanges) and every call lands in a session log. */
export { environmentOf, recorderVersion, type ServerInfo } from './environment.js';
export {
  isCommandLevelFailure,
  type OutputShape,
  quickOutcome,
  withAbsoluteArtifacts,
} from './outcome.js';
export {
  createRecorder,
  DEFAULT_MAX_ARTIFACT_BYTES,
  DEFAULT_MAX_LOG_BYTES,
  IMAGE_BYTES_OMITTED,
} from './recorder.js';
export type { SessionVia } from './session.js';
export * from './types.js';
