/** Handlebars helpers for the Markdown templates (registered once on the report's own instance). */
import type { HelperOptions } from 'handlebars';
import type { HandlebarsApi } from './handlebars.js';
import { formatBytes, oneLine } from './text.js';
import { formatDurationMs } from './time.js';

/** Handlebars passes its options object last; strip it from a helper's arguments. */
function params(args: unknown[]): unknown[] {
  return args.slice(0, -1);
}

function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 96) {
      run += 1;
      if (run > longest) longest = run;
    } else run = 0;
  }
  return longest;
}

/** `text` as a Markdown code span that its own backticks cannot break. */
export function codeSpan(value: unknown): string {
  const text = oneLine(value, 2000);
  if (text === '') return '``';
  const ticks = '`'.repeat(longestBacktickRun(text) + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${text}${pad}${ticks}`;
}

/** A path for a Markdown link destination: spaces and parentheses percent-encoded. */
export function linkPath(value: string): string {
  let out = '';
  for (const ch of value) {
    if (ch === ' ') out += '%20';
    else if (ch === '(') out += '%28';
    else if (ch === ')') out += '%29';
    else if (ch === '<' || ch === '>') out += encodeURIComponent(ch);
    else out += ch;
  }
  return out;
}

/** Register the helpers on one Handlebars instance. */
export function registerHelpers(hb: HandlebarsApi): void {
  hb.registerHelper('codeSpan', (value: unknown) => codeSpan(value));
  hb.registerHelper('clipLine', (...args: unknown[]) => {
    const [value, max] = params(args);
    return oneLine(value, typeof max === 'number' ? max : 120);
  });
  hb.registerHelper('json', (...args: unknown[]) => {
    const [value, max] = params(args);
    return oneLine(JSON.stringify(value ?? null), typeof max === 'number' ? max : 300);
  });
  hb.registerHelper('formatBytes', (value: unknown) => formatBytes(typeof value === 'number' ? value : null));
  hb.registerHelper('formatDuration', (value: unknown) =>
    formatDurationMs(typeof value === 'number' ? value : null),
  );
  hb.registerHelper('plural', (...args: unknown[]) => {
    const [count, word, pluralWord] = params(args);
    const n = typeof count === 'number' ? count : Number(count);
    const many = typeof pluralWord === 'string' ? pluralWord : `${String(word)}s`;
    return `${n} ${n === 1 ? String(word) : many}`;
  });
  hb.registerHelper('eq', (...args: unknown[]) => {
    const [a, b] = params(args);
    return a === b;
  });
  hb.registerHelper('gt', (...args: unknown[]) => {
    const [a, b] = params(args);
    return typeof a === 'number' && typeof b === 'number' && a > b;
  });
  hb.registerHelper(
    'or',
    (...args: unknown[]) => params(args).find((v) => v !== null && v !== undefined && v !== '') ?? '',
  );
  hb.registerHelper('not', (...args: unknown[]) => !params(args)[0]);
  hb.registerHelper('imageLink', (...args: unknown[]) => {
    const [digest, alt] = params(args) as [
      { artifact?: unknown; leftOut?: unknown } | null | undefined,
      unknown,
    ];
    if (!digest || typeof digest.artifact !== 'string') return '';
    // Not in the bundle (src/report/render.ts imageViews): say so rather than link a file the zip lacks.
    if (typeof digest.leftOut === 'string')
      return `(the image is not in this bundle: ${oneLine(digest.leftOut, 200)})`;
    const label = oneLine(typeof alt === 'string' ? alt : 'image', 60).replace(/[[\]]/g, '');
    return `![${label}](${linkPath(digest.artifact)})`;
  });
  hb.registerHelper('fence', function fence(this: unknown, ...args: unknown[]) {
    const options = args[args.length - 1] as HelperOptions;
    const [lang] = params(args);
    const body = options.fn(this).replace(/^\n+|\n+$/g, '');
    let longest = 0;
    let run = 0;
    for (let i = 0; i < body.length; i++) {
      if (body.charCodeAt(i) === 96) longest = Math.max(longest, ++run);
      else run = 0;
    }
    const ticks = '`'.repeat(Math.max(3, longest + 1));
    return `${ticks}${typeof lang === 'string' ? lang : ''}\n${body}\n${ticks}`;
  });
}
