/** mcec-replay as a library: a recorded session (dir, id or bundle) served as MCEC over HTTP or stdio. */
import type { Readable, Writable } from 'node:stream';
import {
  expectArray,
  expectBoolean,
  expectNonEmptyString,
  expectNumber,
  expectObject,
  expectOneOf,
  expectOptions,
  expectString,
} from '../util/expect.js';
import { type HttpListener, listenHttp } from '../wire/http.js';
import type { JsonRpcResponse } from '../wire/json-rpc.js';
import type { CallToolResult } from '../wire/mcp-types.js';
import { serveStdio } from '../wire/stdio.js';
import { type Injection, parseInjection } from './injector.js';
import type { ReplayOrder } from './matcher.js';
import { loadRecording } from './recording.js';
import type { ReplayReport } from './report.js';
import { ReplayCore } from './server.js';
import { openReplaySource } from './source.js';

export type { BuiltAnswer } from './answer.js';
export { buildAnswer, captureFromSummary, restoreEnvelope } from './answer.js';
export type { Injection, InjectionContext } from './injector.js';
export { CATEGORIES, categoryOfCode, defaultCode, injectedFailure, parseInjection } from './injector.js';
export type { Difference, MatchDecision, ReplayOrder } from './matcher.js';
export { Matcher, redactedStringMatches } from './matcher.js';
export type { RecordedCall, Recording } from './recording.js';
export { loadRecording } from './recording.js';
export type { CallOutcome, RecordedRef, ReplayReport, ReportCall, ReportUnmatched } from './report.js';
export { formatReport } from './report.js';
export { RecordedRpcError, ReplayCore, type ReplayOptions } from './server.js';
export { openReplaySource, type ReplaySource, SourceError } from './source.js';

/** Options of {@link replaySession}. */
export interface ReplaySessionOptions {
  /** Root the session id is looked up in (default `$MCEC_SESSIONS_DIR`, else `./sessions`). */
  sessionsDir?: string;
  /** `any` (default) or `strict`. */
  order?: ReplayOrder;
  /** Unmatched calls get `replay-unmatched` and `report().exitCode` is 1. */
  lockdown?: boolean;
  /** 0 (default) instant; 1 real time; any factor. */
  speed?: number;
  /** Pixels a coordinate may differ by (default 4). */
  tolerance?: number;
  /** Fault injection rules, as `--inject` takes them: `'capture#3=frame-all-black'`, `'*@5=emergency-stopped'`. */
  inject?: Array<string | Injection>;
  /** HTTP: loopback host (default 127.0.0.1) and port (default 0: any free port). `false`: no HTTP listener. */
  /**
   * `bodyTimeoutMs`: how long a request body may take to arrive (default 10 s, then 408); `writeTimeoutMs`:
   * how long a client may take none of its answer's bytes (default 30 s, then the connection is closed).
   */
  http?:
    | { host?: string; port?: number; token?: string; bodyTimeoutMs?: number; writeTimeoutMs?: number }
    | false;
}

/** A running replay. */
export interface ReplayHandle {
  /** `http://127.0.0.1:<port>/mcp`, or '' without an HTTP listener. */
  url: string;
  /** The recorded session's id. */
  sessionId: string;
  /** Call a tool in-process (what tools/call would return). */
  callTool(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** One JSON-RPC message in-process. */
  handle(message: unknown): Promise<JsonRpcResponse | null>;
  /** Serve newline-delimited JSON-RPC on these streams; resolves when input ends or a strict replay diverged. */
  serveStdio(input: Readable, output: Writable): Promise<void>;
  /** Resolves when a strict replay diverged (or the replay was closed). */
  ended: Promise<void>;
  /** The report so far. */
  report(): ReplayReport;
  /** Stop listening, remove a bundle's temp copy; returns the final report. */
  close(): Promise<ReplayReport>;
}

/**
 * Serve a recorded session as MCEC: `source` is a session id (or unique prefix), a session dir or a bundle
 * zip. Listens on loopback HTTP (POST /mcp, MCEC's front-door checks) unless `http: false`.
 */
export async function replaySession(
  source: string,
  options: ReplaySessionOptions = {},
): Promise<ReplayHandle> {
  checkReplayArguments(source, options);
  const inject = (options.inject ?? []).map((r) => (typeof r === 'string' ? parseInjection(r) : r));
  const loaded = await openReplaySource(
    source,
    options.sessionsDir ? { sessionsDir: options.sessionsDir } : {},
  );
  let listener: HttpListener | null = null;
  try {
    const recording = loadRecording(loaded.dir);
    const core = new ReplayCore(
      recording,
      { kind: loaded.kind, input: source, sessionId: recording.sessionId, scenario: recording.scenario },
      {
        ...(options.order ? { order: options.order } : {}),
        ...(options.lockdown !== undefined ? { lockdown: options.lockdown } : {}),
        ...(options.speed !== undefined ? { speed: options.speed } : {}),
        ...(options.tolerance !== undefined ? { tolerance: options.tolerance } : {}),
        inject,
      },
    );
    if (options.http !== false) {
      const http = options.http ?? {};
      listener = await listenHttp(core, {
        host: http.host ?? '127.0.0.1',
        port: http.port ?? 0,
        ...(http.token ? { token: http.token } : {}),
        ...(http.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: http.bodyTimeoutMs } : {}),
        ...(http.writeTimeoutMs !== undefined ? { writeTimeoutMs: http.writeTimeoutMs } : {}),
        onAuthorization: (value) => core.rememberCredential(value),
      });
    }
    let closed: Promise<ReplayReport> | null = null;
    return {
      url: listener?.url ?? '',
      sessionId: recording.sessionId,
      callTool: (name, args) => core.callTool(name, args ?? {}),
      handle: (message) => core.dispatch(message),
      serveStdio: (input, output) =>
        Promise.race([
          serveStdio(core, input, output),
          // A strict replay's divergence ends it, once the diverging answer has been written.
          core.ended
            .then(() => core.idle())
            .then(() => new Promise<void>((resolve) => setImmediate(resolve))),
        ]),
      ended: core.ended,
      report: () => core.report(),
      close: () => {
        closed ??= (async () => {
          core.close();
          await listener?.close();
          loaded.cleanup();
          return core.report();
        })();
        return closed;
      },
    };
  } catch (e) {
    await listener?.close();
    loaded.cleanup();
    throw e;
  }
}

/** replaySession's arguments, checked: a TypeError for a wrong type, a RangeError out of range, naming it. */
function checkReplayArguments(source: unknown, options: unknown): void {
  expectNonEmptyString(source, 'source');
  const o = expectOptions(options);
  expectString(o.sessionsDir, 'options.sessionsDir');
  expectOneOf(o.order, 'options.order', ['any', 'strict']);
  expectBoolean(o.lockdown, 'options.lockdown');
  expectNumber(o.speed, 'options.speed', { min: 0 });
  expectNumber(o.tolerance, 'options.tolerance', { min: 0 });
  expectArray(o.inject, 'options.inject', (v, name) => {
    if (typeof v !== 'string') expectObject(v, name);
  });
  if (o.http === undefined || o.http === false) return;
  expectObject(o.http, 'options.http');
  expectString(o.http.host, 'options.http.host', { nonEmpty: true });
  expectNumber(o.http.port, 'options.http.port', { min: 0, max: 65535, integer: true });
  expectString(o.http.token, 'options.http.token');
  expectNumber(o.http.bodyTimeoutMs, 'options.http.bodyTimeoutMs', { min: 1, integer: true });
  expectNumber(o.http.writeTimeoutMs, 'options.http.writeTimeoutMs', { min: 1, integer: true });
}
