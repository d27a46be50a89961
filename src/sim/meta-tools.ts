/** The permission and provisioning meta-tools: request-command-access, provision-session, end-session (AgentToolExecutor.cs). */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { badArguments, sleep, str, type ToolContext, ToolFailure, type ToolSuccess } from './tool-kit.js';

/** How the simulated operator may answer a consent prompt. */
export const CONSENT_ANSWERS = ['allow', 'allow-any', 'deny', 'timeout', 'unavailable'] as const;
/** How the simulated operator answers a consent prompt. */
export type ConsentAnswer = (typeof CONSENT_ANSWERS)[number];

/** At most this many commands per request (AgentConsent.MaxCommandsPerRequest). */
export const MAX_COMMANDS_PER_REQUEST = 8;
/** The reason is cut to this many characters (AgentConsent.MaxReasonLength). */
export const MAX_REASON_LENGTH = 300;

/** The one-line recovery note every commandAccess block carries (ToolCatalog.CommandAccessNote). */
export const COMMAND_ACCESS_NOTE =
  "Gated commands need the operator's consent before first use: call request-command-access with the " +
  'names you need, batched in ONE call, then actuate. Raw send_command built-ins (chars:, winr, mouse:, ' +
  'VK_* keys, key chords) start gated and are requested the same way; enabledRawCommands lists the ones ' +
  'enabled RIGHT NOW (empty until granted), and any raw command not in that list still needs a request ' +
  '— a partial grant does NOT open the whole raw surface. Never edit mcec.commands / mcec.settings to ' +
  'self-grant.';

/** The simulated command table: which commands exist and which are enabled, plus the operator's consent state. */
export class CommandTable {
  /** Enabled state by table key (catalog tools by name, raw built-ins by their key). */
  private readonly enabled = new Map<string, boolean>();
  private readonly denied = new Set<string>();
  private anyGrant = false;
  /** A consent prompt is on the operator's screen. */
  private prompting = false;

  constructor(
    readonly catalog: readonly string[],
    gated: readonly string[],
    rawCommands: readonly string[],
    rawEnabled: readonly string[],
    /** What the operator answers next, and how long they take. */
    private answer: ConsentAnswer = 'allow',
    private readonly answerDelayMs = 50,
  ) {
    for (const name of catalog) this.enabled.set(name, !gated.includes(name));
    for (const key of rawCommands) this.enabled.set(key, rawEnabled.includes(key));
  }

  /** True when the command exists and is enabled. */
  isEnabled(key: string): boolean {
    return this.enabled.get(key) === true;
  }

  /** The table key a requested name resolves to (case-insensitive; `chars:x` rides `chars:`), or undefined. */
  resolve(requested: string): string | undefined {
    const lower = requested.trim().toLowerCase();
    for (const key of this.enabled.keys()) if (key.toLowerCase() === lower) return key;
    for (const key of this.enabled.keys())
      if (key.endsWith(':') && lower.startsWith(key.toLowerCase())) return key;
    return undefined;
  }

  /** The commandAccess block: the live enabled/gated split and the enabled raw commands. */
  access(): Record<string, unknown> {
    const enabledTools = this.catalog.filter((n) => this.isEnabled(n));
    const gatedTools = this.catalog.filter((n) => !this.isEnabled(n));
    const enabledRawCommands = [...this.enabled.keys()]
      .filter((k) => !this.catalog.includes(k) && this.isEnabled(k))
      .sort();
    return { enabledTools, gatedTools, enabledRawCommands, note: COMMAND_ACCESS_NOTE };
  }

  /** The connect-time defaults (initialize): as provisioned, no raw command enabled. */
  defaults(gated: readonly string[]): Record<string, unknown> {
    return {
      enabledTools: this.catalog.filter((n) => !gated.includes(n)),
      gatedTools: this.catalog.filter((n) => gated.includes(n)),
      enabledRawCommands: [],
      note: COMMAND_ACCESS_NOTE,
    };
  }

  grant(keys: string[]): void {
    for (const k of keys) this.enabled.set(k, true);
  }

  deny(keys: string[]): void {
    for (const k of keys) this.denied.add(k);
  }

  isDenied(key: string): boolean {
    return this.denied.has(key);
  }

  get anyGrantActive(): boolean {
    return this.anyGrant;
  }

  armAnyGrant(): void {
    this.anyGrant = true;
  }

  /** True while a consent prompt is on the operator's screen. */
  get pending(): boolean {
    return this.prompting;
  }

  /** How the operator answers the next prompts (the `consent` option, `sim:consent`). */
  answerNext(answer: ConsentAnswer): void {
    this.answer = answer;
  }

  /** Put the prompt on the operator's screen (one at a time) and wait for the answer. */
  async askOperator(): Promise<ConsentAnswer> {
    if (this.prompting)
      throw internal(
        'consent-pending',
        "Another request-command-access prompt is already on the operator's screen; one at a time. Wait for it to resolve, then retry.",
      );
    this.prompting = true;
    try {
      await sleep(this.answerDelayMs);
      return this.answer;
    } finally {
      this.prompting = false;
    }
  }
}

/** The reason as the operator sees it: controls and format characters to spaces, `"` to `'`, capped. */
function sanitizeReason(reason: string | undefined): string {
  if (!reason || reason.trim() === '') return '';
  let out = '';
  for (const ch of reason) {
    const neutral = /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(ch);
    out += neutral ? ' ' : ch === '"' ? "'" : ch;
    if (out.length > MAX_REASON_LENGTH) break;
  }
  const clean = out.split(' ').filter(Boolean).join(' ');
  return clean.length > MAX_REASON_LENGTH ? `${clean.slice(0, MAX_REASON_LENGTH)}...` : clean;
}

/** Strict parse of `commands`: every entry a non-empty string; [names] or an error text. */
function commandNames(node: unknown): { names?: string[]; error?: string } {
  if (node === undefined || node === null) return {};
  if (!Array.isArray(node)) return { error: "'commands' must be an array of command-name strings." };
  const names: string[] = [];
  for (let i = 0; i < node.length; i++) {
    const v = node[i];
    if (typeof v !== 'string')
      return { error: `entry ${i} (${JSON.stringify(v) ?? 'null'}) is not a string.` };
    if (v.trim() === '') return { error: `entry ${i} is empty.` };
    names.push(v.trim());
  }
  return names.length > 0 ? { names } : {};
}

const internal = (code: string, detail: string) => new ToolFailure(code, 'internal', detail);

function accessResult(granted: string[], alreadyEnabled: string[], scope: 'requested' | 'any') {
  const result: Record<string, unknown> = { granted, alreadyEnabled, scope };
  if (scope === 'any')
    result.note =
      "The operator's allow-any grant is active for this instance; future request-command-access calls auto-approve (each grant is still audited).";
  return result;
}

/** request-command-access: ask the simulated operator to enable commands; blocks while the prompt is up. */
export async function runRequestCommandAccess(ctx: ToolContext): Promise<ToolSuccess> {
  const table = ctx.commands;
  const resolved = requestedCommands(ctx);
  const alreadyEnabled = resolved.filter((k) => table.isEnabled(k));
  const needed = resolved.filter((k) => !table.isEnabled(k));
  if (needed.length === 0) return { result: accessResult([], alreadyEnabled, 'requested') };
  const denied = needed.filter((k) => table.isDenied(k));
  if (denied.length > 0)
    throw internal(
      'consent-denied',
      `The operator already denied: ${denied.join(', ')}. A deny is final for this instance; do not ask again. If you believe it is essential, tell the user why and let them enable it themselves.`,
    );
  if (table.anyGrantActive) {
    table.grant(needed);
    return { result: accessResult(needed, alreadyEnabled, 'any') };
  }
  const answer = await table.askOperator();
  refuseUnlessAllowed(answer, table, needed);
  table.grant(needed);
  if (answer === 'allow-any') table.armAnyGrant();
  return { result: accessResult(needed, alreadyEnabled, answer === 'allow-any' ? 'any' : 'requested') };
}

/** The table keys a request names, once each; a malformed request or an unknown name is refused. */
function requestedCommands(ctx: ToolContext): string[] {
  const { names, error } = commandNames(ctx.args.commands);
  if (error)
    throw badArguments(
      `request-command-access 'commands' is malformed: ${error} Every entry must be a non-empty command-name string; nothing was asked of the operator.`,
    );
  if (!names)
    throw badArguments(
      "request-command-access requires a non-empty 'commands' array (the command names to enable).",
    );
  if (names.length > MAX_COMMANDS_PER_REQUEST)
    throw badArguments(
      `request-command-access accepts at most ${MAX_COMMANDS_PER_REQUEST} commands per request (got ${names.length}); ask for what this step needs.`,
    );
  if (sanitizeReason(str(ctx.args, 'reason')) === '')
    throw badArguments(
      "request-command-access requires a non-empty 'reason'; the operator reads it to decide.",
    );
  const resolved: string[] = [];
  const unknown: string[] = [];
  for (const n of names) {
    const key = ctx.commands.resolve(n);
    if (key === undefined) unknown.push(n);
    else if (!resolved.includes(key)) resolved.push(key);
  }
  if (unknown.length > 0)
    throw new ToolFailure(
      'unknown-command',
      'invalid-argument',
      `Unknown command(s): ${unknown.join(', ')}. They are not in the loaded command table; nothing was asked of the operator. Fix the names and retry.`,
    );
  return resolved;
}

/** Throw the refusal of an answer that is not allow or allow-any (a deny is remembered). */
function refuseUnlessAllowed(answer: ConsentAnswer, table: CommandTable, needed: string[]): void {
  if (answer === 'unavailable')
    throw internal(
      'consent-unavailable',
      'The operator consent prompt could not be shown (no interactive desktop, or the operator surface is gone). The request fails closed.',
    );
  if (answer === 'timeout')
    throw internal(
      'consent-timeout',
      'The operator did not answer the consent prompt in time; the request is denied. They may be away; tell the user what you need and why, and retry only if they say so.',
    );
  if (answer === 'deny') {
    table.deny(needed);
    throw internal(
      'consent-denied',
      `The operator denied enabling: ${needed.join(', ')}. This deny is final for this instance; do not ask again for these commands.`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// provision-session / end-session: disposable install copies under <tempDir>/MCEC/sessions
// ---------------------------------------------------------------------------------------------

const SETTINGS_FILE = 'mcec.settings';
const PROVISIONED_ID = /^[0-9a-f]{12}$/;

function provisionRoot(ctx: ToolContext): string {
  return path.join(ctx.tempDir, 'MCEC', 'sessions');
}

/** provision-session: refused unless the operator allowed provisioning; else a real directory with a token. */
export async function runProvisionSession(ctx: ToolContext): Promise<ToolSuccess> {
  if (!ctx.allowProvisioning)
    throw internal(
      'provisioning-not-authorized',
      'Session provisioning is not authorized. The operator must enable AllowSessionProvisioning to opt in; it cannot be self-served.',
    );
  const mcpServer = ctx.args.mcpServer !== false;
  const sessionId = randomBytes(6).toString('hex');
  const token = randomBytes(24).toString('base64url');
  const dir = path.join(provisionRoot(ctx), sessionId);
  const exePath = path.join(dir, 'mcec.exe');
  const port = 5200 + (parseInt(sessionId.slice(0, 4), 16) % 700);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(exePath, '');
    await writeFile(
      path.join(dir, SETTINGS_FILE),
      JSON.stringify({ McpAuthToken: token, McpServerEnabled: mcpServer, Port: port }),
    );
  } catch (e) {
    throw internal('provisioning-failed', `Failed to provision a session: ${(e as Error).message}`);
  }
  const result: Record<string, unknown> = {
    sessionId,
    directory: dir,
    exePath,
    workingDir: dir,
    token,
    launch: `Run "${exePath}" --mcp from workingDir "${dir}" (stdio MCP), or launch it and POST JSON-RPC to the HTTP endpoint below.`,
    mcpServerEnabled: mcpServer,
    teardown:
      'Call the end-session tool with this sessionId AND this token when finished (or just delete the directory); MCEC also reaps stale session dirs on launch.',
  };
  if (mcpServer) {
    result.bindAddress = '127.0.0.1';
    result.port = port;
    result.mcpEndpoint = `http://127.0.0.1:${port}/mcp`;
    result.authorization =
      "Every HTTP request to mcpEndpoint must send the header 'Authorization: Bearer <token>' (the token above).";
  }
  return { result };
}

/** end-session: tear down a provisioned directory; the token it was given is the credential. */
export async function runEndSession(ctx: ToolContext): Promise<ToolSuccess> {
  const sessionId = str(ctx.args, 'sessionId');
  if (!sessionId || sessionId.trim() === '')
    throw badArguments("end-session requires a non-empty 'sessionId' argument.");
  const token = str(ctx.args, 'token');
  if (!token || token.trim() === '')
    throw badArguments(
      "end-session requires the session 'token' returned by provision-session (the teardown credential).",
    );
  const id = sessionId.trim();
  const dir = path.join(provisionRoot(ctx), id);
  if (PROVISIONED_ID.test(id) && (await stat(dir).catch(() => undefined))) {
    let expected = '';
    try {
      expected = String(JSON.parse(await readFile(path.join(dir, SETTINGS_FILE), 'utf8')).McpAuthToken ?? '');
    } catch {
      expected = '';
    }
    if (expected === '' || expected !== token)
      throw internal(
        'session-token-invalid',
        "The token does not match this session (or the session's config could not be verified). Use the exact token provision-session returned; a session you did not provision is not yours to tear down. Orphaned sessions are reaped automatically.",
      );
  }
  let removed = PROVISIONED_ID.test(id);
  if (removed) await rm(dir, { recursive: true, force: true }).catch(() => (removed = false));
  const result: Record<string, unknown> = { sessionId, removed };
  if (!removed)
    result.note =
      'The session directory could not be deleted; its mcec.exe may still be running. Stop it and retry, or MCEC will reap it on a later launch.';
  return { result };
}
