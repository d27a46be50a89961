/** Shape checks on parsed JSON, shared by every module (a leaf: it imports nothing of the project). */

/**
 * A JSON file's text as a user's editor saved it, parsed: a leading byte-order mark (Windows Notepad,
 * PowerShell 5's `Out-File -Encoding UTF8`) is not JSON and is skipped. Throws as JSON.parse does.
 */
export function parseJsonFileText(text: string): unknown {
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

/** True for a plain object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
