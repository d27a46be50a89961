/** How MCEC means its session ids (mcec-wire §8): which ids route a call, and which envelope ids do not. */
import { INSTALL_TOOLS, LIFECYCLE_TOOLS } from '../contract/tool-catalog.js';
import { isRecord } from '../util/json.js';

/** Refusals MCEC checks before it routes any call: their envelope carries the default session's id. */
const ALWAYS_BEFORE_ROUTING: ReadonlySet<string> = new Set([
  'emergency-stopped',
  'consent-pending',
  'bootstrap-only',
]);

/**
 * The session a call names, as MCEC reads it: its `sessionId` argument, trimmed, when it is a non-empty
 * string and the tool routes by it (not provision-session / end-session). Undefined otherwise.
 */
export function routingArgument(tool: string, args: unknown): string | undefined {
  if (INSTALL_TOOLS.has(tool) || !isRecord(args)) return undefined;
  const id = args.sessionId;
  if (typeof id !== 'string') return undefined;
  const trimmed = id.trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * True for a refusal MCEC stamps with its default session's id before looking at the call's own session:
 * the emergency stop, consent-pending, bootstrap-only, and for the session-* tools agent-commands-disabled
 * and session-end's bad-arguments.
 */
export function isPreRoutingRefusal(tool: string, code: string): boolean {
  if (ALWAYS_BEFORE_ROUTING.has(code)) return true;
  if (code === 'agent-commands-disabled') return LIFECYCLE_TOOLS.has(tool);
  return code === 'bad-arguments' && tool === 'session-end';
}

/** True for a tool whose envelope carries the default session's id whatever its arguments say. */
export function answersInDefaultSession(tool: string): boolean {
  return INSTALL_TOOLS.has(tool);
}
