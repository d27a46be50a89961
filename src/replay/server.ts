/**
 * The replay server core: JSON-RPC in, answers from the recording out, on MCEC's wire. It implements the
 * wire room's transport interfaces (`handleText` for stdio, `dispatch` for HTTP), so both transports, their
 * framing and front-door checks are the simulator's too (src/wire/stdio.ts, src/wire/http.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { OBSERVATION_TOOLS } from '../contract/tool-catalog.js';
import { toolListings } from '../contract/tool-listings.js';
import { createRedactor, type Redactor } from '../redact/redactor.js';
import { isRecord } from '../util/json.js';
import {
  answerJsonText,
  dispatchJsonRpc,
  JsonRpcErrorAnswer,
  type JsonRpcMethod,
  type JsonRpcResponse,
  toolCallOf,
} from '../wire/json-rpc.js';
import { type CallToolResult, PROTOCOL_VERSION } from '../wire/mcp-types.js';
import { ArtifactFiles, type BuiltAnswer, buildAnswer, buildPlainAnswer, failureAnswer } from './answer.js';
import { type Injection, injectedFailure, pickInjection } from './injector.js';
import { type Difference, type MatchDecision, Matcher, type ReplayOrder } from './matcher.js';
import { paramsOf, type RecordedCall, type RecordedExchange, type Recording } from './recording.js';
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
export class RecordedRpcError extends JsonRpcErrorAnswer {}

/** An answer and the envelope it carries (what the report reads ok and code from). */
type Answer = { result: CallToolResult; envelope: Record<string, unknown> };

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
  private readonly usedExchanges = new Set<RecordedExchange>();
  private readonly perTool = new Map<string, number>();
  private firstDivergence: ReportUnmatched | null = null;
  private lastObservation: Record<string, unknown> | null = null;
  private endedAt: string | null = null;
  private inFlight = 0;
  private readonly idleWaiters: Array<() => void> = [];
  private finished = false;
  private readonly startedAt = new Date().toISOString();
  /** What the replay answers per JSON-RPC method. */
  private readonly methods = new Map<string, JsonRpcMethod>([
    ['initialize', () => this.initializeResult()],
    ['ping', () => ({})],
    ['tools/list', () => this.toolsListResult()],
    [
      'tools/call',
      (params) => {
        const call = toolCallOf(params);
        return this.callTool(call.name, call.args);
      },
    ],
  ]);
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
    for (const { method } of recording.exchanges) {
      if (!this.methods.has(method))
        this.methods.set(method, (params) => this.recordedAnswer(method, params));
    }
    for (const method of advertisedMethods(recording.initialize)) {
      if (!this.methods.has(method))
        this.methods.set(method, () => {
          throw new JsonRpcErrorAnswer(
            -32601,
            `mcec-replay: the recording holds no ${method} request (the recorded server offers it; its client never asked, so there is no answer to replay)`,
          );
        });
    }
  }

  /**
   * A credential the client sent (its Authorization header, over HTTP): scrubbed from the live arguments the
   * report holds, as the recording proxy scrubbed it from the recording.
   */
  rememberCredential(value: string): void {
    this.redactor.rememberHeaderSecret(value);
  }

  /**
   * A request other than a tool call, answered as the server answered it: the first unused recorded exchange of
   * the method whose params (redacted as recorded, `_meta` aside) are equal, else the last used one again.
   */
  private recordedAnswer(method: string, params: Record<string, unknown>): unknown {
    const live = this.redactor.redact(paramsOf(params));
    let repeat: RecordedExchange | undefined;
    for (const e of this.recording.exchanges) {
      if (e.method !== method || !isDeepStrictEqual(e.params, live)) continue;
      if (!this.usedExchanges.has(e)) {
        this.usedExchanges.add(e);
        return answerOf(e);
      }
      repeat = e;
    }
    if (repeat) return answerOf(repeat);
    throw new JsonRpcErrorAnswer(
      -32602,
      `mcec-replay: the recording holds no ${method} with these params (it holds ${this.recording.exchanges.filter((e) => e.method === method).length} other ${method} requests)`,
    );
  }

  /** True once a strict replay diverged: every later call is refused. */
  get diverged(): boolean {
    return this.finished;
  }

  /** One line of JSON text (stdio framing); a parse failure is -32700 with id null. */
  handleText(text: string): Promise<JsonRpcResponse | null> {
    return answerJsonText(text, (msg) => this.dispatch(msg));
  }

  /** One JSON-RPC message in, its response out (null for a notification), as MCEC answers it. */
  async dispatch(msg: unknown): Promise<JsonRpcResponse | null> {
    this.inFlight++;
    try {
      return await dispatchJsonRpc(msg, this.methods);
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

  /** tools/list as recorded; MCEC's own list (`src/contract/tool-listings.ts`) when not recorded. */
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
    const { entry, toolN } = this.startEntry(name, args);
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
    const decision = this.matcher.decide(name, entry.args, args);
    const served = this.recordingToServe(decision, entry, args);
    if ('refused' in served) return served.refused;
    entry.recordedSeq = served.call.seq;
    const answer = await this.answerFrom(served.call, entry, args, toolN);
    entry.ok = answer.envelope.ok === true;
    entry.code = isRecord(answer.envelope.error) ? String(answer.envelope.error.code) : null;
    if (this.speed > 0 && served.call.durationMs > 0) {
      entry.delayMs = Math.round((served.call.durationMs / this.speed) * 1000) / 1000;
      await this.sleep(served.call.durationMs / this.speed);
    }
    return answer.result;
  }

  /** The report's entry for the next live call (its args as the recorder redacts them), and its count of its tool. */
  private startEntry(name: string, args: Record<string, unknown>): { entry: ReportCall; toolN: number } {
    const toolN = (this.perTool.get(name) ?? 0) + 1;
    this.perTool.set(name, toolN);
    const entry: ReportCall = {
      n: this.calls.length + 1,
      tool: name,
      args: (this.redactor.redactArgs(name, args) ?? {}) as Record<string, unknown>,
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
    return { entry, toolN };
  }

  /** The recorded call that answers a live one, or the refusal when none may (lockdown, strict, no such tool). */
  private recordingToServe(
    decision: MatchDecision,
    entry: ReportCall,
    args: Record<string, unknown>,
  ): { call: RecordedCall } | { refused: CallToolResult } {
    if (decision.kind === 'matched' || decision.kind === 'repeat') {
      entry.outcome = decision.kind;
      entry.notes.push(...decision.notes);
      if (decision.kind === 'matched') return { call: decision.call };
      entry.notes.push(`every recorded call like it was used; #${decision.call.seq} answers again`);
      if (!this.lockdown) return { call: decision.call };
    }
    const nearest = decision.kind === 'unmatched' ? decision.nearest : decision.call;
    const differences: Difference[] =
      decision.kind === 'unmatched'
        ? decision.differences
        : [{ path: '', recorded: null, live: null, why: 'a repeat: every recorded call like it was used' }];
    const miss: ReportUnmatched = {
      n: entry.n,
      tool: entry.tool,
      args: entry.args,
      nearest: nearest ? refOf(nearest) : null,
      differences,
    };
    this.unmatched.push(miss);
    this.firstDivergence ??= miss;
    entry.recordedSeq = nearest?.seq ?? null;
    if (this.order === 'strict') {
      entry.outcome = 'diverged';
      this.finish();
      const detail = this.unmatchedDetail(entry.tool, miss, true);
      return { refused: this.refuse(entry, args, 'replay-diverged', detail) };
    }
    if (this.lockdown || !nearest || nearest.tool !== entry.tool) {
      entry.outcome = 'unmatched';
      const detail = this.unmatchedDetail(entry.tool, miss, false);
      return { refused: this.refuse(entry, args, 'replay-unmatched', detail) };
    }
    entry.outcome = 'nearest';
    entry.notes.push(`answered with the nearest recording, #${nearest.seq}`);
    return { call: nearest };
  }

  /**
   * The answer to a live call from its recording: an injected failure when a rule picks it, the recorded
   * JSON-RPC error (thrown), replay-no-answer for a call without one, else the recorded answer rebuilt.
   */
  private async answerFrom(
    served: RecordedCall,
    entry: ReportCall,
    args: Record<string, unknown>,
    toolN: number,
  ): Promise<Answer> {
    const name = entry.tool;
    const rule = pickInjection(this.inject, name, entry.n, toolN);
    if (rule) {
      const injected = await injectedFailure(rule, {
        tool: name,
        args,
        sessionId: this.sessionOf(args),
        defaultSessionId: this.recording.defaultSessionId,
        lastObservation: this.lastObservation,
        window: windowOf(served),
      });
      const error = injected.error;
      entry.injected = { spec: rule.spec, code: String(error.code), category: String(error.category) };
      return failureAnswer(injected.sessionId, error);
    }
    if (served.envelope === null && served.status === 'fault' && /^-?\d+$/.test(served.errorCode ?? '')) {
      // MCEC answered this call with a JSON-RPC error: the same error, code and message, goes back.
      entry.ok = false;
      entry.code = served.errorCode;
      throw new RecordedRpcError(Number(served.errorCode), served.errorDetail ?? 'Internal error');
    }
    if (served.envelope === null) return this.noAnswer(served, args);
    const built: BuiltAnswer = this.recording.plainServer
      ? buildPlainAnswer(served, this.files)
      : buildAnswer(served, this.files, (id) => this.matcher.liveSessionId(id));
    entry.imagesRestored = built.restored;
    entry.imagesMissing = built.missing;
    entry.redacted = built.redactions;
    this.matcher.served(served, built.envelope);
    if (built.envelope.ok === true && OBSERVATIONS.has(name) && isRecord(built.envelope.result))
      this.lastObservation = compactObservation(served.envelope!.result);
    return built;
  }

  /** A recorded call that holds no answer (a fault, a dropped payload): an MCEC-shaped internal failure. */
  private noAnswer(call: RecordedCall, args: Record<string, unknown>): Answer {
    const why = call.errorCode
      ? `${call.errorCode}${call.errorDetail ? `: ${call.errorDetail}` : ''}`
      : 'its payload was dropped by the log size limit';
    return this.failure(args, {
      code: 'replay-no-answer',
      category: 'internal',
      detail: `The recording holds no answer for #${call.seq} ${call.tool} (${why}).`,
    });
  }

  /**
   * The replay's own failure: MCEC's envelope for MCEC; for a server that is not MCEC (which sent none) a plain
   * tool error, `<code>: <detail>`, the envelope kept for the report only.
   */
  private failure(
    args: Record<string, unknown>,
    error: { code: string; category: string; detail: string },
  ): Answer {
    const answer = failureAnswer(this.sessionOf(args), error);
    if (!this.recording.plainServer) return answer;
    const text = `${error.code}: ${error.detail}`;
    return { result: { content: [{ type: 'text', text }], isError: true }, envelope: answer.envelope };
  }

  private refuse(
    entry: ReportCall,
    args: Record<string, unknown>,
    code: string,
    detail: string,
  ): CallToolResult {
    const { result } = this.failure(args, { code, category: 'internal', detail });
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

/** A recorded exchange's answer: its result (a copy), or its JSON-RPC error thrown. */
function answerOf(e: RecordedExchange): unknown {
  if ('error' in e.answer) throw new JsonRpcErrorAnswer(e.answer.error.code, e.answer.error.message);
  return structuredClone(e.answer.result);
}

/** The requests an MCP server's capabilities promise to answer (2025-06-18), by capability. */
const CAPABILITY_METHODS: Record<string, readonly string[]> = {
  resources: ['resources/list', 'resources/read', 'resources/templates/list'],
  prompts: ['prompts/list', 'prompts/get'],
  completions: ['completion/complete'],
  logging: ['logging/setLevel'],
};

/** The methods the recorded `initialize` advertised, beyond tools: a client may call them on the replay. */
function advertisedMethods(initialize: Record<string, unknown> | null): string[] {
  const capabilities = initialize?.capabilities;
  if (!isRecord(capabilities)) return [];
  return Object.entries(CAPABILITY_METHODS).flatMap(([name, methods]) =>
    isRecord(capabilities[name]) ? methods : [],
  );
}
