/** Shared MCEC test material: the server's JSON text escaping, CallToolResults, a capture summary. */

/**
 * Serializes like the MCEC server (System.Text.Json default encoder): inside JSON strings, `+`, `<`, `>`,
 * `&`, `'` and every non-ASCII char are written as \uXXXX escapes. Numbers such as `1e+21` stay as they are.
 */
export function mcecStringify(value: unknown): string {
  const json = JSON.stringify(value);
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    const ch = json[i]!;
    if (inString && ch === '\\') {
      out += ch + json[i + 1]!; // An existing escape passes through untouched.
      i++;
      continue;
    }
    if (ch === '"') inString = !inString;
    if (inString && (c > 0x7e || ch === '+' || ch === '<' || ch === '>' || ch === '&' || ch === "'")) {
      out += `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** A CallToolResult as MCEC sends it: optional image block first, envelope JSON text last, isError = !ok. */
export function callToolResult(
  envelope: { ok: boolean } & Record<string, unknown>,
  image?: { data: string; mimeType: string },
): { content: Record<string, unknown>[]; isError: boolean } {
  const content: Record<string, unknown>[] = [];
  if (image) content.push({ type: 'image', data: image.data, mimeType: image.mimeType });
  content.push({ type: 'text', text: mcecStringify(envelope) });
  return { content, isError: !envelope.ok };
}

/** The contract's capture-summary example, made concrete. */
export const CAPTURE_SUMMARY = {
  kind: 'capture-summary',
  window: {
    handle: 132456,
    title: 'Untitled - Notepad',
    className: 'Notepad',
    processName: 'notepad',
    processId: 4242,
    x: 10,
    y: 20,
    width: 800,
    height: 600,
  },
  width: 800,
  height: 600,
  encoding: 'png',
  bytes: 48213,
  blankCheck: { blank: false, dominantFraction: 0.1043, dominantIsDark: false },
  artifact: '<sessions>/20260701-101500-4f2a9c0d1e2b/capture-20260701-101502123-1.png',
};
