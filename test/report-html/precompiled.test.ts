import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { precompiledHtmlModuleText } from '../../src/report/html/precompile-html.js';
import { PRECOMPILED_REPORT_HTML } from '../../src/report/html/precompiled-html.js';
import {
  HTML_COMPILE_OPTIONS,
  loadReportTemplate,
  rowPartialSource,
  templateSha256,
} from '../../src/report/html/template.js';
import { tempDir } from '../support/temp.js';

const TEMPLATE = fileURLToPath(new URL('../../templates/report.html.hbs', import.meta.url));

describe('precompiled report.html template', () => {
  it('is fresh: made from the template as it is now (run `npx tsx src/report/html/precompile-html.ts`)', async () => {
    const source = fs.readFileSync(TEMPLATE, 'utf8');
    expect(PRECOMPILED_REPORT_HTML.sha256).toBe(templateSha256(source));
    expect(await precompiledHtmlModuleText(source)).toContain(`sha256: '${templateSha256(source)}'`);
    // The same specs Handlebars makes now (a Handlebars upgrade would change them).
    const { default: hb } = await import('handlebars');
    expect(PRECOMPILED_REPORT_HTML.page).toBe(hb.precompile(source, { ...HTML_COMPILE_OPTIONS }));
    const row = rowPartialSource(source);
    expect(row).not.toBeNull();
    expect(PRECOMPILED_REPORT_HTML.row).toBe(hb.precompile(row!, { ...HTML_COMPILE_OPTIONS }));
  });

  it('renders exactly what compiling the source renders, and is not used for an edited template', async () => {
    const pre = await loadReportTemplate();
    const compiled = await loadReportTemplate(undefined, { precompiled: false });
    const row = {
      seq: 7,
      tool: 'find <x>',
      status: 'failed',
      code: 'selector-matched-3',
      warnings: [{ code: 'tree-truncated', detail: '"clipped" & <b>' }],
      thumbs: [],
      images: [],
      blocks: [],
      at: '2026-12-02T10:15:00.000Z',
      time: '10:15:00.000',
      line: "find name='Save': selector-matched-3",
      transport: 'wrap',
    };
    expect(pre.renderRow(row)).toBe(compiled.renderRow(row));
    expect(pre.renderRow(row)).toContain('find &lt;x&gt;');
    const page = { title: 'T <script>', verdict: 'FAIL', rowsHtml: '', notices: ['n & m'], countsList: [] };
    expect(pre.render(page)).toBe(compiled.render(page));

    const dir = tempDir('mcec-');
    try {
      fs.writeFileSync(
        path.join(dir, 'report.html.hbs'),
        `${fs.readFileSync(TEMPLATE, 'utf8')}<!-- edited -->`,
      );
      const edited = await loadReportTemplate(dir);
      expect(edited.render(page)).toContain('<!-- edited -->');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
