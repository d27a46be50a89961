/** The MCP server's identity from its `initialize` result, as every session's environment records it. */
import { createHash } from 'node:crypto';
import { isRecord } from '../util/json.js';
import type { ServerInfo } from './environment.js';
import { jsonOrNull } from './values.js';

/**
 * The server's identity from an `initialize` result: name, version, protocol, MCEC's `commandAccess`
 * (redacted by `redact`, kept up to 64 KiB as JSON) and a sha256 of its `instructions`.
 */
export function serverInfoFrom(result: Record<string, unknown>, redact: (v: unknown) => unknown): ServerInfo {
  const info = isRecord(result.serverInfo) ? result.serverInfo : {};
  const server: ServerInfo = {
    name: typeof info.name === 'string' ? info.name : '',
    version: typeof info.version === 'string' ? info.version : '',
  };
  if (typeof result.protocolVersion === 'string') server.protocolVersion = result.protocolVersion;
  if (result.commandAccess !== undefined) {
    // Redacted where it stands (under `commandAccess`), so its `note` is read as the server's prose.
    const redacted = redact({ commandAccess: result.commandAccess }) as { commandAccess?: unknown };
    const access = jsonOrNull(isRecord(redacted) ? redacted.commandAccess : null);
    // A map of tool names: a few hundred bytes on MCEC; anything huge is not kept.
    if (access !== null && access.length <= 64 * 1024) server.commandAccess = JSON.parse(access);
  }
  if (typeof result.instructions === 'string')
    server.instructionsSha256 = createHash('sha256').update(result.instructions, 'utf8').digest('hex');
  return server;
}
