/** The simulated MCEC tools: their tools/list entries, argument checks, and behaviour on the fake desktop. */
import type { Warning } from '../contract/types.js';
import { runCapture, windowCaptureData } from './capture.js';
import {
  DISPLAYS,
  descendants,
  describeTarget,
  type MatchBy,
  type SimElement,
  type SimWindow,
  toUiaElement,
  type UiaElement,
  uiaNode,
  VIRTUAL_BOUNDS,
  type WindowTarget,
  windowInfo,
} from './desktop.js';
import { blankCheck, encodePng } from './raster.js';
import { runRecord } from './record.js';
import type { SimSession } from './sessions.js';
import {
  ambiguous,
  badArguments,
  hasTarget,
  int,
  matchBy,
  refuseElevated,
  requireTarget,
  resolveWindow,
  sleep,
  str,
  type ToolContext,
  ToolFailure,
  type ToolSuccess,
  target,
  timeoutArg,
} from './tool-kit.js';
import { serializeWire } from './wire.js';

export type { ToolContext, ToolSuccess } from './tool-kit.js';
export { badArguments, ToolFailure } from './tool-kit.js';

interface PropSchema {
  type: 'string' | 'integer' | 'boolean' | 'object' | 'number';
  description: string;
  properties?: Record<string, PropSchema>;
}

/** A tools/list entry. */
export interface ToolListing {
  name: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, PropSchema>; required: string[] };
}

/** How a tool's outcome is kept: observations update the last good observation. */
export type ToolKind = 'observation' | 'action' | 'read-only' | 'meta' | 'lifecycle';

export interface ToolDef extends ToolListing {
  kind: ToolKind;
  /** Routed tools run inside the session named by `sessionId`; lifecycle tools read it as their target. */
  routed: boolean;
  run(ctx: ToolContext): Promise<ToolSuccess>;
}

const prop = (type: PropSchema['type'], description: string): PropSchema => ({ type, description });

const SESSION_PROP = prop(
  'string',
  'Optional session id (from session-start) to run this call in; omit to use the default session.',
);

function targetProps(): Record<string, PropSchema> {
  return {
    window: prop('string', 'Window title substring (case-insensitive) to target'),
    handle: prop('integer', 'Explicit window handle (HWND) to target'),
    process: prop('string', 'Process name (without .exe) to target'),
    className: prop('string', 'Window class name to target'),
    foreground: prop('boolean', 'Target the current foreground window'),
  };
}

function selectorProps(timeoutText: string): Record<string, PropSchema> {
  return {
    ...targetProps(),
    by: prop('string', 'Match by: name | automationid | classname (default name)'),
    value: prop('string', 'Value to match'),
    timeout: prop('integer', timeoutText),
    timeoutMs: prop('integer', 'Alias of timeout'),
  };
}

function endpointProp(description: string): PropSchema {
  return {
    type: 'object',
    description,
    properties: {
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Element value to match (omit for a pixel endpoint)'),
      x: prop('integer', 'Endpoint X (omit for an element endpoint)'),
      y: prop('integer', 'Endpoint Y (omit for an element endpoint)'),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// capture and get-text
// ---------------------------------------------------------------------------------------------

async function runGetText(ctx: ToolContext): Promise<ToolSuccess> {
  const w = resolveWindow(ctx.desktop, requireTarget(ctx.args));
  const raster = ctx.desktop.renderWindow(w);
  const check = blankCheck(raster);
  const text = ctx.desktop.textOf(w);
  const lines = text.length === 0 ? [] : text.split('\n');
  const result: Record<string, unknown> = {
    width: raster.width,
    height: raster.height,
    blankCheck: check,
    window: windowInfo(w),
    text,
    lineCount: lines.length,
    wordCount: lines.reduce((n, l) => n + l.split(/\s+/).filter(Boolean).length, 0),
    language: 'en-US',
  };
  if (check.blank)
    throw new ToolFailure(
      check.dominantIsDark ? 'frame-all-black' : 'frame-uniform',
      'ocr-blank',
      `The window '${w.title}' rendered a blank frame; there is nothing to read.`,
      'command',
      result,
    );
  if (text.length === 0)
    throw new ToolFailure(
      'ocr-no-text',
      'ocr-no-text',
      `OCR found no text in '${w.title}'.`,
      'command',
      result,
    );
  return { result };
}

// ---------------------------------------------------------------------------------------------
// query, find, wait-for
// ---------------------------------------------------------------------------------------------

/** Copy a tree pre-order, stopping at maxNodes nodes or maxDepth levels. */
function clipTree(
  root: SimElement,
  maxNodes: number,
  maxDepth: number,
): { tree: UiaElement; nodeCount: number; truncated: boolean } {
  let count = 0;
  let truncated = false;
  const copy = (e: SimElement, depth: number): UiaElement => {
    count++;
    const node = uiaNode(e, []);
    if (depth >= maxDepth) return node;
    for (const c of e.children) {
      if (count >= maxNodes) {
        truncated = true;
        break;
      }
      node.children.push(copy(c, depth + 1));
    }
    return node;
  };
  const tree = copy(root, 0);
  return { tree, nodeCount: count, truncated };
}

async function runQuery(ctx: ToolContext): Promise<ToolSuccess> {
  const w = resolveWindow(ctx.desktop, requireTarget(ctx.args));
  const maxNodesArg = int(ctx.args, 'maxNodes');
  const maxDepthArg = int(ctx.args, 'maxDepth');
  const maxNodes = maxNodesArg && maxNodesArg > 0 ? maxNodesArg : 1000;
  const maxDepth = maxDepthArg && maxDepthArg > 0 ? maxDepthArg : 6;
  const { tree, nodeCount, truncated } = clipTree(w.tree, maxNodes, maxDepth);
  const warnings: Warning[] = truncated
    ? [
        {
          code: 'tree-truncated',
          detail: `The UI Automation tree was clipped at ${maxNodes} nodes (maxNodes).`,
        },
      ]
    : [];
  return { result: { window: windowInfo(w), nodeCount, truncated, tree }, warnings };
}

/** One look for an element: found, missing, or a failure that ends the search at once. */
function lookOnce(
  ctx: ToolContext,
  t: WindowTarget,
  by: MatchBy,
  value: string,
  waiting: boolean,
): { window?: SimWindow; element?: SimElement } {
  const r = ctx.desktop.resolve(t);
  if ('miss' in r) {
    // While waiting, a window that has not appeared yet is just a miss; a closed handle or ambiguity is final.
    if (waiting && r.miss.code === 'window-not-found') return {};
    throw new ToolFailure(r.miss.code, r.miss.category, r.miss.detail, 'command');
  }
  const found = ctx.desktop.findElements(r.window, by, value);
  if (found.length > 1) throw ambiguous(found.length, by, value);
  return found.length === 1 ? { window: r.window, element: found[0]! } : { window: r.window };
}

async function search(ctx: ToolContext, timeoutMs: number) {
  const t = requireTarget(ctx.args);
  const by = matchBy(ctx.args);
  const value = str(ctx.args, 'value') ?? '';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const look = lookOnce(ctx, t, by, value, timeoutMs > 0);
    if (look.element || Date.now() >= deadline) return { ...look, by, value, t };
    await sleep(Math.max(1, Math.min(ctx.pollMs, deadline - Date.now())));
  }
}

function findResult(look: { window?: SimWindow; element?: SimElement }): Record<string, unknown> {
  return {
    found: look.element !== undefined,
    element: look.element ? toUiaElement(look.element) : null,
    window: look.window ? windowInfo(look.window) : null,
  };
}

async function runFind(ctx: ToolContext): Promise<ToolSuccess> {
  const look = await search(ctx, timeoutArg(ctx.args, 0));
  if (!look.window) resolveWindow(ctx.desktop, look.t); // a wait that never saw the window: report it missing
  return { result: findResult(look) };
}

async function runWaitFor(ctx: ToolContext): Promise<ToolSuccess> {
  const timeoutMs = timeoutArg(ctx.args, 5000);
  const look = await search(ctx, timeoutMs);
  if (!look.element)
    throw new ToolFailure(
      'wait-condition-timeout',
      'timeout',
      `wait-for exhausted its timeout (${timeoutMs} ms) before ${look.by}='${look.value}' appeared in ${describeTarget(look.t)}.`,
      'command',
    );
  return { result: findResult(look) };
}

// ---------------------------------------------------------------------------------------------
// invoke and click
// ---------------------------------------------------------------------------------------------

const INVOKE_ACTIONS = ['invoke', 'toggle', 'setvalue', 'setfocus', 'expand', 'collapse', 'select'] as const;

const PATTERNS: Record<string, ReadonlySet<string> | 'any'> = {
  invoke: new Set(['Button', 'MenuItem', 'SplitButton', 'Hyperlink', 'ListItem', 'TreeItem']),
  toggle: new Set(['CheckBox', 'ToggleButton']),
  setvalue: new Set(['Edit', 'Document', 'ComboBox']),
  setfocus: 'any',
  expand: new Set(['MenuItem', 'ComboBox', 'TreeItem', 'SplitButton']),
  collapse: new Set(['MenuItem', 'ComboBox', 'TreeItem', 'SplitButton']),
  select: new Set(['ListItem', 'TreeItem', 'TabItem', 'RadioButton']),
};

/** Apply what driving an element does; true when it opened a modal dialog. */
function applyEffect(ctx: ToolContext, w: SimWindow, e: SimElement): boolean {
  if (e.effect === 'close-window') ctx.desktop.close(w.handle);
  if (e.effect === 'open-save-as' && !ctx.desktop.windows().some((x) => x.title === 'Save As')) {
    ctx.desktop.openSaveAs();
    return true;
  }
  return false;
}

async function runInvoke(ctx: ToolContext): Promise<ToolSuccess> {
  const { args } = ctx;
  const t = requireTarget(args);
  const by = matchBy(args);
  const value = str(args, 'value') ?? '';
  const action = (str(args, 'action') ?? 'invoke').toLowerCase();
  const w = resolveWindow(ctx.desktop, t);
  refuseElevated(w);
  if (!(INVOKE_ACTIONS as readonly string[]).includes(action))
    throw new ToolFailure(
      'action-unknown',
      'invalid-argument',
      `Unknown invoke action '${action}'; use one of ${INVOKE_ACTIONS.join(', ')}.`,
      'command',
    );
  const found = ctx.desktop.findElements(w, by, value);
  if (found.length === 0)
    throw new ToolFailure(
      'element-not-found',
      'no-target',
      `Invoke failed: no element with ${by}='${value}' in '${w.title}'.`,
      'command',
    );
  if (found.length > 1) throw ambiguous(found.length, by, value);
  const e = found[0]!;
  const pattern = PATTERNS[action]!;
  if (pattern !== 'any' && !pattern.has(e.controlType))
    throw new ToolFailure(
      'pattern-unsupported',
      'invalid-argument',
      `A ${e.controlType} does not support the ${action} action.`,
      'command',
    );
  if (action === 'setvalue') {
    const text = str(args, 'text');
    if (text === undefined)
      throw new ToolFailure(
        'invalid-argument',
        'invalid-argument',
        "setvalue needs a 'text' argument.",
        'command',
      );
    e.value = text;
  }
  if (action === 'select') {
    const parent = [w.tree, ...descendants(w.tree)].find((p) => p.children.includes(e));
    for (const sibling of parent?.children ?? [])
      if (sibling.isSelected !== undefined) sibling.isSelected = false;
    e.isSelected = true;
  }
  if (action === 'invoke' && applyEffect(ctx, w, e)) {
    // The real server returns after a grace when the invoke opened a modal dialog.
    await sleep(ctx.modalGraceMs);
    return {
      result: {
        invoked: true,
        modalPending: true,
        note: 'The invoke opened a modal dialog (or a long-running action); it completes when the dialog closes. Query or capture the new window to read or dismiss it.',
      },
    };
  }
  return { result: { invoked: true, action, by, value } };
}

function endpoint(args: Record<string, unknown>): { by: MatchBy; value: string } | { x: number; y: number } {
  const at = args.at;
  if (!at || typeof at !== 'object' || Array.isArray(at))
    throw badArguments("click 'at' must be an object: an element { by?, value } or a pixel { x, y }.");
  const a = at as Record<string, unknown>;
  const value = str(a, 'value');
  if (value) return { by: matchBy(a), value };
  const x = int(a, 'x');
  const y = int(a, 'y');
  if (x === undefined || y === undefined)
    throw badArguments("click 'at' needs an element 'value' or both 'x' and 'y' pixel coordinates.");
  return { x, y };
}

async function runClick(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const at = endpoint(args);
  const button = (str(args, 'button') ?? 'left').toLowerCase();
  if (!['left', 'right', 'middle'].includes(button))
    throw badArguments('button must be left, right or middle.');
  const countArg = int(args, 'count');
  const count = countArg && countArg > 0 ? countArg : 1;
  const t = target(args);
  if ('value' in at && !hasTarget(t)) throw badArguments('Give a window target when clicking an element.');
  let point: [number, number];
  let hit: { window: SimWindow; element: SimElement } | undefined;
  if (hasTarget(t)) {
    const w = resolveWindow(desktop, t);
    refuseElevated(w);
    if ('value' in at) {
      const found = desktop.findElements(w, at.by, at.value);
      if (found.length === 0)
        throw new ToolFailure(
          'element-not-found',
          'no-target',
          `No element with ${at.by}='${at.value}' in '${w.title}'.`,
          'command',
        );
      if (found.length > 1) throw ambiguous(found.length, at.by, at.value);
      const e = found[0]!;
      point = [e.x + Math.floor(e.width / 2), e.y + Math.floor(e.height / 2)];
      hit = { window: w, element: e };
    } else {
      point = [w.x + at.x, w.y + at.y]; // with a window target, pixels are window-relative
      hit = desktop.hitTest(point[0], point[1]);
    }
  } else {
    const p = at as { x: number; y: number };
    point = [p.x, p.y];
    hit = desktop.hitTest(p.x, p.y);
    if (hit) refuseElevated(hit.window);
  }
  if (hit && button === 'left') applyEffect(ctx, hit.window, hit.element);
  return { result: { clicked: true, at: point, button, count } };
}

// ---------------------------------------------------------------------------------------------
// windows, displays
// ---------------------------------------------------------------------------------------------

const CONDITIONS = ['appears', 'disappears', 'foreground'] as const;

async function runWindows(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const title = str(args, 'window')?.toLowerCase();
  const process = str(args, 'process')
    ?.toLowerCase()
    .replace(/\.exe$/, '');
  const className = str(args, 'className');
  const filtered = title !== undefined || process !== undefined || className !== undefined;
  const condition = (str(args, 'condition') ?? 'appears').toLowerCase();
  if (!(CONDITIONS as readonly string[]).includes(condition))
    throw new ToolFailure(
      'windows-unknown-condition',
      'invalid-argument',
      `Unknown condition '${condition}'; use appears, disappears or foreground.`,
      'command',
    );
  const timeoutMs = timeoutArg(args, 0);
  if (!filtered && (timeoutMs > 0 || condition !== 'appears'))
    throw new ToolFailure(
      'windows-no-criteria',
      'invalid-argument',
      'A wait, or the disappears/foreground conditions, need at least one filter (window, process, className).',
      'command',
    );
  const select = () =>
    desktop
      .windows()
      .filter(
        (w) =>
          (title === undefined || w.title.toLowerCase().includes(title)) &&
          (process === undefined || w.processName.toLowerCase() === process) &&
          (className === undefined || w.className === className),
      );
  const satisfiedBy = (ws: SimWindow[]) =>
    condition === 'appears'
      ? ws.length > 0
      : condition === 'disappears'
        ? ws.length === 0
        : ws.some((w) => w === desktop.foreground());
  const deadline = Date.now() + timeoutMs;
  let ws = select();
  while (!satisfiedBy(ws) && Date.now() < deadline) {
    await sleep(Math.max(1, Math.min(ctx.pollMs, deadline - Date.now())));
    ws = select();
  }
  const result: Record<string, unknown> = { condition, count: ws.length, windows: ws.map(windowInfo) };
  if (filtered) result.satisfied = satisfiedBy(ws);
  if (filtered && timeoutMs > 0 && !result.satisfied) {
    result.waitedFor = timeoutMs;
    result.lastObservedWindows = desktop.windows().map(windowInfo);
  }
  return { result };
}

async function runDisplays(): Promise<ToolSuccess> {
  return {
    result: {
      count: DISPLAYS.length,
      virtualBounds: { ...VIRTUAL_BOUNDS },
      displays: structuredClone(DISPLAYS),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// send_command (legacy text commands)
// ---------------------------------------------------------------------------------------------

/** Run a legacy agent command; the output is the CommandResult JSON string the server would print. */
async function legacyCapture(ctx: ToolContext, title: string): Promise<string> {
  const t: WindowTarget = title ? { window: title } : { foreground: true };
  const r = ctx.desktop.resolve(t);
  if ('miss' in r)
    return serializeWire({
      success: false,
      command: 'capture',
      error: r.miss.detail,
      errorCode: r.miss.code,
      errorCategory: r.miss.category,
    });
  const raster = ctx.desktop.renderWindow(r.window);
  const data = windowCaptureData({ raster, png: await encodePng(raster), window: r.window });
  const check = data.blankCheck as { blank: boolean };
  if (check.blank)
    return serializeWire({
      success: false,
      command: 'capture',
      error: 'Captured frame is all black.',
      errorCode: 'frame-all-black',
      errorCategory: 'capture-blank',
      data,
    });
  return serializeWire({ success: true, command: 'capture', data });
}

async function runSendCommand(ctx: ToolContext): Promise<ToolSuccess> {
  const command = (str(ctx.args, 'command') ?? '').trim();
  if (command.length === 0) throw badArguments("send_command requires a non-empty 'command' argument.");
  const space = command.indexOf(' ');
  const verb = (space < 0 ? command : command.slice(0, space)).toLowerCase();
  const rest = space < 0 ? '' : command.slice(space + 1).trim();
  if (verb === 'capture') return { result: { output: await legacyCapture(ctx, rest) } };
  if (verb === 'windows') {
    const windows = ctx.desktop.windows().map(windowInfo);
    return {
      result: {
        output: serializeWire({
          success: true,
          command: 'windows',
          data: { count: windows.length, windows },
        }),
      },
    };
  }
  // Keystroke and mouse commands of the legacy table: the server answers with plain text.
  if (/^(chars:|key:|keydown:|keyup:|mouse:|vk_|shiftdown:|shiftup:)/i.test(command))
    return { result: { output: 'ok' } };
  throw new ToolFailure(
    'unknown-command',
    'internal',
    `Unknown command: '${command.slice(0, 80)}'.`,
    'command',
  );
}

// ---------------------------------------------------------------------------------------------
// session lifecycle
// ---------------------------------------------------------------------------------------------

async function runSessionStart(ctx: ToolContext): Promise<ToolSuccess> {
  const s = await ctx.sessions.start();
  ctx.session = s;
  return { result: { ...ctx.sessions.status(s) } };
}

/** The live session a lifecycle tool's `sessionId` names (trimmed, as the server does); absent or empty: the default. */
function sessionTarget(ctx: ToolContext): SimSession {
  const raw = str(ctx.args, 'sessionId');
  if (raw === undefined || raw === '') return ctx.sessions.defaultSession;
  const s = ctx.sessions.get(raw.trim());
  if (!s || s.ended)
    throw new ToolFailure(
      'unknown-session',
      'invalid-argument',
      `Unknown sessionId '${raw}'. It was never started or has ended. Call session-start, or omit sessionId for the default session.`,
      'refusal',
    );
  return s;
}

async function runSessionStatus(ctx: ToolContext): Promise<ToolSuccess> {
  return { result: { ...ctx.sessions.status(sessionTarget(ctx)) } };
}

/** Idempotent, as the real server: an unknown or ended id gives `ended: false`; the default session can end too. */
async function runSessionEnd(ctx: ToolContext): Promise<ToolSuccess> {
  const raw = str(ctx.args, 'sessionId') ?? '';
  if (raw.trim() === '')
    throw badArguments("session-end requires a non-empty 'sessionId' argument (the session to end).");
  const id = raw.trim();
  const s = ctx.sessions.get(id);
  const ended = s !== undefined && ctx.sessions.end(s);
  if (!ended)
    return {
      result: {
        sessionId: id,
        ended: false,
        note: 'No live session had that id (already ended or never started); nothing to do.',
      },
    };
  return { result: { sessionId: id, ended: true } };
}

// ---------------------------------------------------------------------------------------------
// the catalog
// ---------------------------------------------------------------------------------------------

function def(
  name: string,
  kind: ToolKind,
  description: string,
  properties: Record<string, PropSchema>,
  required: string[],
  run: (ctx: ToolContext) => Promise<ToolSuccess>,
  routed = true,
): ToolDef {
  const props = routed ? { ...properties, sessionId: SESSION_PROP } : properties;
  return {
    name,
    kind,
    routed,
    description,
    inputSchema: { type: 'object', properties: props, required },
    run,
  };
}

/** Every simulated tool, in tools/list order. */
export const TOOLS: readonly ToolDef[] = [
  def(
    'capture',
    'observation',
    'Screenshot a window or a screen region; returns PNG. Blank/black frames are reported as a capture-blank error (window) or warning (region). pathOnly writes the PNG to the session artifact directory instead of returning it inline.',
    {
      ...targetProps(),
      x: prop('integer', 'Region left (use with width/height instead of a window)'),
      y: prop('integer', 'Region top'),
      width: prop('integer', 'Region width (max 16384/side, 64000000 px total)'),
      height: prop('integer', 'Region height (same limits as width)'),
      maxWidth: prop('integer', 'Optionally downscale output so width fits this (no upscaling)'),
      scale: prop('number', 'Optionally downscale output by this factor (0 < scale <= 1; no upscaling)'),
      returnImage: prop(
        'boolean',
        'When false, omit inline base64 from the result and do not emit an MCP image content block',
      ),
      pathOnly: prop(
        'boolean',
        'Alias for returnImage:false; write the PNG to the session artifact directory and return metadata + path only',
      ),
      file: prop('string', 'Optional path to also save the PNG to'),
    },
    [],
    runCapture,
  ),
  def(
    'get-text',
    'observation',
    'OCR the text of a window. A blank frame fails with ocr-blank; no text with ocr-no-text.',
    targetProps(),
    [],
    runGetText,
  ),
  def(
    'query',
    'observation',
    'Dump the UI Automation tree of a window: control type, name, automation id, bounds, state. Warns tree-truncated when maxNodes clips it.',
    {
      ...targetProps(),
      maxDepth: prop('integer', 'Max UI Automation tree depth (default 6)'),
      maxNodes: prop('integer', 'Max UI Automation nodes returned (default 1000)'),
    },
    [],
    runQuery,
  ),
  def(
    'find',
    'observation',
    'Find a UI Automation element by name / automation id / class. A miss is ok:true, found:false; more than one match fails with selector-matched-N.',
    selectorProps('Milliseconds to wait for the element (0 = no wait)'),
    ['value'],
    runFind,
  ),
  def(
    'wait-for',
    'observation',
    'Wait for a UI Automation element to appear: polls until found or the timeout elapses (default 5000 ms); a miss fails with wait-condition-timeout.',
    selectorProps('Milliseconds to wait for the element (default 5000)'),
    ['value'],
    runWaitFor,
  ),
  def(
    'invoke',
    'action',
    'Drive a UI Automation element (invoke | toggle | setvalue | setfocus | expand | collapse | select).',
    {
      ...targetProps(),
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Value to match'),
      action: prop(
        'string',
        'invoke | toggle | setvalue | setfocus | expand | collapse | select (default invoke)',
      ),
      text: prop('string', 'Text for the setvalue action'),
    },
    ['value'],
    runInvoke,
  ),
  def(
    'click',
    'action',
    'Click an element (by/value, at its centre) or a pixel: window-relative with a window target, absolute without.',
    {
      ...targetProps(),
      at: endpointProp('Where to click: an element { by, value } or a pixel { x, y }.'),
      button: prop('string', 'left | right | middle (default left)'),
      count: prop('integer', 'Click count (default 1)'),
    },
    ['at'],
    runClick,
  ),
  def(
    'record',
    'action',
    'Record a window or region to an animated GIF over time (start/stop or a bounded one-shot). Use only to show CHANGE over time; for a single state check use capture.',
    {
      ...targetProps(),
      x: prop('integer', 'Region left (use with width/height instead of a window)'),
      y: prop('integer', 'Region top'),
      width: prop(
        'integer',
        'Region width (max 16384/side, 64000000 px total; oversized fails with region-too-large)',
      ),
      height: prop('integer', 'Region height (same limits as width)'),
      action: prop('string', 'start | stop | oneshot (default: oneshot if durationMs given, else start)'),
      fps: prop('integer', 'Frames per second (default 5, clamped to the operator limit)'),
      durationMs: prop('integer', 'For a one-shot: how long to record (clamped to the operator limit)'),
      maxWidth: prop('integer', 'Downscale frames so width fits this (default 1280)'),
      file: prop('string', 'Output .gif path (a temp path is generated if omitted)'),
    },
    [],
    runRecord,
  ),
  def(
    'windows',
    'read-only',
    'List top-level windows, optionally filtered, and wait for a condition (appears | disappears | foreground) with a timeout.',
    {
      window: prop('string', 'Filter by window title substring (case-insensitive)'),
      process: prop('string', 'Filter by process name (without .exe)'),
      className: prop('string', 'Filter by window class name (exact)'),
      condition: prop('string', 'appears (default) | disappears | foreground'),
      timeout: prop('integer', 'Milliseconds to wait for the condition (0 = check now)'),
    },
    [],
    runWindows,
  ),
  def(
    'displays',
    'read-only',
    "Report every monitor's bounds, working area, primary flag and DPI/scale, plus the virtual bounds.",
    {},
    [],
    runDisplays,
  ),
  def(
    'send_command',
    'meta',
    'Send a raw legacy MCEC command string (e.g. "capture Notepad", "windows", "chars:hi"). Simulator controls: "sim:emergency-stop on|off", "sim:throw".',
    { command: prop('string', 'The MCEC command string to run') },
    ['command'],
    runSendCommand,
  ),
  def(
    'session-start',
    'lifecycle',
    'Start a session: returns its 12-hex sessionId, startedAt and artifactDir. Pass the sessionId to later calls.',
    {},
    [],
    runSessionStart,
    false,
  ),
  def(
    'session-status',
    'lifecycle',
    'Report a session (the default one when sessionId is omitted): active target, last action, last good observation, last error, emergency stop.',
    { sessionId: prop('string', 'The session to report (omit for the default session)') },
    [],
    runSessionStatus,
    false,
  ),
  def(
    'session-end',
    'lifecycle',
    'End a session (idempotent: ending twice gives ended:false). Its artifact directory is kept.',
    { sessionId: prop('string', 'The session to end') },
    ['sessionId'],
    runSessionEnd,
    false,
  ),
];

const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

/** A tool by its exact (case-sensitive) name. */
export function toolByName(name: string): ToolDef | undefined {
  return BY_NAME.get(name);
}

/** The tools/list entries (name, description, inputSchema). */
export function toolListings(): ToolListing[] {
  return TOOLS.map(({ name, description, inputSchema }) => ({
    name,
    description,
    inputSchema: structuredClone(inputSchema),
  }));
}
