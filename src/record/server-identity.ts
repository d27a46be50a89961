/**
 * Which server a proxy's `initialize` named: MCEC (`serverInfo.name` "MCEC", compared case-insensitively),
 * another MCP server, or not known yet (read as MCEC). Another server's calls are filed in its MCP sessions.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isMcecName } from '../contract/server-name.js';
import { isRecord } from '../util/json.js';

/**
 * An MCP session's name in the recording: the first 16 hex digits of the SHA-256 of its `Mcp-Session-Id`.
 * The MCP specification treats that header as a credential-like token (whoever holds it can act in the
 * session), so the value itself never reaches a session id, dir name, log, bundle or span.
 */
export function hashMcpSessionId(mcpSessionId: string): string {
  return createHash('sha256').update(mcpSessionId).digest('hex').slice(0, 16);
}

/** Where a call of a server that is not MCEC is filed: its MCP session, and the hash of that session's id. */
export interface McpSession {
  id: string;
  mcpSessionHash: string | undefined;
}

export class ServerIdentity {
  private kind: 'mcec' | 'other' | 'unknown' = 'unknown';
  private slug = 'mcp';
  /** Names the MCP session of a server without session ids (stdio: one server process per recorder). */
  private readonly processToken = randomBytes(4).toString('hex');

  /** The answer to `initialize`: it names the server (an answer without `serverInfo.name` changes nothing). */
  initialized(response: unknown): void {
    const result = isRecord(response) && isRecord(response.result) ? response.result : undefined;
    const info = result && isRecord(result.serverInfo) ? result.serverInfo : undefined;
    if (!info || typeof info.name !== 'string') return;
    this.kind = isMcecName(info.name) ? 'mcec' : 'other';
    this.slug = sessionSlug(info.name);
  }

  /** Whether `initialize` named a server that is not MCEC. */
  get plain(): boolean {
    return this.kind === 'other';
  }

  /**
   * The MCP session a tools/call with this `Mcp-Session-Id` runs in when the server is not MCEC
   * (`<server name>-<16 hex>`, or `<server name>-<8 hex>` per process without one); undefined for MCEC.
   */
  mcpSessionOf(mcpSessionId: string | undefined): McpSession | undefined {
    if (this.kind !== 'other') return undefined;
    const mcpSessionHash = mcpSessionId ? hashMcpSessionId(mcpSessionId) : undefined;
    return { id: `${this.slug}-${mcpSessionHash ?? this.processToken}`, mcpSessionHash };
  }
}

/** A server's name as the start of a path-safe session id: `mcp-servers-everything`; `mcp` when empty. */
function sessionSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 24)
    .replace(/-$/, '');
  return slug === '' ? 'mcp' : slug;
}
