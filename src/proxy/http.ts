/** A recording HTTP proxy for MCEC's `POST /mcp`: forwards bytes unchanged and records each JSON-RPC exchange. */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkRecordLimit, DEFAULT_MAX_RECORD_BYTES } from './bounded.js';
import { isRecorderNotification } from './declarations.js';
import { endpointPathRejection, hostOriginRejection, isLoopbackHost } from './gates.js';
import { type ForwardContext, forwardRequest, pathOnly, sendError } from './http-forward.js';
import { classifyMessage, excerpt } from './jsonrpc.js';
import { type ProxyRecorder, rememberSecret } from './recorder-port.js';
import { DEFAULT_TIMEOUT_MS, timeoutPolicy } from './timeouts.js';
import { WireRecording } from './wire-recording.js';

/** Options of {@link startHttpProxy}. */
export interface HttpProxyOptions {
  /** Where the proxy listens; default 127.0.0.1:5152 (port 0 picks a free one). */
  listen?: { host?: string; port?: number };
  /** The MCEC endpoint, e.g. `http://127.0.0.1:5151/mcp`. */
  target: string;
  recorder: ProxyRecorder;
  /** Largest request body forwarded; larger ones get 413 (default 1 MiB, like the server). */
  maxBodyBytes?: number;
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
export const DEFAULT_LATE_ANSWER_MS = 10 * 60_000;
export { DEFAULT_TIMEOUT_MS };

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
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  if (!isLoopbackHost(listenHost) && !allowNonLoopback) {
    throw new ProxyConfigError(
      `refusing to listen on non-loopback host ${listenHost} (pass --allow-remote / allowNonLoopback to allow it)`,
    );
  }
  if (!Number.isInteger(listenPort) || listenPort < 0 || listenPort > 65535) {
    throw new ProxyConfigError(`bad listen port: ${listenPort}`);
  }
  try {
    checkRecordLimit(maxRecordBytes);
  } catch (err) {
    throw new ProxyConfigError((err as Error).message);
  }
  // A request body is read whole before it is forwarded: it must fit in what can be recorded.
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > maxRecordBytes) {
    throw new ProxyConfigError(
      `the request body limit must be 1 to ${maxRecordBytes} bytes (the recording limit), got ${maxBodyBytes}`,
    );
  }
  let timeouts: ReturnType<typeof timeoutPolicy>;
  try {
    timeouts = timeoutPolicy(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, options.toolTimeoutsMs);
  } catch (err) {
    throw new ProxyConfigError((err as Error).message);
  }

  const recorder = options.recorder;
  const wire = new WireRecording(recorder, 'http');
  const ctx: ForwardContext = {
    target,
    agent: new http.Agent({ keepAlive: true, maxFreeSockets: 16 }),
    wire,
    timeouts,
    lateAnswerMs: options.lateAnswerMs ?? DEFAULT_LATE_ANSWER_MS,
    maxRecordBytes,
    inFlight: new Set(),
  };
  const knownSecrets = new Set<string>();
  let port = listenPort;

  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    req.on('error', () => {});
    // MCEC runs only POSTs to its endpoint; its own order is method, path, Host, Origin, token. Anything but
    // POST is passed through (MCEC answers 405). A POST to any path but the exact endpoint is refused here
    // with MCEC's own 404: MCEC normalizes paths, so forwarding it could run a call unchecked, unrecorded.
    const post = req.method === 'POST';
    const pathRejection = post ? endpointPathRejection(req.url, target.pathname) : null;
    if (pathRejection !== null) {
      sendError(res, 404, `Not found: only POST ${target.pathname} is supported`, 'application/json');
      wire.proxyError({ status: 404, reason: pathRejection, method: req.method, path: pathOnly(req.url) });
      req.resume();
      return;
    }
    const rejection = !post
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
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      // A notification for the recorder itself: recorded, not forwarded, answered as MCP answers notifications.
      if (post && isRecorderNotification(body)) return acceptDeclaration(res, body);
      forwardRequest(ctx, req, res, body, post);
    });
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  function acceptDeclaration(res: http.ServerResponse, body: Buffer): void {
    const message = classifyMessage(body.toString('utf8'));
    if (message.kind === 'notification') wire.notification(message.message, new Date());
    res.writeHead(202, { 'Content-Length': '0' });
    res.end();
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
        for (const abort of [...ctx.inFlight]) abort();
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
