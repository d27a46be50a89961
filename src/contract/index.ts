/** The envelope contract in code: types, validation, transport reading and the image-bytes finder. */
export * from './image-bytes.js';
export * from './read-tool-output.js';
export * from './session-id.js';
export * from './tool-catalog.js';
export * from './types.js';
export * from './validate.js';
