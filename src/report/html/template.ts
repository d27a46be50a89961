/** The report.html template: its own Handlebars instance (HTML escaping on), loaded lazily, precompiled when built in. */
import { createHash } from 'node:crypto';
import { type HandlebarsApi, lazyHandlebars } from '../handlebars.js';
import { readTemplateSource, resolveTemplate } from '../render.js';
import { PRECOMPILED_REPORT_HTML } from './precompiled-html.js';
import { escapeTextNode } from './pretty-json.js';

export type { HandlebarsApi } from '../handlebars.js';
export type TemplateFn = (context: unknown) => string;

/** The template's file name in `templates/`. */
export const REPORT_HTML_TEMPLATE = 'report.html.hbs';
/** How report.html templates are compiled: HTML escaping on, missing fields render empty. */
export const HTML_COMPILE_OPTIONS = Object.freeze({ noEscape: false, strict: false });

/** Precompiled specs of the built-in template: the page and its `call` row partial (see precompile-html.ts). */
export interface PrecompiledReportHtml {
  sha256: string;
  page: string;
  row: string | null;
}

/** Our own instances of Handlebars (HTML escaping on), loaded on first use. */
const handlebars = lazyHandlebars();

/** A compiled report.html template: the override in `templatesDir` when there is one, else the built-in. */
export interface ReportTemplate {
  hb: HandlebarsApi;
  file: string;
  /** Render the page (naming the template file in any error). */
  render(context: unknown): string;
  /** Render one timeline row: the template's `call` inline partial. */
  renderRow(row: unknown): string;
}

const ROW_PARTIAL_OPEN = '{{#*inline "call"}}';
const INLINE_CLOSE = '{{/inline}}';

/** The source of the `call` inline partial, compiled on its own so 10,000 rows skip the page's setup. */
export function rowPartialSource(source: string): string | null {
  const start = source.indexOf(ROW_PARTIAL_OPEN);
  if (start === -1) return null;
  const body = start + ROW_PARTIAL_OPEN.length;
  const end = source.indexOf(INLINE_CLOSE, body);
  const inner = end === -1 ? null : source.slice(body, end);
  // A partial that nests inline blocks or calls other partials needs the whole template.
  return inner === null || inner.includes('{{#*inline') || inner.includes('{{>') ? null : inner;
}

/** The sha256 (hex) of a template source. */
export function templateSha256(source: string): string {
  return createHash('sha256').update(source, 'utf8').digest('hex');
}

function fromSpec(hb: HandlebarsApi, spec: string): TemplateFn {
  // The spec is Handlebars' own generated JavaScript for this exact source (precompile-html.ts wrote it).
  return hb.template(
    new Function(`return ${spec};`)() as Parameters<HandlebarsApi['template']>[0],
  ) as TemplateFn;
}

/** Load the report.html template: precompiled when it is the built-in source, else compiled. */
export async function loadReportTemplate(
  templatesDir?: string,
  options: { precompiled?: boolean } = {},
): Promise<ReportTemplate> {
  const file = resolveTemplate(REPORT_HTML_TEMPLATE, templatesDir);
  const source = readTemplateSource(file);
  const pre =
    options.precompiled !== false && PRECOMPILED_REPORT_HTML.sha256 === templateSha256(source)
      ? PRECOMPILED_REPORT_HTML
      : null;
  let hb: HandlebarsApi;
  let fn: TemplateFn;
  let rowFn: TemplateFn | null;
  const rowSource = rowPartialSource(source);
  if (pre) {
    hb = await handlebars.runtime();
    fn = fromSpec(hb, pre.page);
    rowFn = pre.row === null ? null : fromSpec(hb, pre.row);
  } else {
    hb = await handlebars.compiler();
    fn = hb.compile(source, { ...HTML_COMPILE_OPTIONS }) as TemplateFn;
    rowFn = rowSource === null ? null : (hb.compile(rowSource, { ...HTML_COMPILE_OPTIONS }) as TemplateFn);
  }
  const run = (f: TemplateFn, context: unknown) => {
    try {
      return f(context);
    } catch (err) {
      throw new Error(`template ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return {
    hb,
    file,
    render: (context) => run(fn, context),
    renderRow: (row) => (rowFn ? run(rowFn, row) : run(fn, { rowOnly: true, row })),
  };
}

/** Text for a text node, escaped here (`&`, `<`, `>`) and marked safe so Handlebars does not escape quotes too. */
export function textHtml(hb: HandlebarsApi, text: string): unknown {
  return new hb.SafeString(escapeTextNode(text));
}
