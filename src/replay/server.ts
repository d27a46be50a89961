/**
 * The replay server core: JSON-RPC in, answers from the recording out, on MCEC's wire. It implements the
 * simulator's transport interfaces (`handleText` for stdio, `dispatch` for HTTP), so both transports, their
 * framing and front-door checks are the simulator's own (src/sim/stdio.ts, src/sim/http.ts).
 */
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import { createRedactor, type Redactor } from '../redact/redactor.js';
import { type CallToolResult, type JsonRpcResponse, PROTOCOL_VERSION, rpcError } from '../sim/server.js';
import { toolListings } from '../sim/tools.js';
import { isRecord } from '../util/json.js';
import { ArtifactFiles, type BuiltAnswer, buildAnswer, failureAnswer } from './answer.js';
import { type Injection, injectedFailure, pickInjection } from './injector.js';
import { type Difference, Matcher, type ReplayOrder } from './matcher.js';
import type { RecordedCall, Recording } from './recording.js';
import type { CallOutcome, RecordedRef, ReplayReport, ReportCall, ReportUnmatched } from './report.js';

/** Options of a replay. */
export interface ReplayOptions {
  /** `any` (default): any unused recording that matches; `strict`: the recorded sequence only. */
  order?: ReplayOrder;
  /** An unmatched call gets `replay-unmatched` (never the nearest recording) and the replay exits 1. */
  lockdown?: boolean;
  /** 0 (default): answer at once; 1: hold each answer as long as the recorded call took; 2: half as long. */
  speed?: number;
  /** Pixels a coordinate may differ by and still match (default 4). */
  tolerance?: number;
  /** Parsed `--inject` rules. */
  inject?: Injection[];
  /** Wait function for `speed` (a test seam; default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

/** The recorded answer was a JSON-RPC error (thrown by callTool; tools/call answers it as that error). */
export class RecordedRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const OBSERVATIONS = new Set<string>(OBSERVATION_TOOLS);

function refOf(call: RecordedCall): RecordedRef {
  return { seq: call.seq, tool: call.tool, args: call.args };
}

/** The core every transport of one replay shares. */
export class ReplayCore {
  private readonly matcher: Matcher;
  private readonly files: ArtifactFiles;
  private readonly redactor: Redactor;
  private readonly order: ReplayOrder;
  private readonly lockdown: boolean;
  private readonly speed: number;
  private readonly tolerance: number;
  private readonly inject: Injection[];
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly calls: ReportCall[] = [];
  private readonly unmatched: ReportUnmatched[] = [];
  private readonly synthesized = new Set<string>();
  private readonly perTool = new Map<string, number>();
  private firstDivergence: ReportUnmatched | null = null;
  private lastObservation: Record<string, unknown> | null = null;
  private endedAt: string | null = null;
  private inFlight = 0;
  private readonly idleWaiters: Array<() => void> = [];
  private finished = false;
  private readonly startedAt = new Date().toISOString();
  private resolveEnded!: () => void;
  /** Resolves when a strict replay diverged (the replay is over: the transport should stop). */
  readonly ended: Promise<void> = new Promise((resolve) => {
    this.resolveEnded = resolve;
  });

  constructor(
    readonly recording: Recording,
    private readonly source: ReplayReport['source'],
    options: ReplayOptions = {},
  ) {
    this.order = options.order ?? 'any';
    this.lockdown = options.lockdown === true;
    this.speed = options.speed ?? 0;
    this.tolerance = options.tolerance ?? 4;
    this.inject = options.inject ?? [];
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.matcher = new Matcher(recording, { order: this.order, tolerance: this.tolerance });
    this.files = new ArtifactFiles(recording.dir);
    // The recorder's own redaction, so live arguments compare with what the recording stored.
    this.redactor = createRedactor();
  }

  /** True once a strict replay diverged: every later call is refused. */
  get diverged(): boolean {
    return this.finished;
  }

  /** One line of JSON text (stdio framing); a parse failure is -32700 with id null. */
  async handleText(text: string): Promise<JsonRpcResponse | null> {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return rpcError(null, -32700, `Parse error: ${(e as Error).message}`);
    }
    try {
      return await this.dispatch(msg);
    } catch (e) {
      const id = isRecord(msg) && (typeof msg.id === 'string' || typeof msg.id === 'number') ? msg.id : null;
      return rpcError(id, -32603, `Internal error: ${(e as Error).message}`);
    }
  }

  /** One JSON-RPC message in, its response out (null for a notification), as MCEC answers it. */
  async dispatch(msg: unknown): Promise<JsonRpcResponse | null> {
    this.inFlight++;
    try {
      return await this.answer(msg);
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** Resolves once no message is being answered (after a divergence: the last answer was handed over). */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async answer(msg: unknown): Promise<JsonRpcResponse | null> {
    if (!isRecord(msg)) return rpcError(null, -32600, 'Invalid Request');
    const id = msg.id;
    if (
      id !== undefined &&
      !(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))
    )
      return rpcError(null, -32600, 'Invalid Request: id must be a string, a number or null');
    const rid = id === undefined ? null : (id as string | number | null);
    if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string')
      return rpcError(rid, -32600, 'Invalid Request: needs jsonrpc "2.0" and a method');
    switch (msg.method) {
      case 'initialize':
        return { jsonrpc: '2.0', id: rid, result: this.initializeResult() };
      case 'ping':
        return { jsonrpc: '2.0', id: rid, result: {} };
      case 'tools/list':
        return { jsonrpc: '2.0', id: rid, result: this.toolsListResult() };
      case 'tools/call': {
        const params = isRecord(msg.params) ? msg.params : {};
        const name = typeof params.name === 'string' ? params.name : '';
        try {
          return { jsonrpc: '2.0', id: rid, result: await this.callTool(name, params.arguments) };
        } catch (e) {
          if (e instanceof RecordedRpcError) return rpcError(rid, e.code, e.message);
          throw e;
        }
      }
      default:
        if (rid === null) return null;
        return rpcError(rid, -32601, `Method not found: ${msg.method}`);
    }
  }

  /** initialize as recorded (serverInfo, commandAccess, instructions); from the environment when not recorded. */
  private initializeResult(): Record<string, unknown> {
    if (this.recording.initialize) return structuredClone(this.recording.initialize);
    const server = isRecord(this.recording.environment.server) ? this.recording.environment.server : {};
    this.synthesized.add(
      'initialize: no handshake in the recording; serverInfo, protocolVersion and commandAccess come from its environment',
    );
    const result: Record<string, unknown> = {
      protocolVersion: typeof server.protocolVersion === 'string' ? server.protocolVersion : PROTOCOL_VERSION,
      capabilities: { tools: {} },
      serverInfo: {
        name: typeof server.name === 'string' ? server.name : 'MCEC',
        version: typeof server.version === 'string' ? server.version : 'unknown',
      },
    };
    if (isRecord(server.commandAccess)) result.commandAccess = server.commandAccess;
    return result;
  }

  /** tools/list as recorded; MCEC's own list (the simulator's copy of its catalog) when not recorded. */
  private toolsListResult(): Record<string, unknown> {
    if (this.recording.toolsList) return structuredClone(this.recording.toolsList);
    this.synthesized.add(
      "tools/list: not in the recording; answered with MCEC's catalog as the simulator has it",
    );
    return { tools: toolListings() };
  }

  /** The session a live call runs in: its sessionId argument, else MCEC's default session. */
  private sessionOf(args: Record<string, unknown>): string | null {
    const named =
      typeof args.sessionId === 'string' && args.sessionId.trim() !== '' ? args.sessionId.trim() : null;
    return named ?? this.recording.defaultSessionId ?? this.recording.sessionId;
  }

  /** Answer one tool call from the recording; throws RecordedRpcError when MCEC answered it with a JSON-RPC error. */
  async callTool(name: string, rawArgs?: unknown): Promise<CallToolResult> {
    const args: Record<string, unknown> = isRecord(rawArgs) ? rawArgs : {};
    const n = this.calls.length + 1;
    const toolN = (this.perTool.get(name) ?? 0) + 1;
    this.perTool.set(name, toolN);
    const shownArgs = (this.redactor.redactArgs(name, args) ?? {}) as Record<string, unknown>;
    const entry: ReportCall = {
      n,
      tool: name,
      args: shownArgs,
      outcome: 'matched',
      recordedSeq: null,
      ok: false,
      code: null,
      injected: null,
      imagesRestored: 0,
      imagesMissing: [],
      redacted: [],
      delayMs: 0,
      notes: [],
    };
    this.calls.push(entry);

    if (this.finished) {
      entry.outcome = 'diverged';
      entry.notes.push('the replay ended at the first divergence');
      return this.refuse(
        entry,
        args,
        'replay-diverged',
        'The replay ended at the first divergence from the recorded sequence (--order strict).',
      );
    }

    // Matching is synchronous, before any await: concurrent calls take recordings in arrival order.
    const decision = this.matcher.decide(name, shownArgs, args);
    let served: RecordedCall | null = null;
    if (decision.kind === 'matched' || decision.kind === 'repeat') {
      served = decision.call;
      entry.outcome = decision.kind;
      entry.notes.push(...decision.notes);
      if (decision.kind === 'repeat') {
        entry.notes.push(`every recorded call like it was used; #${decision.call.seq} answers again`);
        if (this.lockdown) served = null;
      }
    }
    if (!served) {
      const nearest = decision.kind === 'unmatched' ? decision.nearest : decision.call;
      const differences: Difference[] =
        decision.kind === 'unmatched'
          ? decision.differences
          : [{ path: '', recorded: null, live: null, why: 'a repeat: every recorded call like it was used' }];
      const miss: ReportUnmatched = {
        n,
        tool: name,
        args: shownArgs,
        nearest: nearest ? refOf(nearest) : null,
        differences,
      };
      this.unmatched.push(miss);
      this.firstDivergence ??= miss;
      entry.recordedSeq = nearest?.seq ?? null;
      if (this.order === 'strict') {
        entry.outcome = 'diverged';
        this.finish();
        return this.refuse(entry, args, 'replay-diverged', this.unmatchedDetail(name, miss, true));
      }
      if (this.lockdown || !nearest || nearest.tool !== name) {
        entry.outcome = 'unmatched';
        return this.refuse(entry, args, 'replay-unmatched', this.unmatchedDetail(name, miss, false));
      }
      entry.outcome = 'nearest';
      entry.notes.push(`answered with the nearest recording, #${nearest.seq}`);
      served = nearest;
    }
    entry.recordedSeq = served.seq;

    const rule = pickInjection(this.inject, name, n, toolN);
    let answer: { result: CallToolResult; envelope: Record<string, unknown> };
    if (rule) {
      const injected = await injectedFailure(rule, {
        tool: name,
        args,
        sessionId: this.sessionOf(args),
        defaultSessionId: this.recording.defaultSessionId,
        lastObservation: this.lastObservation,
        window: windowOf(served),
      });
      answer = failureAnswer(injected.sessionId, injected.error);
      const error = injected.error;
      entry.injected = { spec: rule.spec, code: String(error.code), category: String(error.category) };
    } else if (
      served.envelope === null &&
      served.status === 'fault' &&
      /^-?\d+$/.test(served.errorCode ?? '')
    ) {
      // MCEC answered this call with a JSON-RPC error: the same error, code and message, goes back.
      entry.ok = false;
      entry.code = served.errorCode;
      throw new RecordedRpcError(Number(served.errorCode), served.errorDetail ?? 'Internal error');
    } else if (served.envelope === null) {
      answer = this.noAnswer(served, args);
    } else {
      const built: BuiltAnswer = buildAnswer(served, this.files, (id) => this.matcher.liveSessionId(id));
      answer = built;
      entry.imagesRestored = built.restored;
      entry.imagesMissing = built.missing;
      entry.redacted = built.redactions;
      this.matcher.served(served, built.envelope);
      if (built.envelope.ok === true && OBSERVATIONS.has(name) && isRecord(built.envelope.result))
        this.lastObservation = compactObservation(served.envelope!.result);
    }
    entry.ok = answer.envelope.ok === true;
    entry.code = isRecord(answer.envelope.error) ? String(answer.envelope.error.code) : null;
    if (this.speed > 0 && served.durationMs > 0) {
      entry.delayMs = Math.round((served.durationMs / this.speed) * 1000) / 1000;
      await this.sleep(served.durationMs / this.speed);
    }
    return answer.result;
  }

  /** A recorded call that holds no answer (a fault, a dropped payload): an MCEC-shaped internal failure. */
  private noAnswer(
    call: RecordedCall,
    args: Record<string, unknown>,
  ): { result: CallToolResult; envelope: Record<string, unknown> } {
    const why = call.errorCode
      ? `${call.errorCode}${call.errorDetail ? `: ${call.errorDetail}` : ''}`
      : 'its payload was dropped by the log size limit';
    return failureAnswer(this.sessionOf(args), {
      code: 'replay-no-answer',
      category: 'internal',
      detail: `The recording holds no answer for #${call.seq} ${call.tool} (${why}).`,
    });
  }

  private refuse(
    entry: ReportCall,
    args: Record<string, unknown>,
    code: string,
    detail: string,
  ): CallToolResult {
    const { result } = failureAnswer(this.sessionOf(args), { code, category: 'internal', detail });
    entry.ok = false;
    entry.code = code;
    return result;
  }

  private unmatchedDetail(tool: string, miss: ReportUnmatched, strict: boolean): string {
    const head = strict
      ? `Replay diverged: this ${tool} call is not the next recorded call`
      : `Replay has no recorded ${tool} call matching these arguments`;
    if (!miss.nearest) return `${head}; the recording has none left.`;
    const d = miss.differences[0];
    return (
      `${head}; nearest is #${miss.nearest.seq} ${miss.nearest.tool}` +
      (d ? ` (${d.path || '/'}: ${d.why})` : '') +
      '.'
    );
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.resolveEnded();
  }

  /** The report so far (call it again later for more). */
  report(): ReplayReport {
    const counts = (o: CallOutcome) => this.calls.filter((c) => c.outcome === o).length;
    const unused = this.matcher.unused().map(refOf);
    const exitCode: 0 | 1 =
      (this.lockdown && this.unmatched.length > 0) ||
      (this.order === 'strict' && this.firstDivergence !== null)
        ? 1
        : 0;
    return {
      version: 1,
      source: this.source,
      options: {
        order: this.order,
        lockdown: this.lockdown,
        speed: this.speed,
        tolerance: this.tolerance,
        inject: this.inject.map((r) => r.spec),
      },
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      counts: {
        recorded: this.recording.calls.length,
        calls: this.calls.length,
        matched: counts('matched'),
        repeats: counts('repeat'),
        nearest: counts('nearest'),
        unmatched: counts('unmatched') + counts('diverged'),
        injected: this.calls.filter((c) => c.injected).length,
        unused: unused.length,
        redactedAnswers: this.calls.filter((c) => c.redacted.length > 0).length,
      },
      calls: structuredClone(this.calls),
      unmatched: structuredClone(this.unmatched),
      unused,
      firstDivergence: structuredClone(this.firstDivergence),
      pendingRecorded: this.recording.pendingCalls,
      synthesized: [...this.synthesized],
      exitCode,
    };
  }

  /** Mark the replay ended (the report's endedAt). */
  close(): void {
    this.endedAt ??= new Date().toISOString();
    this.finish();
  }
}

/** The window a recorded answer named (a capture's, a find's, a query's), for an injected failure. */
function windowOf(call: RecordedCall): Record<string, unknown> | null {
  const env = call.envelope;
  if (!env) return null;
  const result = isRecord(env.result)
    ? env.result
    : isRecord(env.error) && isRecord(env.error.partialResult)
      ? env.error.partialResult
      : null;
  return result && isRecord(result.window) ? result.window : null;
}

/** A stored observation as MCEC keeps it as the last good one: captures are summaries already; drop sha256. */
function compactObservation(result: unknown): Record<string, unknown> | null {
  if (!isRecord(result)) return null;
  const copy = structuredClone(result);
  if (copy.kind === 'capture-summary') delete copy.sha256;
  return copy;
}
