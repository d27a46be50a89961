/**
 * A SQLite file's schema compared with the one our migrations make: every table, column and index as SQLite
 * stores its definition (`sqlite_master`), and nothing else (no view or trigger, which would run a query of
 * the file's author). Used for logs from bundles and for the sessions catalog, a cache rebuilt when it is not
 * ours.
 */
import type Database from 'better-sqlite3';

/** One row of `sqlite_master`. */
export interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** The file's schema objects, reading at most `max + 1` of them. */
export function readSchema(db: Database.Database, max: number): SchemaObject[] {
  const out: SchemaObject[] = [];
  const stmt = db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name');
  for (const row of stmt.iterate() as Iterable<SchemaObject>) {
    out.push(row);
    if (out.length > max) break;
  }
  return out;
}

const key = (o: SchemaObject) => `${o.type} ${JSON.stringify(o.name)}`;

/** The first difference between a file's schema and ours, or null. */
export function compareSchema(
  found: readonly SchemaObject[],
  expected: readonly SchemaObject[],
): string | null {
  const want = new Map(expected.map((o) => [key(o), o]));
  // A view or trigger is named first: it is what would run a query of the file's author.
  const rank = (o: SchemaObject) => (o.type === 'view' || o.type === 'trigger' ? 0 : 1);
  for (const o of [...found].sort((a, b) => rank(a) - rank(b))) {
    const w = want.get(key(o));
    if (!w) {
      const why =
        o.type === 'view' || o.type === 'trigger' ? 'no views or triggers belong there' : 'not in the schema';
      return `it has a ${o.type} ${JSON.stringify(o.name.slice(0, 100))} (${why})`;
    }
    if (w.tbl_name !== o.tbl_name || w.sql !== o.sql)
      return `${o.type} ${JSON.stringify(o.name)} is not defined as the schema defines it`;
    want.delete(key(o));
  }
  const missing = [...want.values()][0];
  return missing ? `its ${missing.type} ${JSON.stringify(missing.name)} is missing` : null;
}
