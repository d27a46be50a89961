/** Which server a session recorded: MCEC, or another MCP server (whose runs have no windows or envelopes). */
import { isMcecName } from '../contract/server-name.js';
import { isRecord } from '../util/json.js';

/**
 * True when the session's environment names a server other than MCEC (from its initialize answer): its calls
 * are plain MCP results, so MCEC's notions (windows, displays, envelopes, observations, MCEC's next steps)
 * are left out of what is written about it. A session without a server name is read as MCEC's.
 */
export function isPlainServer(environment: Record<string, unknown>): boolean {
  const server = environment.server;
  return isRecord(server) && typeof server.name === 'string' && !isMcecName(server.name);
}
