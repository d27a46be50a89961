/** Image bytes out of envelopes: files once per sha256, capture summaries, the server's blankCheck. */
export * from './artifact-store.js';
export * from './blank-check.js';
export * from './compact.js';
export * from './host-files.js';
