/**
 * What the simulator answers for a catalog tool it has no scripted behaviour for: derived from the tool's
 * catalog row alone, so a new MCEC tool is served as soon as its row and tools/list entry exist in
 * `src/contract/`. Scripted behaviours (`tools.ts`) stay for the tools the demo and the tests drive.
 */
import type { McecToolSpec } from '../contract/tool-catalog.js';
import type { WindowInfo } from '../contract/types.js';
import { windowInfo } from './desktop.js';
import {
  hasTarget,
  refuseElevated,
  resolveWindow,
  sessionTarget,
  type ToolContext,
  type ToolSuccess,
  target,
} from './tool-kit.js';

/** How a simulated tool runs. */
export type ToolRun = (ctx: ToolContext) => Promise<ToolSuccess>;

/**
 * The behaviour a catalog row implies, by its kind:
 * - `observation`, `read-only`: ok with `{tool, window?}`; an observation's result becomes the session's last
 *   good observation like any other.
 * - `action`: ok with `{tool, done: true, window?}`; an elevated target is refused `target-elevated`, as every
 *   actuation is.
 * - `lifecycle`: the status of the session its `sessionId` names (the default one when absent), as
 *   session-status answers.
 * - `meta`: ok with `{tool}`.
 * A window selector (`window`, `handle`, `process`, `className`, `foreground`) is resolved on the fake desktop,
 * so its misses are the real codes (window-not-found, selector-matched-N, window-closed).
 */
export function derivedBehaviour(name: string, spec: McecToolSpec): ToolRun {
  switch (spec.kind) {
    case 'observation':
    case 'read-only':
      return async (ctx) => ({ result: { tool: name, ...targetWindow(ctx, false) } });
    case 'action':
      return async (ctx) => ({ result: { tool: name, done: true, ...targetWindow(ctx, true) } });
    case 'lifecycle':
      return async (ctx) => ({
        result: { ...ctx.sessions.status(sessionTarget(ctx), ctx.commands.access()) },
      });
    case 'meta':
      return async () => ({ result: { tool: name } });
  }
}

/** The window the call names, when it names one (none: no `window` in the result). */
function targetWindow(ctx: ToolContext, actuates: boolean): { window?: WindowInfo } {
  const t = target(ctx.args);
  if (!hasTarget(t)) return {};
  const w = resolveWindow(ctx.desktop, t);
  if (actuates) refuseElevated(w);
  return { window: windowInfo(w) };
}
