/** A recording HTTP proxy for MCEC's `POST /mcp`: forwards bytes unchanged and records each JSON-RPC exchange. */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMcecName } from '../contract/server-name.js';
import { excerpt } from '../util/excerpt.js';
import {
  expectBoolean,
  expectFunction,
  expectMethods,
  expectNonEmptyString,
  expectNumber,
  expectObject,
  expectOneOf,
  expectOptions,
  expectRecord,
  expectString,
  optionRangeError,
} from '../util/expect.js';
import {
  endpointPathRejection,
  hostOriginRefusal,
  hostOriginRejection,
  isLoopbackHost,
  mcecRefusal,
  mcpRefusal,
  type Refusal,
  type TargetKind,
} from '../wire/gates.js';
import { DEFAULT_WRITE_TIMEOUT_MS } from '../wire/write-deadline.js';
import { checkRecordLimit, DEFAULT_MAX_RECORD_BYTES } from './bounded.js';
import { isRecorderNotification } from './declarations.js';
import {
  type ForwardContext,
  forwardRequest,
  mcpSessionScope,
  pathOnly,
  TargetHealth,
} from './http-forward.js';
import { classifyMessage } from './jsonrpc.js';
import {
  PROXY_RECORDER_METHODS,
  type ProxyRecorder,
  recorderRoom,
  rememberHeaderSecret,
} from './recorder-port.js';
import { DEFAULT_TIMEOUT_MS, formatDuration, TIMER_MS, timeoutPolicy, WAIT_MS } from './timeouts.js';
import { WireRecording } from './wire-recording.js';

/** Options of {@link startHttpProxy}. */
export interface HttpProxyOptions {
  /** Where the proxy listens; default 127.0.0.1:5152 (port 0 picks a free one). */
  listen?: { host?: string; port?: number };
  /** The MCEC endpoint, e.g. `http://127.0.0.1:5151/mcp`. */
  target: string;
  recorder: ProxyRecorder;
  /**
   * Largest request body forwarded; larger ones get 413. Default 1 MiB for MCEC (its own limit), 4 MiB for
   * another MCP server (the MCP SDK's); a value given here applies to either.
   */
  maxBodyBytes?: number;
  /**
   * Whose rules the proxy applies at its front door: `mcec` (MCEC's limits, texts and order: 16 requests in
   * flight, 1 MiB, Host then Origin), `mcp` (the MCP specification's: Host and Origin validation, the body
   * limit), or `auto` (default): MCEC's until an `initialize` answer through the proxy names another server.
   */
  server?: 'auto' | TargetKind;
  /** How long the target may take to begin its answer before the client gets 504 (default 150 s). */
  timeoutMs?: number;
  /** Per tool (`params.name` of a tools/call), instead of timeoutMs: e.g. `{ record: 90_000 }`. */
  toolTimeoutsMs?: Record<string, number>;
  /** After a 504, how long the proxy still waits for the answer, to record it (default 10 min). */
  lateAnswerMs?: number;
  /** Largest answer recorded; a larger one reaches the client unchanged and is recorded as oversize (256 MiB). */
  maxRecordBytes?: number;
  /** Allow a non-loopback listen host (and skip the loopback Host check); default false. */
  allowNonLoopback?: boolean;
  /**
   * How long a request body may take to arrive, from its headers (default 10 s): past it the client gets
   * 408 and its connection is closed, so clients trickling their bodies cannot hold MCEC's 16 slots.
   */
  bodyTimeoutMs?: number;
  /**
   * How long a client may take none of an answer's bytes while the proxy has some for it (default 30 s):
   * past it the proxy hangs up and writes a `proxy-error`, so a client that never reads a large answer
   * cannot hold a request slot and a connection for ever. A client that reads slowly but reads is never cut.
   */
  writeTimeoutMs?: number;
  /** Where the proxy says that its target went down or answers again (mcec-record: its stderr); default: silent. */
  onNotice?: (line: string) => void;
}

/** A running proxy. */
export interface HttpProxy {
  /** The URL clients use instead of the target's, e.g. `http://127.0.0.1:5152/mcp`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stop listening, drop connections and fail exchanges still in flight ('proxy closed'). */
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** The body limit for a server that is not MCEC: the MCP TypeScript SDK's own (`MAXIMUM_MESSAGE_SIZE`). */
export const DEFAULT_MCP_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** MCEC answers 503 past this many requests in flight (`MaxConcurrentHttpRequests`). */
export const MCEC_MAX_IN_FLIGHT = 16;
export const DEFAULT_LATE_ANSWER_MS = 10 * 60_000;
/** Default of `HttpProxyOptions.bodyTimeoutMs`. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;
export { DEFAULT_TIMEOUT_MS };

/**
 * An error thrown for options of the right type that cannot work together with this machine or target: a
 * non-loopback listen host without `allowNonLoopback`, a target that is not an http:// URL or carries
 * credentials. A wrong type is a TypeError, a number out of range a RangeError (each naming the option).
 */
export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError';
}

/** The checked settings of a proxy: what startHttpProxy's options mean. */
interface HttpSettings {
  target: URL;
  recorder: ProxyRecorder;
  listenHost: string;
  listenPort: number;
  allowNonLoopback: boolean;
  /** The body limit per kind of server. */
  maxBodyBytes: Record<TargetKind, number>;
  server: 'auto' | TargetKind;
  maxRecordBytes: number;
  timeouts: ReturnType<typeof timeoutPolicy>;
  lateAnswerMs: number;
  bodyTimeoutMs: number;
  writeTimeoutMs: number;
  onNotice: (line: string) => void;
}

const SERVER_KINDS = ['auto', 'mcec', 'mcp'] as const;

/**
 * Check the options and fill in the defaults: a TypeError or RangeError naming the first bad option, a
 * ProxyConfigError for options that cannot work (see there). Nothing is opened before.
 */
function httpSettings(options: unknown): HttpSettings {
  expectObject(options, 'options');
  expectNonEmptyString(options.target, 'options.target');
  expectMethods(options.recorder, 'options.recorder', PROXY_RECORDER_METHODS);
  const listen = expectOptions(options.listen, 'options.listen');
  expectString(listen.host, 'options.listen.host', { nonEmpty: true });
  expectNumber(listen.port, 'options.listen.port', { min: 0, max: 65535, integer: true });
  expectBoolean(options.allowNonLoopback, 'options.allowNonLoopback');
  expectOneOf(options.server, 'options.server', SERVER_KINDS);
  const maxRecordBytes = (options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES) as number;
  checkRecordLimit(maxRecordBytes, 'options.maxRecordBytes');
  // A request body is read whole before it is forwarded: it must fit in what can be recorded.
  const given = options.maxBodyBytes as number | undefined;
  expectNumber(given, 'options.maxBodyBytes', { min: 1, max: maxRecordBytes, integer: true });
  if (given === undefined && DEFAULT_MAX_BODY_BYTES > maxRecordBytes) {
    throw optionRangeError(
      `Expected options.maxRecordBytes to be at least ${DEFAULT_MAX_BODY_BYTES}, the default options.maxBodyBytes ` +
        '(or give a smaller options.maxBodyBytes)',
    );
  }
  expectNumber(options.timeoutMs, 'options.timeoutMs', TIMER_MS);
  expectRecord(options.toolTimeoutsMs, 'options.toolTimeoutsMs', (ms, name) =>
    expectNumber(ms, name, { ...TIMER_MS, required: true }),
  );
  expectNumber(options.lateAnswerMs, 'options.lateAnswerMs', WAIT_MS);
  expectNumber(options.bodyTimeoutMs, 'options.bodyTimeoutMs', TIMER_MS);
  expectNumber(options.writeTimeoutMs, 'options.writeTimeoutMs', TIMER_MS);
  expectFunction(options.onNotice, 'options.onNotice');

  const target = parseTarget(options.target as string);
  const rawHost = (listen.host as string | undefined) ?? '127.0.0.1';
  const listenHost = rawHost.startsWith('[') && rawHost.endsWith(']') ? rawHost.slice(1, -1) : rawHost;
  const allowNonLoopback = (options.allowNonLoopback as boolean | undefined) ?? false;
  if (!isLoopbackHost(listenHost) && !allowNonLoopback) {
    throw new ProxyConfigError(
      `refusing to listen on non-loopback host ${listenHost} (pass --allow-remote / allowNonLoopback to allow it)`,
    );
  }
  const limit = given ?? DEFAULT_MAX_BODY_BYTES;
  return {
    target,
    recorder: options.recorder as ProxyRecorder,
    listenHost,
    listenPort: (listen.port as number | undefined) ?? 5152,
    allowNonLoopback,
    maxBodyBytes: {
      mcec: limit,
      // The SDK's 4 MiB is no server's hard limit: a smaller recording limit bounds it.
      mcp: given ?? Math.min(DEFAULT_MCP_MAX_BODY_BYTES, maxRecordBytes),
    },
    server: (options.server as HttpSettings['server'] | undefined) ?? 'auto',
    maxRecordBytes,
    timeouts: timeoutPolicy(
      (options.timeoutMs as number | undefined) ?? DEFAULT_TIMEOUT_MS,
      options.toolTimeoutsMs as Record<string, number> | undefined,
    ),
    lateAnswerMs: (options.lateAnswerMs as number | undefined) ?? DEFAULT_LATE_ANSWER_MS,
    bodyTimeoutMs: (options.bodyTimeoutMs as number | undefined) ?? DEFAULT_BODY_TIMEOUT_MS,
    writeTimeoutMs: (options.writeTimeoutMs as number | undefined) ?? DEFAULT_WRITE_TIMEOUT_MS,
    onNotice: (options.onNotice as ((line: string) => void) | undefined) ?? (() => {}),
  };
}

/** Methods passed through on the endpoint after the Host/Origin gate (an MCP server's stream, its session end). */
const PASS_THROUGH_METHODS = new Set(['GET', 'DELETE']);

/**
 * The front door, for every method and path: true when the request may go on. Nothing but the endpoint is
 * ever forwarded: another path is refused as the server would (MCEC checks the method first: 405 for
 * anything but POST, 404 for a POST; another server: 404), since MCEC normalizes paths and any route it
 * adds later must be gated and recorded here first. On the endpoint every method passes the Host/Origin
 * gate; then POST goes on, GET and DELETE pass through, anything else gets 405.
 */
function passesGates(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  settings: HttpSettings,
  port: number,
  wire: WireRecording,
  kind: TargetKind,
): boolean {
  const method = req.method ?? '';
  const post = method === 'POST';
  const { pathname } = settings.target;
  const refuse = (refusal: Refusal, detail: Record<string, unknown>) => {
    sendRefusal(res, refusal);
    const event = { status: refusal.status, ...detail, method, path: pathOnly(req.url), server: kind };
    wire.proxyError(event, undefined, mcpSessionScope(req));
    req.resume();
    return false;
  };
  const pathRejection = endpointPathRejection(req.url, pathname);
  if (pathRejection !== null) {
    if (kind === 'mcec' && !post) return refuse(notAllowed(kind, pathname), { reason: 'method not POST' });
    const refusal =
      kind === 'mcec'
        ? mcecRefusal(404, `Not found: only POST ${pathname} is supported`)
        : mcpRefusal(404, -32000, 'Not found');
    return refuse(refusal, { reason: pathRejection });
  }
  const rejection = hostOriginRejection(
    { host: req.headers.host, origin: req.headers.origin },
    port,
    settings.allowNonLoopback,
  );
  if (rejection !== null) return refuse(hostOriginRefusal(kind, rejection), { reason: rejection });
  if (!post && !PASS_THROUGH_METHODS.has(method)) {
    return refuse(notAllowed(kind, pathname), { reason: `method ${method} not allowed` });
  }
  return true;
}

/** 405 in the server's words: MCEC's, or the MCP SDK's (`Method not allowed.`). */
function notAllowed(kind: TargetKind, pathname: string): Refusal {
  return kind === 'mcec'
    ? mcecRefusal(405, `Only POST ${pathname} is supported`)
    : mcpRefusal(405, -32000, 'Method not allowed.');
}

/** Answer the client with a refusal's exact bytes. */
function sendRefusal(res: http.ServerResponse, refusal: Refusal): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(refusal.status, {
    'Content-Type': refusal.contentType,
    'Content-Length': Buffer.byteLength(refusal.body),
  });
  res.end(refusal.body);
}

/**
 * Read a request body up to `limit` bytes (bounded for every request: memory) within `timeoutMs` of its
 * headers (bounded in time: a slot), then hand it to `onBody`. Past the limit: a 413 and a `proxy-error`;
 * the rest is read and dropped so the client can read the 413, and a flood (16 x the limit) is cut. Past
 * the deadline: a 408 and a `proxy-error`, and the connection is closed.
 */
function readBoundedBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  bounds: { limit: number; timeoutMs: number },
  kind: TargetKind,
  wire: WireRecording,
  onBody: (body: Buffer) => void,
): void {
  const { limit, timeoutMs } = bounds;
  const declared = Number(req.headers['content-length']);
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  const tooLargeNow = () => {
    tooLarge = true;
    chunks.length = 0;
    const text = `Request body exceeds ${limit} bytes`; // MCEC's words
    sendRefusal(res, kind === 'mcec' ? mcecRefusal(413, text) : mcpRefusal(413, -32600, text));
    const event = { status: 413, reason: 'body too large', bytes: size || declared, limit, server: kind };
    wire.proxyError(event, undefined, mcpSessionScope(req));
  };
  const timer = setTimeout(() => {
    if (tooLarge) {
      req.socket.destroy(); // the 413 is out and recorded; a body still trickling after it gets no second answer
      return;
    }
    chunks.length = 0;
    req.removeAllListeners('data');
    req.removeAllListeners('end');
    req.pause();
    const text = `Request body not received within ${formatDuration(timeoutMs)}`;
    res.shouldKeepAlive = false;
    sendRefusal(res, kind === 'mcec' ? mcecRefusal(408, text) : mcpRefusal(408, -32000, text));
    // The rest of the body is never read: hang up once the 408 (or an earlier 413) is out.
    if (res.writableFinished) req.socket.destroy();
    else res.once('finish', () => req.socket.destroy());
    const event = { status: 408, reason: 'body too slow', bytes: size, timeoutMs, server: kind };
    wire.proxyError(event, undefined, mcpSessionScope(req));
  }, timeoutMs);
  req.once('close', () => clearTimeout(timer));
  if (Number.isFinite(declared) && declared > limit) tooLargeNow();
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (tooLarge) {
      if (size > limit * 16) req.destroy();
      return;
    }
    if (size > limit) {
      tooLargeNow();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    clearTimeout(timer);
    if (!tooLarge) onBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
}

/**
 * Tells the recorder every request's Authorization header (and its token alone), so the redactor scrubs
 * them: into a pool of their own (512, the least recently seen forgotten first), so a token still in use is
 * never forgotten and thousands of others never push out a configured secret.
 */
function authorizationWatcher(recorder: ProxyRecorder): (auth: string | undefined) => void {
  return (auth) => {
    if (!auth) return;
    rememberHeaderSecret(recorder, auth);
    const space = auth.indexOf(' ');
    if (space > 0) rememberHeaderSecret(recorder, auth.slice(space + 1).trim());
  };
}

/**
 * A notification for the recorder itself: recorded (in the client's MCP session when it names no sessionId),
 * not forwarded, answered as MCP answers notifications.
 */
function acceptDeclaration(
  wire: WireRecording,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: Buffer,
): void {
  const message = classifyMessage(body.toString('utf8'));
  if (message.kind === 'notification')
    wire.notification(message.message, new Date(), null, mcpSessionScope(req));
  res.writeHead(202, { 'Content-Length': '0' });
  res.end();
}

/** Listen on host:port; resolves with the port bound (a free one for port 0). */
async function listen(server: http.Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => {}); // e.g. EMFILE on accept: the server keeps serving what it can
  return (server.address() as AddressInfo).port;
}

/** Start a recording proxy in front of an MCEC HTTP endpoint. */
export async function startHttpProxy(options: HttpProxyOptions): Promise<HttpProxy> {
  const settings = httpSettings(options);
  const { target, listenHost, recorder } = settings;
  const wire = new WireRecording(recorder, 'http');
  // Until an initialize answer names the server, auto means MCEC's (stricter) rules.
  let kind: TargetKind = settings.server === 'mcp' ? 'mcp' : 'mcec';
  const ctx: ForwardContext = {
    target,
    agent: new http.Agent({ keepAlive: true, maxFreeSockets: 16 }),
    wire,
    timeouts: settings.timeouts,
    lateAnswerMs: settings.lateAnswerMs,
    writeTimeoutMs: settings.writeTimeoutMs,
    maxRecordBytes: settings.maxRecordBytes,
    inFlight: new Set(),
    kind: () => kind,
    serverNamed: (name) => {
      if (settings.server === 'auto') kind = isMcecName(name) ? 'mcec' : 'mcp';
    },
    health: new TargetHealth(options.target, settings.onNotice),
  };
  const watchAuthorization = authorizationWatcher(recorder);
  let port = settings.listenPort;
  let active = 0;
  /** The last request waiting for the recorder's room, until it is forwarded (or dropped). */
  let waitingTurn: Promise<void> | undefined;

  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    req.on('error', () => {});
    active += 1;
    res.once('close', () => {
      active -= 1;
    });
    const kind = ctx.kind();
    // MCEC refuses a request past its 16th in flight before any other check: so does the proxy in its place.
    if (kind === 'mcec' && active > MCEC_MAX_IN_FLIGHT) {
      sendRefusal(res, mcecRefusal(503, `Server busy: more than ${MCEC_MAX_IN_FLIGHT} requests in flight`));
      wire.proxyError({ status: 503, reason: 'more than 16 requests in flight', server: kind });
      req.resume();
      return;
    }
    if (!passesGates(req, res, settings, port, wire, kind)) return;
    watchAuthorization(req.headers.authorization);
    const post = req.method === 'POST';
    const bounds = { limit: settings.maxBodyBytes[kind], timeoutMs: settings.bodyTimeoutMs };
    readBoundedBody(req, res, bounds, kind, wire, (body) => {
      if (post && isRecorderNotification(body)) acceptDeclaration(wire, req, res, body);
      else {
        // Behind any request still waiting (room comes back above the low mark, where waiters still wait): none
        // overtakes an earlier one. Each still waits at most ROOM_WAIT_MS from its own arrival.
        const own = recorderRoom(recorder);
        const earlier = waitingTurn;
        const room = own && earlier ? Promise.all([own, earlier]) : (own ?? earlier);
        if (!room) {
          forwardRequest(ctx, req, res, body, post);
          return;
        }
        const turn = room.then(() => {
          // Gone while it waited (it disconnected, or close() destroyed its socket, whose response may not know it
          // yet): MCEC never runs a call nobody waits for.
          if (!res.destroyed && res.socket?.destroyed === false) forwardRequest(ctx, req, res, body, post);
          else
            wire.proxyError(
              {
                reason: 'client left before the request was forwarded',
                method: req.method,
                path: pathOnly(req.url),
                server: kind,
              },
              undefined,
              mcpSessionScope(req),
            );
        });
        // Those behind it go on even if it threw (which still surfaces, unhandled, as it did before).
        const done = new Promise<void>((settle) =>
          turn.then(settle, (err: unknown) => {
            settle();
            throw err;
          }),
        );
        waitingTurn = done;
        done.then(() => {
          if (waitingTurn === done) waitingTurn = undefined;
        });
      }
    });
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  port = await listen(server, settings.listenPort, listenHost);
  const urlHost = listenHost.includes(':') && !listenHost.startsWith('[') ? `[${listenHost}]` : listenHost;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${urlHost}:${port}${target.pathname}`,
    host: listenHost,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const entry of [...ctx.inFlight]) entry.abort?.();
        server.closeAllConnections();
        ctx.agent.destroy();
      });
      return closing;
    },
  };
}

function parseTarget(target: string): URL {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ProxyConfigError(`target is not a URL: ${excerpt(target, 100)}`);
  }
  if (url.protocol !== 'http:') throw new ProxyConfigError(`target must be an http:// URL: ${url.protocol}`);
  if (url.username || url.password) throw new ProxyConfigError('target URL must not carry credentials');
  return url;
}
