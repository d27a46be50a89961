/** The simulated MCEC server core: JSON-RPC dispatch, tool gates, envelopes and session bookkeeping. */
import { randomInt } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { ErrorCategory, Warning } from '../contract/types.js';
import { Desktop } from './desktop.js';
import { mulberry32, sessionIdSource } from './prng.js';
import { DEFAULT_RECORD_LIMITS, type RecordLimits, SimRecorder } from './record.js';
import { SessionStore, type SimSession } from './sessions.js';
import { type ToolContext, ToolFailure, type ToolSuccess, toolByName, toolListings } from './tools.js';
import { serializeWire } from './wire.js';

/** The version the simulator reports in serverInfo. */
export const SIM_VERSION = '3.0.0-sim';
/** The MCP protocol version the real server answers with. */
export const PROTOCOL_VERSION = '2025-06-18';

/** Options of {@link createSimulator}. */
export interface SimulatorOptions {
  /** Bearer token the HTTP transport requires (listenHttp can override it). */
  token?: string;
  /** Seed of the session-id PRNG: the same seed gives the same ids. Random when absent. */
  seed?: number;
  /** Clock for startedAt, artifact names and emergency-stop times. */
  now?: () => Date;
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
}

/** An MCP content block. */
export type ContentBlock =
  | { type: 'image'; data: string; mimeType: 'image/png' }
  | { type: 'text'; text: string };

/** What tools/call returns: an optional image block, then the envelope JSON as the last text block. */
export interface CallToolResult {
  content: ContentBlock[];
  isError: boolean;
}

/** A JSON-RPC 2.0 response. */
export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: unknown;
  error?: { code: number; message: string };
}

/** Raised by the `sim:throw` control: escapes the tool layer like a real handler fault (-32603 / HTTP 500). */
export class SimulatorFault extends Error {}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON-RPC error response. */
export function rpcError(id: string | number | null, code: number, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function rpcResult(id: string | number | null, result: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

function readableId(msg: unknown): string | number | null {
  if (!isPlainObject(msg)) return null;
  const id = msg.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

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
  private stopped = false;

  constructor(options: SimulatorOptions = {}) {
    this.now = options.now ?? (() => new Date());
    this.token = options.token;
    this.modalGraceMs = options.modalGraceMs ?? 750;
    this.pollMs = options.pollMs ?? 50;
    this.recorder = new SimRecorder({ ...DEFAULT_RECORD_LIMITS, ...options.recordLimits });
    this.tempDir = path.resolve(options.tempDir ?? os.tmpdir());
    this.sessionsRoot = path.resolve(options.sessionsRoot ?? path.join(os.tmpdir(), 'mcec-sim-sessions'));
    const seed = options.seed ?? randomInt(0, 2 ** 31);
    this.sessions = new SessionStore(this.sessionsRoot, this.now, sessionIdSource(mulberry32(seed)));
  }

  /** True while the emergency stop is latched. */
  get emergencyStopped(): boolean {
    return this.stopped;
  }

  /** Latch or release the operator's emergency stop; the stop is recorded in the default session's status. */
  emergencyStop(on: boolean, source = 'operator'): void {
    if (on && !this.stopped)
      this.sessions.defaultSession.emergencyStop = { at: this.now().toISOString(), source };
    this.stopped = on;
  }

  /** One JSON-RPC message in, its response out (null for a notification). Throws on a handler fault. */
  async dispatch(msg: unknown): Promise<JsonRpcResponse | null> {
    if (!isPlainObject(msg)) return rpcError(null, -32600, 'Invalid Request');
    const hasId = 'id' in msg;
    const id = msg.id;
    if (hasId && !(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))))
      return rpcError(null, -32600, 'Invalid Request: id must be a string, a number or null');
    const rid = hasId ? (id as string | number | null) : null;
    if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string')
      return rpcError(rid, -32600, 'Invalid Request: needs jsonrpc "2.0" and a method');
    const method = msg.method;
    let result: unknown;
    switch (method) {
      case 'initialize':
        result = {
          protocolVersion: PROTOCOL_VERSION,
          capabilities: { tools: {} },
          serverInfo: { name: 'MCEC', version: SIM_VERSION },
          instructions: INSTRUCTIONS,
        };
        break;
      case 'ping':
        result = {};
        break;
      case 'tools/list':
        result = { tools: toolListings() };
        break;
      case 'tools/call': {
        const params = isPlainObject(msg.params) ? msg.params : {};
        const name = typeof params.name === 'string' ? params.name : '';
        result = await this.callTool(name, params.arguments);
        break;
      }
      default:
        if (!hasId || method.startsWith('notifications/')) return null;
        return rpcError(rid, -32601, `Method not found: ${method}`);
    }
    return hasId ? rpcResult(rid, result) : null;
  }

  /** Like dispatch, but a handler fault becomes a -32603 response (as on stdio). */
  async handle(msg: unknown): Promise<JsonRpcResponse | null> {
    try {
      return await this.dispatch(msg);
    } catch (e) {
      return rpcError(readableId(msg), -32603, `Internal error: ${(e as Error).message}`);
    }
  }

  /** One line of JSON text in (stdio framing): a parse failure is -32700 with id null. */
  async handleText(text: string): Promise<JsonRpcResponse | null> {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return rpcError(null, -32700, `Parse error: ${(e as Error).message}`);
    }
    return this.handle(msg);
  }

  /** Run one tool call and shape its CallToolResult exactly as the real server does. */
  async callTool(name: string, rawArgs?: unknown): Promise<CallToolResult> {
    // Like the server, arguments that are not an object read as none.
    const args: Record<string, unknown> = isPlainObject(rawArgs) ? { ...rawArgs } : {};
    const argSession = typeof args.sessionId === 'string' ? args.sessionId : null;
    const refuse = (f: ToolFailure, sessionId = argSession) => this.failure(sessionId, f, undefined);

    if (name === 'send_command' && typeof args.command === 'string') {
      const control = args.command.trim();
      if (control.toLowerCase().startsWith('sim:')) return this.simControl(control, argSession);
    }
    // The operator's emergency stop latches before anything else, like the real server's gate.
    if (this.stopped)
      return refuse(
        new ToolFailure(
          'emergency-stopped',
          'internal',
          'Emergency stop is engaged: the operator halted this session. All tool calls are refused until they re-arm. Stop and tell the user; do not retry.',
          'refusal',
        ),
      );
    const tool = toolByName(name);
    if (!tool) return refuse(new ToolFailure('unknown-tool', 'internal', `Unknown tool: ${name}`, 'refusal'));

    let session = this.sessions.defaultSession;
    let envSessionId: string | null = tool.routed ? null : argSession;
    if (tool.routed && argSession !== null) {
      const s = this.sessions.get(argSession);
      if (!s || s.ended)
        return refuse(
          new ToolFailure(
            'unknown-session',
            'invalid-argument',
            s ? `Session '${argSession}' has ended.` : `No session has id '${argSession}'.`,
            'refusal',
          ),
        );
      session = s;
      envSessionId = argSession;
    }
    // Snapshot the last good observation before this call can replace it.
    const prior = session.lastObservation ? structuredClone(session.lastObservation) : undefined;
    const ctx: ToolContext = {
      args,
      desktop: this.desktop,
      sessions: this.sessions,
      session,
      now: this.now,
      modalGraceMs: this.modalGraceMs,
      pollMs: this.pollMs,
      recorder: this.recorder,
      tempDir: this.tempDir,
    };
    let success: ToolSuccess;
    try {
      success = await tool.run(ctx);
    } catch (e) {
      if (e instanceof SimulatorFault) throw e;
      const failure =
        e instanceof ToolFailure
          ? e
          : new ToolFailure('unhandled', 'internal', `Unhandled error: ${(e as Error).message}`, 'command');
      if (failure.kind === 'refusal') return this.failure(envSessionId, failure, undefined);
      if (tool.routed) session.lastAction = name;
      // send_command failures never carry an observation, and are not kept as the session's last error.
      if (tool.kind === 'meta') return this.failure(envSessionId, failure, undefined);
      const env = this.failure(envSessionId, failure, prior, session);
      return env;
    }
    if (tool.routed) session.lastAction = name;
    if (tool.kind === 'observation') await this.sessions.recordObservation(session, success.result);
    if (name === 'session-start') envSessionId = String(success.result.sessionId);
    return this.success(envSessionId, success);
  }

  private success(sessionId: string | null, s: ToolSuccess): CallToolResult {
    const envelope: Record<string, unknown> = { ok: true, sessionId, result: s.result };
    if (s.warnings && s.warnings.length > 0) envelope.warnings = s.warnings;
    const content: ContentBlock[] = [];
    if (s.image) content.push({ type: 'image', data: s.image, mimeType: 'image/png' });
    content.push({ type: 'text', text: serializeWire(envelope) });
    return { content, isError: false };
  }

  private failure(
    sessionId: string | null,
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
    if (session) session.lastError = structuredClone(error);
    const envelope: Record<string, unknown> = { ok: false, sessionId };
    const allWarnings = [...warnings, ...f.warnings];
    if (allWarnings.length > 0) envelope.warnings = allWarnings;
    envelope.error = error;
    return { content: [{ type: 'text', text: serializeWire(envelope) }], isError: true };
  }

  /** Hidden controls over send_command: `sim:emergency-stop on|off` and `sim:throw`. They bypass every gate. */
  private simControl(command: string, sessionId: string | null): CallToolResult {
    const [verb, arg] = command.toLowerCase().split(/\s+/);
    if (verb === 'sim:throw') throw new SimulatorFault('simulated handler fault (sim:throw)');
    if (verb === 'sim:emergency-stop' && (arg === 'on' || arg === 'off')) {
      this.emergencyStop(arg === 'on', 'sim-control');
      return this.success(sessionId, {
        result: { output: arg === 'on' ? 'emergency stop engaged' : 'emergency stop released' },
      });
    }
    return this.failure(
      sessionId,
      new ToolFailure(
        'unknown-command',
        'internal',
        `Unknown simulator control '${command}'; use 'sim:emergency-stop on|off' or 'sim:throw'.`,
        'command',
      ),
      undefined,
    );
  }
}
