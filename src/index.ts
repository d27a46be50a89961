/** mcec-recorder's public API: the contract model, the recorder, reports and bundles. */
export * from './contract/index.js';
