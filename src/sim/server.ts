/** The simulated MCEC server core: JSON-RPC dispatch, tool gates, envelopes and session bookkeeping. */
import { randomInt } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { INSTALL_TOOLS } from '../contract/tool-catalog.js';
import { listingOf } from '../contract/tool-listings.js';
import type { ErrorCategory, Warning } from '../contract/types.js';
import { isRecord } from '../util/json.js';
import {
  answerFaults,
  answerJsonText,
  dispatchJsonRpc,
  type JsonRpcMethod,
  type JsonRpcResponse,
  toolCallOf,
} from '../wire/json-rpc.js';
import { serializeWire } from '../wire/json-text.js';
import { type CallToolResult, type ContentBlock, PROTOCOL_VERSION } from '../wire/mcp-types.js';
import { Desktop } from './desktop.js';
import { CONSENT_ANSWERS, CommandTable, type ConsentAnswer } from './meta-tools.js';
import { mulberry32, sessionIdSource } from './prng.js';
import { DEFAULT_RECORD_LIMITS, type RecordLimits, SimRecorder } from './record.js';
import { roundTripUtc, SessionStore, type SimSession } from './sessions.js';
import {
  badArguments,
  inCommandTable,
  TOOLS,
  type ToolContext,
  type ToolDef,
  ToolFailure,
  type ToolSuccess,
} from './tools.js';

export { type CallToolResult, type ContentBlock, PROTOCOL_VERSION };

/** The version the simulator reports in serverInfo. */
export const SIM_VERSION = '3.0.0-sim';

/** Options of {@link createSimulator}. */
export interface SimulatorOptions {
  /** Bearer token the HTTP transport requires (listenHttp can override it). */
  token?: string;
  /** Seed of the session-id PRNG: the same seed gives the same ids. Random when absent. */
  seed?: number;
  /** Clock for startedAt, artifact names and emergency-stop times. */
  now?: () => Date;
  /**
   * The 100 ns ticks (0..9999) below the millisecond that startedAt's 7 fractional digits carry. Default: from
   * the real clock, or 0 when `now` is given.
   */
  subMillisecondTicks?: () => number;
  /** Where session artifact directories go (default: `<os.tmpdir()>/mcec-sim-sessions`). */
  sessionsRoot?: string;
  /** How long invoke waits before answering modalPending (default 750 ms, as the real server). */
  modalGraceMs?: number;
  /** Poll interval of wait-for / windows waits (default 50 ms). */
  pollMs?: number;
  /** The server's temp directory, where a record GIF goes without `file` (default `os.tmpdir()`). */
  tempDir?: string;
  /** The operator's recording limits (default {@link DEFAULT_RECORD_LIMITS}). */
  recordLimits?: Partial<RecordLimits>;
  /** How the operator answers request-command-access prompts (default 'allow'; `sim:consent` changes it). */
  consent?: ConsentAnswer;
  /** How long the operator takes to answer a prompt, in ms (default 50; the server waits up to 120 s). */
  consentDelayMs?: number;
  /** The operator's AllowSessionProvisioning opt-in (default false: provision-session is refused). */
  allowProvisioning?: boolean;
  /** Open the Sign in dialog (a password box and an API token box) on top of the desktop at start. */
  signIn?: boolean;
}

/**
 * The raw send_command built-ins the simulated operator has enabled (the sim's legacy command table, as
 * MCEC's `SendInputCommand.cs` builtins): the prefixes, the ctrl chords and a few VK names. MCEC has no
 * `key:`, `keydown:` or `keyup:`.
 */
export const SIM_RAW_COMMANDS: readonly string[] = [
  'chars:',
  'mouse:',
  'pause:',
  'mcec:',
  'shiftdown:',
  'shiftup:',
  'ctrl-a',
  'ctrl-c',
  'ctrl-v',
  'ctrl-x',
  'ctrl-z',
  'ctrl-s',
  'VK_ESCAPE',
  'VK_RETURN',
  'VK_TAB',
];

/** Operator states of the real server that refuse calls (mcec-wire §8); all off (agent commands on) by default. */
export interface SimulatorGates {
  /** A request-command-access prompt is open: only the observation tools are served (`consent-pending`). */
  consentPending: boolean;
  /** The installed copy serving only provision-session / end-session (`bootstrap-only`). */
  bootstrapOnly: boolean;
  /** The AgentCommandsEnabled opt-in; off refuses the tools with `agent-commands-disabled`. */
  agentCommands: boolean;
  /**
   * Windows refuse PrintWindow (a locked session, a composited surface): window captures and OCR use the
   * on-screen blit and say so with `capture-fallback` / `ocr-fallback` warnings.
   */
  printWindowRefused: boolean;
}

/**
 * A tool of the provisioning bootstrap: its `sessionId` names an install, never a session. Known by name too, so
 * the server's bootstrap names keep their routing while the simulator lacks them (`unknown-tool`).
 */
function isInstallTool(name: string, tool: ToolDef | undefined): boolean {
  return tool?.spec.installTool === true || INSTALL_TOOLS.has(name);
}

function agentCommandsDisabled(): ToolFailure {
  return new ToolFailure(
    'agent-commands-disabled',
    'internal',
    'Agent commands are disabled. Set AgentCommandsEnabled=true to opt in.',
  );
}

function emergencyStopped(): ToolFailure {
  return new ToolFailure(
    'emergency-stopped',
    'internal',
    'Emergency stop is engaged: the operator halted this session. All tool calls are refused until they re-arm. Stop and tell the user; do not retry.',
  );
}

function bootstrapOnly(): ToolFailure {
  return new ToolFailure(
    'bootstrap-only',
    'internal',
    "This is MCEC's installed copy serving the provisioning bootstrap: only provision-session and end-session are available here. Call provision-session to get a fresh, disposable, isolated MCEC instance.",
  );
}

function consentPending(servedDuringConsent: readonly string[]): ToolFailure {
  return new ToolFailure(
    'consent-pending',
    'internal',
    `An operator consent prompt (request-command-access) is open; actuation is paused until the operator answers. Only observation tools (${servedDuringConsent.join('/')}) are served right now. Wait for the pending request-command-access call to return, then retry.`,
  );
}

/** The rejected id is echoed as sent, blank ones included. */
function unknownSession(argSession: string): ToolFailure {
  return new ToolFailure(
    'unknown-session',
    'invalid-argument',
    `Unknown sessionId '${argSession}'. It was never started or has ended. Call session-start to get a fresh sessionId, or omit sessionId to use the default session.`,
  );
}

/** Raised by the `sim:throw` control: escapes the tool layer like a real handler fault (-32603 / HTTP 500). */
export class SimulatorFault extends Error {}

const INSTRUCTIONS =
  'This is the MCEC simulator: a fake Windows desktop (Notepad, a Save As dialog, an elevated Command Prompt, ' +
  'a Video Player whose capture is black). Observe (windows, query, find, capture), then act (invoke, click). ' +
  'Every tool result is an envelope {ok, sessionId, result | error}; branch on ok, then on error.category.';

/** The core every transport shares; created by createSimulator. */
export class SimulatorCore {
  readonly desktop = new Desktop();
  readonly sessions: SessionStore;
  readonly sessionsRoot: string;
  readonly token: string | undefined;
  private readonly now: () => Date;
  private readonly modalGraceMs: number;
  private readonly pollMs: number;
  private readonly recorder: SimRecorder;
  private readonly tempDir: string;
  private readonly allowProvisioning: boolean;
  /** The loaded command table and the operator's consent (request-command-access). */
  readonly commands: CommandTable;
  /** The tools served, in tools/list order, and by name. */
  private readonly tools: readonly ToolDef[];
  private readonly byName: ReadonlyMap<string, ToolDef>;
  /** The catalog tools the operator has to grant first (commandAccess `gatedTools` at connect). */
  private readonly gatedByDefault: readonly string[];
  /** The tools still served while a consent prompt is open. */
  private readonly servedDuringConsent: readonly string[];
  private stopped = false;
  /** The other operator states that refuse calls before routing, and the agent-commands opt-in. */
  private readonly gates: SimulatorGates = {
    consentPending: false,
    bootstrapOnly: false,
    agentCommands: true,
    printWindowRefused: false,
  };
  /** What the server answers per JSON-RPC method. */
  private readonly methods = new Map<string, JsonRpcMethod>([
    ['initialize', () => this.initializeResult()],
    ['ping', () => ({})],
    ['tools/list', () => ({ tools: this.tools.map(listingOf) })],
    [
      'tools/call',
      (params) => {
        const call = toolCallOf(params);
        return this.callTool(call.name, call.args);
      },
    ],
  ]);

  /** `tools`: what it serves (default: one tool per catalog row). */
  constructor(options: SimulatorOptions = {}, tools: readonly ToolDef[] = TOOLS) {
    this.tools = tools;
    this.byName = new Map(tools.map((t) => [t.name, t]));
    this.gatedByDefault = tools.filter((t) => t.spec.gatedByDefault === true).map((t) => t.name);
    this.servedDuringConsent = tools.filter((t) => t.spec.servedDuringConsent === true).map((t) => t.name);
    this.now = options.now ?? (() => new Date());
    if (options.signIn) this.desktop.openSignIn();
    this.token = options.token;
    this.modalGraceMs = options.modalGraceMs ?? 750;
    this.pollMs = options.pollMs ?? 50;
    this.recorder = new SimRecorder({ ...DEFAULT_RECORD_LIMITS, ...options.recordLimits });
    this.tempDir = path.resolve(options.tempDir ?? os.tmpdir());
    this.allowProvisioning = options.allowProvisioning === true;
    this.commands = new CommandTable(
      tools.filter(inCommandTable).map((t) => t.name),
      this.gatedByDefault,
      SIM_RAW_COMMANDS,
      SIM_RAW_COMMANDS,
      options.consent ?? 'allow',
      options.consentDelayMs ?? 50,
    );
    this.sessionsRoot = path.resolve(options.sessionsRoot ?? path.join(os.tmpdir(), 'mcec-sim-sessions'));
    const seed = options.seed ?? randomInt(0, 2 ** 31);
    // Sub-millisecond digits come from the real clock only; an injected clock gives exact, repeatable times.
    const ticks =
      options.subMillisecondTicks ??
      (options.now ? () => 0 : () => Math.floor(((performance.timeOrigin + performance.now()) % 1) * 10_000));
    this.sessions = new SessionStore(this.sessionsRoot, this.now, sessionIdSource(mulberry32(seed)), ticks);
  }

  /** True while the emergency stop is latched. */
  get emergencyStopped(): boolean {
    return this.stopped;
  }

  /** Latch or release the operator's emergency stop; the stop is recorded in the default session's status. */
  emergencyStop(on: boolean, source = 'operator'): void {
    if (on && !this.stopped) this.sessions.noteEmergencyStop({ at: roundTripUtc(this.now()), source });
    this.stopped = on;
  }

  /** Turn one of the operator's gates on or off (`sim.control`, the `sim:` controls). */
  setGate(gate: keyof SimulatorGates, on: boolean): void {
    this.gates[gate] = on;
  }

  private initializeResult(): Record<string, unknown> {
    return {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: { tools: {} },
      serverInfo: { name: 'MCEC', version: SIM_VERSION },
      instructions: INSTRUCTIONS,
      commandAccess: this.commands.defaults(this.gatedByDefault),
    };
  }

  /** One JSON-RPC message in, its response out (null for a notification). Throws on a handler fault. */
  dispatch(msg: unknown): Promise<JsonRpcResponse | null> {
    return dispatchJsonRpc(msg, this.methods);
  }

  /** Like dispatch, but a handler fault becomes a -32603 response (as on stdio). */
  handle(msg: unknown): Promise<JsonRpcResponse | null> {
    return answerFaults(msg, (m) => this.dispatch(m));
  }

  /** One line of JSON text in (stdio framing): a parse failure is -32700 with id null. */
  handleText(text: string): Promise<JsonRpcResponse | null> {
    return answerJsonText(text, (m) => this.dispatch(m));
  }

  /**
   * Run one tool call and shape its CallToolResult exactly as the real server does, gates and routing in
   * its order (mcec-wire §8): the refusals checked before routing (emergency stop, bootstrap-only, consent
   * pending, and for the session-* tools agent-commands-disabled and session-end's bad-arguments) carry
   * the default session's id; an unknown `sessionId` is refused with that id echoed; everything else carries
   * the id of the session it ran in, the default one when the call named none.
   */
  async callTool(name: string, rawArgs?: unknown): Promise<CallToolResult> {
    // Like the server, arguments that are not an object read as none.
    const args: Record<string, unknown> = isRecord(rawArgs) ? { ...rawArgs } : {};
    const argSession = typeof args.sessionId === 'string' ? args.sessionId : null;
    if (name === 'send_command' && typeof args.command === 'string') {
      const control = args.command.trim();
      if (control.toLowerCase().startsWith('sim:')) return this.simControl(control, argSession);
    }
    const tool = this.byName.get(name);
    const gate = this.preRoutingRefusal(name, tool, argSession);
    if (gate) return this.failure(this.sessions.defaultSession.id, gate, undefined);
    const session = this.routedSession(name, tool, argSession);
    if (!session) return this.failure(argSession!, unknownSession(argSession!), undefined);
    const refuse = (f: ToolFailure) => this.failure(session.id, f, undefined);
    if (!tool) return refuse(new ToolFailure('unknown-tool', 'internal', `Unknown tool: ${name}`));
    if (!this.gates.agentCommands && tool.kind !== 'meta' && tool.routed)
      return refuse(agentCommandsDisabled());
    return this.runTool(tool, name, args, session, argSession);
  }

  /** The refusal the server makes before routing (stamped with the default session), in its order. */
  private preRoutingRefusal(
    name: string,
    tool: ToolDef | undefined,
    argSession: string | null,
  ): ToolFailure | undefined {
    // The operator's emergency stop latches before anything else, like the real server's gate.
    if (this.stopped) return emergencyStopped();
    if (this.gates.bootstrapOnly && !isInstallTool(name, tool)) return bootstrapOnly();
    // A prompt is open: set by request-command-access while the operator decides, or by the control.
    if ((this.gates.consentPending || this.commands.pending) && tool?.spec.servedDuringConsent !== true)
      return consentPending(this.servedDuringConsent);
    if (tool?.kind !== 'lifecycle') return undefined;
    if (!this.gates.agentCommands) return agentCommandsDisabled();
    if (name === 'session-end' && (argSession ?? '').trim() === '')
      return badArguments("session-end requires a non-empty 'sessionId' argument (the session to end).");
    return undefined;
  }

  /** The session a call runs in: the live one its `sessionId` names, the default one, or undefined (unknown id). */
  private routedSession(
    name: string,
    tool: ToolDef | undefined,
    argSession: string | null,
  ): SimSession | undefined {
    // Lifecycle tools read sessionId as their target, and the provisioning tools as the id of an install:
    // both answer in the default session. Only routed tools route by it.
    if (tool?.routed === false || isInstallTool(name, tool) || argSession === null || argSession === '')
      return this.sessions.defaultSession;
    const named = this.sessions.get(argSession.trim());
    return named && !named.ended ? named : undefined;
  }

  /** Run a tool that passed every gate in its session, and shape its success or failure. */
  private async runTool(
    tool: ToolDef,
    name: string,
    args: Record<string, unknown>,
    session: SimSession,
    argSession: string | null,
  ): Promise<CallToolResult> {
    // Snapshot the last good observation before this call can replace it.
    const prior = session.lastObservation ? structuredClone(session.lastObservation) : undefined;
    let success: ToolSuccess;
    try {
      success = await tool.run(this.toolContext(args, session));
    } catch (e) {
      if (e instanceof SimulatorFault) throw e;
      const failure =
        e instanceof ToolFailure
          ? e
          : new ToolFailure('unhandled', 'internal', `Unhandled error: ${(e as Error).message}`);
      // A lifecycle refusal names the session it was about (session-status's unknown id is echoed).
      const stamp =
        tool.kind === 'lifecycle' && failure.code === 'unknown-session' && argSession !== null
          ? argSession
          : session.id;
      if (failure.refusal) return this.failure(stamp, failure, undefined);
      if (tool.routed) this.sessions.noteAction(session, name);
      // send_command failures never carry an observation, and are not kept as the session's last error.
      if (tool.kind === 'meta') return this.failure(stamp, failure, undefined);
      return this.failure(stamp, failure, prior, session);
    }
    if (tool.routed) this.sessions.noteAction(session, name);
    if (tool.kind === 'observation') await this.sessions.recordObservation(session, success.result);
    // session-start, -status and -end are stamped with the session they started, inspected or ended.
    const stamp =
      tool.kind === 'lifecycle' && typeof success.result.sessionId === 'string'
        ? success.result.sessionId
        : session.id;
    return this.success(stamp, success);
  }

  private toolContext(args: Record<string, unknown>, session: SimSession): ToolContext {
    return {
      args,
      desktop: this.desktop,
      sessions: this.sessions,
      session,
      now: this.now,
      modalGraceMs: this.modalGraceMs,
      pollMs: this.pollMs,
      recorder: this.recorder,
      tempDir: this.tempDir,
      commands: this.commands,
      allowProvisioning: this.allowProvisioning,
      printWindowRefused: this.gates.printWindowRefused,
    };
  }

  private success(sessionId: string, s: ToolSuccess): CallToolResult {
    const envelope: Record<string, unknown> = { ok: true, sessionId, result: s.result };
    if (s.warnings && s.warnings.length > 0) envelope.warnings = s.warnings;
    const content: ContentBlock[] = [];
    if (s.image) content.push({ type: 'image', data: s.image, mimeType: 'image/png' });
    content.push({ type: 'text', text: serializeWire(envelope) });
    return { content, isError: false };
  }

  private failure(
    sessionId: string,
    f: ToolFailure,
    lastObservation: Record<string, unknown> | undefined,
    session?: SimSession,
    warnings: Warning[] = [],
  ): CallToolResult {
    const error: Record<string, unknown> = {
      code: f.code,
      category: f.category as ErrorCategory,
      detail: f.detail,
    };
    if (lastObservation) error.lastObservation = lastObservation;
    if (f.partialResult) error.partialResult = f.partialResult;
    // The real server keeps the whole error object, partialResult base64 included (a known leak, mcec-wire §5).
    if (session) this.sessions.noteError(session, error);
    const envelope: Record<string, unknown> = { ok: false, sessionId };
    const allWarnings = [...warnings, ...f.warnings];
    if (allWarnings.length > 0) envelope.warnings = allWarnings;
    envelope.error = error;
    return { content: [{ type: 'text', text: serializeWire(envelope) }], isError: true };
  }

  /**
   * Hidden controls over send_command (they bypass every gate and answer in the session they name when it
   * is live, else in the default one):
   * `sim:emergency-stop on|off`, `sim:consent-pending on|off`, `sim:bootstrap-only on|off`,
   * `sim:agent-commands on|off` and `sim:throw`.
   */
  private simControl(command: string, sessionId: string | null): CallToolResult {
    const [verb, arg] = command.toLowerCase().split(/\s+/);
    const named = sessionId ? this.sessions.get(sessionId.trim()) : undefined;
    const stamp = named && !named.ended ? named.id : this.sessions.defaultSession.id;
    if (verb === 'sim:throw') throw new SimulatorFault('simulated handler fault (sim:throw)');
    if (verb === 'sim:consent' && arg !== undefined && (CONSENT_ANSWERS as readonly string[]).includes(arg)) {
      this.commands.answerNext(arg as ConsentAnswer);
      return this.success(stamp, { result: { output: `the operator will answer ${arg}` } });
    }
    if (arg === 'on' || arg === 'off') {
      const on = arg === 'on';
      let output: string | undefined;
      if (verb === 'sim:emergency-stop') {
        this.emergencyStop(on, 'sim-control');
        output = on ? 'emergency stop engaged' : 'emergency stop released';
      } else if (verb === 'sim:consent-pending') {
        this.setGate('consentPending', on);
        output = on ? 'consent prompt open' : 'consent prompt answered';
      } else if (verb === 'sim:bootstrap-only') {
        this.setGate('bootstrapOnly', on);
        output = on ? 'bootstrap-only on' : 'bootstrap-only off';
      } else if (verb === 'sim:agent-commands') {
        this.setGate('agentCommands', on);
        output = on ? 'agent commands enabled' : 'agent commands disabled';
      } else if (verb === 'sim:print-window-refused') {
        this.setGate('printWindowRefused', on);
        output = on ? 'PrintWindow refused: captures and OCR use the on-screen blit' : 'PrintWindow works';
      }
      if (output !== undefined) return this.success(stamp, { result: { output } });
    }
    return this.failure(
      stamp,
      new ToolFailure(
        'unknown-command',
        'internal',
        `Unknown simulator control '${command}'; use 'sim:emergency-stop|consent-pending|bootstrap-only|agent-commands|print-window-refused on|off', 'sim:consent allow|allow-any|deny|timeout|unavailable' or 'sim:throw'.`,
      ),
      undefined,
    );
  }
}
