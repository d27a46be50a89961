/** Short single-line excerpts of untrusted text, for messages and recorded reasons. */

/** A short, single-line excerpt of untrusted text for an error message (no secrets are expected here). */
export function excerpt(text: string, max = 200): string {
  const head = text.length > max ? `${text.slice(0, max)}...` : text;
  let out = '';
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i);
    out += c < 0x20 || c === 0x7f ? ' ' : head[i];
  }
  return out;
}
