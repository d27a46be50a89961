/** What every simulated tool shares: its context, its failures, and the server's argument readers. */
import { REFUSAL_CODES } from '../contract/tool-catalog.js';
import type { ErrorCategory, Warning } from '../contract/types.js';
import type { Desktop, MatchBy, Rect, SimWindow, WindowTarget } from './desktop.js';
import { MATCH_BY } from './desktop.js';
import type { CommandTable } from './meta-tools.js';
import type { SimRecorder } from './record.js';
import type { SessionStore, SimSession } from './sessions.js';

/**
 * A tool call that did not succeed. Whether it is a refusal made before the tool ran (bad arguments,
 * unknown session, gates: no lastObservation) or a command-level failure (which carries one) is its
 * code's row in the catalog's error table (`MCEC_ERROR_CODES`).
 */
export class ToolFailure extends Error {
  constructor(
    readonly code: string,
    readonly category: ErrorCategory,
    readonly detail: string,
    readonly partialResult?: Record<string, unknown>,
    readonly warnings: Warning[] = [],
  ) {
    super(detail);
  }

  /** Refused before the tool ran (the catalog's error table says so of its code). */
  get refusal(): boolean {
    return REFUSAL_CODES.has(this.code);
  }
}

/** A refusal with code bad-arguments (category invalid-argument). */
export function badArguments(detail: string): ToolFailure {
  return new ToolFailure('bad-arguments', 'invalid-argument', detail);
}

/** What a tool returns when it succeeds. */
export interface ToolSuccess {
  result: Record<string, unknown>;
  warnings?: Warning[];
  /** Base64 PNG to put in an image block before the envelope (successful inline capture only). */
  image?: string;
}

/** What a running tool can reach. */
export interface ToolContext {
  args: Record<string, unknown>;
  desktop: Desktop;
  sessions: SessionStore;
  session: SimSession;
  now: () => Date;
  /** How long invoke waits before answering modalPending (the real server: 750 ms). */
  modalGraceMs: number;
  /** Poll interval of waits. */
  pollMs: number;
  /** The one GIF recorder of the server (a recording is per process, not per session). */
  recorder: SimRecorder;
  /** The server's temp directory (`Path.GetTempPath()`): where a record GIF goes without `file`. */
  tempDir: string;
  /** The loaded command table: which tools and raw commands are enabled, and the operator's consent. */
  commands: CommandTable;
  /** The operator's AllowSessionProvisioning opt-in. */
  allowProvisioning: boolean;
  /** Window captures and OCR fall back to the on-screen blit (`capture-fallback` / `ocr-fallback`). */
  printWindowRefused: boolean;
}

// ---------------------------------------------------------------------------------------------
// argument readers: like the server's Str/Int/Long/Bool/Dbl, a value of the wrong type reads as absent
// ---------------------------------------------------------------------------------------------

/** A string argument, or undefined when absent or not a string. */
export function str(args: Record<string, unknown>, key: string): string | undefined {
  const v = args[key];
  return typeof v === 'string' ? v : undefined;
}

/** An integer argument (32-bit, as the server's Int), or undefined when absent or not one. */
export function int(args: Record<string, unknown>, key: string): number | undefined {
  const v = args[key];
  return typeof v === 'number' && Number.isInteger(v) && v >= -2_147_483_648 && v <= 2_147_483_647
    ? v
    : undefined;
}

/** A number argument (the server's Dbl), or undefined. */
export function num(args: Record<string, unknown>, key: string): number | undefined {
  const v = args[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** True only for a literal `true` (the server's Bool). */
export function bool(args: Record<string, unknown>, key: string): boolean {
  return args[key] === true;
}

/** A nested object argument, or undefined. */
export function obj(args: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const v = args[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/**
 * The window selectors as the server reads them: empty strings, a handle <= 0 and anything of the wrong
 * type do not count (WindowTargetingAgentCommand.HasWindowTarget).
 */
export function target(args: Record<string, unknown>): WindowTarget {
  const t: WindowTarget = {};
  const window = str(args, 'window');
  const handle =
    typeof args.handle === 'number' && Number.isSafeInteger(args.handle) ? args.handle : undefined;
  const process = str(args, 'process');
  const className = str(args, 'className');
  if (window) t.window = window;
  if (handle !== undefined && handle > 0) t.handle = handle;
  if (process) t.process = process;
  if (className) t.className = className;
  if (args.foreground === true) t.foreground = true;
  return t;
}

/** True when any window selector is given. */
export function hasTarget(t: WindowTarget): boolean {
  return (
    t.window !== undefined ||
    t.handle !== undefined ||
    t.process !== undefined ||
    t.className !== undefined ||
    t.foreground === true
  );
}

/** The server's one window-not-found failure (no selector at all resolves to no window). */
export function windowNotFound(): ToolFailure {
  return new ToolFailure('window-not-found', 'no-target', 'No matching window');
}

/** The target of a tool that always needs a window: none given is window-not-found, as on the server. */
export function requireTarget(args: Record<string, unknown>): WindowTarget {
  const t = target(args);
  if (!hasTarget(t)) throw windowNotFound();
  return t;
}

/** A target that must name a window, resolved: none given is window-not-found, as on the server. */
export function resolveTarget(desktop: Desktop, t: WindowTarget): SimWindow {
  if (!hasTarget(t)) throw windowNotFound();
  return resolveWindow(desktop, t);
}

/** The `x, y, width, height` arguments as a rectangle (absent or not integers: 0). */
export function regionArg(args: Record<string, unknown>): Rect {
  return {
    x: int(args, 'x') ?? 0,
    y: int(args, 'y') ?? 0,
    width: int(args, 'width') ?? 0,
    height: int(args, 'height') ?? 0,
  };
}

/** True for a region with a positive size (a smaller one counts as none). */
export function hasArea(region: Rect): boolean {
  return region.width > 0 && region.height > 0;
}

/** Resolve a target to one window or throw its miss. */
export function resolveWindow(desktop: Desktop, t: WindowTarget): SimWindow {
  const r = desktop.resolve(t);
  if ('miss' in r) throw new ToolFailure(r.miss.code, r.miss.category, r.miss.detail);
  return r.window;
}

/** The `by` of an element selector: automationid, classname, else name (UiaService.BuildCondition). */
export function matchBy(args: Record<string, unknown>): MatchBy {
  const by = (str(args, 'by') ?? 'name').toLowerCase();
  return (MATCH_BY as readonly string[]).includes(by) ? (by as MatchBy) : 'name';
}

/** A wait's timeout in ms: `timeout` (an integer; anything else reads as absent), capped at 120 s. */
export function timeoutArg(args: Record<string, unknown>, fallback: number): number {
  const t = int(args, 'timeout');
  if (t === undefined || t <= 0) return fallback;
  return Math.min(t, 120_000);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The live session a lifecycle tool's `sessionId` names (trimmed, as the server does); absent or empty: the default. */
export function sessionTarget(ctx: ToolContext): SimSession {
  const raw = str(ctx.args, 'sessionId');
  if (raw === undefined || raw === '') return ctx.sessions.defaultSession;
  const s = ctx.sessions.get(raw.trim());
  if (!s || s.ended)
    throw new ToolFailure(
      'unknown-session',
      'invalid-argument',
      `Unknown sessionId '${raw}'. It was never started or has ended. Call session-start, or omit sessionId for the default session.`,
    );
  return s;
}

/** An ambiguous-selector failure: a selector matched more than one element. */
export function ambiguous(n: number, by: MatchBy, value: string): ToolFailure {
  return new ToolFailure(
    `selector-matched-${n}`,
    'ambiguous-selector',
    `The selector (${by}='${value}') matched ${n} elements; refusing to guess which one. Narrow it: prefer automationId, or add className or a more specific name.`,
  );
}

/** target-elevated for a window that runs elevated. */
export function refuseElevated(w: SimWindow): void {
  if (w.elevated)
    throw new ToolFailure(
      'target-elevated',
      'elevation',
      'UI Automation was denied access to the target; it runs at a higher integrity level (UAC) than MCEC and cannot be observed or driven. Surface this to the operator; do not retry.',
    );
}

/** .NET's Math.Round (midpoint to even), which the server uses for downscale sizes. */
export function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}
