/**
 * Templates with Windows line ends (a CRLF checkout: git's core.autocrlf, or a template saved by a Windows
 * editor) are read as LF: the same precompiled specs are used, the same Markdown and report.html come out,
 * and the bundle built from them verifies against the LF templates' script hashes. `.gitattributes` keeps the
 * templates LF in a checkout in the first place.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { templateScriptHashes } from '../../src/report/html/csp.js';
import { loadReportTemplate, REPORT_HTML_TEMPLATE } from '../../src/report/html/template.js';
import {
  BUILTIN_TEMPLATES_DIR,
  readTemplateSource,
  renderBugReport,
  renderFailureSummary,
} from '../../src/report/render.js';
import { calls, FixtureSession, summaryOfSession } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const temp = tempDirPerTest();

/** Every built-in template copied into a fresh dir with CRLF line ends (and Notepad's byte-order mark on one). */
function crlfTemplates(): string {
  const dir = path.join(temp.dir, 'crlf-templates');
  fs.mkdirSync(dir);
  for (const name of fs.readdirSync(BUILTIN_TEMPLATES_DIR)) {
    const lf = fs.readFileSync(path.join(BUILTIN_TEMPLATES_DIR, name), 'utf8');
    expect(lf).not.toContain('\r');
    const crlf = lf.replace(/\n/g, '\r\n');
    fs.writeFileSync(path.join(dir, name), name === 'bug-report.md.hbs' ? `\uFEFF${crlf}` : crlf);
  }
  return dir;
}

function failedSession(): FixtureSession {
  const f = FixtureSession.create(path.join(temp.dir, 'sessions'), { sessionId: 'c41f00000001' });
  f.call(calls.displays());
  f.call(calls.ambiguousFind());
  f.call(calls.findSave());
  f.call(calls.waitForTimeout());
  f.end();
  f.close();
  return f;
}

describe('templates with CRLF line ends', () => {
  it('read as the LF source: the same text, the precompiled report.html spec, the same script hashes', async () => {
    const dir = crlfTemplates();
    for (const name of fs.readdirSync(BUILTIN_TEMPLATES_DIR)) {
      expect(readTemplateSource(path.join(dir, name)), name).toBe(
        fs.readFileSync(path.join(BUILTIN_TEMPLATES_DIR, name), 'utf8'),
      );
    }
    const crlfHtml = fs.readFileSync(path.join(dir, REPORT_HTML_TEMPLATE), 'utf8');
    const lfHtml = fs.readFileSync(path.join(BUILTIN_TEMPLATES_DIR, REPORT_HTML_TEMPLATE), 'utf8');
    // What the CRLF bytes would have allowed: none of the page's own scripts.
    expect(templateScriptHashes(crlfHtml).some((h) => templateScriptHashes(lfHtml).includes(h))).toBe(false);
    const template = await loadReportTemplate(dir);
    // The runtime alone: the precompiled spec of the built-in source ran, nothing was compiled.
    expect(typeof (template.hb as { compile?: unknown }).compile).toBe('undefined');
    const page = { title: 'T', verdict: 'FAIL', rowsHtml: '', notices: [], countsList: [] };
    expect(template.render(page)).toBe((await loadReportTemplate()).render(page));
  });

  it('render the same Markdown, and a bundle made with them verifies with the LF templates', async () => {
    const f = failedSession();
    const dir = crlfTemplates();
    const summary = await summaryOfSession(f.dir);
    expect(await renderFailureSummary(summary, { templatesDir: dir })).toBe(
      await renderFailureSummary(summary),
    );
    const bug = await renderBugReport(summary, { templatesDir: dir, bundleName: 'b.zip' });
    expect(bug).toBe(await renderBugReport(summary, { bundleName: 'b.zip' }));
    expect(bug).not.toContain('\r');

    const bundle = await buildBundle(f.dir, {
      output: path.join(temp.dir, 'crlf.zip'),
      templatesDir: dir,
      gif: false,
    });
    // Verified as a triager's copy would be: with the built-in templates only.
    const verified = await verifyBundle(bundle.bundle);
    expect(verified.problems).toEqual([]);
    expect(verified.ok).toBe(true);
  });

  it('.gitattributes keeps the templates LF in any checkout and batch files CRLF', () => {
    const inGit = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT, encoding: 'utf8' });
    const files = ['templates/report.html.hbs', 'templates/failure-summary.md.hbs', 'src/index.ts', 'x.cmd'];
    if (inGit.status !== 0) {
      // A tarball of the package (no git): the file itself says it.
      const text = fs.readFileSync(path.join(ROOT, '.gitattributes'), 'utf8');
      expect(text).toMatch(/^\* text=auto eol=lf$/m);
      expect(text).toMatch(/^templates\/\*\.hbs text eol=lf$/m);
      return;
    }
    const attrs = spawnSync('git', ['check-attr', 'eol', '--', ...files], { cwd: ROOT, encoding: 'utf8' });
    expect(attrs.stdout.trim().split('\n')).toEqual([
      'templates/report.html.hbs: eol: lf',
      'templates/failure-summary.md.hbs: eol: lf',
      'src/index.ts: eol: lf',
      'x.cmd: eol: crlf',
    ]);
    const png = spawnSync('git', ['check-attr', 'text', '--', 'a.png'], { cwd: ROOT, encoding: 'utf8' });
    expect(png.stdout.trim()).toBe('a.png: text: unset');
  });
});
