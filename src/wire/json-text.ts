/** The MCEC server's JSON text form: compact JSON with System.Text.Json's default encoder (mcec-wire §4, §8). */

import { expectStringItem } from '../util/expect.js';

/** True for a UTF-16 code unit the server writes as `\uXXXX` inside a JSON string. */
function mustEscape(code: number): boolean {
  // + < > & ' ` and everything outside printable ASCII (DEL and non-ASCII, surrogates one unit at a time).
  return (
    code === 0x2b ||
    code === 0x3c ||
    code === 0x3e ||
    code === 0x26 ||
    code === 0x27 ||
    code === 0x60 ||
    code >= 0x7f
  );
}

const hex4 = (code: number) => `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Rewrite compact JSON text (as JSON.stringify writes it) so string contents use the server's escapes: `"` as
 * `\u0022`, `+ < > & ' \`` and non-ASCII as `\uXXXX` with uppercase hex; `\\ \n \r \t \b \f` stay short,
 * as System.Text.Json writes them.
 */
export function escapeJsonText(json: string): string {
  expectStringItem(json, 'json');
  const parts: string[] = [];
  let last = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (code === 0x22) {
      inString = !inString;
      continue;
    }
    if (!inString) continue; // a `+` outside strings is a number's exponent and must stay as is
    if (code === 0x5c) {
      const next = json.charCodeAt(i + 1);
      if (next === 0x22) {
        parts.push(json.slice(last, i), '\\u0022');
        last = i + 2;
      } else if (next === 0x75) {
        // JSON.stringify writes control characters and lone surrogates as lowercase \uxxxx.
        parts.push(json.slice(last, i), `\\u${json.slice(i + 2, i + 6).toUpperCase()}`);
        last = i + 6;
        i += 4;
      }
      i++;
      continue;
    }
    if (mustEscape(code)) {
      parts.push(json.slice(last, i), hex4(code));
      last = i + 1;
    }
  }
  if (last === 0) return json;
  parts.push(json.slice(last));
  return parts.join('');
}

/** Serialize a value the way the server puts it on the wire (nulls kept, escaping applied). */
export function serializeWire(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError('value is not serializable as JSON');
  return escapeJsonText(json);
}
