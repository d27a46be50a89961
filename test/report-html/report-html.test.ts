import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';
import { tempDir } from '../support/temp.js';
import { HOSTILE, type Scenario, writeReport, writeScenario } from './scenario.js';

/** The text between the first `<tag...>` and `</tag>`. */
function block(html: string, tag: string): string {
  const start = html.indexOf(`<${tag}`);
  const bodyStart = html.indexOf('>', start) + 1;
  return html.slice(bodyStart, html.indexOf(`</${tag}>`, bodyStart));
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

/** Every value of `attr="..."` in the page. */
function attrValues(html: string, attr: string): string[] {
  const out: string[] = [];
  const needle = ` ${attr}="`;
  let at = html.indexOf(needle);
  while (at !== -1) {
    const start = at + needle.length;
    const end = html.indexOf('"', start);
    out.push(html.slice(start, end));
    at = html.indexOf(needle, end);
  }
  return out;
}

describe('renderReportHtml', () => {
  let root: string;
  let sc: Scenario;

  beforeAll(async () => {
    root = makeSessionsDir();
    sc = await writeScenario(root);
  });
  afterAll(() => removeDir(root));

  it('is one self-contained page: strict CSP with the hashes of its own style and script, no external URL', () => {
    const { html } = sc;
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    expect(csp).toBeDefined();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('img-src data:');
    expect(csp).toContain(`style-src 'sha256-${sha256(block(html, 'style'))}'`);
    expect(csp).toContain(`script-src 'sha256-${sha256(block(html, 'script'))}'`);
    expect(csp).not.toContain('unsafe');
    expect(html).toContain('<link rel="icon" href="data:,">');
    const urls = [...attrValues(html, 'src'), ...attrValues(html, 'href')];
    expect(urls.length).toBeGreaterThan(10);
    for (const url of urls) {
      expect(url.startsWith('data:') || url.startsWith('#') || url.startsWith('artifacts/'), url).toBe(true);
    }
    expect(html).not.toMatch(/@import|url\(|<link rel="stylesheet"|<iframe|<object|<embed/);
  });

  it('escapes what the session recorded: hostile text is shown, never parsed', () => {
    expect(sc.html).not.toContain(HOSTILE);
    expect(sc.html).not.toContain('<script>window.__pwned');
    expect(sc.html).toContain('&lt;script&gt;window.__pwned');
    // Exactly one script element: the page's own.
    expect(sc.html.split('<script').length - 1).toBe(1);
  });

  it('renders every call as a <details> row with tool, status, duration and the one-line summary', () => {
    for (let seq = 1; seq <= 11; seq++) expect(sc.html).toContain(`id="c${seq}"`);
    const rows = sc.html.split('<details class="call').length - 1;
    expect(rows).toBe(11);
    // A short timeline is laid out whole (screenshots and printing show every row).
    expect(sc.html).toContain('<div id="timeline">');
    const failing = sc.html.slice(sc.html.indexOf(`id="c${sc.failingSeq}"`));
    expect(failing.slice(0, 2000)).toContain('failing call');
    expect(failing).toContain('frame-all-black');
    expect(sc.html).toContain('last good observation');
    expect(sc.html).toContain('tree-truncated');
    expect(sc.html).toContain('100 ms');
    // Redacted arguments are shown as stored.
    expect(sc.html).toContain('[redacted: typed text, 26 chars]');
  });

  it('puts the failing call, the next step and both images at the top', () => {
    const top = sc.html.slice(0, sc.html.indexOf('id="timeline"'));
    expect(top).toContain('id="failing"');
    expect(top).toContain(`#${sc.failingSeq} capture`);
    expect(top).toContain('restore or foreground the window');
    expect(top).toContain(`#${sc.lastGoodSeq} wait-for`);
    expect(top).toContain('class="fig good"');
    expect(top).toContain('class="fig suspect"');
    expect(top.split('src="data:image/webp;base64,').length - 1).toBe(2);
  });

  it('links each thumbnail to its full image in artifacts/, relative to the page; never embeds PNG bytes', () => {
    const hrefs = attrValues(sc.html, 'href').filter((h) => h.startsWith('artifacts/'));
    expect(new Set(hrefs).size).toBe(3);
    for (const href of hrefs) expect(fs.existsSync(path.join(sc.dir, decodeURIComponent(href)))).toBe(true);
    expect(sc.html).not.toContain('iVBORw0KGgo');
    expect(sc.html).not.toContain('data:image/png');
  });

  it('follows artifactBase and a template override, and copes with missing image files', async () => {
    const custom = tempDir('tpl-', root);
    fs.writeFileSync(
      path.join(custom, 'report.html.hbs'),
      '{{#if rowOnly}}<p id="c{{row.seq}}">{{row.tool}}</p>{{else}}<html><head><meta http-equiv="Content-Security-Policy" content="script-src {{cspScript}}"></head><body>{{title}}{{{rowsHtml}}}</body></html>{{/if}}',
    );
    const custom1 = await writeReport(sc.dir, { templatesDir: custom });
    expect(custom1.html).toContain('Save a Notepad document');
    expect(custom1.html).toContain('<p id="c11">capture</p>');
    expect(custom1.html).toContain(`script-src 'none'`);

    const based = await writeReport(sc.dir, { artifactBase: '../shots/' });
    expect(based.html).toContain('href="../shots/capture-');
    expect(based.html).not.toContain('href="artifacts/');

    for (const f of fs.readdirSync(path.join(sc.dir, 'artifacts')))
      fs.rmSync(path.join(sc.dir, 'artifacts', f));
    const missing = await writeReport(sc.dir);
    expect(missing.html).toContain('image file missing');
    expect(missing.html).toContain('3 image file(s) could not be read');
    expect(missing.html).not.toContain('data:image/webp');
    expect(missing.html).toContain('id="c11"');
  });
});
