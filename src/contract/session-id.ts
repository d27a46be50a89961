/** The MCEC session id of whatever a dispatch returned, for code that wraps a dispatch and then calls `step`/`end`. */
import { readToolOutput } from './read-tool-output.js';

/**
 * The `sessionId` of a tool result in any shape `readToolOutput` reads (bare envelope, MCP CallToolResult,
 * JSON-RPC response, legacy CommandResult), or undefined when it names none (a JSON-RPC error, junk).
 */
export function sessionIdOf(result: unknown): string | undefined {
  const id = readToolOutput(result).envelope?.sessionId;
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}
