/** How long the HTTP proxy waits for MCEC to begin its answer, per tool (MCEC's long calls: mcec-wire §8). */

/**
 * Default wait: above MCEC's longest own wait (request-command-access blocks up to 120 s for the operator;
 * a `record` one-shot runs up to 60 s plus encoding).
 */
export const DEFAULT_TIMEOUT_MS = 150_000;
/**
 * A call that asks MCEC to wait (a `timeout`/`timeoutMs` argument, or a `record` one-shot's `durationMs`) is
 * given this much more than it asked. MCEC's own `send_command` wait is fixed: 30 s, then
 * `send-command-timeout` (AgentToolExecutor.cs), well inside the default.
 */
export const ARGUMENT_TIMEOUT_GRACE_MS = 30_000;
/** Longest timeout accepted (timers past 2^31 ms fire at once). */
export const MAX_TIMEOUT_MS = 24 * 3_600_000;
/** The range of a timer option (expectNumber's): a whole number of ms a timer can hold, from 1. */
export const TIMER_MS = { min: 1, max: MAX_TIMEOUT_MS, integer: true } as const;
/** The range of a wait option that may also be none (0). */
export const WAIT_MS = { ...TIMER_MS, min: 0 } as const;

/** The proxy's waits: one default and overrides by tool name (`params.name` of a tools/call). */
export interface TimeoutPolicy {
  defaultMs: number;
  perTool: ReadonlyMap<string, number>;
}

/** How long one request may wait, and why that long. */
export interface RequestTimeout {
  ms: number;
  /** The tool of a tools/call, when there is one. */
  tool?: string;
  /** default: the proxy's default; tool: a per-tool setting; argument: the call's own timeout plus grace. */
  source: 'default' | 'tool' | 'argument';
}

/** Build a policy from values its caller checked (the HTTP proxy's options, in TIMER_MS). */
export function timeoutPolicy(defaultMs: number, perTool: Record<string, number> = {}): TimeoutPolicy {
  return { defaultMs, perTool: new Map(Object.entries(perTool)) };
}

/**
 * The wait for one request: the tool's own setting when it has one; else the default, raised to the
 * call's own `timeout` or `timeoutMs` argument (for `record`, also `durationMs`: the operator may raise
 * MCEC's 60 s recording limit, and a one-shot runs that long) plus {@link ARGUMENT_TIMEOUT_GRACE_MS}, so a
 * wait-for that MCEC was asked to hold for 200 s is not cut at 150 s.
 */
export function timeoutFor(
  policy: TimeoutPolicy,
  message: Record<string, unknown> | undefined,
): RequestTimeout {
  const params = message?.method === 'tools/call' ? message.params : undefined;
  if (params === null || typeof params !== 'object') return { ms: policy.defaultMs, source: 'default' };
  const name = (params as { name?: unknown }).name;
  const tool = typeof name === 'string' ? name : undefined;
  const named = tool === undefined ? {} : { tool };
  const configured = tool === undefined ? undefined : policy.perTool.get(tool);
  if (configured !== undefined) return { ms: configured, source: 'tool', ...named };
  const args = (params as { arguments?: unknown }).arguments;
  const asked =
    args !== null && typeof args === 'object'
      ? argumentTimeout(args as Record<string, unknown>, tool)
      : undefined;
  if (asked !== undefined && asked + ARGUMENT_TIMEOUT_GRACE_MS > policy.defaultMs) {
    return { ms: Math.min(MAX_TIMEOUT_MS, asked + ARGUMENT_TIMEOUT_GRACE_MS), source: 'argument', ...named };
  }
  return { ms: policy.defaultMs, source: 'default', ...named };
}

/** The longest wait a call's own arguments ask of MCEC, or undefined. */
function argumentTimeout(args: Record<string, unknown>, tool: string | undefined): number | undefined {
  const keys = tool === 'record' ? ['timeout', 'timeoutMs', 'durationMs'] : ['timeout', 'timeoutMs'];
  let longest: number | undefined;
  for (const key of keys) {
    const v = args[key];
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) longest = Math.max(longest ?? 0, v);
  }
  return longest;
}

/** `150000` -> `150 s`, `90500` -> `90.5 s`, `250` -> `250 ms`: for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}
