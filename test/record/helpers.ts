/** Shared test helpers for the recorder suites: real PNGs, MCEC-shaped outputs, reading and scanning logs. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { findImageBytes } from '../../src/contract/image-bytes.js';
import { LOG_FILE } from '../../src/paths/naming.js';
import type { CallRow, EventRow } from '../../src/store/schema.js';

export { makePng } from '../support/images.js';
export { callToolResult, NOTEPAD } from '../support/mcec.js';
export { tempDir } from '../support/temp.js';

/** sha256 hex of bytes. */
export function sha256(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/** The envelope of a CallToolResult. */
export function envelopeIn(value: unknown): Record<string, unknown> {
  const content = (value as { content: Array<{ type: string; text?: string }> }).content;
  const text = content.filter((b) => b.type === 'text').at(-1)?.text ?? 'null';
  return JSON.parse(text) as Record<string, unknown>;
}

/** The session dirs under a sessions root. */
export function sessionDirs(root: string): string[] {
  return fs.existsSync(root) ? fs.readdirSync(root).sort() : [];
}

/** Open a session's log read-only, run `fn`, close. */
export function withLog<T>(dir: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path.join(dir, LOG_FILE), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** All calls of a session in seq order. */
export function calls(dir: string): CallRow[] {
  return withLog(dir, (db) => db.prepare('SELECT * FROM calls ORDER BY seq').all() as CallRow[]);
}

/** Events of a session (of one kind when given), with `detail` parsed. */
export function events(dir: string, kind?: string): Array<EventRow & { data: Record<string, unknown> }> {
  const rows = withLog(dir, (db) =>
    kind
      ? (db.prepare('SELECT * FROM events WHERE kind = ? ORDER BY id').all(kind) as EventRow[])
      : (db.prepare('SELECT * FROM events ORDER BY id').all() as EventRow[]),
  );
  return rows.map((r) => ({ ...r, data: r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : {} }));
}

/** Every text value of every row of every table of a session log. */
export function allTextValues(dir: string): string[] {
  return withLog(dir, (db) => {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
      name: string;
    }[];
    const out: string[] = [];
    for (const { name } of tables) {
      for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
        for (const v of Object.values(row)) {
          if (typeof v === 'string') out.push(v);
          else if (Buffer.isBuffer(v)) out.push(v.toString('latin1'));
        }
      }
    }
    return out;
  });
}

/**
 * Asserts that no column of the log holds image bytes (findImageBytes over each value parsed as JSON, and a raw
 * substring check for the head of each given base64) or any of the given secrets.
 */
export function expectCleanLog(dir: string, base64s: string[], secrets: string[] = []): void {
  for (const text of allTextValues(dir)) {
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // plain text: scanned as a string
    }
    expect(findImageBytes(parsed), `image bytes in ${text.slice(0, 120)}`).toEqual([]);
    for (const b of base64s) expect(text.includes(b.slice(0, 40)), 'raw base64 head in the log').toBe(false);
    for (const s of secrets) expect(text.includes(s), `secret ${s} in the log`).toBe(false);
  }
  // The file itself (free pages and WAL included) holds neither.
  for (const f of fs.readdirSync(dir).filter((n) => n.startsWith(LOG_FILE))) {
    const raw = fs.readFileSync(path.join(dir, f)).toString('latin1');
    for (const b of base64s) expect(raw.includes(b.slice(0, 40)), `raw base64 head in ${f}`).toBe(false);
    for (const s of secrets) expect(raw.includes(s), `secret ${s} in ${f}`).toBe(false);
  }
}

let eventValidator: ReturnType<Ajv2020['compile']> | undefined;

/** Asserts every event row of a session log matches schema/session-log-event.schema.json; returns how many. */
export function expectEventsValid(dir: string): number {
  if (!eventValidator) {
    const file = new URL('../../schema/session-log-event.schema.json', import.meta.url);
    eventValidator = new Ajv2020({ allErrors: true, strict: false }).compile(
      JSON.parse(fs.readFileSync(file, 'utf8')),
    );
  }
  const rows = events(dir);
  for (const row of rows) {
    const value = { at: row.at, kind: row.kind, call_seq: row.call_seq, detail: row.data };
    expect(eventValidator(value), `${row.kind} ${row.detail}: ${JSON.stringify(eventValidator.errors)}`).toBe(
      true,
    );
  }
  return rows.length;
}
