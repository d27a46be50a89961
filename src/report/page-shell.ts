/**
 * The shell of the self-contained pages next to report.html (diff.html, index.html): one document in its
 * style, with a strict CSP that allows only the page's own inline style (and script) by their sha256.
 */
import { createHash } from 'node:crypto';

/** Text escaped for HTML content and attribute values. */
export function escapeHtml(text: unknown): string {
  return String(text ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/**
 * report.html's palette and fonts as custom properties, light and dark (by the system's scheme); a page adds
 * its own colour pairs (`light`, `dark`: `--name:value;` lists).
 */
export function paletteStyle(light: string, dark: string): string {
  return `:root{--bg:#f6f7f9;--card:#fff;--fg:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#eef1f4;
--ok:#1a7f37;--ok-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;${light}--link:#0969da;
--sans:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans","DejaVu Sans",Arial,sans-serif;
--mono:ui-monospace,"SFMono-Regular","Cascadia Mono",Consolas,"Liberation Mono","DejaVu Sans Mono",monospace}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#161b22;--fg:#e6edf3;--muted:#9198a1;--line:#30363d;--soft:#1f242c;
--ok:#3fb950;--ok-bg:#12261e;--fail:#f85149;--fail-bg:#2d1214;${dark}--link:#4493f8}}`;
}

/** A CSP source allowing exactly this inline text. */
function hashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** What a page puts in the shell: its title (escaped already), style, optional script, header and main HTML. */
export interface PageParts {
  title: string;
  style: string;
  script?: string;
  header: string;
  main: string;
}

/** The whole page: no network, no other script or style than its own. */
export function renderPage(page: PageParts): string {
  const scriptSrc = page.script === undefined ? '' : `script-src ${hashSource(page.script)}; `;
  const csp = `default-src 'none'; img-src data:; style-src ${hashSource(page.style)}; ${scriptSrc}base-uri 'none'; form-action 'none'`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${page.title}</title>
<style>${page.style}</style>
</head>
<body>
${page.header}
<main class="wrap">
${page.main}
</main>
${page.script === undefined ? '' : `<script>${page.script}</script>\n`}</body>
</html>
`;
}
