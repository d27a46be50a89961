/** The report.html template: its own Handlebars instance (HTML escaping on), loaded lazily. */
import fs from 'node:fs';
import { resolveTemplate } from '../render.js';
import { escapeTextNode } from './pretty-json.js';

export type HandlebarsApi = typeof import('handlebars');
export type TemplateFn = (context: unknown) => string;

/** The template's file name in `templates/`. */
export const REPORT_HTML_TEMPLATE = 'report.html.hbs';

let instance: Promise<HandlebarsApi> | null = null;

/** A Handlebars instance of our own, created on first use (the Markdown renderers turn escaping off). */
export function handlebars(): Promise<HandlebarsApi> {
  instance ??= import('handlebars').then((mod) => {
    const api = ((mod as { default?: HandlebarsApi }).default ?? mod) as HandlebarsApi;
    return api.create();
  });
  return instance;
}

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
function rowPartialSource(source: string): string | null {
  const start = source.indexOf(ROW_PARTIAL_OPEN);
  if (start === -1) return null;
  const body = start + ROW_PARTIAL_OPEN.length;
  const end = source.indexOf(INLINE_CLOSE, body);
  const inner = end === -1 ? null : source.slice(body, end);
  // A partial that nests inline blocks or calls other partials needs the whole template.
  return inner === null || inner.includes('{{#*inline') || inner.includes('{{>') ? null : inner;
}

/** Load and compile the report.html template. */
export async function loadReportTemplate(templatesDir?: string): Promise<ReportTemplate> {
  const file = resolveTemplate(REPORT_HTML_TEMPLATE, templatesDir);
  const hb = await handlebars();
  const source = fs.readFileSync(file, 'utf8');
  const options = { noEscape: false, strict: false };
  const fn = hb.compile(source, options) as TemplateFn;
  const rowSource = rowPartialSource(source);
  const rowFn = rowSource === null ? null : (hb.compile(rowSource, options) as TemplateFn);
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
