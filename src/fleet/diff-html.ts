/**
 * `diff.html`: a session diff as one self-contained page in report.html's style (same palette, light and
 * dark, a strict CSP with the style's hash and no script). Screenshots appear as small inline WebP
 * thumbnails (A, B and the diff) linking to the full files; no PNG bytes are inlined.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { escapeHtml as esc, paletteStyle, renderPage } from '../report/page-shell.js';
import { writeFileAtomic } from '../report/write-atomic.js';
import { readRegularFile } from '../util/file-stat.js';
import { loadSharp } from '../util/sharp.js';
import { MAX_DIFF_IMAGE_BYTES, MAX_DIFF_PIXELS, type SessionDiff } from './diff.js';

const THUMB_WIDTH = 360;

const STYLE = `${paletteStyle('--fault:#8250df;--fault-bg:#fbefff;', '--fault:#bc8cff;--fault-bg:#231a33;')}
*{box-sizing:border-box}html{background:var(--bg);color:var(--fg);font:14px/1.45 var(--sans)}body{margin:0}
a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}code,pre{font-family:var(--mono);font-size:12.5px}
h1,h2{margin:0;line-height:1.25}.muted{color:var(--muted)}.wrap{max-width:1280px;margin:0 auto;padding:0 20px}
header.top{background:var(--card);border-bottom:1px solid var(--line);border-top:6px solid var(--ok)}header.top.differs{border-top-color:var(--fail)}
header.top .wrap{padding-top:16px;padding-bottom:16px}header h1{font-size:20px;font-weight:650}
.runs{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin-top:10px}
.run{background:var(--soft);border-radius:8px;padding:8px 12px}.v{font-weight:700;padding:2px 8px;border-radius:6px}
.v-PASS{background:var(--ok-bg);color:var(--ok)}.v-FAIL{background:var(--fail-bg);color:var(--fail)}
main.wrap{padding-top:16px;padding-bottom:40px}section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 16px;margin-bottom:14px}
h2{font-size:16px;margin-bottom:8px}table{border-collapse:collapse;width:100%}td,th{border-top:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}
th{font-weight:600;color:var(--muted)}tr.k-changed td{background:var(--fail-bg)}tr.k-only-a td,tr.k-only-b td{background:var(--fault-bg)}
tr.first td{outline:2px solid var(--fail)}pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;background:var(--soft);padding:6px 8px;border-radius:6px}
.shots{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}figure img{display:block;max-width:${THUMB_WIDTH}px;border:1px solid var(--line);border-radius:6px}
figcaption{font-size:12px;color:var(--muted)}ul{margin:4px 0;padding-left:20px}
td,.run{overflow-wrap:anywhere}figure{max-width:100%}figure img{max-width:min(100%,${THUMB_WIDTH}px)}
@media (max-width:640px){.wrap{padding:0 8px}section{padding:10px}.runs{grid-template-columns:minmax(0,1fr)}td,th{padding:3px 4px}}`;

/**
 * A file path as a relative link from the page (URL-encoded segments); a file:// URL when no relative path
 * leads there (on Windows: another drive, or a share against a drive letter).
 */
function href(from: string, to: string): string {
  const relative = path.relative(from, to);
  if (path.isAbsolute(relative)) return pathToFileURL(to).href;
  return relative
    .split(path.sep)
    .map((s) => encodeURIComponent(s))
    .join('/');
}

async function thumb(file: string): Promise<string | null> {
  try {
    // A regular file only (a FIFO blocked the page for ever, a symlink showed a file from anywhere).
    const bytes = readRegularFile(file, MAX_DIFF_IMAGE_BYTES);
    const sharp = await loadSharp();
    const buf = await sharp(bytes, { limitInputPixels: MAX_DIFF_PIXELS })
      .resize({ width: THUMB_WIDTH, withoutEnlargement: true })
      .webp({ quality: 70 })
      .toBuffer();
    return `data:image/webp;base64,${buf.toString('base64')}`;
  } catch {
    return null;
  }
}

/** Write `diff.html` into `d.outDir` (which must be set) and return its path. */
export async function writeDiffHtml(d: SessionDiff, dirA: string, dirB: string): Promise<string> {
  if (!d.outDir) throw new Error('the diff has no output dir');
  const out = d.outDir;
  const s = d.summary;
  const sections = [
    firstDivergenceSection(d.firstDivergence),
    ...(d.screenshots.length > 0 ? [await screenshotsSection(d.screenshots, dirA, dirB, out)] : []),
    ...(d.trees.length > 0 ? [treesSection(d.trees)] : []),
    alignedSection(d),
  ];
  const html = renderPage({
    title: `diff · ${esc(d.a.sessionId)} vs ${esc(d.b.sessionId)} · mcec-recorder`,
    style: STYLE,
    header: `<header class="top${d.differs ? ' differs' : ''}"><div class="wrap"><h1>${d.differs ? 'The runs differ' : 'The runs match'}</h1>
<p class="muted">${s.same} calls alike · ${s.changed} with another outcome · ${s.onlyA} only in A · ${s.onlyB} only in B</p>
<div class="runs">${runBox('A', d.a)}${runBox('B', d.b)}</div></div></header>`,
    main: sections.join('\n'),
  });
  fs.mkdirSync(out, { recursive: true });
  const file = path.join(out, 'diff.html');
  writeFileAtomic(file, html);
  return file;
}

function runBox(label: string, r: SessionDiff['a']): string {
  return `<div class="run"><b>${label}</b> <code>${esc(r.sessionId)}</code> <span class="v v-${r.verdict}">${r.verdict}</span> <span class="muted">${esc(r.startedAt)} · ${r.calls} calls</span><br>${esc(r.scenario ?? '')}<br><span class="muted">${esc(r.verdictReason)}</span></div>`;
}

function firstDivergenceSection(f: SessionDiff['firstDivergence']): string {
  const parts: string[] = ['<section><h2>First divergence</h2>'];
  if (!f) parts.push('<p>The runs make the same calls with the same outcomes.</p>');
  else {
    parts.push(
      `<p>Aligned call ${f.index + 1}: <b>${esc(f.kind)}</b></p><table><tr><th></th><th>call</th><th>arguments</th><th>outcome</th></tr>`,
    );
    for (const [label, c] of [
      ['A', f.a],
      ['B', f.b],
    ] as const) {
      parts.push(
        c
          ? `<tr><td>${label}</td><td>#${c.seq} <b>${esc(c.tool)}</b></td><td><pre>${esc(c.args)}</pre></td><td>${esc(c.status)}${c.code ? ` <code>${esc(c.code)}</code>` : ''}${c.category ? ` <span class="muted">${esc(c.category)}</span>` : ''}${c.detail ? `<pre>${esc(c.detail)}</pre>` : ''}</td></tr>`
          : `<tr><td>${label}</td><td colspan="3" class="muted">no call here</td></tr>`,
      );
    }
    parts.push('</table>');
  }
  parts.push('</section>');
  return parts.join('\n');
}

/** Each screenshot pair as thumbnails (A, B and the changed pixels) linking to the full files. */
async function screenshotsSection(
  screenshots: SessionDiff['screenshots'],
  dirA: string,
  dirB: string,
  out: string,
): Promise<string> {
  const parts: string[] = [`<section><h2>Screenshots</h2>`];
  for (const x of screenshots) {
    const fa = path.join(dirA, x.aImage);
    const fb = path.join(dirB, x.bImage);
    const fd = x.diffImage ? path.join(out, x.diffImage) : null;
    const figs = [
      [`A #${x.aSeq}`, fa],
      [`B #${x.bSeq}`, fb],
      ...(fd ? [['changed pixels', fd]] : []),
    ] as Array<[string, string]>;
    parts.push(
      x.compared
        ? `<h3>${esc(x.tool)}: ${(x.changedShare * 100).toFixed(2)}% of ${x.width}x${x.height} pixels changed${x.note ? ` <span class="muted">(${esc(x.note)})</span>` : ''}</h3><div class="shots">`
        : `<h3>${esc(x.tool)}: <span class="muted">${esc(x.note ?? 'not compared')}</span></h3><div class="shots">`,
    );
    for (const [label, file] of figs) {
      const src = await thumb(file);
      parts.push(
        `<figure>${src ? `<a href="${esc(href(out, file))}"><img src="${src}" alt="${esc(label)}"></a>` : ''}<figcaption>${esc(label)} · <a href="${esc(href(out, file))}">${esc(path.basename(file))}</a></figcaption></figure>`,
      );
    }
    parts.push('</div>');
  }
  parts.push('</section>');
  return parts.join('\n');
}

function treesSection(trees: SessionDiff['trees']): string {
  const parts: string[] = ['<section><h2>UI tree differences</h2>'];
  for (const t of trees) {
    parts.push(`<p><b>query</b> A #${t.aSeq} / B #${t.bSeq}${t.window ? ` '${esc(t.window)}'` : ''}</p><ul>`);
    for (const x of t.added) parts.push(`<li>added ${esc(x)}</li>`);
    for (const x of t.removed) parts.push(`<li>removed ${esc(x)}</li>`);
    for (const x of t.renamed)
      parts.push(`<li>renamed ${esc(x.node)}: '${esc(x.from)}' → '${esc(x.to)}'</li>`);
    if (t.omitted) parts.push(`<li class="muted">${t.omitted} more</li>`);
    parts.push('</ul>');
  }
  parts.push('</section>');
  return parts.join('\n');
}

function alignedSection(d: SessionDiff): string {
  const f = d.firstDivergence;
  const parts: string[] = [
    '<section><h2>Calls, aligned</h2><table><tr><th>A</th><th>B</th><th>call</th><th>A outcome</th><th>B outcome</th></tr>',
  ];
  d.aligned.forEach((p, i) => {
    parts.push(
      `<tr class="k-${p.kind}${f && i === f.index ? ' first' : ''}"><td>${p.a ?? ''}</td><td>${p.b ?? ''}</td><td><b>${esc(p.tool)}</b> <span class="muted">${esc(p.kind)}</span></td><td>${esc(p.aOutcome ?? '')}</td><td>${esc(p.bOutcome ?? '')}</td></tr>`,
    );
  });
  parts.push('</table></section>');
  return parts.join('\n');
}
