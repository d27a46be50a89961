/**
 * `index.html` in the sessions dir (`mcec-bundle report --all`): every session from the catalog with its
 * verdict and scenario, filters (verdict, scenario, text), the triage groups, and a link to each session's
 * report.html. One self-contained file in report.html's style: inline style and script allowed by their
 * sha256 in a strict CSP, no network, no images.
 */
import fs from 'node:fs';
import path from 'node:path';
import { escapeHtml as esc, paletteStyle, renderPage } from '../report/page-shell.js';
import { openElsewhereWords } from '../report/verdict.js';
import { writeFileAtomic } from '../report/write-atomic.js';
import type { CatalogSession } from '../store/catalog.js';
import type { TriageReport } from './triage.js';
import { sparkline } from './triage.js';

/** The page's file name in the sessions dir. */
export const INDEX_FILE = 'index.html';

const STYLE = `${paletteStyle('--pend:#9a6700;--pend-bg:#fff8c5;', '--pend:#d29922;--pend-bg:#2b2111;')}
*{box-sizing:border-box}[hidden]{display:none!important}html{background:var(--bg);color:var(--fg);font:14px/1.45 var(--sans)}body{margin:0}
a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}code{font-family:var(--mono);font-size:12.5px}
h1,h2{margin:0;line-height:1.25}.muted{color:var(--muted)}.wrap{max-width:1280px;margin:0 auto;padding:0 20px}
header.top{background:var(--card);border-bottom:1px solid var(--line);border-top:6px solid var(--link)}header.top .wrap{padding-top:16px;padding-bottom:16px}
header h1{font-size:20px;font-weight:650}main.wrap{padding-top:16px;padding-bottom:40px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 16px;margin-bottom:14px}h2{font-size:16px;margin-bottom:8px}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}th{font-weight:600;color:var(--muted)}
.v{font-weight:700;padding:1px 6px;border-radius:6px}.v-PASS{background:var(--ok-bg);color:var(--ok)}.v-FAIL{background:var(--fail-bg);color:var(--fail)}
.v-none{background:var(--pend-bg);color:var(--pend)}.filters{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:8px}
.filters select,.filters input{font:inherit;padding:3px 6px;border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--fg)}
.filters label{display:flex;gap:4px;align-items:center;max-width:100%;min-width:0}.filters select,.filters input{min-width:0;max-width:100%}
td{overflow-wrap:anywhere}
@media (max-width:640px){.wrap{padding:0 8px}section{padding:10px}table,tbody,tr,td{display:block;width:100%}thead{display:none}
tr{border-top:1px solid var(--line);padding:6px 0}td{border:0;padding:1px 0}td[data-k]::before{content:attr(data-k) ": ";color:var(--muted)}}`;

const SCRIPT = `(function(){var v=document.getElementById('f-verdict'),s=document.getElementById('f-scenario'),q=document.getElementById('f-text'),n=document.getElementById('shown');
var rows=Array.prototype.slice.call(document.querySelectorAll('#sessions tbody tr'));document.getElementById('filters').hidden=false;
function apply(){var vv=v.value,sv=s.value,qv=q.value.toLowerCase(),k=0;rows.forEach(function(r){var ok=(!vv||r.getAttribute('data-verdict')===vv)&&(!sv||r.getAttribute('data-scenario')===sv)&&(!qv||r.textContent.toLowerCase().indexOf(qv)>=0);r.hidden=!ok;if(ok)k++;});n.textContent=String(k);}
v.addEventListener('change',apply);s.addEventListener('change',apply);q.addEventListener('input',apply);apply();})();`;

/** The index page's HTML for these sessions (newest first) and this triage report. */
export function renderIndexHtml(
  sessions: CatalogSession[],
  report: TriageReport,
  options: { sessionsDir: string; hasReport: (dirName: string) => boolean },
): string {
  // A link to the session's page, or to its dir when it has none.
  const sessionLink = (dirName: string, id: string) =>
    `<a href="${encodeURIComponent(dirName)}/${options.hasReport(dirName) ? 'report.html' : ''}">${esc(id)}</a>`;
  const rows = sessions
    .filter((s) => s.calls > 0 || s.error !== null)
    .slice()
    .reverse()
    .map((s) => {
      const verdict = s.error !== null ? 'UNREADABLE' : (s.verdict ?? 'none');
      const link = options.hasReport(s.dir_name)
        ? `<a href="${encodeURIComponent(s.dir_name)}/report.html">${esc(s.session_id)}</a>`
        : `<a href="${encodeURIComponent(s.dir_name)}/">${esc(s.session_id)}</a> <span class="muted">(${s.error !== null ? 'its log cannot be read: see why' : `no report.html yet: <code>mcec-bundle report ${esc(s.session_id)}</code> writes it`})</span>`;
      const status =
        s.unchecked_host !== null
          ? ` (${openElsewhereWords({ host: s.unchecked_host })})`
          : s.status === 'open'
            ? ' (running)'
            : s.status === 'aborted'
              ? ' (aborted)'
              : '';
      return `<tr data-verdict="${esc(verdict)}" data-scenario="${esc(s.scenario ?? '')}"><td>${link}</td><td><span class="v v-${verdict === 'PASS' || verdict === 'FAIL' ? verdict : 'none'}">${esc(verdict)}</span>${esc(status)}</td><td data-k="scenario">${esc(s.scenario ?? '')}</td><td data-k="start (UTC)">${esc((s.started_at ?? '').slice(0, 19).replace('T', ' '))}</td><td data-k="duration">${esc(s.duration)}</td><td data-k="calls">${s.calls}</td><td data-k="failures">${s.failures}</td><td class="muted">${esc(s.verdict_reason ?? s.error ?? '')}</td></tr>`;
    });
  const scenarios = [...new Set(sessions.map((s) => s.scenario).filter((x): x is string => !!x))].sort();
  const groups = report.groups
    .slice(0, 50)
    .map(
      (g) =>
        `<tr><td data-k="count">${g.count}</td><td data-k="sessions">${g.sessions}</td><td><b>${esc(g.tool)}</b> <code>${esc(g.code ?? '-')}</code> <span class="muted">${esc(g.category ?? '')}</span><br>${esc(g.detail)}</td><td data-k="target">${esc([g.className, g.process].filter(Boolean).join(', '))}</td><td data-k="last seen">${esc(g.lastSeen.slice(0, 16).replace('T', ' '))}</td><td data-k="trend" title="${esc(g.trend.direction)}">${esc(sparkline(g.trend))} ${esc(g.trend.direction)}</td><td data-k="example">${sessionLink(g.example.dirName, g.example.sessionId)} #${g.example.seq}</td></tr>`,
    );
  const flaky = report.flaky.map(
    (f) =>
      `<tr><td>${esc(f.scenario)}</td><td data-k="pass rate">${(f.passRate * 100).toFixed(0)}%</td><td data-k="passed">${f.passed} of ${f.runs}</td><td data-k="last FAIL">${sessionLink(f.lastFailed.dirName, f.lastFailed.sessionId)}</td></tr>`,
  );
  const s = report.sessions;
  return renderPage({
    title: `Sessions · ${esc(path.basename(options.sessionsDir))} · mcec-recorder`,
    style: STYLE,
    script: SCRIPT,
    header: `<header class="top"><div class="wrap"><h1>Sessions in ${esc(options.sessionsDir)}</h1>
<p class="muted">${s.total} sessions: ${s.passed} PASS, ${s.failed} FAIL${s.running ? `, ${s.running} running` : ''}${s.unreadable ? `, ${s.unreadable} unreadable` : ''} · generated ${esc(report.generatedAt)}</p></div></header>`,
    main: `<section id="triage"><h2>Recurring failures</h2>${groups.length === 0 ? '<p>No unrecovered failures.</p>' : `<table><thead><tr><th>count</th><th>sessions</th><th>failure</th><th>target</th><th>last seen</th><th>trend</th><th>example</th></tr></thead><tbody>${groups.join('')}</tbody></table>`}</section>
<section id="flaky"><h2>Flaky scenarios</h2>${flaky.length === 0 ? '<p>None (no scenario both passed and failed).</p>' : `<table><thead><tr><th>scenario</th><th>pass rate</th><th>passed</th><th>last FAIL</th></tr></thead><tbody>${flaky.join('')}</tbody></table>`}</section>
<section><h2>Sessions</h2>
<div class="filters" id="filters" hidden><label>verdict <select id="f-verdict"><option value="">any</option><option>PASS</option><option>FAIL</option><option>UNREADABLE</option></select></label>
<label>scenario <select id="f-scenario"><option value="">any</option>${scenarios.map((x) => `<option value="${esc(x)}">${esc(x)}</option>`).join('')}</select></label>
<label>search <input id="f-text" type="search" placeholder="id, scenario, reason"></label><span class="muted"><span id="shown">${rows.length}</span> shown</span></div>
<table id="sessions"><thead><tr><th>session</th><th>verdict</th><th>scenario</th><th>start (UTC)</th><th>duration</th><th>calls</th><th>failures</th><th>why</th></tr></thead><tbody>
${rows.join('\n')}
</tbody></table></section>`,
  });
}

/** When a file was last written (ms), or null when it is not there. */
function mtimeOf(file: string): number | null {
  return fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? null;
}

/**
 * The listed sessions (a call, readable) whose report.html is missing or older than their log (or its WAL):
 * the pages `report --all` writes before the index links to them.
 */
export function stalePages(sessionsDir: string, sessions: CatalogSession[]): string[] {
  return sessions
    .filter((s) => s.calls > 0 && s.error === null)
    .map((s) => s.dir_name)
    .filter((dirName) => {
      const dir = path.join(sessionsDir, dirName);
      const page = mtimeOf(path.join(dir, 'report.html'));
      if (page === null) return true;
      const log = Math.max(
        mtimeOf(path.join(dir, 'session.sqlite')) ?? 0,
        mtimeOf(path.join(dir, 'session.sqlite-wal')) ?? 0,
      );
      return log > page;
    });
}

/** Write `index.html` into the sessions dir (atomically) and return its path. */
export function writeIndexHtml(
  sessionsDir: string,
  sessions: CatalogSession[],
  report: TriageReport,
): string {
  const html = renderIndexHtml(sessions, report, {
    sessionsDir,
    hasReport: (dirName) => fs.existsSync(path.join(sessionsDir, dirName, 'report.html')),
  });
  const file = path.join(sessionsDir, INDEX_FILE);
  writeFileAtomic(file, html);
  return file;
}
