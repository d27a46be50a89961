/** `POST /mcp` over HTTP with the real server's gates and status codes (mcec-wire §4). */
import http from 'node:http';
import { isIP } from 'node:net';
import { bearerMatches, hostOriginRejection, isLoopbackHost, mcecHostOriginText } from './gates.js';
import type { JsonRpcResponse } from './json-rpc.js';
import { serializeWire } from './json-text.js';
import { DEFAULT_WRITE_TIMEOUT_MS, writeInSlices } from './write-deadline.js';

/** What the HTTP transport needs from the server. `dispatch` throws on a handler fault (answered 500). */
export interface Dispatcher {
  dispatch(msg: unknown): Promise<JsonRpcResponse | null>;
}

/** Options of listenHttp. */
export interface HttpOptions {
  /** Loopback address to bind (default 127.0.0.1). */
  host?: string;
  /** Port (default 5151; 0 picks a free one). */
  port?: number;
  /** When set, requests need `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * How long a request's body may take to arrive, from its headers (default 10 s): past it the client gets
   * 408 and its connection is closed, so clients that trickle their bodies cannot hold the request slots.
   */
  bodyTimeoutMs?: number;
  /**
   * How long a client may take none of its answer's bytes (default 30 s): past it the connection is closed,
   * so clients that stop reading cannot hold the request slots either; one that reads slowly is never cut.
   */
  writeTimeoutMs?: number;
  /**
   * Called with each request's `Authorization` header before anything else is done with it: a server that
   * records what it is sent (the replay's report) scrubs the client's credential as the recording proxy does.
   */
  onAuthorization?: (value: string) => void;
}

/** A running HTTP transport. */
export interface HttpListener {
  /** `http://<host>:<port>/mcp` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Largest request body accepted (1 MB), as the real server. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Requests served at once; past this the server answers 503. */
export const MAX_HTTP_IN_FLIGHT = 16;
/** Default of `HttpOptions.bodyTimeoutMs`. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;

/** Answer with `payload`; with `writeTimeoutMs`, a client that stops taking the bytes is hung up on. */
function send(res: http.ServerResponse, status: number, payload: unknown, writeTimeoutMs?: number): void {
  if (res.headersSent) return;
  const body = Buffer.from(serializeWire(payload), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
  writeInSlices(res, body, writeTimeoutMs);
}

type Body = { ok: true; text: string } | { ok: false; why: 'too-large' | 'too-slow' };

/**
 * Read the body, keeping at most MAX_BODY_BYTES (a larger one is drained, bounded, and reported too large),
 * within `timeoutMs` (else reported too slow, and no longer read).
 */
function readBody(req: http.IncomingMessage, timeoutMs: number): Promise<Body> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? -1);
    let tooLarge = declared > MAX_BODY_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      req.pause();
      resolve({ ok: false, why: 'too-slow' });
    }, timeoutMs);
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
      else if (size > MAX_BODY_BYTES * 16) req.destroy(); // stop draining a flood
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(
        tooLarge
          ? { ok: false, why: 'too-large' }
          : { ok: true, text: Buffer.concat(chunks).toString('utf8') },
      );
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve({ ok: false, why: 'too-large' });
    });
    req.on('close', () => clearTimeout(timer));
  });
}

/** 408 for a body that did not arrive in time; the connection is closed (the rest of the body is not read). */
function sendTooSlow(res: http.ServerResponse, timeoutMs: number): void {
  if (res.headersSent) return;
  res.shouldKeepAlive = false;
  send(res, 408, { error: `Request body not received within ${formatSeconds(timeoutMs)}` });
  // The rest of the body is never read: hang up once the 408 is out.
  if (res.writableFinished) res.req.socket.destroy();
  else res.once('finish', () => res.req.socket.destroy());
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** Serve `POST /mcp` on a loopback address until close(). */
export function listenHttp(dispatcher: Dispatcher, options: HttpOptions = {}): Promise<HttpListener> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token;
  // Like the real server: an off-box bind without a token would hand the desktop to the network.
  if (!isLoopbackHost(host) && !token)
    return Promise.reject(
      new Error(`refusing to bind ${host} without a token: use a loopback address or set a token`),
    );
  // The port asked for until the server listens, then the one it got (port 0: any free port).
  const bound = { port: options.port ?? 5151 };
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const writeTimeoutMs = options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
  const onAuthorization = options.onAuthorization;
  let inFlight = 0;
  const server = http.createServer((req, res) => {
    const authorization = req.headers.authorization;
    if (onAuthorization && authorization) onAuthorization(authorization);
    if (inFlight >= MAX_HTTP_IN_FLIGHT) {
      req.resume();
      send(res, 503, { error: `Server busy: more than ${MAX_HTTP_IN_FLIGHT} requests in flight` });
      return;
    }
    inFlight++;
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        inFlight--;
      }
    };
    res.on('finish', release);
    res.on('close', release);
    answerRequest(dispatcher, req, res, { port: bound.port, token, bodyTimeoutMs, writeTimeoutMs }).catch(
      (e: unknown) => send(res, 500, { error: (e as Error).message ?? String(e) }),
    );
  });
  return listening(server, host, bound);
}

/** The front door's refusal of a request (before its body is read), in the real server's order; null lets it in. */
function frontDoorRefusal(
  req: http.IncomingMessage,
  port: number,
  token: string | undefined,
): [status: number, error: string] | null {
  const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (req.method !== 'POST') return [405, 'Only POST /mcp is supported'];
  if (pathname !== '/mcp') return [404, 'Not found: only POST /mcp is supported'];
  const rejection = hostOriginRejection(req.headers, port, false);
  if (rejection !== null) return [403, mcecHostOriginText(rejection)];
  if (token && !bearerMatches(req.headers.authorization, token))
    return [401, 'Unauthorized: a valid bearer token is required'];
  return null;
}

/** One request: the front door, the body, then its JSON-RPC message to the dispatcher. */
async function answerRequest(
  dispatcher: Dispatcher,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  door: { port: number; token: string | undefined; bodyTimeoutMs: number; writeTimeoutMs: number },
): Promise<void> {
  const refusal = frontDoorRefusal(req, door.port, door.token);
  if (refusal) {
    req.resume();
    return send(res, refusal[0], { error: refusal[1] });
  }
  const body = await readBody(req, door.bodyTimeoutMs);
  if (!body.ok && body.why === 'too-slow') return sendTooSlow(res, door.bodyTimeoutMs);
  if (!body.ok) return send(res, 413, { error: `Request body exceeds ${MAX_BODY_BYTES} bytes` });
  let msg: unknown;
  try {
    msg = JSON.parse(body.text);
  } catch (e) {
    return send(res, 200, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: `Parse error: ${(e as Error).message}` },
    });
  }
  if (Array.isArray(msg))
    return send(res, 200, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: batches are not supported' },
    });
  const response = await dispatcher.dispatch(msg);
  // A notification has no response; the real server answers a bare {"jsonrpc":"2.0"}. Only an answer can be
  // large (a capture's bytes): the refusals above fit in a socket's buffer.
  send(res, 200, response ?? { jsonrpc: '2.0' }, door.writeTimeoutMs);
}

/** Listen, and once listening learn the real port and hand back the listener. */
function listening(server: http.Server, host: string, bound: { port: number }): Promise<HttpListener> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(bound.port, host, () => {
      server.off('error', reject);
      const addr = server.address();
      if (addr && typeof addr === 'object') bound.port = addr.port;
      const urlHost = isIP(host) === 6 ? `[${host}]` : host;
      resolve({
        url: `http://${urlHost}:${bound.port}/mcp`,
        port: bound.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
