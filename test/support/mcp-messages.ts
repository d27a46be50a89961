/** JSON-RPC messages of an MCP conversation, as a proxy hands them to the recorder. */

/** An `initialize` request and the answer of a server named `name`. */
export const initialize = (name: string) => [
  {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {} },
  },
  {
    jsonrpc: '2.0',
    id: 0,
    result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name, version: '1' } },
  },
];

/** A tools/call request. */
export const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** A JSON-RPC result. */
export const answer = (id: number, result: unknown) => ({ jsonrpc: '2.0', id, result });
