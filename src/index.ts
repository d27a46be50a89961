/** mcec-recorder's public API: the contract model, the recorder, reports and bundles. */

export * from './artifacts/index.js';
export * from './bundle/index.js';
export * from './contract/index.js';
export * from './demo/index.js';
export * from './proxy/index.js';
export * from './record/index.js';
export * from './redact/index.js';
export {
  type ReplayHandle,
  type ReplayReport,
  type ReplaySessionOptions,
  replaySession,
} from './replay/index.js';
export * from './report/html/index.js';
export * from './report/index.js';
export * from './sim/index.js';
export * from './store/index.js';
