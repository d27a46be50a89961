/** What the log already says about a call's target window and the display it is on (no new server calls). */
import type { McecToolName } from '../contract/tool-catalog.js';
import type { CallRow } from '../store/schema.js';
import type { SessionReader } from '../store/session-reader.js';
import { asRecord, clip, compactValue, oneLine, parseJson } from './text.js';
import type { TargetDigest } from './types.js';

type Obj = Record<string, unknown>;

/**
 * Tools whose result names one window (`result.window`) or lists windows (`result.windows`); typed by the
 * catalog so a misspelt name (this list once held `wait`, no MCEC tool) fails the build.
 */
const WINDOW_TOOLS: readonly McecToolName[] = [
  'windows',
  'find',
  'wait-for',
  'query',
  'capture',
  'invoke',
  'focus',
];
/** How many earlier calls are searched for a result naming the target. */
const LOOKBACK = 200;

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function str(v: unknown, max = 120): string | null {
  return typeof v === 'string' && v.length > 0 ? oneLine(v, max) : null;
}

/**
 * The call's arguments as one line of JSON without the routing `sessionId` (args are stored redacted). Given
 * the session's own id, a `sessionId` naming another session stays: it is what the call got wrong (an
 * `unknown-session` answer lands in the session the connection was in).
 */
export function argsLine(args: string | null, max = 300, ownSessionId?: string): string {
  const parsed = asRecord(parseJson(args, 1024 * 1024));
  if (!parsed) return args ? oneLine(args, max) : '{}';
  const { sessionId: routing, ...rest } = parsed;
  const shown =
    ownSessionId !== undefined && routing !== undefined && routing !== ownSessionId ? parsed : rest;
  return oneLine(JSON.stringify(compactValue(shown, { depth: 4, maxString: 120 })), max);
}

/** Does a window record match the call's target (handle first, else title, case-insensitively)? */
function matches(win: Obj, want: { handle: number | null; title: string | null }): boolean {
  if (want.handle !== null) return num(win.handle) === want.handle;
  return want.title !== null && typeof win.title === 'string' && win.title.toLowerCase() === want.title;
}

/** The windows a result names: its `window`, its `windows` list, a nested summary's `window`. */
function windowsIn(result: Obj | undefined): Obj[] {
  if (!result) return [];
  const out: Obj[] = [];
  const one = asRecord(result.window);
  if (one) out.push(one);
  if (Array.isArray(result.windows))
    for (const w of result.windows.slice(0, 500)) if (asRecord(w)) out.push(w as Obj);
  return out;
}

/** What a call aims at: a window handle, else a lower-cased window title. */
export interface TargetKey {
  handle: number | null;
  title: string | null;
}

/** The window a call is aimed at (its partialResult's window, else its arguments); null when it names none. */
export function targetKeyOf(row: CallRow): TargetKey | null {
  const args = asRecord(parseJson(row.args, 1024 * 1024)) ?? {};
  const envelope = asRecord(parseJson(row.envelope));
  const partial = asRecord(asRecord(envelope?.error)?.partialResult);
  const win = asRecord(partial?.window) ?? asRecord(asRecord(envelope?.result)?.window);
  const handle = num(win?.handle) ?? num(args.handle) ?? num(partial?.handle);
  const title = str(win?.title, 500) ?? (typeof args.window === 'string' ? args.window : null);
  if (handle === null && title === null) return null;
  return { handle, title: title?.toLowerCase() ?? null };
}

/**
 * The target window as a successful call saw it: its own `window`, or an entry of its `windows` list; else
 * its arguments' window when its result names none. Null when the call did not show that window.
 */
export function windowShownBy(row: CallRow, want: TargetKey): Obj | null {
  const result = asRecord(asRecord(parseJson(row.envelope))?.result);
  const wins = windowsIn(result);
  const hit = wins.find((w) => matches(w, want));
  if (hit) return hit;
  if (wins.length > 0) return null;
  const args = asRecord(parseJson(row.args, 1024 * 1024)) ?? {};
  const byArgs =
    want.handle !== null
      ? num(args.handle) === want.handle
      : want.title !== null && typeof args.window === 'string' && args.window.toLowerCase() === want.title;
  return byArgs ? { title: typeof args.window === 'string' ? args.window : null } : null;
}

/** The facts about the failing call's target window and its display, from the log alone; null when none are known. */
export function targetOf(reader: SessionReader, failing: CallRow): TargetDigest | null {
  const error = asRecord(asRecord(parseJson(failing.envelope))?.error);
  const partial = asRecord(error?.partialResult);
  let win = asRecord(partial?.window);
  let source = win ? `call #${failing.seq}'s partialResult` : null;
  const want = targetKeyOf(failing);
  if (want === null) return null;
  if (!win || num(win.x) === null) {
    // Walk back through earlier results for the newest one naming the same window.
    let before = failing.seq;
    for (let i = 0; i < LOOKBACK && !win; i++) {
      const row = reader.lastCallWhere({ statuses: ['ok'], tools: WINDOW_TOOLS, beforeSeq: before });
      if (!row) break;
      before = row.seq;
      const hit = windowsIn(asRecord(asRecord(parseJson(row.envelope))?.result)).find((w) =>
        matches(w, want),
      );
      if (hit) {
        win = hit;
        source = `call #${row.seq} ${oneLine(row.tool, 40)}`;
      }
    }
  }
  if (!win) return null;
  const rect =
    num(win.x) !== null && num(win.y) !== null && num(win.width) !== null && num(win.height) !== null
      ? { x: win.x as number, y: win.y as number, width: win.width as number, height: win.height as number }
      : null;
  const elevated =
    typeof win.elevated === 'boolean'
      ? win.elevated
      : typeof win.isElevated === 'boolean'
        ? win.isElevated
        : null;
  return {
    title: str(win.title, 200),
    className: str(win.className),
    process: str(win.processName),
    processId: num(win.processId),
    handle: num(win.handle),
    rect,
    elevated,
    display: rect ? displayOf(reader, failing.seq, rect) : null,
    source: source ?? `call #${failing.seq}`,
  };
}

/** The display (from the newest successful `displays` call) holding the window's centre. */
function displayOf(
  reader: SessionReader,
  beforeSeq: number,
  rect: { x: number; y: number; width: number; height: number },
): TargetDigest['display'] {
  const row = reader.lastCallWhere({ statuses: ['ok'], tools: ['displays'], beforeSeq });
  const result = row ? asRecord(asRecord(parseJson(row.envelope))?.result) : undefined;
  const list = Array.isArray(result?.displays) ? result.displays : [];
  const cx = rect.x + rect.width / 2;
  const cy = rect.y + rect.height / 2;
  for (const [i, item] of list.entries()) {
    const d = asRecord(item);
    const b = asRecord(d?.bounds);
    const [x, y, w, h] = [num(b?.x), num(b?.y), num(b?.width), num(b?.height)];
    if (!d || x === null || y === null || w === null || h === null) continue;
    if (cx < x || cy < y || cx >= x + w || cy >= y + h) continue;
    const device = str(d.deviceName, 80);
    return {
      name: device ? clip(device.replace(/^\\\\\.\\/, ''), 40) : `display ${num(d.index) ?? i}`,
      primary: d.primary === true,
      dpi: num(d.dpi),
      scale: num(d.scale),
      bounds: { x, y, width: w, height: h },
    };
  }
  return null;
}

/** The target in one line: 'Video Player' (ApplicationFrameWindow, Video.UI pid 9044) at x=2000 y=160 800x450 on DISPLAY2 at 120 dpi. */
export function describeTarget(t: TargetDigest): string {
  const who = [
    t.className,
    t.process ? `${t.process}${t.processId !== null ? ` pid ${t.processId}` : ''}` : null,
  ]
    .filter(Boolean)
    .join(', ');
  const parts = [t.title !== null ? `'${t.title}'` : `window ${t.handle ?? '?'}`];
  if (who) parts.push(`(${who})`);
  if (t.rect) parts.push(`at x=${t.rect.x} y=${t.rect.y}, ${t.rect.width}x${t.rect.height}`);
  if (t.display) {
    const d = t.display;
    parts.push(
      `on ${d.name}${d.primary ? ' (primary)' : ''}${d.dpi !== null ? ` at ${d.dpi} dpi` : ''}${d.scale !== null && d.scale !== 1 ? ` (scale ${d.scale})` : ''}`,
    );
  }
  if (t.elevated !== null) parts.push(t.elevated ? '(elevated)' : '(not elevated)');
  return parts.join(' ');
}

/** The target's facts as labelled lines (title, class, process, handle, rect, display and dpi, elevated), known ones only. */
export function targetFacts(t: TargetDigest): Array<{ label: string; value: string }> {
  const out: Array<{ label: string; value: string }> = [];
  const add = (label: string, value: string | null) => {
    if (value !== null) out.push({ label, value });
  };
  add('Title', t.title !== null ? `'${t.title}'` : null);
  add('Class', t.className);
  add('Process', t.process ? `${t.process}${t.processId !== null ? ` (pid ${t.processId})` : ''}` : null);
  add('Handle', t.handle !== null ? String(t.handle) : null);
  add('Rect', t.rect ? `x=${t.rect.x} y=${t.rect.y}, ${t.rect.width}x${t.rect.height}` : null);
  const d = t.display;
  add(
    'Display',
    d
      ? `${d.name}${d.primary ? ' (primary)' : ''}${d.dpi !== null ? ` at ${d.dpi} dpi` : ''}${d.scale !== null && d.scale !== 1 ? ` (scale ${d.scale})` : ''}; ${d.bounds.width}x${d.bounds.height} at x=${d.bounds.x} y=${d.bounds.y}`
      : t.rect
        ? 'not known (no display the log lists before it holds its centre)'
        : null,
  );
  add('Elevated', t.elevated === null ? 'not known' : t.elevated ? 'yes' : 'no');
  return out;
}
