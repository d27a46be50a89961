/** A recording HTTP proxy for MCEC's `POST /mcp`: forwards bytes unchanged and records each JSON-RPC exchange. */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostOriginRejection, isLoopbackHost } from './gates.js';
import { classifyMessage, excerpt } from './jsonrpc.js';
import { type ProxyPendingExchange, type ProxyRecorder, rememberSecret } from './recorder-port.js';
import { sessionIdOf, WireRecording } from './wire-recording.js';

/** Options of {@link startHttpProxy}. */
export interface HttpProxyOptions {
  /** Where the proxy listens; default 127.0.0.1:5152 (port 0 picks a free one). */
  listen?: { host?: string; port?: number };
  /** The MCEC endpoint, e.g. `http://127.0.0.1:5151/mcp`. */
  target: string;
  recorder: ProxyRecorder;
  /** Largest request body forwarded; larger ones get 413 (default 1 MiB, like the server). */
  maxBodyBytes?: number;
  /** How long the target may take to answer before the client gets 504 (default 60 s). */
  timeoutMs?: number;
  /** Allow a non-loopback listen host (and skip the loopback Host check); default false. */
  allowNonLoopback?: boolean;
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
export const DEFAULT_TIMEOUT_MS = 60_000;

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

/** An error thrown for options that cannot work (bad target, non-loopback listen without permission). */
export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError';
}

/** Start a recording proxy in front of an MCEC HTTP endpoint. */
export async function startHttpProxy(options: HttpProxyOptions): Promise<HttpProxy> {
  const target = parseTarget(options.target);
  const rawHost = options.listen?.host ?? '127.0.0.1';
  const listenHost = rawHost.startsWith('[') && rawHost.endsWith(']') ? rawHost.slice(1, -1) : rawHost;
  const listenPort = options.listen?.port ?? 5152;
  const allowNonLoopback = options.allowNonLoopback ?? false;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!isLoopbackHost(listenHost) && !allowNonLoopback) {
    throw new ProxyConfigError(
      `refusing to listen on non-loopback host ${listenHost} (pass --allow-remote / allowNonLoopback to allow it)`,
    );
  }
  if (!Number.isInteger(listenPort) || listenPort < 0 || listenPort > 65535) {
    throw new ProxyConfigError(`bad listen port: ${listenPort}`);
  }

  const recorder = options.recorder;
  const wire = new WireRecording(recorder, 'http');
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 16 });
  const inFlight = new Set<() => void>();
  const knownSecrets = new Set<string>();
  let port = listenPort;

  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    req.on('error', () => {});
    // Only POST to the endpoint's path gets the proxy's own gates; the target answers anything else (405/404)
    // itself, before its Host checks, so those answers stay the same through the proxy.
    const gated = req.method === 'POST' && pathOf(req.url) === target.pathname;
    const rejection = !gated
      ? null
      : hostOriginRejection({ host: req.headers.host, origin: req.headers.origin }, port, allowNonLoopback);
    if (rejection !== null) {
      sendError(res, 403, rejection);
      wire.proxyError({ status: 403, reason: rejection });
      req.resume();
      return;
    }
    const auth = req.headers.authorization;
    if (auth && !knownSecrets.has(auth) && knownSecrets.size < 1024) {
      knownSecrets.add(auth);
      rememberSecret(recorder, auth);
      const space = auth.indexOf(' ');
      if (space > 0) rememberSecret(recorder, auth.slice(space + 1).trim());
    }
    // Bodies are bounded for every request (memory), not only for the gated endpoint.
    const declared = Number(req.headers['content-length']);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const tooLargeNow = () => {
      tooLarge = true;
      chunks.length = 0;
      sendError(res, 413, `request body over ${maxBodyBytes} bytes`);
      wire.proxyError({
        status: 413,
        reason: 'body too large',
        bytes: size || declared,
        limit: maxBodyBytes,
      });
    };
    if (Number.isFinite(declared) && declared > maxBodyBytes) tooLargeNow();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (tooLarge) {
        // Read and drop the rest so the client can finish sending and read the 413; stop a flood.
        if (size > maxBodyBytes * 16) req.destroy();
        return;
      }
      if (size > maxBodyBytes) {
        tooLargeNow();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return;
      forward(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), gated);
    });
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  function forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Buffer,
    recorded: boolean,
  ): void {
    const startedAt = new Date();
    const upstream = http.request({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req.rawHeaders, target.host, body.length),
      agent,
    });
    let responseStarted = false;
    let finished = false;
    let timedOut = false;
    let pending: ProxyPendingExchange | null = null;
    let afterAnswer: ((status: number, answer: Buffer) => void) | null = null;

    const clientGone = () => res.destroyed || res.writableEnded;
    let callSession: string | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      upstream.destroy(new Error('timeout'));
    }, timeoutMs);
    const settle = () => {
      finished = true;
      clearTimeout(timer);
      inFlight.delete(abort);
    };
    const abort = () => {
      if (finished) return;
      settle();
      upstream.destroy();
      pending?.fail('proxy closed');
      if (!clientGone()) res.destroy();
    };
    inFlight.add(abort);

    // The target failed before (502/504 to the client) or while (connection cut) sending its answer.
    const targetFailed = (reason: string, status: 502 | 504) => {
      if (finished) return;
      settle();
      wire.proxyError({ status, reason, method: req.method, path: req.url, responseStarted }, callSession);
      pending?.fail(`proxy-error ${status}: ${reason}`);
      if (clientGone()) return;
      if (responseStarted) res.destroy();
      else sendError(res, status, reason);
    };
    const timeoutReason = `target did not answer within ${timeoutMs} ms`;

    upstream.on('response', (answer) => {
      responseStarted = true;
      if (!clientGone()) {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, responseHeaders(answer.rawHeaders));
      }
      const parts: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => {
        parts.push(chunk);
        if (!clientGone()) res.write(chunk);
      });
      answer.on('end', () => {
        if (finished) return;
        settle();
        if (!clientGone()) res.end();
        afterAnswer?.(answer.statusCode ?? 0, Buffer.concat(parts));
      });
      answer.on('error', () => {});
      answer.on('close', () => {
        if (!answer.complete)
          targetFailed(timedOut ? timeoutReason : 'target cut its answer short', timedOut ? 504 : 502);
      });
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      targetFailed(
        timedOut ? timeoutReason : `target unreachable: ${err.code ?? err.message}`,
        timedOut ? 504 : 502,
      );
    });
    upstream.end(body);

    // Recording happens after the bytes left, off the path of the request; only the endpoint's traffic.
    if (!recorded) return;
    const text = body.toString('utf8');
    const message = classifyMessage(text);
    if (message.kind === 'request') {
      callSession = sessionIdOf(message.message);
      pending = wire.begin(message.message, startedAt);
      afterAnswer = (status, answer) => {
        const parsed = parseAnswer(answer);
        if (status === 200 && parsed !== undefined) pending?.complete(parsed);
        else pending?.fail(`target answered HTTP ${status}${errorText(parsed, answer)}`);
      };
    } else if (message.kind === 'notification') {
      afterAnswer = (_status, answer) =>
        wire.notification(message.message, startedAt, parseAnswer(answer) ?? null);
    } else {
      const reason = message.kind === 'invalid' ? message.reason : 'a response sent as a request';
      const parsedRequest = message.message;
      afterAnswer = (_status, answer) =>
        wire.invalid(reason, text, parsedRequest, startedAt, parseAnswer(answer));
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, listenHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  server.on('error', () => {}); // e.g. EMFILE on accept: the server keeps serving what it can
  const urlHost = listenHost.includes(':') && !listenHost.startsWith('[') ? `[${listenHost}]` : listenHost;
  let closing: Promise<void> | null = null;

  return {
    url: `http://${urlHost}:${port}${target.pathname}`,
    host: listenHost,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const abort of [...inFlight]) abort();
        server.closeAllConnections();
        agent.destroy();
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

function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  return q < 0 ? raw : raw.slice(0, q);
}

function sendError(res: http.ServerResponse, status: number, error: string): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify({ error });
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function parseAnswer(answer: Buffer): unknown {
  if (answer.length === 0) return undefined;
  try {
    return JSON.parse(answer.toString('utf8'));
  } catch {
    return undefined;
  }
}

function errorText(parsed: unknown, raw: Buffer): string {
  if (parsed && typeof parsed === 'object' && typeof (parsed as { error?: unknown }).error === 'string') {
    return `: ${excerpt((parsed as { error: string }).error)}`;
  }
  if (parsed === undefined && raw.length > 0)
    return ` (not JSON: ${excerpt(raw.subarray(0, 200).toString('utf8'), 80)})`;
  return '';
}
