/** Secrets, typed text and stray image bytes out of what a session stores. Pure: no I/O. */
export { scrubImageText } from './image-text.js';
export { scrubInlineSecrets } from './inline-secrets.js';
export * from './redactor.js';
export { DEFAULT_SECRET_KEYS, normalizeKey, secretKeyMatcher } from './secret-keys.js';
export { redactCommandLine, typedTextMarker, typedTextReplacements } from './typed-text.js';
