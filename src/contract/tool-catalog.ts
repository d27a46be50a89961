/**
 * The MCEC tool catalog: one row per tool the server registers (tig/mcec `ToolCatalog.cs` and its meta tools,
 * mcec-wire §1). Every per-tool fact the recorder uses derives from this table: which tools are observations,
 * which are meta, which arguments hold typed text, which one-line summarizer a call gets, and the simulator's
 * tool list. Adding a tool: a row here and its tools/list entry in `tool-listings.ts`; the simulator serves it
 * with the behaviour its row implies (`src/sim/derived-tool.ts`) until it is given a scripted one, and the
 * report gives it the generic line until it is given a summarizer (`src/report/summarize-call.ts`).
 */

import type { ErrorCategory } from './types.js';

/**
 * What a tool does (mcec-wire §1): `observation` updates the session's last good observation on success;
 * `read-only` reads the desktop without being an observation; `action` changes the desktop; `meta` runs
 * outside the tool catalog (legacy commands, permissions, install copies); `lifecycle` starts, reads or ends
 * an MCEC session. Whether a tool types text is its `typedText`, not its kind (send_command is meta and types).
 */
export type McecToolKind = 'observation' | 'read-only' | 'action' | 'meta' | 'lifecycle';

/**
 * Which top-level string arguments of a call are text typed into windows or put on the clipboard:
 * `keys` always; with `rule: 'command-line'` each key holds a legacy command line whose typed part only is
 * text. `remember`: the text is also remembered as a secret, since it comes back elsewhere (clipboard text
 * is pasted and read back). `answerKeys`: fields of the answer's `result` holding the same kind of user text
 * (clipboard get's `text`).
 */
export interface TypedTextSpec {
  keys: readonly string[];
  rule?: 'command-line';
  remember?: true;
  answerKeys?: readonly string[];
}

/** The one-line summarizers of `src/report/summarize-call.ts`, by the key a catalog row names. */
export type SummarizerKey =
  | 'capture'
  | 'query'
  | 'find'
  | 'get-text'
  | 'invoke'
  | 'click'
  | 'windows'
  | 'displays'
  | 'send-command'
  | 'session'
  | 'session-end'
  | 'focus'
  | 'drag'
  | 'clipboard'
  | 'launch'
  | 'record';

/** One tool's row. */
export interface McecToolSpec {
  kind: McecToolKind;
  /** Arguments holding typed text; absent: the tool types nothing. */
  typedText?: TypedTextSpec;
  /** Its one-line summarizer; absent: the generic `tool k=v: ok` line. */
  summarizer?: SummarizerKey;
  /** Its `sessionId` argument names a provisioned install, not a session (the provisioning bootstrap). */
  installTool?: true;
  /** Still served while an operator consent prompt is open (ToolCatalog.cs `ServedDuringConsent`). */
  servedDuringConsent?: true;
  /** A catalog tool the operator must grant first (ToolCatalog.cs `ProvisionedByDefault = false`). */
  gatedByDefault?: true;
}

/** The actuation tools' typed text: `text` and `keys`. */
const TEXT_AND_KEYS: TypedTextSpec = { keys: ['text', 'keys'] };

/** Every MCEC tool, in the server's tools/list order. */
export const MCEC_TOOL_CATALOG = {
  capture: { kind: 'observation', summarizer: 'capture', servedDuringConsent: true },
  'get-text': { kind: 'observation', summarizer: 'get-text', servedDuringConsent: true },
  query: { kind: 'observation', summarizer: 'query', servedDuringConsent: true },
  displays: { kind: 'read-only', summarizer: 'displays', servedDuringConsent: true },
  windows: { kind: 'read-only', summarizer: 'windows', servedDuringConsent: true },
  window: { kind: 'action', typedText: TEXT_AND_KEYS },
  find: { kind: 'observation', summarizer: 'find', servedDuringConsent: true },
  'wait-for': { kind: 'observation', summarizer: 'find', servedDuringConsent: true },
  // invoke's `value` is always the element selector (`by` defaults to name); only `text` (setvalue) is typed.
  invoke: { kind: 'action', typedText: { keys: ['text'] }, summarizer: 'invoke' },
  drag: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'drag' },
  click: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'click' },
  focus: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'focus' },
  clipboard: {
    kind: 'action',
    typedText: { keys: ['text', 'value', 'content', 'data'], remember: true, answerKeys: ['text'] },
    summarizer: 'clipboard',
  },
  record: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'record', servedDuringConsent: true },
  launch: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'launch', gatedByDefault: true },
  send_command: {
    kind: 'meta',
    typedText: { keys: ['command', 'line', 'cmd', 'text'], rule: 'command-line' },
    summarizer: 'send-command',
  },
  'session-start': { kind: 'lifecycle', summarizer: 'session' },
  'session-status': { kind: 'lifecycle', summarizer: 'session' },
  'session-end': { kind: 'lifecycle', summarizer: 'session-end' },
  'request-command-access': { kind: 'meta' },
  'provision-session': { kind: 'meta', installTool: true },
  'end-session': { kind: 'meta', installTool: true },
} as const satisfies Record<string, McecToolSpec>;

/** The name of an MCEC tool. */
export type McecToolName = keyof typeof MCEC_TOOL_CATALOG;

/** Every MCEC tool name, in tools/list order. */
export const MCEC_TOOL_NAMES = Object.keys(MCEC_TOOL_CATALOG) as McecToolName[];

/** The catalog row of a tool by its exact name, or undefined for a tool MCEC does not have. */
export function mcecTool(name: string): McecToolSpec | undefined {
  return Object.hasOwn(MCEC_TOOL_CATALOG, name) ? MCEC_TOOL_CATALOG[name as McecToolName] : undefined;
}

/** The tools of the given kinds, in catalog order. */
function toolsOfKind(...kinds: McecToolKind[]): McecToolName[] {
  return MCEC_TOOL_NAMES.filter((name) => kinds.includes(MCEC_TOOL_CATALOG[name].kind));
}

/** The tools whose success updates a session's last good observation (mcec-wire §1: exactly five). */
export const OBSERVATION_TOOLS: readonly string[] = Object.freeze(toolsOfKind('observation'));

/** Meta and lifecycle tools: their failures are never command-level (no last good observation attached). */
export const META_TOOLS: ReadonlySet<string> = new Set(toolsOfKind('meta', 'lifecycle'));

/** The session lifecycle tools, whose `sessionId` names the session they act on. */
export const LIFECYCLE_TOOLS: ReadonlySet<string> = new Set(toolsOfKind('lifecycle'));

/** The provisioning bootstrap tools, whose `sessionId` names an install copy, not a session. */
export const INSTALL_TOOLS: ReadonlySet<string> = new Set(
  MCEC_TOOL_NAMES.filter((name) => (MCEC_TOOL_CATALOG[name] as McecToolSpec).installTool === true),
);

/** Tools that may type text (a row with `typedText`). */
export const TYPING_TOOLS: ReadonlySet<string> = new Set(
  MCEC_TOOL_NAMES.filter((name) => (MCEC_TOOL_CATALOG[name] as McecToolSpec).typedText !== undefined),
);

/** Tools MCEC still serves while an operator consent prompt is open; the others get `consent-pending` (for tests). */
export const SERVED_DURING_CONSENT: ReadonlySet<string> = new Set(
  MCEC_TOOL_NAMES.filter((name) => (MCEC_TOOL_CATALOG[name] as McecToolSpec).servedDuringConsent === true),
);

/** The catalog tools the operator has to grant first (MCEC's commandAccess `gatedTools` by default; for tests). */
export const GATED_BY_DEFAULT: readonly string[] = MCEC_TOOL_NAMES.filter(
  (name) => (MCEC_TOOL_CATALOG[name] as McecToolSpec).gatedByDefault === true,
);

/**
 * One error code MCEC produces (mcec-wire §3, §9; tig/mcec `AgentToolExecutor.cs`, `src/Commands/*.cs`).
 * `refusal`: decided before the tool ran (its `ToolError`: arguments, unknown session, the gates, consent,
 * the emergency stop), so the envelope carries no `lastObservation`. Any other failure of an observation or
 * action tool went through the command-result path and carries the session's last good observation,
 * `invalid-argument` ones included (action-unknown, region-too-large, recording-in-progress).
 * `byTool`: the category on tools that give the code another one.
 */
export interface McecErrorCodeSpec {
  category: ErrorCategory;
  refusal: boolean;
  byTool?: Readonly<Record<string, ErrorCategory>>;
}

/**
 * Every error code MCEC produces, in category order; a category's first code is its usual one.
 * `selector-matched-2` stands for every `selector-matched-N`.
 */
export const MCEC_ERROR_CODES = {
  'wait-condition-timeout': { category: 'timeout', refusal: false },
  'selector-matched-2': { category: 'ambiguous-selector', refusal: false },
  'element-stale': { category: 'stale-element', refusal: false },
  'window-closed': { category: 'stale-element', refusal: false },
  'element-not-found': { category: 'no-target', refusal: false },
  'window-not-found': { category: 'no-target', refusal: false },
  // Argument errors: bad-arguments and unknown-session are refused before the tool runs; the rest are
  // the commands' own checks, made while running (they carry the last good observation).
  'bad-arguments': { category: 'invalid-argument', refusal: true },
  'region-too-large': { category: 'invalid-argument', refusal: false },
  'region-out-of-bounds': { category: 'invalid-argument', refusal: false },
  'ocr-image-too-large': { category: 'invalid-argument', refusal: false },
  'pattern-unsupported': { category: 'invalid-argument', refusal: false },
  'action-unknown': { category: 'invalid-argument', refusal: false },
  'clipboard-text-missing': { category: 'invalid-argument', refusal: false },
  'launch-path-missing': { category: 'invalid-argument', refusal: false },
  'record-action-unknown': { category: 'invalid-argument', refusal: false },
  'recording-in-progress': { category: 'invalid-argument', refusal: false },
  'no-recording': { category: 'invalid-argument', refusal: false },
  'windows-unknown-condition': { category: 'invalid-argument', refusal: false },
  'windows-no-criteria': { category: 'invalid-argument', refusal: false },
  'unknown-session': { category: 'invalid-argument', refusal: true },
  // window's own argument check (WindowCommand.cs): a command-level failure.
  'invalid-argument': { category: 'invalid-argument', refusal: false },
  'frame-all-black': { category: 'capture-blank', refusal: false, byTool: { 'get-text': 'ocr-blank' } },
  'frame-uniform': { category: 'capture-blank', refusal: false, byTool: { 'get-text': 'ocr-blank' } },
  'ocr-no-text': { category: 'ocr-no-text', refusal: false },
  'focus-not-confirmed': { category: 'focus', refusal: false },
  'focus-not-set': { category: 'focus', refusal: false },
  'target-elevated': { category: 'elevation', refusal: false },
  'foreground-not-set': { category: 'foreground', refusal: false },
  // MCEC's catch-all for a command that failed without a code (AgentToolResult.cs).
  unhandled: { category: 'internal', refusal: false },
  'uia-faulted': { category: 'internal', refusal: false },
  'invoke-faulted': { category: 'internal', refusal: false },
  'capture-exception': { category: 'internal', refusal: false },
  'get-text-exception': { category: 'internal', refusal: false },
  'ocr-unavailable': { category: 'internal', refusal: false },
  'launch-failed': { category: 'internal', refusal: false },
  'record-no-frames': { category: 'internal', refusal: false },
  'record-write-failed': { category: 'internal', refusal: false },
  'record-exception': { category: 'internal', refusal: false },
  // The gates, consent and the emergency stop: refused before the tool runs.
  'agent-commands-disabled': { category: 'internal', refusal: true },
  'emergency-stopped': { category: 'internal', refusal: true },
  'bootstrap-only': { category: 'internal', refusal: true },
  'consent-pending': { category: 'internal', refusal: true },
  'consent-denied': { category: 'internal', refusal: true },
  'consent-timeout': { category: 'internal', refusal: true },
  'consent-unavailable': { category: 'internal', refusal: true },
  'command-disabled': { category: 'internal', refusal: true },
  'unknown-tool': { category: 'internal', refusal: true },
  'unknown-command': {
    category: 'internal',
    refusal: true,
    byTool: { 'request-command-access': 'invalid-argument' },
  },
  'provisioning-not-authorized': { category: 'internal', refusal: true },
  'session-token-invalid': { category: 'internal', refusal: true },
  'engine-unavailable': { category: 'internal', refusal: true },
  // send_command's and the meta tools' own failures (never with an observation: they are meta tools).
  'no-output': { category: 'internal', refusal: false },
  'command-dropped': { category: 'internal', refusal: false },
  'send-command-timeout': { category: 'internal', refusal: false },
  'provisioning-failed': { category: 'internal', refusal: false },
} as const satisfies Record<string, McecErrorCodeSpec>;

/** The table's row of `code` (any `selector-matched-N` is `selector-matched-2`'s), or undefined. */
export function mcecErrorCode(code: string): McecErrorCodeSpec | undefined {
  if (/^selector-matched-\d{1,9}$/.test(code)) return MCEC_ERROR_CODES['selector-matched-2'];
  return Object.hasOwn(MCEC_ERROR_CODES, code)
    ? (MCEC_ERROR_CODES[code as keyof typeof MCEC_ERROR_CODES] as McecErrorCodeSpec)
    : undefined;
}

/** The category MCEC gives `code` on `tool` (null: any tool), or null for a code it does not produce. */
export function categoryOfCode(code: string, tool: string | null): ErrorCategory | null {
  const row = mcecErrorCode(code);
  if (!row) return null;
  return (
    (tool !== null && row.byTool && Object.hasOwn(row.byTool, tool) ? row.byTool[tool] : undefined) ??
    row.category
  );
}

/** The codes MCEC gives `category` (on some tool), in table order: the first is the category's usual one. */
export function codesOfCategory(category: ErrorCategory): string[] {
  return Object.entries(MCEC_ERROR_CODES as Record<string, McecErrorCodeSpec>)
    .filter(([, row]) => row.category === category || Object.values(row.byTool ?? {}).includes(category))
    .map(([code]) => code);
}

/** Codes of refusals made before a tool runs (bad arguments, unknown session, gates, consent, emergency stop): no observation attached (mcec-wire §3, §9). */
export const REFUSAL_CODES: ReadonlySet<string> = new Set(
  Object.entries(MCEC_ERROR_CODES as Record<string, McecErrorCodeSpec>)
    .filter(([, row]) => row.refusal)
    .map(([code]) => code),
);
