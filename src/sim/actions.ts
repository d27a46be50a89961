/** The actuation tools the server added after click and invoke: window, drag, focus, clipboard, launch (src/Commands/*.cs). */
import type { MatchBy, SimElement, SimWindow } from './desktop.js';
import { toUiaElement, windowInfo } from './desktop.js';
import type { ToolContext, ToolSuccess } from './tool-kit.js';
import {
  ambiguous,
  badArguments,
  bool,
  hasTarget,
  int,
  matchBy,
  obj,
  refuseElevated,
  requireTarget,
  resolveTarget,
  resolveWindow,
  str,
  ToolFailure,
  target,
} from './tool-kit.js';

// ---------------------------------------------------------------------------------------------
// endpoint checks the executor runs before the tool (AgentToolExecutor.DragArgsError and friends)
// ---------------------------------------------------------------------------------------------

/** True when `v` is a 32-bit integer, the only pixel coordinate the server accepts. */
function isInt(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= -2_147_483_648 && v <= 2_147_483_647;
}

/** An endpoint is an element (`value` non-empty) or a full pixel (`x` and `y` integers). */
function endpointOk(e: Record<string, unknown>): boolean {
  const value = e.value;
  return (typeof value === 'string' && value.length > 0) || (isInt(e.x) && isInt(e.y));
}

/** The drag tool's bad-arguments check, or null. */
export function dragArgsError(args: Record<string, unknown>): string | null {
  for (const key of ['from', 'to']) {
    const e = obj(args, key);
    if (!e) return `drag '${key}' must be an object: an element { by?, value } or a pixel { x, y }.`;
    if (!endpointOk(e))
      return `drag '${key}' needs an element 'value' or both 'x' and 'y' pixel coordinates.`;
  }
  return null;
}

/** The click tool's bad-arguments check, or null. */
export function clickArgsError(args: Record<string, unknown>): string | null {
  const at = obj(args, 'at');
  if (!at) return "click 'at' must be an object: an element { by?, value } or a pixel { x, y }.";
  if (!endpointOk(at)) return "click 'at' needs an element 'value' or both 'x' and 'y' pixel coordinates.";
  return null;
}

/** The focus tool's bad-arguments check (its `at` is optional), or null. */
export function focusArgsError(args: Record<string, unknown>): string | null {
  if (!('at' in args) || args.at === null) return null;
  const at = obj(args, 'at');
  if (!at)
    return "focus 'at' must be an object: an element { by?, value } or a pixel { x, y }; omit 'at' to focus just the window.";
  if (typeof at.value === 'string' && at.value.length > 0) return null;
  const mentionsPixel = 'x' in at || 'y' in at;
  if (mentionsPixel && !(isInt(at.x) && isInt(at.y)))
    return "focus 'at' pixel endpoint needs both integer 'x' and 'y' (or an element 'value', or omit 'at' to focus just the window).";
  if (!mentionsPixel)
    return "focus 'at' must be an element { by?, value } or a pixel { x, y }; omit 'at' to focus just the window.";
  return null;
}

/** One element by selector in a window, failing as the server's element-resolving commands do. */
function findOne(ctx: ToolContext, w: SimWindow, by: MatchBy, value: string, prefix = ''): SimElement {
  refuseElevated(w);
  const found = ctx.desktop.findElements(w, by, value);
  if (found.length > 1) {
    const f = ambiguous(found.length, by, value);
    throw new ToolFailure(f.code, f.category, `${prefix}${f.detail}`);
  }
  if (found.length === 0)
    throw new ToolFailure('element-not-found', 'no-target', `${prefix}element not found (${by}='${value}')`);
  return found[0]!;
}

const centre = (e: SimElement): [number, number] => [
  e.x + Math.floor(e.width / 2),
  e.y + Math.floor(e.height / 2),
];

// ---------------------------------------------------------------------------------------------
// window
// ---------------------------------------------------------------------------------------------

function normalizeWindowAction(action: string): string {
  switch (action.trim().toLowerCase()) {
    case 'min':
    case 'minimize':
    case 'minimise':
      return 'minimize';
    case 'max':
    case 'maximize':
    case 'maximise':
      return 'maximize';
    case 'restore':
      return 'restore';
    case 'foreground':
    case 'focus':
      return 'foreground';
    case 'move':
      return 'move';
    case 'resize':
      return 'resize';
    default:
      return '';
  }
}

/** The window tool: move | resize | minimize | maximize | restore | foreground (WindowCommand.cs). */
export async function runWindow(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const w = resolveWindow(desktop, requireTarget(args));
  const action = normalizeWindowAction(str(args, 'action') ?? 'foreground');
  const x = int(args, 'x');
  const y = int(args, 'y');
  const width = int(args, 'width');
  const height = int(args, 'height');
  const invalid = (detail: string) => new ToolFailure('invalid-argument', 'invalid-argument', detail);
  if (action === '') throw invalid("Unsupported window action ''.");
  if (action === 'move' && (x === undefined || y === undefined)) throw invalid('move requires x and y.');
  if (action === 'resize' && (width === undefined || height === undefined))
    throw invalid('resize requires width and height.');
  if (action === 'move') desktop.moveWindow(w, x!, y!);
  else if (action === 'resize') desktop.resizeWindow(w, width!, height!);
  else if (action === 'minimize') desktop.minimize(w);
  else if (action === 'maximize') desktop.maximize(w);
  else if (action === 'restore') desktop.restore(w);
  else desktop.bringToFront(w);
  return {
    result: {
      action,
      animate: bool(args, 'animate') && (action === 'move' || action === 'resize'),
      window: windowInfo(w),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// drag
// ---------------------------------------------------------------------------------------------

interface Endpoint {
  by: MatchBy;
  value: string;
  x: number;
  y: number;
}

function endpointOf(args: Record<string, unknown>, key: string): Endpoint {
  const e = obj(args, key) ?? {};
  return { by: matchBy(e), value: str(e, 'value') ?? '', x: int(e, 'x') ?? 0, y: int(e, 'y') ?? 0 };
}

/** The drag tool: element or pixel endpoints (window-relative with a target), optional waypoints. */
export async function runDrag(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const problem = dragArgsError(args);
  if (problem) throw badArguments(problem);
  const from = endpointOf(args, 'from');
  const to = endpointOf(args, 'to');
  const t = target(args);
  let w: SimWindow | undefined;
  if (hasTarget(t) || from.value || to.value) {
    w = resolveTarget(desktop, t);
  }
  const point = (e: Endpoint, label: string): [number, number] => {
    if (!e.value) return w ? [w.x + e.x, w.y + e.y] : [e.x, e.y];
    return centre(findOne(ctx, w!, e.by, e.value, `${label}: `));
  };
  const start = point(from, 'Drag start');
  const end = point(to, 'Drag end');
  const waypoints = Array.isArray(args.path)
    ? args.path.filter(
        (p): p is Record<string, unknown> => p !== null && typeof p === 'object' && !Array.isArray(p),
      )
    : [];
  return { result: { dragged: true, from: start, to: end, points: waypoints.length + 2 } };
}

// ---------------------------------------------------------------------------------------------
// focus
// ---------------------------------------------------------------------------------------------

/** Control types that take keyboard focus in the simulated desktop. */
const FOCUSABLE = new Set([
  'Edit',
  'Document',
  'ComboBox',
  'Button',
  'ListItem',
  'TreeItem',
  'List',
  'Tree',
  'MenuItem',
  'Slider',
]);

/** The focus tool: foreground the window, click the optional control, confirm focus landed (FocusCommand.cs). */
export async function runFocus(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const problem = focusArgsError(args);
  if (problem) throw badArguments(problem);
  const w = resolveWindow(desktop, requireTarget(args));
  desktop.bringToFront(w);
  const at = obj(args, 'at') ?? {};
  const value = str(at, 'value') ?? '';
  let element: SimElement | undefined;
  let point: [number, number] | undefined;
  if (value) {
    element = findOne(ctx, w, matchBy(at), value);
    point = centre(element);
  } else if ('x' in at && 'y' in at) {
    point = [int(at, 'x') ?? 0, int(at, 'y') ?? 0];
  }
  if (element && !FOCUSABLE.has(element.controlType))
    throw new ToolFailure(
      'focus-not-confirmed',
      'focus',
      'The target window is foreground but keyboard focus did not land in it (no focusable control took focus, or focus went to a sibling control). App keyboard shortcuts may not reach the intended control. Try a `click` on the exact control first, or drive it with `invoke` instead of keystrokes.',
      { ...windowInfo(w) },
    );
  if (element) desktop.setFocus(w, element);
  const result: Record<string, unknown> = { focused: true, window: windowInfo(w), focusHandle: w.handle };
  if (element) result.element = toUiaElement(element);
  if (point) result.at = point;
  return { result };
}

// ---------------------------------------------------------------------------------------------
// clipboard
// ---------------------------------------------------------------------------------------------

/** The clipboard tool: set | get of the simulated desktop's text clipboard (ClipboardCommand.cs). */
export async function runClipboard(ctx: ToolContext): Promise<ToolSuccess> {
  const action = (str(ctx.args, 'action') ?? '').trim().toLowerCase();
  if (action === 'set') {
    const text = str(ctx.args, 'text');
    if (!text)
      throw new ToolFailure('clipboard-text-missing', 'invalid-argument', 'clipboard set requires text.');
    ctx.desktop.setClipboard(text);
    return { result: { set: true, length: text.length } };
  }
  if (action === 'get') {
    const text = ctx.desktop.clipboard;
    return { result: { text, length: text.length } };
  }
  throw new ToolFailure(
    'action-unknown',
    'invalid-argument',
    `Unknown clipboard action '${action}'. Use set or get.`,
  );
}

// ---------------------------------------------------------------------------------------------
// launch
// ---------------------------------------------------------------------------------------------

/** The launch tool (LaunchCommand.cs); the caller has already checked that the operator enabled it. */
export async function runLaunch(ctx: ToolContext): Promise<ToolSuccess> {
  const file = str(ctx.args, 'path');
  if (!file || file.trim() === '')
    throw new ToolFailure(
      'launch-path-missing',
      'invalid-argument',
      "launch requires a non-empty 'path' (executable, shell: protocol, or .lnk).",
    );
  const base = file
    .replace(/^.*[\\/]/, '')
    .toLowerCase()
    .replace(/\.exe$/, '');
  if (base !== 'notepad')
    throw new ToolFailure(
      'launch-failed',
      'internal',
      'Launch failed: An error occurred trying to start process. The system cannot find the file specified.',
    );
  // Notepad is single-instance on Windows 11: the new process hands over to the open window.
  const pid = ctx.desktop.nextProcessId();
  const open = ctx.desktop.windows().find((w) => w.processName === 'notepad' && w.className === 'Notepad');
  const result: Record<string, unknown> = { processId: pid, processName: 'notepad', path: file };
  if (open) {
    result.handle = open.handle;
    result.window = windowInfo(open);
  } else {
    result.handle = 0;
    result.note =
      'Window did not appear within timeout; use query/process or wait-for by process to locate later.';
  }
  const windowProcessId = open?.processId ?? 0;
  const attached = windowProcessId > 0 && windowProcessId !== pid;
  result.startedNewProcess = !attached;
  result.attachedToExisting = attached;
  if (attached) {
    result.launchedProcessId = pid;
    result.windowProcessId = windowProcessId;
  }
  return { result };
}
