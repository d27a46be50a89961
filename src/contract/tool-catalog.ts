/**
 * The MCEC tool catalog: one row per tool the server registers (tig/mcec `ToolCatalog.cs` and its meta tools,
 * mcec-wire §1). Every per-tool fact the recorder uses derives from this table: which tools are observations,
 * which are meta, which arguments hold typed text, which one-line summarizer a call gets, and the simulator's
 * tool list. Adding a tool: a row here, its behaviour in `src/sim/tools.ts` (and, when the generic line is not
 * enough, a summarizer in `src/report/summarize-call.ts`).
 */

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
}

/** The actuation tools' typed text: `text` and `keys`. */
const TEXT_AND_KEYS: TypedTextSpec = { keys: ['text', 'keys'] };

/** Every MCEC tool, in the server's tools/list order. */
export const MCEC_TOOL_CATALOG = {
  capture: { kind: 'observation', summarizer: 'capture' },
  'get-text': { kind: 'observation', summarizer: 'get-text' },
  query: { kind: 'observation', summarizer: 'query' },
  displays: { kind: 'read-only', summarizer: 'displays' },
  windows: { kind: 'read-only', summarizer: 'windows' },
  window: { kind: 'action', typedText: TEXT_AND_KEYS },
  find: { kind: 'observation', summarizer: 'find' },
  'wait-for': { kind: 'observation', summarizer: 'find' },
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
  record: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'record' },
  launch: { kind: 'action', typedText: TEXT_AND_KEYS, summarizer: 'launch' },
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
export function toolsOfKind(...kinds: McecToolKind[]): McecToolName[] {
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

/** Codes of refusals made before a tool runs (gates, consent, arguments, sessions): no observation attached (mcec-wire §3). */
export const REFUSAL_CODES: ReadonlySet<string> = new Set([
  'bad-arguments',
  'unknown-session',
  'invalid-argument',
  'agent-commands-disabled',
  'emergency-stopped',
  'bootstrap-only',
  'consent-pending',
  'consent-denied',
  'consent-timeout',
  'consent-unavailable',
  'command-disabled',
  'unknown-tool',
  'unknown-command',
  'provisioning-not-authorized',
  'session-token-invalid',
]);
