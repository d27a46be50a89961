/** The simulated MCEC tools: their tools/list entries, argument checks, and behaviour on the fake desktop. */
import {
  type McecToolKind,
  type McecToolName,
  type McecToolSpec,
  mcecTool,
} from '../contract/tool-catalog.js';
import { TOOL_LISTINGS, type ToolListing } from '../contract/tool-listings.js';
import type { Warning } from '../contract/types.js';
import { serializeWire } from '../wire/json-text.js';
import { clickArgsError, runClipboard, runDrag, runFocus, runLaunch, runWindow } from './actions.js';
import { runCapture, windowCaptureData } from './capture.js';
import { derivedBehaviour, type ToolRun } from './derived-tool.js';
import {
  DISPLAYS,
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
import { runGetText } from './get-text.js';
import { runEndSession, runProvisionSession, runRequestCommandAccess } from './meta-tools.js';
import { encodePng } from './raster.js';
import { runRecord } from './record.js';
import type { ToolContext, ToolSuccess } from './tool-kit.js';
import {
  ambiguous,
  badArguments,
  hasTarget,
  int,
  matchBy,
  refuseElevated,
  requireTarget,
  resolveWindow,
  sessionTarget,
  sleep,
  str,
  ToolFailure,
  target,
  timeoutArg,
} from './tool-kit.js';

export { type ToolListing, toolListings } from '../contract/tool-listings.js';
export type { ToolContext, ToolSuccess } from './tool-kit.js';
export { badArguments, ToolFailure } from './tool-kit.js';

/** How a tool's outcome is kept (the catalog's kind): observations update the last good observation. */
export type ToolKind = McecToolKind;

export interface ToolDef extends ToolListing {
  /** Its catalog row (contract/tool-catalog.ts). */
  spec: McecToolSpec;
  kind: ToolKind;
  /** Routed tools run inside the session named by `sessionId`; lifecycle tools read it as their target. */
  routed: boolean;
  run(ctx: ToolContext): Promise<ToolSuccess>;
}

// ---------------------------------------------------------------------------------------------
// capture and get-text
// ---------------------------------------------------------------------------------------------

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
    throw new ToolFailure(r.miss.code, r.miss.category, r.miss.detail);
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
    );
  const found = ctx.desktop.findElements(w, by, value);
  if (found.length === 0)
    throw new ToolFailure(
      'element-not-found',
      'no-target',
      `Invoke failed: no element with ${by}='${value}' in '${w.title}'.`,
    );
  if (found.length > 1) throw ambiguous(found.length, by, value);
  const e = found[0]!;
  const pattern = PATTERNS[action]!;
  if (pattern !== 'any' && !pattern.has(e.controlType))
    throw new ToolFailure(
      'pattern-unsupported',
      'invalid-argument',
      `A ${e.controlType} does not support the ${action} action.`,
    );
  if (action === 'setvalue') {
    const text = str(args, 'text');
    if (text === undefined)
      throw new ToolFailure('invalid-argument', 'invalid-argument', "setvalue needs a 'text' argument.");
    ctx.desktop.setValue(w, e, text);
  }
  if (action === 'setfocus') ctx.desktop.setFocus(w, e);
  if (action === 'select') ctx.desktop.select(w, e);
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
  const problem = clickArgsError(args);
  if (problem) throw badArguments(problem);
  const a = args.at as Record<string, unknown>;
  const value = str(a, 'value');
  if (value) return { by: matchBy(a), value };
  return { x: int(a, 'x')!, y: int(a, 'y')! };
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
  if (hit && button === 'left') {
    desktop.setFocus(hit.window, hit.element);
    applyEffect(ctx, hit.window, hit.element);
  }
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
    );
  const timeoutMs = timeoutArg(args, 0);
  if (!filtered && (timeoutMs > 0 || condition !== 'appears'))
    throw new ToolFailure(
      'windows-no-criteria',
      'invalid-argument',
      'A wait, or the disappears/foreground conditions, need at least one filter (window, process, className).',
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

/** MCEC's raw prefixes (`chars:<text>`, `mouse:...`, `pause:<ms>`, `mcec:exit`, `shiftdown:`/`shiftup:<mods>`). */
const RAW_PREFIXES = ['chars:', 'mouse:', 'pause:', 'mcec:', 'shiftdown:', 'shiftup:'];
/** MCEC's ctrl chords. */
const RAW_CHORDS = ['ctrl-a', 'ctrl-c', 'ctrl-v', 'ctrl-x', 'ctrl-z', 'ctrl-s'];

/** Which raw built-in a command line is (its prefix, chord, or `VK_`), or undefined: not a raw command. */
function rawCommand(command: string): string | undefined {
  const lower = command.toLowerCase();
  const prefix = RAW_PREFIXES.find((p) => lower.startsWith(p));
  if (prefix) return prefix;
  if (RAW_CHORDS.includes(lower)) return lower;
  return /^vk_[a-z0-9_]+$/.test(lower) ? 'VK_' : undefined;
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
  // The raw built-ins of MCEC's legacy table (SendInputCommand.cs 59-64): the server answers with plain text.
  const raw = rawCommand(command);
  if (raw !== undefined) {
    // What `chars:` types (or ctrl-v pastes) lands in the focused text box, so a capture shows it.
    if (raw === 'chars:') ctx.desktop.typeText(command.slice('chars:'.length));
    else if (raw === 'ctrl-v') ctx.desktop.paste();
    else if (raw === 'pause:') await sleep(Math.min(Math.max(Number(command.slice(6)) || 0, 0), 10_000));
    return { result: { output: 'ok' } };
  }
  throw new ToolFailure('unknown-command', 'internal', `Unknown command: '${command.slice(0, 80)}'.`);
}

// ---------------------------------------------------------------------------------------------
// session lifecycle
// ---------------------------------------------------------------------------------------------

async function runSessionStart(ctx: ToolContext): Promise<ToolSuccess> {
  const s = await ctx.sessions.start();
  return { result: { ...ctx.sessions.status(s, ctx.commands.access()) } };
}

async function runSessionStatus(ctx: ToolContext): Promise<ToolSuccess> {
  return { result: { ...ctx.sessions.status(sessionTarget(ctx), ctx.commands.access()) } };
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

/**
 * The scripted behaviours, for the tools the demo and the tests drive (their result shapes and codes from the
 * server's source). A catalog tool without one gets the behaviour its row implies (`derived-tool.ts`).
 */
const BEHAVIOUR: Partial<Record<McecToolName, ToolRun>> = {
  capture: runCapture,
  'get-text': runGetText,
  query: runQuery,
  displays: runDisplays,
  windows: runWindows,
  window: runWindow,
  find: runFind,
  'wait-for': runWaitFor,
  invoke: runInvoke,
  drag: runDrag,
  click: runClick,
  focus: runFocus,
  clipboard: runClipboard,
  record: runRecord,
  launch: runLaunch,
  send_command: runSendCommand,
  'session-start': runSessionStart,
  'session-status': runSessionStatus,
  'session-end': runSessionEnd,
  'request-command-access': runRequestCommandAccess,
  'provision-session': runProvisionSession,
  'end-session': runEndSession,
};

/** The kinds of the gated agent tools (ToolCatalog.All): they run only while enabled in the command table. */
const COMMAND_TABLE_KINDS: readonly ToolKind[] = ['observation', 'read-only', 'action'];

/** True for a tool of the command table (ToolCatalog.All), which the per-command Enabled gate guards. */
export function inCommandTable(tool: { kind: ToolKind }): boolean {
  return COMMAND_TABLE_KINDS.includes(tool.kind);
}

/** A catalog tool's run behind the per-command Enabled gate (the executor's command-disabled refusal). */
function gated(name: string, run: ToolRun): ToolRun {
  return async (ctx: ToolContext): Promise<ToolSuccess> => {
    if (!ctx.commands.isEnabled(name))
      throw new ToolFailure(
        'command-disabled',
        'internal',
        `The '${name}' command is disabled. Call request-command-access with the command name and a one-line reason; the operator will be asked on screen. Do not edit mcec.commands or any config file.`,
      );
    return run(ctx);
  };
}

/**
 * A simulated tool from its tools/list entry and catalog row: `run`, else the behaviour derived from the row;
 * its kind, routing and gate from the row.
 */
export function simulatedTool(
  listing: ToolListing,
  spec: McecToolSpec,
  run: ToolRun = derivedBehaviour(listing.name, spec),
): ToolDef {
  const tool = {
    ...listing,
    spec,
    kind: spec.kind,
    // Lifecycle tools read `sessionId` as their target; install tools run in the default session.
    routed: spec.kind !== 'lifecycle' && spec.installTool !== true,
  };
  return { ...tool, run: inCommandTable(tool) ? gated(listing.name, run) : run };
}

/** Every simulated tool, in tools/list order: one per catalog row (each needs its tools/list entry). */
export const TOOLS: readonly ToolDef[] = TOOL_LISTINGS.map((listing) => {
  const spec: McecToolSpec | undefined = mcecTool(listing.name);
  if (!spec) throw new Error(`simulated tool ${listing.name} is not in the MCEC tool catalog`);
  return simulatedTool(listing, spec, BEHAVIOUR[listing.name as McecToolName]);
});
