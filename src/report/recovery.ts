/** What an agent or a triager should try next, per error category (mcec-wire §7). */
import { isErrorCategory, PLAIN_TOOL_ERROR, serverCategory } from '../contract/read-tool-output.js';
import type { ErrorCategory } from '../contract/types.js';
import { oneLine } from './text.js';

/** The next step for each category of the closed set (a new category fails the typecheck until it has one). */
export const RECOVERY_BY_CATEGORY: Readonly<Record<ErrorCategory, string>> = {
  timeout:
    're-observe (query/find) and check whether the element ever appeared; raise the timeout only with evidence',
  'ambiguous-selector':
    'narrow the selector (automationId, className, exact name); retrying unchanged cannot help',
  'stale-element': 'the window or element went away: query/find again for a fresh handle, then retry',
  'no-target': 'broaden the selector, query to discover targets, or wait-for the element',
  'invalid-argument': 'the request is wrong: fix the arguments; do not retry as is',
  'capture-blank':
    'restore or foreground the window and capture again; the suspect image is in partialResult',
  'ocr-blank':
    'as capture-blank: restore or foreground the window and capture again; the suspect image is in partialResult',
  'ocr-no-text': 'use a larger region or fall back to capture',
  focus: 'click the exact control, or invoke instead of typing; use the focus tool',
  elevation: 'the target runs elevated: report it; the agent cannot recover',
  foreground: 'retry the focus tool once the foreground holder is gone, or ask the operator',
  internal: 'not recoverable by the agent: report it',
};

/** The recovery step for a failure, or null when the category is unknown (codes narrow, categories decide). */
export function recoveryFor(category: string | null | undefined, code?: string | null): string | null {
  // A plain MCP server's failed result: its category is the recorder's stand-in; MCEC's advice does not apply.
  if (code === PLAIN_TOOL_ERROR) return null;
  if (code === 'emergency-stopped') {
    return 'an operator latched the emergency stop: stop and tell the user; every call fails until it is released';
  }
  if (!category) return null;
  return isErrorCategory(category) ? RECOVERY_BY_CATEGORY[category] : null;
}

/** The recovery step for a call that never returned (the recorder saw no response). */
export const PENDING_RECOVERY =
  'the call never returned: check whether the server or the agent process died (a crash or kill mid-call), then rerun';

/** The recovery step for a call the recording proxy failed (its detail: `proxy-error <status>: <reason>`). */
export function proxyErrorRecovery(detail: string | null): string {
  if (/^proxy-error 504\b/.test(detail ?? ''))
    return "the target did not answer within the proxy's timeout: see what it was doing (MCEC's own log), or raise mcec-record http --timeout <tool>=<duration> when the tool needs longer";
  if (/^proxy-error 502\b/.test(detail ?? ''))
    return 'the proxy could not reach its target or lost it mid-answer: check that MCEC (or the server) is running and listening at the target URL (mcec-record http --target), then run the call again';
  return 'the proxy refused or could not forward the call: the detail says why; fix that, then run the call again';
}

/** The recovery step for one recorded call: none for a success, the pending step for a call in flight. */
export function recoveryForCall(row: {
  status: string;
  error_category: string | null;
  error_code: string | null;
  error_detail?: string | null;
}): string | null {
  if (row.status === 'pending') return PENDING_RECOVERY;
  if (row.status !== 'failed' && row.status !== 'fault') return null;
  if (row.error_code === 'proxy-error') return proxyErrorRecovery(row.error_detail ?? null);
  return recoveryFor(row.error_category, row.error_code);
}

/** A failed call's category as shown (one line, 60 chars), or null: none stored, or a plain tool result's. */
export function categoryLine(row: {
  error_code: string | null;
  error_category: string | null;
}): string | null {
  const category = serverCategory(row.error_code, row.error_category);
  return category ? oneLine(category, 60) : null;
}
