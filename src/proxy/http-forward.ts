/**
 * One request through the HTTP proxy: sent to the target, its answer streamed back to the client unchanged,
 * and the exchange recorded. Owns the request's timers (the wait for the answer, the late-answer window, a
 * stalled body, a client that stopped reading) and the bounded copy of the answer kept for recording.
 */

import http from 'node:http';
import { parseAnswer, settleWithHttpAnswer } from '../record/http-answer.js';
import { excerpt } from '../util/excerpt.js';
import type { TargetKind } from '../wire/gates.js';
import { watchWrites } from '../wire/write-deadline.js';
import { BoundedMessage, peekAnswer } from './bounded.js';
import { classifyMessage } from './jsonrpc.js';
import type { ProxyPendingExchange } from './recorder-port.js';
import { isEventStream, type SseEvent, SseParser } from './sse.js';
import { formatDuration, type RequestTimeout, type TimeoutPolicy, timeoutFor } from './timeouts.js';
import { sessionIdOf, type WireRecording } from './wire-recording.js';

/** What every forwarded request shares with its proxy. */
export interface ForwardContext {
  target: URL;
  agent: http.Agent;
  wire: WireRecording;
  timeouts: TimeoutPolicy;
  /** After a 504, how long the answer is still awaited so it can be recorded. */
  lateAnswerMs: number;
  /**
   * How long the client's socket may take no bytes of the answer (a write waiting for it to drain, or the
   * answer's tail after the last write) before the proxy hangs up: a client that never reads would hold a
   * request slot and a connection for ever.
   */
  writeTimeoutMs: number;
  /** Largest answer recorded; a larger one is passed through and recorded as oversize. */
  maxRecordBytes: number;
  /** Requests in flight: each registers its entry (for close()) while it runs. */
  inFlight: Set<InFlightEntry>;
  /** Whose rules apply now (MCEC's, or the MCP specification's). */
  kind: () => TargetKind;
  /** An `initialize` answer named the server (`serverInfo.name`). */
  serverNamed: (name: string) => void;
  /** Whether the target answers: said on the proxy's stderr when it goes down and when it is back. */
  health: TargetHealth;
}

/**
 * The target's reachability as the proxy's operator sees it: one line when a request finds it down (not one
 * per request), one when it answers again. The client gets its 502 either way.
 */
export class TargetHealth {
  private down = false;
  constructor(
    private readonly target: string,
    private readonly notice: (line: string) => void,
  ) {}

  unreachable(why: string): void {
    if (this.down) return;
    this.down = true;
    this.say(
      `the target ${this.target} is unreachable (${why}): clients get 502 until it answers; is MCEC (or the server) running there?`,
    );
  }

  answered(): void {
    if (!this.down) return;
    this.down = false;
    this.say(`the target ${this.target} answers again`);
  }

  private say(line: string): void {
    try {
      this.notice(line);
    } catch {
      // a broken stderr must not break the proxy
    }
  }
}

// Per-connection headers that a proxy must not forward (RFC 9110 §7.6.1), plus the ones it rewrites.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'host',
  'content-length',
]);

/**
 * Forward one request whose body has been read. `recorded` is false for requests that MCEC never runs
 * (anything but POST to the endpoint): those are passed through only.
 */
export function forwardRequest(
  ctx: ForwardContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: Buffer,
  recorded: boolean,
): void {
  new ForwardedRequest(ctx, req, res, body, recorded).start();
}

/**
 * A request in `ForwardContext.inFlight`: its abort, dropped (undefined) once it settles. A Set whose table V8
 * moved to old space allocates every later table there too, and a table it replaces keeps the entries it held
 * until a full GC: an entry holding the request itself kept whole calls alive through every scavenge.
 */
export interface InFlightEntry {
  abort: (() => void) | undefined;
}

/** How the client was answered before the target's answer came. */
type ClientState = 'waiting' | 'streaming' | 'answered-504' | 'gone';

class ForwardedRequest {
  private readonly startedAt = new Date();
  private upstream!: http.ClientRequest;
  private pending: ProxyPendingExchange | null = null;
  /** The id of the request recorded (null: an id-less request, answered with id null). */
  private requestId: string | number | null = null;
  /** The MCP session the request belongs to (its Mcp-Session-Id), keeping ids of sessions apart. */
  private readonly scope: string;
  /**
   * The answer's Mcp-Session-Id when the request had none (initialize's answer opens the MCP session): the
   * recorder files the exchange in that session.
   */
  private answerMeta: { mcpSessionId: string } | undefined;
  /** The sizes of the events too large to record that the stream carried while its call was unanswered (one may be its answer). */
  private heldOversize: number[] | null = null;
  /** How the target's answer is recorded once it is complete (null: not recorded). */
  private recordAnswer: ((status: number, answer: BoundedMessage) => void) | null = null;
  private callSession: string | undefined;
  private timeout: RequestTimeout;
  private client: ClientState = 'waiting';
  private answerStarted = false;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  /** The write deadline watches the client's socket (from the first time bytes waited for it). */
  private writesWatched = false;
  /** Why the client is gone when the proxy hung up on it (else it disconnected). */
  private hungUp: string | undefined;
  /** The request's recording began (after its bytes left, or at its first event). */
  private recordingBegun = false;
  /** The answer's body bytes began to reach the client (its headers with them). */
  private bodyWritten = false;
  private readonly inFlightEntry: InFlightEntry = { abort: () => this.abort() };

  constructor(
    private readonly ctx: ForwardContext,
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    private readonly body: Buffer,
    private readonly recorded: boolean,
  ) {
    this.timeout = { ms: ctx.timeouts.defaultMs, source: 'default' };
    this.scope = mcpSessionScope(req);
  }

  start(): void {
    const { ctx, req, res } = this;
    this.upstream = http.request({
      host: ctx.target.hostname,
      port: ctx.target.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req.rawHeaders, ctx.target.host, this.body.length),
      agent: ctx.agent,
    });
    ctx.inFlight.add(this.inFlightEntry);
    this.upstream.on('response', (answer) => this.onAnswer(answer));
    this.upstream.on('error', (err: NodeJS.ErrnoException) => this.onUpstreamError(err));
    this.upstream.end(this.body);
    res.on('close', () => this.onClientClose());
    // Recording starts after the bytes left: the agent writes them on the next tick, before this immediate
    // (or at the first event of the request, if one comes sooner).
    if (this.recorded) setImmediate(() => this.ensureRecording());
  }

  /**
   * Begin recording the request, once; the message also decides the timeout (per tool). Only a call waits
   * under the timeout; a GET (a live event stream) or DELETE is the client's own affair.
   */
  private ensureRecording(): void {
    if (this.recordingBegun || !this.recorded) return;
    this.recordingBegun = true;
    this.beginRecording();
    if (!this.finished && !this.answerStarted) this.armTimer(this.timeout.ms, () => this.onTimeout());
  }

  private beginRecording(): void {
    const { wire } = this.ctx;
    const text = this.body.toString('utf8'); // at most maxBodyBytes, which is at most maxRecordBytes
    const message = classifyMessage(text);
    const at = this.startedAt;
    // Built in a local, then stored: V8's unoptimized code allocates a function literal assigned straight to a
    // property in old space, where, dead, it kept each finished call's whole graph alive until a full GC.
    let recordAnswer: ((status: number, answer: BoundedMessage) => void) | null = null;
    if (message.kind === 'request') {
      this.timeout = timeoutFor(this.ctx.timeouts, message.message);
      this.callSession = sessionIdOf(message.message);
      this.requestId = message.id;
      const begun = wire.begin(message.message, at, this.scope);
      const pending = message.method === 'initialize' ? this.namingServer(begun) : begun;
      this.pending = pending;
      recordAnswer = (status, answer) => {
        const whole = answer.whole();
        if (whole === null) {
          const peek = peekAnswer(answer.edges());
          if (status === 200) {
            pending.tooLarge({
              bytes: answer.bytes,
              limit: this.ctx.maxRecordBytes,
              ...(peek.isError !== undefined ? { isError: peek.isError } : {}),
              ...(peek.rpcError ? { rpcError: true } : {}),
            });
          } else pending.fail(`target answered HTTP ${status} (${answer.bytes} bytes, not recorded)`);
          return;
        }
        // Only an initialize answer is read here (it may name the server); any other is read by the recorder.
        if (message.method === 'initialize' || !pending.answered)
          settleWithHttpAnswer(pending, status, whole, this.answerMeta);
        else pending.answered(status, whole, this.answerMeta);
      };
    } else if (message.kind === 'notification') {
      wire.clientNotification(message.message, this.scope);
      recordAnswer = (_status, answer) =>
        wire.notification(message.message, at, parseBounded(answer) ?? null, this.scope);
    } else if (message.kind === 'response') {
      // The client answering a request of the server (sampling, elicitation, roots): a reply, not a fault.
      wire.clientReply(message.message, at, this.scope);
    } else {
      const reason = message.reason;
      recordAnswer = (_status, answer) =>
        wire.invalid(reason, text, message.message, at, parseBounded(answer), this.scope);
    }
    this.recordAnswer = recordAnswer;
  }

  /** The initialize exchange, telling the proxy the server's name when its answer comes. */
  private namingServer(pending: ProxyPendingExchange): ProxyPendingExchange {
    return {
      ...pending,
      complete: (response, meta) => {
        const result = isRecordLike(response) ? response.result : undefined;
        const info = isRecordLike(result) ? result.serverInfo : undefined;
        const name = isRecordLike(info) ? info.name : undefined;
        if (typeof name === 'string') this.ctx.serverNamed(name);
        pending.complete(response, meta);
      },
    };
  }

  private clientGone(): boolean {
    return this.client === 'gone' || this.res.destroyed || this.res.writableEnded;
  }

  private armTimer(ms: number, fire: () => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(fire, ms);
  }

  private settle(): void {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.ctx.inFlight.delete(this.inFlightEntry);
    this.inFlightEntry.abort = undefined;
  }

  /** The target has not begun its answer in time: the client gets 504; the answer is still awaited. */
  private onTimeout(): void {
    if (this.finished || this.answerStarted) return;
    const { ms, tool, source } = this.timeout;
    const what = tool ? `tool ${tool}` : (this.req.method ?? 'request');
    const setting = tool ? `--timeout ${tool}=<duration>` : '--timeout <duration>';
    const reason =
      `target did not answer within ${formatDuration(ms)} (${what}${source === 'argument' ? ", from the call's own timeout" : ''}); ` +
      `it may still run on the server. Raise the limit with ${setting}`;
    const answered = !this.clientGone();
    if (answered) {
      this.client = 'answered-504';
      sendError(this.res, 504, `mcec-record: ${reason}`);
    }
    this.ctx.wire.proxyError(
      {
        status: 504,
        reason,
        timeoutMs: ms,
        ...(tool ? { tool } : {}),
        clientAnswered: answered,
        method: this.req.method,
        path: pathOnly(this.req.url),
      },
      this.callSession,
      this.scope,
    );
    this.pending?.timedOut(`proxy-error 504: ${reason}`);
    this.armTimer(this.ctx.lateAnswerMs, () => {
      this.give(`no answer within ${formatDuration(this.ctx.lateAnswerMs)} after the timeout`);
    });
  }

  /** Stop waiting for the target: the exchange fails (a row already failed by the timeout stays so). */
  private give(reason: string): void {
    if (this.finished) return;
    this.settle();
    this.upstream.destroy();
    this.pending?.fail(`proxy-error 504: ${reason}`);
    if (!this.clientGone() && this.client !== 'answered-504') this.res.destroy();
  }

  private onClientClose(): void {
    this.ensureRecording();
    if (this.res.writableFinished || this.client === 'answered-504') return;
    this.client = 'gone';
    if (!this.recorded || (this.streaming && this.pending === null)) {
      // Nothing to record (a GET stream, DELETE): the target's side goes with the client.
      this.quit();
      return;
    }
    if (!this.finished) this.pending?.clientLeft(this.hungUp ?? 'the client disconnected before the answer');
    // An answer paused for a slow client is read on, for the recording; a stream for a bounded while.
    if (this.streaming && !this.finished)
      this.armTimer(this.ctx.lateAnswerMs, () =>
        this.give(
          `no answer on the event stream within ${formatDuration(this.ctx.lateAnswerMs)} after the client left`,
        ),
      );
    this.answerStream?.resume();
  }

  /** Drop the request quietly: nothing waits for it. */
  private quit(): void {
    if (this.finished) return;
    this.settle();
    this.upstream.destroy();
  }

  /** The answer is an event stream (MCP's Streamable HTTP): passed through live, read event by event. */
  private streaming = false;

  private answerStream: http.IncomingMessage | undefined;

  private onAnswer(answer: http.IncomingMessage): void {
    this.ensureRecording();
    this.ctx.health.answered();
    this.answerStarted = true;
    this.answerStream = answer;
    const status = answer.statusCode ?? 502;
    const session = answer.headers['mcp-session-id'];
    if (this.scope === '' && typeof session === 'string' && session !== '')
      this.answerMeta = { mcpSessionId: session };
    // The server took the client's end of its MCP session: that session's recording ends now.
    if (this.req.method === 'DELETE' && this.scope !== '' && status >= 200 && status < 300)
      this.ctx.wire.mcpSessionDeleted(status, this.scope);
    this.streaming = isEventStream(answer.headers['content-type']);
    const toClient = this.client === 'waiting' && !this.clientGone();
    if (toClient) {
      this.client = 'streaming';
      this.res.writeHead(status, answer.statusMessage, responseHeaders(answer.rawHeaders));
      // An event stream's status and headers go now. Any other answer's go with its first body bytes, which
      // usually came in the same read (one write to the client, not two); if none came within this turn of
      // the event loop, they go on their own then.
      if (this.streaming) this.res.flushHeaders();
      else setImmediate(() => this.flushHeadersIfUnsent());
    }
    const copy = new BoundedMessage(this.ctx.maxRecordBytes);
    const stream = this.streaming
      ? new SseParser((event) => this.onStreamEvent(event), this.ctx.maxRecordBytes)
      : null;
    const stalled = () =>
      this.targetFailed(`target stalled for ${formatDuration(this.timeout.ms)} inside its answer`, 502);
    if (this.client !== 'streaming' && !this.recorded) {
      this.quit(); // a pass-through nobody listens to any more
      return;
    }
    if (this.client === 'streaming' && (this.streaming || !this.recorded)) {
      // A live stream (or a pass-through) may be silent as long as it likes: only the client ends it.
      if (this.timer) clearTimeout(this.timer);
    } else if (this.streaming) {
      // Read on for the recording, for a bounded while: the client is gone or got a 504.
      if (this.client === 'gone')
        this.armTimer(this.ctx.lateAnswerMs, () =>
          this.give('no answer on the event stream after the client left'),
        );
    } else {
      // Once a JSON answer has begun, the same limit bounds each silence inside it.
      this.armTimer(this.timeout.ms, stalled);
    }
    const keepCopy = this.recordAnswer !== null && stream === null;
    answer.on('data', (chunk: Buffer) => {
      if (keepCopy) copy.push(chunk);
      if (!this.streaming) this.timer?.refresh();
      if (this.client === 'streaming' && !this.clientGone() && !this.writeToClient(chunk)) {
        // A slow client: wait for it (its silence is not the target's), reading on if it leaves; one that
        // takes nothing within the write deadline is hung up on.
        answer.pause();
        if (this.timer && !this.streaming) clearTimeout(this.timer);
        this.watchClient();
        this.res.once('drain', () => {
          if (!this.streaming) this.timer?.refresh();
          answer.resume();
        });
      }
      stream?.push(chunk);
    });
    answer.on('end', () => {
      if (this.finished) return;
      this.settle();
      if (this.client === 'streaming' && !this.clientGone()) {
        this.res.end();
        // The tail may still sit in the socket: the slot is free only once the client has taken it.
        this.watchClient();
      }
      try {
        if (stream) {
          stream.end();
          this.streamEnded(status, copy);
        } else this.recordAnswer?.(status, copy);
      } catch {
        // recording never breaks the wire
      }
    });
    answer.on('error', () => {});
    answer.on('close', () => {
      if (!answer.complete) this.targetFailed('target cut its answer short', 502);
    });
  }

  /** Bytes wait for the client: the write deadline watches it from now until the answer finishes or closes. */
  private watchClient(): void {
    if (this.writesWatched) return;
    this.writesWatched = true;
    watchWrites(this.res, this.ctx.writeTimeoutMs, () => this.clientStalled());
  }

  /** The client took no byte of the answer within the write deadline: hang up and say so. */
  private clientStalled(): void {
    if (this.client === 'gone' || this.res.destroyed) return;
    const ms = this.ctx.writeTimeoutMs;
    this.hungUp = `the client read nothing of the answer for ${formatDuration(ms)}: the proxy hung up`;
    const { req } = this;
    this.ctx.wire.proxyError(
      {
        reason: 'client stopped reading',
        timeoutMs: ms,
        bytes: this.res.socket?.bytesWritten ?? 0,
        method: req.method,
        path: pathOnly(req.url),
        stream: this.streaming,
      },
      this.callSession,
      this.scope,
    );
    this.res.destroy();
  }

  private writeToClient(chunk: Buffer): boolean {
    this.bodyWritten = true;
    return this.res.write(chunk);
  }

  private flushHeadersIfUnsent(): void {
    if (!this.bodyWritten && this.client === 'streaming' && !this.clientGone()) this.res.flushHeaders();
  }

  /** One event of a streamed answer: the call's answer, or a message of the server while it runs. */
  private onStreamEvent(event: SseEvent): void {
    try {
      const at = new Date();
      const { wire } = this.ctx;
      if (event.kind === 'oversize') {
        // The call's answer may be this one: held until the stream ends. One no call can take is an event now.
        if (this.pending && !this.answered) {
          this.heldOversize ??= [];
          this.heldOversize.push(event.bytes);
        } else wire.oversize('answer', event.bytes, this.ctx.maxRecordBytes, {}, this.scope);
        return;
      }
      const message = classifyMessage(event.data);
      if (message.kind === 'response') {
        if (this.pending && !this.answered && (message.id === this.requestId || message.id === null)) {
          this.answered = true;
          this.pending.complete(message.message, this.answerMeta);
        } else wire.orphanResponse(message.message, at, this.scope);
      } else if (message.kind === 'invalid') {
        wire.fault('response', `event-stream data ${message.reason}`, event.data, this.scope);
      } else wire.fromServer(message, at, this.pending ?? undefined, this.scope);
    } catch {
      // recording never breaks the wire
    }
  }

  /**
   * The event stream ended: a call it never answered fails, or is oversize when an event was (the largest is
   * taken as its answer; any other held is an oversize-message event). A body that was no request (a
   * notification, one not JSON-RPC) is recorded as one that got no JSON answer.
   */
  private streamEnded(status: number, copy: BoundedMessage): void {
    const { pending } = this;
    if (!pending) {
      this.recordAnswer?.(status, copy);
      return;
    }
    const held = this.heldOversize ?? [];
    if (!this.answered) {
      if (held.length > 0) {
        const largest = held.indexOf(Math.max(...held));
        pending.tooLarge({ bytes: held[largest]!, limit: this.ctx.maxRecordBytes });
        held.splice(largest, 1);
      } else pending.fail('the event stream ended without an answer to the call');
    }
    for (const bytes of held)
      this.ctx.wire.oversize('answer', bytes, this.ctx.maxRecordBytes, {}, this.scope);
  }

  /** The call's answer came on its event stream. */
  private answered = false;

  private onUpstreamError(err: NodeJS.ErrnoException): void {
    this.ensureRecording();
    // Settled already (the proxy closing destroyed the upstream request itself): not the target's failure.
    if (this.finished) return;
    if (this.client === 'answered-504') {
      this.give(`the connection to the target failed after the timeout: ${err.code ?? err.message}`);
      return;
    }
    if (!this.answerStarted) this.ctx.health.unreachable(err.code ?? err.message);
    // Where it went, in the words (report.html, summaries): origin and path only, as a query may hold a key.
    const where = `${this.ctx.target.origin}${this.ctx.target.pathname}`;
    this.targetFailed(`target ${where} unreachable: ${err.code ?? err.message}`, 502);
  }

  /** The target failed before (502 to the client) or while (connection cut) sending its answer. */
  private targetFailed(reason: string, status: 502): void {
    if (this.finished) return;
    this.settle();
    this.upstream.destroy();
    const { req } = this;
    this.ctx.wire.proxyError(
      { status, reason, method: req.method, path: pathOnly(req.url), responseStarted: this.answerStarted },
      this.callSession,
      this.scope,
    );
    this.pending?.fail(`proxy-error ${status}: ${reason}`);
    if (this.clientGone() || this.client === 'answered-504') return;
    if (this.client === 'streaming') this.res.destroy();
    else sendError(this.res, status, reason);
  }

  /** The proxy is closing. */
  private abort(): void {
    this.ensureRecording();
    if (this.finished) return;
    this.settle();
    this.upstream.destroy();
    this.pending?.fail('proxy closed');
    if (!this.clientGone()) this.res.destroy();
  }
}

function isRecordLike(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function forwardHeaders(raw: string[], targetHost: string, length: number): string[] {
  const out: string[] = ['Host', targetHost];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  }
  out.push('Content-Length', String(length));
  return out;
}

function responseHeaders(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    // content-length is kept: the body is passed through unchanged, so it stays right.
    if (name === 'content-length' || !HOP_BY_HOP.has(name)) out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/** The MCP session a request belongs to: its `Mcp-Session-Id` header ('' for none). */
export function mcpSessionScope(req: http.IncomingMessage): string {
  const session = req.headers['mcp-session-id'];
  return typeof session === 'string' ? session : '';
}

/** The path of a request-target without its query (which may carry secrets), for events. */
export function pathOnly(url: string | undefined): string {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  return excerpt(q < 0 ? raw : raw.slice(0, q), 200);
}

/** Answer the client with a small JSON error (the shape MCEC uses for its own non-200 answers). */
export function sendError(
  res: http.ServerResponse,
  status: number,
  error: string,
  contentType = 'application/json; charset=utf-8',
): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify({ error });
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function parseBounded(answer: BoundedMessage): unknown {
  const whole = answer.whole();
  return whole === null ? undefined : parseAnswer(whole);
}
