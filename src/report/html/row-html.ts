/**
 * The built-in template's `call` row partial as a plain function: the same bytes Handlebars renders (its
 * escaping and truthiness rules), without its per-row lookups. Used only while the partial's source is the one
 * below (checked by hash), so an edited template always goes through Handlebars.
 */

/** sha256 of the built-in `call` partial source this function mirrors (see rowPartialSource). */
export const BUILT_IN_ROW_PARTIAL_SHA256 = 'be2bf24ca34498260f26943aa500a51d2763fcfb0be21f0cad40cda4cc0fd216';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#x27;',
  '`': '&#x60;',
  '=': '&#x3D;',
};
const BAD_CHARS = /[&<>"'`=]/g;
const POSSIBLE = /[&<>"'`=]/;

/** Handlebars' `{{value}}`: SafeStrings as they are, null/undefined empty, everything else escaped. */
function esc(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value && typeof (value as { toHTML?: unknown }).toHTML === 'function') {
    return (value as { toHTML(): string }).toHTML();
  } else if (value == null) return '';
  else if (!value) return `${value}`;
  else text = `${value}`;
  return POSSIBLE.test(text) ? text.replace(BAD_CHARS, (c) => ESCAPES[c]!) : text;
}

/** Handlebars' `{{#if value}}`: false for falsy values (0 included) and empty arrays. */
function truthy(value: unknown): boolean {
  if (!value) return false;
  return !(Array.isArray(value) && value.length === 0);
}

/** Handlebars' `{{{value}}}`. */
function raw(value: unknown): string {
  return value == null ? '' : `${value}`;
}

function list(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? (value as Array<Record<string, unknown>>) : [];
}

/** An image's masked regions as an SVG of labelled boxes (over its thumbnail when there is one). */
function maskDrawing(m: Record<string, unknown>): string {
  let out = `<svg class="mk" viewBox="0 0 ${esc(m.width)} ${esc(m.height)}" role="img" aria-label="${esc(m.label)}">`;
  if (truthy(m.thumb))
    out += `<image href="${esc(m.thumb)}" width="${esc(m.width)}" height="${esc(m.height)}"/>`;
  for (const b of list(m.boxes)) {
    out += `<g><title>${esc(b.title)}</title><rect x="${esc(b.x)}" y="${esc(b.y)}" width="${esc(b.w)}" height="${esc(b.h)}"/>`;
    out += `<text x="${esc(b.tx)}" y="${esc(b.ty)}" font-size="${esc(b.fs)}">${esc(b.label)}</text></g>`;
  }
  return `${out}</svg>`;
}

/** One timeline row from its context (rowContext's result), as the built-in partial renders it. */
export function renderBuiltInRow(c: Record<string, unknown>): string {
  const warnings = list(c.warnings);
  let out = `\n<details class="call s-${esc(c.status)}`;
  if (truthy(c.isFailing)) out += ' failing';
  if (truthy(c.isLastGood)) out += ' lastgood';
  if (truthy(c.warnings)) out += ' warned';
  if (truthy(c.recovered)) out += ' recovered';
  out += `" id="c${esc(c.seq)}"`;
  if (truthy(c.code)) out += ` data-code="${esc(c.code)}"`;
  if (truthy(c.warnCodes)) out += ` data-warn="${esc(c.warnCodes)}"`;
  out += `>\n<summary><small>#${esc(c.seq)}</small><time>${esc(c.time)}</time><b>${esc(c.tool)}</b><span class="st b-${esc(c.status)}">${esc(c.status)}</span><small>${esc(c.duration)}</small><span>`;
  if (truthy(c.isFailing)) out += '<em class="tag t-fail">failing call</em>';
  if (truthy(c.isLastGood)) out += '<em class="tag t-good">last good observation</em>';
  if (truthy(c.recovered)) out += '<em class="tag t-rec">recovered</em>';
  out += esc(c.line);
  for (const w of warnings) out += ` <span class="wb" title="${esc(w.detail)}">&#9888; ${esc(w.code)}</span>`;
  if (truthy(c.violationCount))
    out += ` <span class="vb">${esc(c.violationCount)} contract violation(s)</span>`;
  out += '</span>';
  if (truthy(c.thumbs)) {
    out += '<span class="thumbs">';
    for (const t of list(c.thumbs)) {
      out += `<img src="${esc(t.src)}" width="${esc(t.width)}" height="${esc(t.height)}" alt="${esc(t.label)}" title="${esc(t.label)}">`;
    }
    out += '</span>';
  }
  out += '</summary>\n<div>';
  if (truthy(c.code)) {
    out += `<p class="err"><code>${esc(c.code)}</code>`;
    if (truthy(c.category)) out += ` <span class="muted">${esc(c.category)}</span>`;
    if (truthy(c.detail)) out += `: ${esc(c.detail)}`;
    out += '</p>';
  }
  if (truthy(c.recovery)) out += `<p class="rec"><b>Next step:</b> ${esc(c.recovery)}</p>`;
  if (truthy(c.warnings)) {
    out += '<ul class="wl">';
    for (const w of warnings) out += `<li><code>${esc(w.code)}</code> ${esc(w.detail)}</li>`;
    out += '</ul>';
  }
  if (truthy(c.images)) {
    out += '<ul class="il">';
    for (const img of list(c.images)) {
      out += '<li>';
      out += truthy(img.href) ? `<a href="${esc(img.href)}">${esc(img.label)}</a>` : esc(img.label);
      if (truthy(img.note)) out += ` <span class="muted">${esc(img.note)}</span>`;
      if (truthy(img.mask)) out += maskDrawing(img.mask as Record<string, unknown>);
      out += '</li>';
    }
    out += '</ul>';
  }
  for (const b of list(c.blocks)) {
    out += `<h4>${esc(b.title)}</h4><pre>${raw(b.html)}</pre>`;
    if (truthy(b.note)) out += `<p class="note">${esc(b.note)}</p>`;
  }
  if (truthy(c.bodyNote)) out += `<p class="note">${esc(c.bodyNote)}</p>`;
  out += `<p class="meta">${esc(c.transport)}`;
  if (truthy(c.rpcId)) out += ` · rpc id ${esc(c.rpcId)}`;
  out += ` · ${esc(c.at)}`;
  if (truthy(c.hidden)) out += ` · <i>${esc(c.hidden)}</i>`;
  out += '</p></div>\n</details>\n';
  return out;
}
