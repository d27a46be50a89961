/**
 * A session log that came from elsewhere (a bundle's `session.sqlite`) is data, never code: before any query
 * of ours runs on it, its schema must be exactly one this recorder wrote (the same tables, columns,
 * indexes and nothing else: no view or trigger can stand in for a table and run a query of its author's),
 * its pages must pass SQLite's `quick_check`, and no value may be larger than a reader holds in memory.
 * Every check reads at most the file's own pages once (lengths without loading the values), so it is
 * bounded by the file's size, which the callers cap.
 */
import Database from 'better-sqlite3';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';
import { compareSchema, readSchema, type SchemaObject } from './schema-check.js';
import { addonOption } from './sqlite-addon.js';

/** Largest value (text or blob, in bytes) a foreign log may hold; a reader holds one at a time. */
export const FOREIGN_LOG_MAX_VALUE_BYTES = 64 * 1024 * 1024;
/** Schema objects read from `sqlite_master` before the file is refused (ours has about 20). */
const MAX_SCHEMA_OBJECTS = 200;

const expectedByVersion = new Map<number, SchemaObject[]>();

/** The schema objects MIGRATIONS create up to `version`, as SQLite stores them. */
function expectedSchema(version: number): SchemaObject[] {
  let objects = expectedByVersion.get(version);
  if (!objects) {
    const db = new Database(':memory:', addonOption());
    try {
      for (let v = 0; v < version; v++) db.exec(MIGRATIONS[v]!);
      objects = readSchema(db, Number.POSITIVE_INFINITY);
    } finally {
      db.close();
    }
    expectedByVersion.set(version, objects);
  }
  return objects;
}

/**
 * How the open log's schema differs from the one our migrations make at its `version` (a view, a trigger, a
 * table or index of another definition), or null. Reads `sqlite_master` only: cheap enough for every open.
 */
export function logSchemaProblem(db: Database.Database, version: number): string | null {
  const found = readSchema(db, MAX_SCHEMA_OBJECTS);
  if (found.length > MAX_SCHEMA_OBJECTS) return `more than ${MAX_SCHEMA_OBJECTS} schema objects`;
  return compareSchema(found, expectedSchema(version));
}

/**
 * Why the log at `file` must not be read, or null when it is one of ours. Never throws: a file SQLite cannot
 * open is a reason too.
 */
export function foreignLogProblem(file: string, options: { maxValueBytes?: number } = {}): string | null {
  const maxValue = options.maxValueBytes ?? FOREIGN_LOG_MAX_VALUE_BYTES;
  let db: Database.Database;
  try {
    db = new Database(file, { ...addonOption(), readonly: true, fileMustExist: true });
  } catch (err) {
    return `not a SQLite database (${(err as Error).message})`;
  }
  try {
    // A bundle's log carries no WAL; never let one beside it change what is checked.
    const version = db.pragma('user_version', { simple: true }) as number;
    if (!Number.isInteger(version) || version < 1 || version > SCHEMA_VERSION)
      return `log schema version ${version}; this recorder writes versions 1 to ${SCHEMA_VERSION}`;
    const schemaProblem = logSchemaProblem(db, version);
    if (schemaProblem) return `not a session log this recorder wrote: ${schemaProblem}`;
    const check = db.pragma('quick_check(1)', { simple: true });
    if (check !== 'ok') return `damaged: ${String(check).slice(0, 200)}`;
    return oversizeValue(db, expectedSchema(version), maxValue);
  } catch (err) {
    return `cannot be read: ${(err as Error).message.slice(0, 200)}`;
  } finally {
    db.close();
  }
}

/**
 * The first value over `maxValue` bytes, or null. `octet_length` of a column is read from the record header
 * alone (SQLite does not load overflow pages for it), so this costs one pass over the tables' leaf pages.
 */
function oversizeValue(db: Database.Database, schema: SchemaObject[], maxValue: number): string | null {
  for (const table of schema) {
    if (table.type !== 'table' || table.name.startsWith('sqlite_')) continue;
    const columns = (db.pragma(`table_info("${table.name}")`) as Array<{ name: string }>).map((c) => c.name);
    const lengths = columns.map((c) => `max(octet_length("${c}"))`).join(', ');
    const row = db.prepare(`SELECT ${lengths} FROM "${table.name}"`).raw().get() as Array<number | null>;
    for (let i = 0; i < columns.length; i++) {
      const bytes = row[i];
      if (typeof bytes === 'number' && bytes > maxValue)
        return `${table.name}.${columns[i]} holds a value of ${bytes} bytes, over the ${maxValue} a reader holds`;
    }
  }
  return null;
}
