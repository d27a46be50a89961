/**
 * Fault injection: `--inject 'capture#3=frame-all-black'` answers chosen calls with a real MCEC failure of
 * any of the 12 categories (the server's codes and details, the replayed session's last good observation
 * where MCEC attaches one, a blank PNG as a capture-blank's partialResult), so one recorded happy path
 * tests an agent's every error branch.
 */
import {
  categoryOfCode as catalogCategoryOfCode,
  codesOfCategory,
  REFUSAL_CODES,
} from '../contract/tool-catalog.js';
import { ERROR_CATEGORIES, type ErrorCategory } from '../contract/types.js';
import { loadSharp } from '../util/sharp.js';

/** One parsed `--inject` rule. */
export interface Injection {
  /** The rule as given. */
  spec: string;
  /** Tool name, or null for any tool (`*`). */
  tool: string | null;
  /** `#N`: the Nth call of that tool; `@N`: the Nth call of the replay; neither: every call of the tool. */
  nth: number | null;
  scope: 'tool' | 'replay';
  code: string;
  /** The category given, else the code's own (frame-* on get-text is ocr-blank). */
  category: ErrorCategory | null;
}

/** Refusals MCEC checks before routing: stamped with its default session, no lastObservation. */
const PRE_ROUTING = new Set(['emergency-stopped', 'consent-pending', 'bootstrap-only']);

/** The server's detail texts where the replay can say them exactly; others get a plain description. */
const DETAILS: Record<string, string> = {
  'emergency-stopped':
    'Emergency stop is engaged: the operator halted this session. All tool calls are refused until they re-arm. Stop and tell the user; do not retry.',
  'consent-pending':
    'An operator consent prompt (request-command-access) is open; actuation is paused until the operator answers. Wait for the pending request-command-access call to return, then retry.',
  'bootstrap-only':
    "This is MCEC's installed copy serving the provisioning bootstrap: only provision-session and end-session are available here. Call provision-session to get a fresh, disposable, isolated MCEC instance.",
  'agent-commands-disabled': 'Agent commands are disabled. Set AgentCommandsEnabled=true to opt in.',
  'frame-all-black':
    'Captured frame is blank (a flat fill); the window may be minimized, cloaked, or rendering off-screen.',
  'frame-uniform':
    'Captured frame is blank (a flat fill); the window may be minimized, cloaked, or rendering off-screen.',
  'target-elevated':
    'UI Automation was denied access to the target; it runs at a higher integrity level (UAC) than MCEC and cannot be observed or driven. Surface this to the operator; do not retry.',
  'focus-not-confirmed':
    'The target window is foreground but keyboard focus did not land in it (no focusable control took focus, or focus went to a sibling control). App keyboard shortcuts may not reach the intended control. Try a `click` on the exact control first, or drive it with `invoke` instead of keystrokes.',
  'ocr-no-text':
    'OCR could not read any text in the region (low contrast, unsupported script, or too small). Try a larger region, foreground the window, or fall back to capture.',
  'foreground-not-set':
    'Windows refused to bring the target to the foreground (another process holds the foreground lock). Retry once the foreground holder is gone, or ask the operator.',
  'element-stale': 'The element is no longer available (it was removed from the UI tree); find it again.',
  'window-closed': 'The window closed; query or find again for a fresh handle.',
  'element-not-found': 'No element matches the selector.',
  'window-not-found': 'No matching window',
  'wait-condition-timeout': 'wait-for exhausted its timeout before the element appeared.',
  'bad-arguments': 'The arguments do not have the types this tool takes.',
  unhandled: 'Unhandled error: the operation failed inside the server.',
};

/** Every error category MCEC has (the contract's 10 plus ocr-blank and ocr-no-text). */
export const CATEGORIES: readonly ErrorCategory[] = ERROR_CATEGORIES;

function isCategory(s: string): s is ErrorCategory {
  return (ERROR_CATEGORIES as readonly string[]).includes(s);
}

/** The category MCEC gives `code` on `tool`, or null for a code it does not produce (the catalog's table). */
export function categoryOfCode(code: string, tool: string | null): ErrorCategory | null {
  if (/^selector-matched-\d+$/.test(code)) return 'ambiguous-selector';
  return catalogCategoryOfCode(code, tool);
}

/** The usual code of a category: its first in the catalog's table. */
export function defaultCode(category: ErrorCategory): string {
  return codesOfCategory(category)[0]!;
}

/**
 * Parse one `--inject` rule: `TOOL=FAULT` (every call of the tool), `TOOL#N=FAULT` (its Nth call),
 * `*@N=FAULT` or `TOOL@N=FAULT` (the replay's Nth call), `*=FAULT` (every call). FAULT is an MCEC error
 * code (`frame-all-black`, `selector-matched-3`), a category (`timeout`: its usual code) or `CODE:CATEGORY`.
 * Throws an Error saying what is wrong.
 */
export function parseInjection(spec: string): Injection {
  const eq = spec.indexOf('=');
  if (eq <= 0 || eq === spec.length - 1)
    throw new Error(
      `--inject ${JSON.stringify(spec)}: expected SELECTOR=FAULT, e.g. capture#3=frame-all-black, find=selector-matched-3, '*@5=emergency-stopped'`,
    );
  const selector = spec.slice(0, eq).trim();
  const fault = spec.slice(eq + 1).trim();
  const m = /^(\*|[A-Za-z0-9_./-]+)(?:([#@])(\d{1,9}))?$/.exec(selector);
  if (!m)
    throw new Error(
      `--inject ${JSON.stringify(spec)}: the selector is TOOL, TOOL#N (its Nth call), TOOL@N or *@N (the replay's Nth call) or *`,
    );
  const tool = m[1] === '*' ? null : m[1]!;
  const nth = m[3] !== undefined ? Number(m[3]) : null;
  if (nth === 0) throw new Error(`--inject ${JSON.stringify(spec)}: calls count from 1`);
  const scope: Injection['scope'] = m[2] === '#' && tool !== null ? 'tool' : nth === null ? 'tool' : 'replay';
  const colon = fault.indexOf(':');
  let code = colon >= 0 ? fault.slice(0, colon) : fault;
  let category: ErrorCategory | null = null;
  if (colon >= 0) {
    const cat = fault.slice(colon + 1);
    if (!isCategory(cat))
      throw new Error(
        `--inject ${JSON.stringify(spec)}: ${JSON.stringify(cat)} is not an MCEC category (${ERROR_CATEGORIES.join(', ')})`,
      );
    category = cat;
  } else if (isCategory(code)) {
    // A category name means its usual code (`invalid-argument` is also a code: `invalid-argument:invalid-argument`).
    category = code;
    code = defaultCode(code);
  } else if (categoryOfCode(code, tool) === null) {
    throw new Error(
      `--inject ${JSON.stringify(spec)}: ${JSON.stringify(code)} is not a code MCEC produces; give a category too (CODE:CATEGORY) or one of the 12 categories (${ERROR_CATEGORIES.join(', ')})`,
    );
  }
  if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(code))
    throw new Error(`--inject ${JSON.stringify(spec)}: a code is kebab-case, e.g. frame-all-black`);
  return { spec, tool, nth, scope, code, category };
}

/** The rule that picks this call (the replay's `n`th call, the `toolN`th of its tool), or undefined. */
export function pickInjection(
  rules: readonly Injection[],
  tool: string,
  n: number,
  toolN: number,
): Injection | undefined {
  return rules.find((r) => {
    if (r.tool !== null && r.tool !== tool) return false;
    if (r.nth === null) return true;
    return r.scope === 'replay' ? r.nth === n : r.nth === toolN;
  });
}

/** What the injector needs to know about the call it answers. */
export interface InjectionContext {
  tool: string;
  args: Record<string, unknown>;
  /** The session the call runs in (its sessionId argument, else MCEC's default session). */
  sessionId: string | null;
  /** MCEC's default session id, stamped on pre-routing refusals. */
  defaultSessionId: string | null;
  /** The replayed session's last good observation (compact: captures as capture-summaries). */
  lastObservation: Record<string, unknown> | null;
  /** The window the recorded answer of this call named (a capture's or find's), when it had one. */
  window: Record<string, unknown> | null;
}

/** A blank PNG of `width` x `height` (black, or mid-grey for frame-uniform), made with sharp (loaded lazily). */
async function blankPng(width: number, height: number, dark: boolean): Promise<Buffer> {
  const sharp = await loadSharp();
  const v = dark ? 0 : 128;
  return sharp({ create: { width, height, channels: 3, background: { r: v, g: v, b: v } } })
    .png()
    .toBuffer();
}

function size(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= 8192 ? v : fallback;
}

/**
 * The MCEC failure an injection answers with: `{envelope sessionId, error}` as the server shapes it for that
 * code (pre-routing refusals carry the default session and no observation; invalid-argument and send_command
 * failures no observation; capture-blank a blank PNG in partialResult, ocr-* the OCR data, focus the window).
 */
export async function injectedFailure(
  rule: Injection,
  ctx: InjectionContext,
): Promise<{ sessionId: string | null; error: Record<string, unknown> }> {
  const category = rule.category ?? categoryOfCode(rule.code, ctx.tool) ?? 'internal';
  const code = rule.code;
  const matched = /^selector-matched-(\d+)$/.exec(code);
  const detail = matched
    ? `The selector matched ${matched[1]} elements; refusing to guess which one. Narrow it: prefer automationId, or add className or a more specific name.`
    : code === 'unknown-session'
      ? `Unknown sessionId '${ctx.sessionId ?? ''}'. It was never started or has ended. Call session-start to get a fresh sessionId, or omit sessionId to use the default session.`
      : code === 'unknown-tool'
        ? `Unknown tool: ${ctx.tool}`
        : (DETAILS[code] ?? `${code} (${category})`);
  const error: Record<string, unknown> = { code, category, detail };
  const preRouting = PRE_ROUTING.has(code);
  // Refused before the tool ran: no observation. Command-level failures (invalid-argument ones included) carry it.
  const refusal = preRouting || REFUSAL_CODES.has(code);
  if (!refusal && ctx.tool !== 'send_command' && !ctx.tool.startsWith('session-') && ctx.lastObservation)
    error.lastObservation = ctx.lastObservation;
  const window = ctx.window ?? (ctx.lastObservation?.window as Record<string, unknown> | undefined) ?? null;
  const width = size(window?.width, 800);
  const height = size(window?.height, 600);
  if (category === 'capture-blank') {
    const png = await blankPng(width, height, code !== 'frame-uniform');
    const partial: Record<string, unknown> = {};
    if (window) partial.handle = window.handle ?? null;
    Object.assign(partial, {
      width,
      height,
      encoding: 'png',
      bytes: png.length,
      base64: png.toString('base64'),
    });
    if (window) partial.window = window;
    partial.blankCheck = { blank: true, dominantFraction: 1, dominantIsDark: code !== 'frame-uniform' };
    error.partialResult = partial;
  } else if (category === 'ocr-blank' || category === 'ocr-no-text') {
    const partial: Record<string, unknown> = {
      width,
      height,
      blankCheck: {
        blank: category === 'ocr-blank',
        dominantFraction: category === 'ocr-blank' ? 1 : 0.5,
        dominantIsDark: category === 'ocr-blank' && code !== 'frame-uniform',
      },
    };
    if (window) partial.window = window;
    Object.assign(partial, { text: '', lineCount: 0, wordCount: 0 });
    error.partialResult = partial;
  } else if (code === 'focus-not-confirmed' && window) {
    error.partialResult = window;
  }
  if (code === 'unknown-session') return { sessionId: ctx.sessionId, error };
  return { sessionId: preRouting ? (ctx.defaultSessionId ?? ctx.sessionId) : ctx.sessionId, error };
}
