/** The SQLite session log: schema, migrations, on-disk layout and the group-committing writer. */

export * from '../paths/naming.js';
export * from './append-event.js';
export * from './catalog.js';
export * from './log-pool.js';
export * from './open.js';
export * from './schema.js';
export * from './session-log.js';
export * from './session-reader.js';
