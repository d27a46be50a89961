/** Render the summary through Handlebars templates into Markdown documents of at most 65,536 characters. */

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleFileList } from '../contract/bundle-files.js';
import {
  expectArray,
  expectBoolean,
  expectNonEmptyString,
  expectNumber,
  expectObject,
  expectOptions,
  expectString,
} from '../util/expect.js';
import { readTextFileLf } from '../util/text-file.js';
import { groupThousands } from '../util/units.js';
import { type HandlebarsApi, lazyHandlebars } from './handlebars.js';
import { registerHelpers } from './helpers.js';
import { MARKDOWN_COMPILE_OPTIONS, type PrecompiledTemplate, templateDigest } from './precompile.js';
import { PRECOMPILED_TEMPLATES } from './precompiled-templates.js';
import { isPlainServer } from './server-kind.js';
import { sameWindowImages } from './summary.js';
import { targetFacts } from './target.js';
import { clip, oneLine } from './text.js';
import {
  type BugReportOptions,
  type ImageDigest,
  MAX_DOCUMENT_CHARS,
  type RenderOptions,
  type SessionSummary,
} from './types.js';
import { openElsewhereWords } from './verdict.js';

type TemplateFn = (context: unknown) => string;

/** File names of the built-in templates. */
export const FAILURE_SUMMARY_TEMPLATE = 'failure-summary.md.hbs';
export const BUG_REPORT_TEMPLATE = 'bug-report.md.hbs';

/** The folder of the built-in templates (the package's `templates/`, from src/report or dist/report). */
export const BUILTIN_TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));

/** The runtime-only instance (runs precompiled templates) and the full one (compiles overrides), with the helpers. */
const handlebars = lazyHandlebars(registerHelpers);
const compiled = new Map<string, { stamp: string; fn: TemplateFn }>();

/** The precompiled spec of a built-in template whose source is exactly `source`, if there is one. */
function precompiledFor(source: string): PrecompiledTemplate | undefined {
  const digest = templateDigest(source);
  return Object.values(PRECOMPILED_TEMPLATES).find((t) => t.sha256 === digest);
}

/** Where a template comes from: the override folder when it holds a file of that name, else the built-in one. */
export function resolveTemplate(name: string, templatesDir?: string): string {
  if (templatesDir !== undefined) {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(templatesDir);
    } catch {
      throw new Error(`templates dir ${templatesDir} does not exist`);
    }
    if (!stat.isDirectory()) throw new Error(`templates dir ${templatesDir} is not a directory`);
    const candidate = path.join(templatesDir, name);
    try {
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // no override for this name: use the built-in template
    }
  }
  return path.join(BUILTIN_TEMPLATES_DIR, name);
}

/**
 * A template's source as Handlebars gets it: LF line ends (a CRLF checkout or a Windows editor renders and
 * hashes as the LF file), decoded by its byte-order mark (`readTextFile`).
 */
export function readTemplateSource(file: string): string {
  return readTextFileLf(file);
}

/** The template function for a file: compiled once per process (by path, mtime and size), precompiled when built in. */
async function loadTemplate(file: string): Promise<TemplateFn> {
  const stat = fs.statSync(file);
  const stamp = `${stat.mtimeMs}:${stat.size}`;
  const hit = compiled.get(file);
  if (hit && hit.stamp === stamp) return hit.fn;
  const source = readTemplateSource(file);
  const pre = precompiledFor(source);
  let fn: TemplateFn;
  if (pre) {
    const hb = await handlebars.runtime();
    // The spec is Handlebars' own generated JavaScript for this exact source (see precompile.ts).
    const spec = new Function(`return ${pre.spec};`)() as Parameters<HandlebarsApi['template']>[0];
    fn = hb.template(spec) as TemplateFn;
  } else {
    const hb = await handlebars.compiler();
    // strict: a field the template names but the model lacks is an error, not an empty string.
    fn = hb.compile(source, { ...MARKDOWN_COMPILE_OPTIONS }) as TemplateFn;
  }
  compiled.set(file, { stamp, fn });
  return fn;
}

function run(fn: TemplateFn, file: string, context: unknown): string {
  try {
    return fn(context);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`template ${file}: ${message}`);
  }
}

/** How much one rendering attempt keeps; later levels keep less. */
interface Level {
  timeline: number;
  failures: number;
  steps: number;
  warnings: number;
  detail: number;
}

const INF = Number.POSITIVE_INFINITY;
const LEVELS: Level[] = [
  { timeline: INF, failures: INF, steps: INF, warnings: INF, detail: 2000 },
  { timeline: 200, failures: 100, steps: 200, warnings: 50, detail: 1000 },
  { timeline: 50, failures: 50, steps: 50, warnings: 20, detail: 500 },
  { timeline: 20, failures: 20, steps: 20, warnings: 10, detail: 300 },
  { timeline: 10, failures: 10, steps: 10, warnings: 10, detail: 200 },
  { timeline: 5, failures: 5, steps: 5, warnings: 5, detail: 120 },
  { timeline: 2, failures: 2, steps: 2, warnings: 2, detail: 80 },
  { timeline: 0, failures: 0, steps: 0, warnings: 0, detail: 60 },
];

const LIMIT_TEXT = groupThousands(MAX_DOCUMENT_CHARS);

/** The last `n` items (all when n is infinite). */
function lastOf<T>(items: T[], n: number): T[] {
  return n >= items.length ? items : n <= 0 ? [] : items.slice(items.length - n);
}

/** Fields never clipped: a clipped link or hash would be wrong, not shorter (both are short anyway). */
const UNCLIPPED = new Set(['artifact', 'sha256']);

/** Copy with every string longer than `max` clipped. */
function clipStrings<T>(value: T, max: number): T {
  if (typeof value === 'string') return (value.length > max ? clip(value, max) : value) as T;
  if (Array.isArray(value)) return value.map((v) => clipStrings(v, max)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = UNCLIPPED.has(k) ? v : clipStrings(v, max);
    return out as T;
  }
  return value;
}

/** An environment value on one line: `MCEC 3.0.4 (protocol 2025-06-18)` for the server, JSON for other objects. */
function environmentValue(value: unknown): string {
  if (typeof value === 'string') return oneLine(value, 200);
  const obj = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  if (obj && typeof obj.name === 'string') {
    const version = typeof obj.version === 'string' ? ` ${obj.version}` : '';
    const protocol = typeof obj.protocolVersion === 'string' ? ` (protocol ${obj.protocolVersion})` : '';
    return oneLine(`${obj.name}${version}${protocol}`, 200);
  }
  return oneLine(JSON.stringify(value), 200);
}

/** Environment keys the bug report shows under Desktop rather than Version Information. */
const DESKTOP_KEYS = new Set(['os', 'display', 'dpi', 'scale', 'displays']);

/** The template context for one level: the summary (clipped and shortened) plus derived fields and notes. */
function viewFor(
  summary: SessionSummary,
  level: Level,
  extra: Record<string, unknown>,
  leftOut: ReadonlyMap<string, string> = new Map(),
): Record<string, unknown> {
  const notes: string[] = [];
  const total = {
    lines: summary.timeline.lines.length,
    failures: summary.failures.length,
    steps: summary.steps.length,
    warnings: summary.warningsByCode.length,
  };
  const keep = {
    lines: Math.min(total.lines, level.timeline),
    failures: Math.min(total.failures, level.failures),
    steps: Math.min(total.steps, level.steps),
    warnings: Math.min(total.warnings, level.warnings),
  };
  // Cut the lists first so clipping walks only what this level keeps.
  const s = clipStrings(
    {
      ...summary,
      timeline: {
        omitted: summary.timeline.omitted + (total.lines - keep.lines),
        lines: lastOf(summary.timeline.lines, keep.lines),
      },
      reproduce: {
        omitted:
          summary.reproduce.omitted +
          summary.reproduce.lines.length -
          Math.min(summary.reproduce.lines.length, level.timeline),
        lines: lastOf(summary.reproduce.lines, level.timeline),
      },
      failures: lastOf(summary.failures, keep.failures),
      failuresOmitted: summary.failuresOmitted + (total.failures - keep.failures),
      steps: lastOf(summary.steps, keep.steps),
      stepsOmitted: summary.stepsOmitted + (total.steps - keep.steps),
      warningsByCode: summary.warningsByCode.slice(0, keep.warnings),
    },
    level.detail,
  );
  if (keep.lines < total.lines)
    notes.push(`timeline shortened to ${keep.lines} calls to fit ${LIMIT_TEXT} characters`);
  if (keep.failures < total.failures) {
    notes.push(`failure list shortened to the last ${keep.failures} to fit ${LIMIT_TEXT} characters`);
  }
  if (keep.steps < total.steps)
    notes.push(`steps shortened to the last ${keep.steps} to fit ${LIMIT_TEXT} characters`);
  if (keep.warnings < total.warnings) {
    notes.push(
      `warnings shortened to the ${keep.warnings} most frequent codes to fit ${LIMIT_TEXT} characters`,
    );
  }
  if (level !== LEVELS[0])
    notes.push(`details clipped to ${level.detail} characters to fit ${LIMIT_TEXT} characters`);

  const failing = s.failingCall;
  const step = s.lastFailedStep;
  const failingStep = failing
    ? {
        name: step ? step.name : `${failing.tool} (call #${failing.seq})`,
        detail: oneLine(
          failing.status === 'pending'
            ? `call #${failing.seq} ${failing.tool} never returned`
            : `${step ? `call #${failing.seq} ${failing.tool}: ` : ''}${failing.code ?? failing.status}${failing.category ? ` (${failing.category})` : ''}${failing.detail ? `: ${failing.detail}` : ''}`,
          level.detail,
        ),
      }
    : step
      ? { name: step.name, detail: oneLine(step.detail ?? step.status, level.detail) }
      : null;

  const images = imageViews(s, leftOut);
  return {
    ...s,
    ...images,
    ...failingViews(s),
    title: oneLine(s.scenario ?? s.sessionId, 200),
    // `aborted (open on ci-runner-7: its writer, pid 4242, cannot be checked from here)` for a log left open elsewhere.
    statusLine: s.openElsewhere ? `${s.status} (${openElsewhereWords(s.openElsewhere)})` : s.status,
    // Another MCP server's run: no windows, displays, observations or envelopes are spoken of.
    plainServer: isPlainServer(s.environment),
    warningsOmitted: total.warnings - keep.warnings,
    failingStep,
    unrecovered: s.counts.failures - s.counts.recovered,
    environmentLines: Object.entries(s.environment)
      .filter(([, value]) => value !== null && value !== undefined)
      .map(([key, value]) => ({ key, value: environmentValue(value) })),
    // The bug report says the OS and displays under Desktop, so Version Information leaves them out.
    versionLines: Object.entries(s.environment)
      .filter(([key, value]) => value !== null && value !== undefined && !DESKTOP_KEYS.has(key))
      .map(([key, value]) => ({ key, value: environmentValue(value) })),
    // One image is shown once: the observation's image is not linked again when it is the last image seen.
    observationImage:
      s.lastGoodObservation?.image &&
      !(s.lastImage && s.lastImage.artifact === s.lastGoodObservation.image.artifact)
        ? images.lastGoodObservation?.image
        : null,
    imagesLeftOutNote: leftOutNote(leftOut.size),
    notes,
    limit: LIMIT_TEXT,
    ...extra,
  };
}

/**
 * "'Untitled - Notepad', call #4 capture": which window an image shows and which call made it. Another MCP
 * server's images show no window: only the call is named.
 */
export function imageTitle(image: ImageDigest, plainServer = false): string {
  const place = imagePlace(image, plainServer);
  return `${place ? `${place}, ` : ''}call #${image.seq} ${image.tool}`;
}

/** The window an image shows, quoted; 'window unknown' (MCEC) or null (another server) when the log does not say. */
function imagePlace(image: ImageDigest, plainServer: boolean, max = Number.POSITIVE_INFINITY): string | null {
  if (image.window) return `'${Number.isFinite(max) ? oneLine(image.window, max) : image.window}'`;
  return plainServer ? null : 'window unknown';
}

/**
 * The images with their titles (window and call), why one is not in the bundle (`leftOut`, by artifact path;
 * `imageLink` then names it instead of linking it), and whether the last one and the failing call's are of one
 * window.
 */
function imageViews(s: SessionSummary, leftOut: ReadonlyMap<string, string>) {
  const plain = isPlainServer(s.environment);
  const titledImage = (image: ImageDigest | null | undefined) =>
    image
      ? {
          ...image,
          title: imageTitle(image, plain),
          alt: imageTitle(image, plain).replace(/'/g, ''),
          place: imagePlace(image, plain, 100),
          leftOut: image.artifact ? (leftOut.get(artifactKey(image.artifact)) ?? null) : null,
        }
      : null;
  return {
    lastImage: titledImage(s.lastImage),
    suspectImage: titledImage(s.suspectImage),
    imagesSameWindow: sameWindowImages(s.lastImage, s.suspectImage),
    lastGoodObservation: s.lastGoodObservation
      ? { ...s.lastGoodObservation, image: titledImage(s.lastGoodObservation.image) }
      : null,
  };
}

/** An artifact path as the bundle lists it (`./artifacts\\x.png` -> `artifacts/x.png`). */
function artifactKey(p: string): string {
  return p.split('\\').join('/').replace(/^\.\//, '');
}

/** bug-report.md's words for images the log names that the bundle lacks; null when it has them all. */
function leftOutNote(count: number): string | null {
  if (count === 0) return null;
  return `${count === 1 ? '1 image the log names is' : `${count} images the log names are`} not in the attached bundle (its manifest.json's \`dropped\` says why); any other images are in it`;
}

/** What the failing call did in words, its target's facts as lines, and the failures marked when one is it. */
function failingViews(s: SessionSummary): Record<string, unknown> {
  const f = s.failingCall;
  const outcome = !f
    ? ''
    : f.status === 'pending'
      ? 'never returned'
      : `failed with ${f.code ? `\`${f.code.replace(/`/g, "'")}\`` : f.status}${f.category ? ` (${f.category})` : ''}`;
  return {
    failingOutcome: outcome,
    targetFacts: f?.target ? targetFacts(f.target) : [],
    failures: s.failures.map((x) => ({ ...x, isFailing: x.seq === f?.seq })),
  };
}

async function renderCapped(
  name: string,
  summary: SessionSummary,
  options: RenderOptions,
  extra: Record<string, unknown>,
): Promise<string> {
  const file = resolveTemplate(name, options.templatesDir);
  const fn = await loadTemplate(file);
  const leftOut = new Map((options.imagesLeftOut ?? []).map((x) => [artifactKey(x.path), x.why]));
  let last = '';
  for (const level of LEVELS) {
    const view = viewFor(summary, level, extra, leftOut);
    let text = run(fn, file, view);
    // A custom template may leave the notes out; the reader must still be told what was shortened.
    const missing = (view.notes as string[]).filter((n) => !text.includes(n));
    if (missing.length > 0) text += `\n${missing.map((n) => `> Note: ${n}.`).join('\n')}\n`;
    if (text.length <= MAX_DOCUMENT_CHARS) return text;
    last = text;
  }
  const note = `\n\n> Note: this document was cut at ${LIMIT_TEXT} characters; the full record is in the session log.\n`;
  return clip(last, MAX_DOCUMENT_CHARS - note.length) + note;
}

/** Render `failure-summary.md` (at most 65,536 characters). */
export async function renderFailureSummary(
  summary: SessionSummary,
  options: RenderOptions = {},
): Promise<string> {
  checkRenderArguments(summary, options);
  return renderCapped(FAILURE_SUMMARY_TEMPLATE, summary, options, {});
}

/** A summary and the options every renderer takes, checked at the public boundary (TypeError/RangeError). */
function checkRenderArguments(summary: unknown, options: unknown): Record<string, unknown> {
  expectObject(summary, 'summary');
  const o = expectOptions(options);
  expectString(o.templatesDir, 'options.templatesDir', { nonEmpty: true });
  expectArray(o.imagesLeftOut, 'options.imagesLeftOut', (image, name) => {
    expectObject(image, name);
    expectNonEmptyString(image.path, `${name}.path`);
    expectNonEmptyString(image.why, `${name}.why`);
    expectBoolean(image.thumbnailStays, `${name}.thumbnailStays`);
  });
  return o;
}

/** `options.bundleFiles`: absent, or an array of `{name, holds}`, both non-empty strings (TypeError/RangeError). */
export function checkBundleFiles(value: unknown): void {
  expectArray(value, 'options.bundleFiles', (file, name) => {
    expectObject(file, name);
    expectNonEmptyString(file.name, `${name}.name`);
    expectNonEmptyString(file.holds, `${name}.holds`);
  });
}

/** Render `bug-report.md`, an issue body with the MCEC bug-report headings (at most 65,536 characters). */
export async function renderBugReport(
  summary: SessionSummary,
  options: BugReportOptions = {},
): Promise<string> {
  const o = checkRenderArguments(summary, options);
  expectString(o.bundleName, 'options.bundleName', { nonEmpty: true });
  if (o.runGif !== undefined && o.runGif !== null) {
    expectObject(o.runGif, 'options.runGif');
    expectNonEmptyString(o.runGif.path, 'options.runGif.path');
    expectNumber(o.runGif.frames, 'options.runGif.frames', { min: 0, integer: true, required: true });
  }
  checkBundleFiles(o.bundleFiles);
  const bundleName = oneLine(options.bundleName ?? `${summary.dirName}.zip`, 200);
  const runGif = options.runGif ? { path: options.runGif.path, frames: options.runGif.frames } : null;
  // Untold (a library user, `mcec-bundle issue-body`): every file a bundle can hold; [] names none.
  const bundleFiles = (options.bundleFiles ?? bundleFileList()).map((f) => ({
    name: oneLine(f.name, 200),
    holds: oneLine(f.holds, 200),
  }));
  return renderCapped(BUG_REPORT_TEMPLATE, summary, options, { bundleName, runGif, bundleFiles });
}
