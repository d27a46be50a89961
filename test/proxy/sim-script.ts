/** One realistic MCP conversation with the simulator, used through the proxies and directly. */

import fs from 'node:fs';
import path from 'node:path';
import { openLogForReading } from '../../src/store/open.js';
import type { CallRow, EventRow, SessionRow } from '../../src/store/schema.js';
import { post, type RawAnswer } from './helpers.js';

/** The simulator's clock in every suite: byte-identical answers need the same timestamps. */
export const FIXED_NOW = '2026-12-02T10:15:02.123Z';
export const SIM_SEED = 7;
/** Session id the simulator gives its first session-start with seed 7 (learned from the first answer). */
export type Step = (sessionId: string) => string;

const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify(
    params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
  );
const call = (id: number, name: string, args: Record<string, unknown>) =>
  rpc(id, 'tools/call', { name, arguments: args });

/**
 * The conversation: handshake, listing, a session, observations (one inline PNG, one black capture),
 * failures (ambiguous selector, elevated target, unknown tool), protocol faults, the session's end.
 * Step 4 opens the session; later steps use the id it returned.
 */
export const SCRIPT: Step[] = [
  () =>
    rpc(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'proxy-test', version: '1' },
    }),
  () => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  () => rpc(2, 'tools/list'),
  () => call(3, 'session-start', {}),
  (sid) => call(4, 'windows', { sessionId: sid }),
  (sid) => call(5, 'find', { window: 'Save As', value: 'Save', sessionId: sid }),
  (sid) => call(6, 'capture', { window: 'Notepad', sessionId: sid }),
  (sid) => call(7, 'capture', { window: 'Video Player', sessionId: sid }),
  (sid) => call(8, 'invoke', { window: 'Administrator', value: 'Close', sessionId: sid }),
  (sid) => call(9, 'no-such-tool', { sessionId: sid }),
  () => rpc(10, 'bogus/method'),
  () => 'this is not json',
  () => rpc(11, 'ping'),
  (sid) => call(12, 'session-end', { sessionId: sid }),
];

/** The session id in a session-start answer (a JSON-RPC response holding a CallToolResult). */
export function sessionIdFrom(answer: string): string {
  const response = JSON.parse(answer) as { result: { content: Array<{ type: string; text?: string }> } };
  const last = response.result.content[response.result.content.length - 1]!;
  return (JSON.parse(last.text!) as { sessionId: string }).sessionId;
}

/** Play SCRIPT against `url` over HTTP with `token`, one request at a time; every answer's bytes. */
export async function playScriptOverHttp(url: string, token: string): Promise<RawAnswer[]> {
  const answers: RawAnswer[] = [];
  let sessionId = '';
  for (const [i, step] of SCRIPT.entries()) {
    const answer = await post(url, step(sessionId), { Authorization: `Bearer ${token}` });
    answers.push(answer);
    if (i === 3) sessionId = sessionIdFrom(answer.body.toString('utf8'));
  }
  return answers;
}

/** One recorded session, read back from its SQLite log. */
export interface RecordedSession {
  dir: string;
  session: SessionRow;
  calls: CallRow[];
  events: Array<Omit<EventRow, 'detail'> & { detail: Record<string, unknown> }>;
}

/** Every session under a sessions root, read with the store's read-only opener. */
export function readSessions(root: string): RecordedSession[] {
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .filter((name) => fs.existsSync(path.join(root, name, 'session.sqlite')))
    .sort()
    .map((name) => {
      const dir = path.join(root, name);
      const log = openLogForReading(path.join(dir, 'session.sqlite'));
      const { db } = log;
      try {
        const session = db.prepare('SELECT * FROM session').get() as SessionRow;
        const calls = db.prepare('SELECT * FROM calls ORDER BY seq').all() as CallRow[];
        const events = (db.prepare('SELECT * FROM events ORDER BY id').all() as EventRow[]).map((e) => ({
          ...e,
          detail: (e.detail ? JSON.parse(e.detail) : {}) as Record<string, unknown>,
        }));
        return { dir, session, calls, events };
      } finally {
        log.close();
      }
    });
}

/** Every byte under `root` as one string, to look for secrets that must not be there. */
export function allText(root: string): string {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else out.push(fs.readFileSync(p).toString('latin1'));
    }
  };
  if (fs.existsSync(root)) walk(root);
  return out.join('\n');
}
