/** Which server a session recorded: MCEC, or another MCP server (whose runs have no windows or envelopes). */
import { isMcecName } from '../contract/server-name.js';
import type { SessionRow } from '../store/schema.js';
import type { SessionReader } from '../store/session-reader.js';
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
