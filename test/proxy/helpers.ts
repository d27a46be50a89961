/** Shared helpers of the proxy suites: raw HTTP posts and a recorder that keeps what it was given. */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  ProxyExchangeMeta,
  ProxyOversizeAnswer,
  ProxyPendingExchange,
  ProxyRecorder,
} from '../../src/proxy/recorder-port.js';

/** One answer as bytes. */
export interface RawAnswer {
  status: number;
  contentType: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** POST `body` to `url` with node:http (no client-side rewriting) and collect the answer's bytes. */
export function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            headers: res.headers,
            body: Buffer.concat(parts),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What a {@link CollectingRecorder} was told. */
export interface Collected {
  begun: Array<{ request: unknown; meta?: ProxyExchangeMeta }>;
  completed: Array<{ request: unknown; response: unknown }>;
  failed: Array<{ request: unknown; reason: string }>;
  /** timedOut / clientLeft / cancelled notes, in order. */
  notes: Array<{ request: unknown; kind: 'timedOut' | 'clientLeft' | 'cancelled'; reason: string }>;
  oversize: Array<{ request: unknown; answer: ProxyOversizeAnswer }>;
  /** Events of an exchange (streamed notifications, server requests with the client's replies). */
  callEvents: Array<{ request: unknown; kind: string; detail: Record<string, unknown> }>;
  exchanges: Array<{ request: unknown; response: unknown }>;
  /** `mcpSessionId`: the MCP session the proxy filed it under (HTTP's Mcp-Session-Id), when it named one. */
  events: Array<{ kind: string; detail: Record<string, unknown>; mcpSessionId?: string }>;
  secrets: string[];
  closed: number;
}

/** A recorder that only keeps what the proxy hands it, to assert on the proxy's side of the contract. */
export function collectingRecorder(): ProxyRecorder & {
  collected: Collected;
  event(
    sessionId: string | undefined,
    kind: string,
    detail: Record<string, unknown>,
    meta?: Pick<ProxyExchangeMeta, 'mcpSessionId'>,
  ): void;
  rememberHeaderSecret(secret: string): void;
} {
  const collected: Collected = {
    begun: [],
    completed: [],
    failed: [],
    notes: [],
    oversize: [],
    callEvents: [],
    exchanges: [],
    events: [],
    secrets: [],
    closed: 0,
  };
  return {
    collected,
    beginExchange(request: unknown, meta?: ProxyExchangeMeta): ProxyPendingExchange {
      collected.begun.push({ request, meta });
      return {
        complete: (response) => collected.completed.push({ request, response }),
        fail: (reason) => collected.failed.push({ request, reason }),
        timedOut: (reason) => collected.notes.push({ request, kind: 'timedOut', reason }),
        clientLeft: (reason) => collected.notes.push({ request, kind: 'clientLeft', reason }),
        cancelled: (reason) => collected.notes.push({ request, kind: 'cancelled', reason }),
        tooLarge: (answer) => collected.oversize.push({ request, answer }),
        note: (kind, detail) => collected.callEvents.push({ request, kind, detail }),
      };
    },
    recordExchange(request, response) {
      collected.exchanges.push({ request, response });
    },
    room: () => undefined,
    event(_sessionId, kind, detail, meta) {
      if (meta?.mcpSessionId === undefined) collected.events.push({ kind, detail });
      else collected.events.push({ kind, detail, mcpSessionId: meta.mcpSessionId });
    },
    rememberHeaderSecret(secret) {
      collected.secrets.push(secret);
    },
    async close() {
      collected.closed++;
    },
  };
}

/** Start a plain node:http server on an ephemeral loopback port. */
export async function startServer(
  handler: http.RequestListener,
): Promise<{ url: string; port: number; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port that nothing listens on (bound, then released). */
export async function deadPort(): Promise<number> {
  const s = await startServer(() => {});
  await s.close();
  return s.port;
}

/** Resolve after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Wait until `check` returns true (polling), or throw after `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}
