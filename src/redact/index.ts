/** Secrets, typed text and stray image bytes out of what a session stores. Pure: no I/O. */
export * from './image-text.js';
export * from './redactor.js';
export * from './secret-keys.js';
export * from './typed-text.js';
