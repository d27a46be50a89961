/** MCEC's MCP shapes on the wire, shared by the simulator and the replay. */

/** The MCP protocol version the real server answers with. */
export const PROTOCOL_VERSION = '2025-06-18';

/** An MCP content block. */
export type ContentBlock =
  | { type: 'image'; data: string; mimeType: 'image/png' }
  | { type: 'text'; text: string };

/** What tools/call returns: an optional image block, then the envelope JSON as the last text block. */
export interface CallToolResult {
  content: ContentBlock[];
  isError: boolean;
}
