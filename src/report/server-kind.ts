/** Which server a session recorded: MCEC, or another MCP server (whose runs have no windows or envelopes). */
import { isMcecName } from '../contract/server-name.js';
import type { SessionRow } from '../store/schema.js';
import {
  type FailureOutcome,
  type FailureRow,
  NO_FAILURES,
  type SessionReader,
  type SessionStats,
} from '../store/session-reader.js';
import { isRecord } from '../util/json.js';
import { asRecord, parseJson } from './text.js';

/**
 * True when the session's environment names a server other than MCEC (from its initialize answer): its calls
 * are plain MCP results, so MCEC's notions (windows, displays, envelopes, observations, MCEC's next steps)
 * are left out of what is written about it. A session without a server name is read as MCEC's.
 */
export function isPlainServer(environment: Record<string, unknown>): boolean {
  const server = environment.server;
  return isRecord(server) && typeof server.name === 'string' && !isMcecName(server.name);
}

/** The serverInfo and protocol version of the newest initialize a proxy recorded (an `exchange` event), if any. */
export function initializeAnswer(
  reader: SessionReader,
): { serverInfo: Record<string, unknown>; protocolVersion: unknown } | undefined {
  const detail = asRecord(parseJson(reader.lastExchange('initialize')?.detail ?? null, 1024 * 1024));
  const result = asRecord(asRecord(detail?.response)?.result);
  const serverInfo = asRecord(result?.serverInfo);
  return serverInfo ? { serverInfo, protocolVersion: result?.protocolVersion } : undefined;
}

/**
 * `isPlainServer` of a session log: the server its environment names, else the one its recorded initialize
 * answer names (what the summary's environment shows).
 */
export function isPlainServerSession(reader: SessionReader, session: SessionRow): boolean {
  const stored = asRecord(parseJson(session.environment, 1024 * 1024));
  const server = asRecord(stored?.server) ?? initializeAnswer(reader)?.serverInfo;
  return isPlainServer({ server });
}

/**
 * The newest `limit` failures of a log (-1: all) and their outcome, by its server's rule of recovery: another
 * MCP server's calls name no target, so a later success of the same tool recovers them. Only a log with
 * failures is read for its server (index reads thousands of logs, most without any).
 */
export function readFailures(
  reader: SessionReader,
  session: SessionRow,
  stats: SessionStats,
  limit: number,
): { failures: FailureRow[]; outcome: FailureOutcome; plainServer: boolean } {
  if (stats.failed + stats.fault === 0) return { failures: [], outcome: NO_FAILURES, plainServer: false };
  const plainServer = isPlainServerSession(reader, session);
  return { ...reader.failuresAndOutcome(limit, { sameToolRecovers: plainServer }), plainServer };
}
