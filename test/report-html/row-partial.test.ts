import { describe, expect, it } from 'vitest';
import { loadReportTemplate } from '../../src/report/html/template.js';

describe('the built-in row partial, precompiled', () => {
  it('renders the same bytes as the compiled partial for rows with every part, and escapes like it', async () => {
    const compiled = await loadReportTemplate(undefined, { precompiled: false });
    const precompiled = await loadReportTemplate();
    const hb = compiled.hb;
    const full = {
      seq: 12,
      tool: 'click "ok"=`x`',
      status: 'failed',
      recovered: true,
      isFailing: true,
      isLastGood: true,
      at: '2026-12-02T10:15:00.000Z',
      time: '10:15:00.000',
      duration: '12 ms',
      line: new hb.SafeString('find &lt;b&gt; "q"'),
      code: 'element-not-found',
      category: 'target',
      detail: "it's <gone> & more",
      recovery: 'Re-run find & retry',
      warnings: [
        { code: 'tree-truncated', detail: '"clipped" & <b>' },
        { code: 'slow', detail: '' },
      ],
      warnCodes: 'tree-truncated slow',
      violationCount: 3,
      thumbs: [
        {
          src: 'data:image/png;base64,AAA=',
          width: 160,
          height: 120,
          href: 'artifacts/a.png',
          label: 'a.png',
        },
      ],
      images: [
        { href: 'artifacts/a.png', label: 'screen: a.png (800x600 1 KB)', note: '' },
        { href: null, label: 'screen image not kept', note: 'no file <x>' },
        {
          href: 'artifacts/b.png',
          label: 'result: b.png',
          note: '',
          mask: {
            width: 480,
            height: 300,
            thumb: 'data:image/webp;base64,UklG=',
            label: '2 masked region(s)',
            boxes: [
              {
                x: 24,
                y: 168,
                w: 432,
                h: 28,
                tx: 27,
                ty: 180,
                fs: 11,
                label: 'masked: typed secret',
                title: "over Edit 'API <token>'",
              },
              {
                x: 0,
                y: 0,
                w: 480,
                h: 300,
                tx: 3,
                ty: 13,
                fs: 11,
                label: 'masked: secret field',
                title: 'widened: moved',
              },
            ],
          },
        },
        {
          href: 'artifacts/c.png',
          label: 'result: c.png',
          note: '',
          mask: { width: 10, height: 10, thumb: null, label: '1', boxes: [] },
        },
      ],
      blocks: [
        { title: 'Arguments', html: new hb.SafeString('{ &amp; }'), note: null },
        { title: 'Envelope <e>', html: new hb.SafeString('{}'), note: 'Clipped: 10 more' },
      ],
      bodyNote: 'dropped',
      transport: 'wrap',
      rpcId: 'id-7',
      hidden: 'envelope not shown',
    };
    const bare = {
      ...full,
      recovered: false,
      isFailing: false,
      isLastGood: false,
      code: '',
      category: '',
      detail: '',
      recovery: null,
      warnings: [],
      warnCodes: '',
      violationCount: 0,
      thumbs: [],
      images: [],
      blocks: [],
      bodyNote: null,
      rpcId: '',
      hidden: '',
      duration: undefined,
    };
    const partly = { ...bare, code: 'x', detail: 'd', recovery: 'r', status: 'ok', seq: 0 };
    for (const ctx of [full, bare, partly]) {
      const expected = compiled.renderRow(ctx).trim();
      expect(precompiled.renderRow(ctx).trim()).toBe(expected);
      expect(precompiled.renderRow(ctx)).toBe(compiled.renderRow(ctx));
    }
    const out = precompiled.renderRow(full);
    expect(out).toContain('click &quot;ok&quot;&#x3D;&#x60;x&#x60;');
    expect(out).toContain('find &lt;b&gt; "q"');
    expect(out).toContain('base64,AAA&#x3D;');
  });
});
