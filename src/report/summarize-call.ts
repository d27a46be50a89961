/** The per-tool summarizer: one short line per call for timelines and failure lists. */
import { mcecTool, type SummarizerKey } from '../contract/tool-catalog.js';
import type { CallRow } from '../store/schema.js';
import { CallJson } from './call-json.js';
import { asRecord, clip, formatBytes, oneLine, parseJson, quote } from './text.js';

/** Longest line the summarizer returns. */
export const MAX_LINE = 160;

type Obj = Record<string, unknown>;

/** Element selector keys (MCEC's `by`/`value` pair is handled first), in the order a reader wants them. */
const ELEMENT_KEYS = ['name', 'automationId', 'controlType', 'text'];
/** Window target keys (MCEC's `window` is a title substring). */
const WINDOW_KEYS = ['window', 'title', 'handle', 'process', 'processName', 'processId', 'className', 'path'];
/** Both, in the order a selector line names them. */
const SELECTOR_KEYS = [...ELEMENT_KEYS, ...WINDOW_KEYS];

const SKIP_KEYS = new Set(['sessionId']);

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return quote(v, 40);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (Array.isArray(v)) return `[${v.slice(0, 4).map(describeValue).join(',')}${v.length > 4 ? ',…' : ''}]`;
  return '{…}';
}

/**
 * `name='Save' window='Save As'` from a call's arguments: the element selector first (`by`/`value` as
 * `<by>='<value>'`, by defaulting to name), then the window target; at most three parts.
 */
function describeSelector(args: Obj | undefined): string {
  if (!args) return '';
  const source = asRecord(args.selector) ?? args;
  const parts: string[] = [];
  if (typeof args.selector === 'string') parts.push(`selector=${quote(args.selector, 60)}`);
  if (
    source.value !== undefined &&
    source.value !== null &&
    (source.by === undefined || typeof source.by === 'string')
  ) {
    parts.push(`${oneLine(str(source.by) ?? 'name', 20)}=${describeValue(source.value)}`);
  }
  for (const key of SELECTOR_KEYS) {
    if (parts.length >= 3) break;
    if (key in source && source[key] !== undefined && source[key] !== null) {
      parts.push(`${key}=${describeValue(source[key])}`);
    }
  }
  if (source.foreground === true && parts.length < 3) parts.push('foreground');
  const region = asRecord(args.region);
  if (region) parts.push(`region ${describeRegion(region)}`);
  return parts.join(' ');
}

function describeRegion(r: Obj): string {
  return `${num(r.x) ?? '?'},${num(r.y) ?? '?'} ${num(r.width) ?? '?'}x${num(r.height) ?? '?'}`;
}

/** Generic `k=v` list of the first few arguments. */
function describeArgs(args: Obj | undefined, max = 3): string {
  if (!args) return '';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(args)) {
    if (SKIP_KEYS.has(key)) continue;
    parts.push(`${oneLine(key, 30)}=${describeValue(value)}`);
    if (parts.length >= max) break;
  }
  return parts.join(' ');
}

function windowTitle(...candidates: unknown[]): string | undefined {
  for (const c of candidates) {
    const title = str(asRecord(c)?.title);
    if (title !== undefined) return title;
  }
  return undefined;
}

/** The first capture-summary object found in a value (bounded walk). */
export function findCaptureSummary(value: unknown, depth = 4): Obj | undefined {
  const obj = asRecord(value);
  if (!obj) {
    if (Array.isArray(value) && depth > 0) {
      for (const item of value.slice(0, 20)) {
        const hit = findCaptureSummary(item, depth - 1);
        if (hit) return hit;
      }
    }
    return undefined;
  }
  if (obj.kind === 'capture-summary') return obj;
  if (depth <= 0) return undefined;
  for (const key of Object.keys(obj).slice(0, 40)) {
    if (key === 'tree' || key === 'children') continue;
    const hit = findCaptureSummary(obj[key], depth - 1);
    if (hit) return hit;
  }
  return undefined;
}

function describeElement(el: unknown): string {
  const e = asRecord(el);
  if (!e) return 'element';
  const type = str(e.controlType)?.replace(/^ControlType\./, '') ?? 'element';
  const name = str(e.name);
  return name ? `${oneLine(type, 30)} ${quote(name, 40)}` : oneLine(type, 30);
}

function describeCapture(args: Obj | undefined, result: Obj | undefined): string {
  const summary = findCaptureSummary(result) ?? {};
  const r = result ?? {};
  const width = num(r.width) ?? num(summary.width);
  const height = num(r.height) ?? num(summary.height);
  const encoding = str(r.encoding) ?? str(summary.encoding) ?? 'png';
  const bytes = num(r.bytes) ?? num(summary.bytes);
  let line = `${width ?? '?'}x${height ?? '?'} ${oneLine(encoding, 10)} ${formatBytes(bytes)}`;
  const title = windowTitle(r.window, summary.window);
  const region = asRecord(r.region) ?? asRecord(args?.region);
  if (title !== undefined) line += ` of ${quote(title, 50)}`;
  else if (region) line += ` of region ${describeRegion(region)}`;
  const blank = asRecord(r.blankCheck) ?? asRecord(summary.blankCheck);
  if (blank?.blank === true) line += ' (blank)';
  const artifactError = str(summary.artifactError) ?? str(r.artifactError);
  if (artifactError) line += ` (image not kept: ${oneLine(artifactError, 40)})`;
  return line;
}

/** What a summarizer gets: the call's tool name, arguments, result and selector line. */
interface SuccessCall {
  tool: string;
  args: Obj | undefined;
  r: Obj;
  target: string;
  withTarget: (text: string) => string;
}

/** One success line per summarizer of the tool catalog; undefined falls back to the generic form. */
const SUMMARIZERS: Record<SummarizerKey, (call: SuccessCall) => string | undefined> = {
  capture: ({ args, r }) => `capture ${describeCapture(args, r)}`,
  query: ({ args, r, target }) => {
    const title = windowTitle(r.window) ?? str(args?.title);
    const nodes = num(r.nodeCount);
    const head = title !== undefined ? `query ${quote(title, 50)}` : target ? `query ${target}` : 'query';
    return `${head}: ${nodes ?? '?'} nodes${r.truncated === true ? ' (truncated)' : ''}`;
  },
  find: ({ tool, args, r, target }) => {
    const timeout = num(args?.timeoutMs) ?? num(args?.timeout);
    const head = `${tool}${target ? ` ${target}` : ''}${tool === 'wait-for' && timeout !== undefined ? ` (${timeout} ms)` : ''}`;
    if (r.found === false) return `${head}: not found`;
    return `${head}: found ${describeElement(r.element)}`;
  },
  'get-text': ({ r, target }) => {
    const title = windowTitle(r.window);
    const head =
      title !== undefined ? `get-text of ${quote(title, 40)}` : target ? `get-text ${target}` : 'get-text';
    const lines = num(r.lineCount);
    const words = num(r.wordCount);
    const text = str(r.text);
    return `${head}: ${lines ?? '?'} lines, ${words ?? '?'} words${text ? ` ${quote(text, 40)}` : ''}`;
  },
  invoke: ({ args, r, withTarget }) => {
    if (r.modalPending === true) return withTarget('invoked, modal dialog pending');
    const action = str(r.action) ?? str(args?.action);
    return withTarget(
      `${r.invoked === false ? 'not invoked' : 'invoked'}${action ? ` (${oneLine(action, 30)})` : ''}`,
    );
  },
  click: ({ r, withTarget }) => {
    const at = Array.isArray(r.at) ? r.at.slice(0, 2).join(',') : undefined;
    const button = str(r.button);
    const count = num(r.count);
    const how = [button, count && count > 1 ? `x${count}` : undefined].filter(Boolean).join(' ');
    return `${withTarget(`clicked${at ? ` at ${at}` : ''}`)}${how ? ` (${oneLine(how, 20)})` : ''}`;
  },
  windows: ({ r }) => {
    const list = Array.isArray(r.windows) ? r.windows : [];
    const count = num(r.count) ?? list.length;
    const titles = list
      .slice(0, 3)
      .map((w) => windowTitle(w))
      .filter((t): t is string => t !== undefined && t !== '')
      .map((t) => quote(t, 30));
    const more = count > titles.length && titles.length > 0 ? `, +${count - titles.length}` : '';
    const condition = str(r.condition);
    const satisfied =
      r.satisfied === undefined ? '' : r.satisfied ? ', condition met' : ', condition not met';
    return `windows${condition ? ` ${oneLine(condition, 30)}` : ''}: ${count} windows${titles.length ? ` (${titles.join(', ')}${more})` : ''}${satisfied}`;
  },
  displays: ({ r }) => {
    const list = Array.isArray(r.displays) ? r.displays : [];
    const primary = asRecord(list.find((d) => asRecord(d)?.primary === true) ?? list[0]);
    const bounds = asRecord(primary?.bounds);
    const count = num(r.count) ?? list.length;
    const dpi = num(primary?.dpi);
    return `displays: ${count} display${count === 1 ? '' : 's'}${bounds ? `, primary ${num(bounds.width) ?? '?'}x${num(bounds.height) ?? '?'}` : ''}${dpi !== undefined ? ` @ ${dpi} dpi` : ''}`;
  },
  'send-command': ({ tool, args, r }) => {
    const command = str(args?.command) ?? str(args?.cmd) ?? '';
    const output = r.output;
    let tail = typeof output === 'string' ? `output ${output.length} chars` : 'done';
    if (typeof output === 'string' && output.startsWith('{')) {
      const inner = asRecord(parseJson(output, 1024 * 1024));
      if (inner && inner.success === false) {
        tail = `inner command failed: ${oneLine(str(inner.errorCode) ?? str(inner.error) ?? 'error', 50)}`;
      }
    }
    return `${tool} ${quote(command, 60)}: ${tail}`;
  },
  session: ({ tool, r }) => {
    const id = str(r.sessionId);
    const stop = asRecord(r.emergencyStop) ? ' (emergency stop latched)' : '';
    return `${tool}${id ? ` ${oneLine(id, 64)}` : ''}${stop}`;
  },
  'session-end': ({ tool, r }) => `${tool}: ${r.ended === false ? 'not ended (already ended)' : 'ended'}`,
  focus: ({ r, withTarget }) => withTarget(r.focused === false ? 'not focused' : 'focused'),
  drag: ({ tool, r }) =>
    `${tool} from ${Array.isArray(r.from) ? r.from.join(',') : '?'} to ${Array.isArray(r.to) ? r.to.join(',') : '?'}`,
  clipboard: ({ tool, r }) =>
    r.set === true
      ? `${tool} set ${num(r.length) ?? '?'} chars`
      : `${tool} read ${num(r.length) ?? '?'} chars`,
  launch: ({ tool, args, r }) =>
    `${tool} ${quote(str(r.path) ?? str(args?.path) ?? '', 60)}: pid ${num(r.processId) ?? '?'}`,
  record: ({ tool, args, r }) => {
    const action = str(args?.action) ?? '';
    const frames = num(r.frames);
    return `${tool}${action ? ` ${oneLine(action, 20)}` : ''}${frames !== undefined ? `: ${frames} frames, ${formatBytes(num(r.bytes))}` : ''}`;
  },
};

/** Success text for a call, by its tool's summarizer in the catalog; undefined falls back to the generic form. */
function describeSuccess(tool: string, args: Obj | undefined, result: Obj | undefined): string | undefined {
  const key = mcecTool(tool)?.summarizer;
  if (!key) return undefined;
  const target = describeSelector(args);
  const withTarget = (text: string) => (target ? `${tool} ${target}: ${text}` : `${tool}: ${text}`);
  return SUMMARIZERS[key]({ tool, args, r: result ?? {}, target, withTarget });
}

/** The call's target for failure lines (selector, window title or first arguments). */
function describeTarget(tool: string, args: Obj | undefined): string {
  if (mcecTool(tool)?.typedText?.rule === 'command-line')
    return quote(str(args?.command) ?? str(args?.cmd) ?? '', 60);
  const target = describeSelector(args) || describeArgs(args);
  const timeout = tool === 'wait-for' ? (num(args?.timeoutMs) ?? num(args?.timeout)) : undefined;
  return timeout === undefined ? target : `${target} (${timeout} ms)`;
}

/**
 * One line describing a call, e.g. "capture 800x600 png 14 KB of 'Untitled - Notepad'" or "find name='Save':
 * selector-matched-3". `shared`: this row's parsed JSON when someone else on the same pass reads it too
 * (anything else, such as an index from `rows.map(summarizeCall)`, is ignored).
 */
export function summarizeCall(row: CallRow, shared?: CallJson): string {
  const json = shared instanceof CallJson && shared.row === row ? shared : new CallJson(row);
  const tool = oneLine(row.tool, 40) || '?';
  const args = asRecord(json.args(1024 * 1024));
  const dropped = row.payload_dropped ? ' [payload dropped]' : '';
  let line: string;
  if (row.status === 'pending') {
    const target = describeTarget(tool, args);
    line = `${tool}${target ? ` ${target}` : ''}: pending (no response recorded)`;
  } else if (row.status === 'ok') {
    const envelope = asRecord(json.envelope());
    const result = asRecord(envelope?.result);
    // Without a readable result (dropped payload, bad JSON) the per-tool text would only be question marks.
    line =
      (result && describeSuccess(tool, args, result)) || `${tool}${args ? ` ${describeArgs(args)}` : ''}: ok`;
    line = line.replace(/ : ok$/, ': ok');
  } else {
    const target = describeTarget(tool, args);
    const code = row.error_code ? oneLine(row.error_code, 60) : row.status === 'fault' ? 'fault' : 'failed';
    const prefix = row.status === 'fault' && row.error_code ? 'fault ' : '';
    line = `${tool}${target ? ` ${target}` : ''}: ${prefix}${code}`;
  }
  return clip(`${line}${dropped}`, MAX_LINE);
}
