/** Which MCP server a recording is of: the one rule every room reads. */

/** True when an `initialize` answer's `serverInfo.name` is MCEC's ("MCEC", any case, spaces around ignored). */
export function isMcecName(name: string): boolean {
  return name.trim().toLowerCase() === 'mcec';
}
