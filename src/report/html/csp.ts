/** The page's Content-Security-Policy: hashes of its own inline style and script, nothing else allowed. */
import { createHash } from 'node:crypto';

/** Placeholders the template puts in its CSP meta; replaced after rendering. */
export const CSP_STYLE_MARK = 'MCEC-CSP-STYLE';
export const CSP_SCRIPT_MARK = 'MCEC-CSP-SCRIPT';

/** sha256 CSP sources of every inline `<tag>...</tag>` block (user text is escaped, so only ours exist). */
export function blockHashes(html: string, tag: 'script' | 'style'): string[] {
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
    out.push(cspHash(html.slice(bodyStart + 1, end)));
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

/** The CSP source (`'sha256-...'`) that allows an inline block with this exact body. */
export function cspHash(body: string): string {
  return `'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`;
}

/**
 * The CSP sources of a template's own scripts: its `<script>` blocks with no Handlebars in them, which render
 * byte for byte as written (`verifyBundle` allows only these in a report.html).
 */
export function templateScriptHashes(templateSource: string): string[] {
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const start = templateSource.indexOf('<script>', at);
    if (start === -1) break;
    const end = templateSource.indexOf('</script>', start);
    if (end === -1) break;
    const body = templateSource.slice(start + '<script>'.length, end);
    // A body with Handlebars in it is not static (or the `<script>` was text in a comment): look further.
    if (body.includes('{{')) {
      at = start + 1;
      continue;
    }
    out.push(cspHash(body));
    at = end + '</script>'.length;
  }
  return out;
}
