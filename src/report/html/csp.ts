/** The page's Content-Security-Policy: hashes of its own inline style and script, nothing else allowed. */
import { createHash } from 'node:crypto';

/** Placeholders the template puts in its CSP meta; replaced after rendering. */
export const CSP_STYLE_MARK = 'MCEC-CSP-STYLE';
export const CSP_SCRIPT_MARK = 'MCEC-CSP-SCRIPT';

/** sha256 CSP sources of every inline `<tag>...</tag>` block (user text is escaped, so only ours exist). */
function blockHashes(html: string, tag: string): string[] {
  const out: string[] = [];
  const open = `<${tag}`;
  const close = `</${tag}>`;
  let at = 0;
  for (;;) {
    const start = html.indexOf(open, at);
    if (start === -1) break;
    const bodyStart = html.indexOf('>', start);
    const end = bodyStart === -1 ? -1 : html.indexOf(close, bodyStart);
    if (end === -1) break;
    const body = html.slice(bodyStart + 1, end);
    out.push(`'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`);
    at = end + close.length;
  }
  return out;
}

/** Put the hashes of the page's <style> and <script> blocks into the CSP placeholders in <head>. */
export function applyCsp(html: string): string {
  const headEnd = html.indexOf('</head>');
  if (headEnd === -1) return html;
  const style = blockHashes(html, 'style');
  const script = blockHashes(html, 'script');
  let head = html.slice(0, headEnd);
  head = head.replace(CSP_STYLE_MARK, () => (style.length ? style.join(' ') : "'none'"));
  head = head.replace(CSP_SCRIPT_MARK, () => (script.length ? script.join(' ') : "'none'"));
  return head + html.slice(headEnd);
}
