import Database from 'better-sqlite3';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';

export type SessionDb = Database.Database;

/** Open (and, for a writer, create and migrate) a session log with the pragmas the design asks for. */
export function openSessionDb(file: string, options: { readonly?: boolean } = {}): SessionDb {
  if (options.readonly) {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 2000');
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      db.close();
      throw new Error(
        `${file}: log schema version ${version} is newer than this recorder's (${SCHEMA_VERSION})`,
      );
    }
    return db;
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 2000');
  migrate(db);
  return db;
}

/** Bring a log up to the current schema version, one transaction per step. */
export function migrate(db: SessionDb): void {
  let version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new Error(`log schema version ${version} is newer than this recorder's (${SCHEMA_VERSION})`);
  }
  while (version < SCHEMA_VERSION) {
    const step = MIGRATIONS[version]!;
    db.transaction(() => {
      db.exec(step);
      db.pragma(`user_version = ${version + 1}`);
    })();
    version += 1;
  }
}
