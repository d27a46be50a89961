/**
 * The evidence server on a transport: stdio (an MCP client starts `mcec-bundle mcp`), or Streamable HTTP on
 * `POST /mcp`, stateless (a fresh SDK server and transport per request, nothing kept between requests),
 * behind the proxies' gates: loopback only unless allowed, the same Host/Origin checks, a bearer token when
 * one is set (required off loopback unless the operator opted out), a 1 MiB body limit.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { bearerMatches, hostOriginRejection, isLoopbackHost } from '../wire/gates.js';
import { DrainingTransport } from './draining-transport.js';
import { createEvidenceServer, type EvidenceServerOptions } from './server.js';

/** Largest request body read (MCEC's and the proxy's limit). */
const MAX_BODY_BYTES = 1024 * 1024;
const ENDPOINT = '/mcp';

/** Serve on stdin/stdout until stdin closes and every request read is answered, or the transport closes. */
export async function serveStdio(options: EvidenceServerOptions): Promise<void> {
  const server = createEvidenceServer(options);
  const transport = new DrainingTransport(new StdioServerTransport());
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    // The client closed its end (EOF): every request it wrote before that is still answered.
    process.stdin.once('end', () => void transport.idle().then(resolve));
  });
  await server.connect(transport);
  await closed;
  await server.close();
}

/** Options of {@link serveHttp}. */
export interface HttpServeOptions extends EvidenceServerOptions {
  host: string;
  port: number;
  /** Listen on a non-loopback host and skip the loopback Host check (default false). */
  allowRemote?: boolean;
  /**
   * Every request must send `Authorization: Bearer <token>` (401 otherwise). Required on a non-loopback
   * host unless `unauthenticated` is set.
   */
  token?: string;
  /** Serve a non-loopback host without a token: anyone who reaches the port reads every recording. */
  unauthenticated?: boolean;
}

/** A running HTTP server. */
export interface EvidenceHttpServer {
  /** `http://host:port/mcp`. */
  readonly url: string;
  close(): Promise<void>;
}

/** JSON-RPC's "Invalid Request" and "Parse error" codes. */
const INVALID_REQUEST = -32600;
const PARSE_ERROR = -32700;

function reply(res: http.ServerResponse, status: number, message: string, code = INVALID_REQUEST): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Read a JSON body of at most MAX_BODY_BYTES; null after answering the client when it is not one. */
async function readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      reply(res, 413, `request body over ${MAX_BODY_BYTES} bytes`);
      req.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    reply(res, 400, `Parse error: the body is not JSON (${(err as Error).message})`, PARSE_ERROR);
    return null;
  }
}

/** Serve Streamable HTTP on `POST /mcp` (JSON answers); resolves once listening. */
export async function serveHttp(options: HttpServeOptions): Promise<EvidenceHttpServer> {
  const host = options.host.startsWith('[') ? options.host.slice(1, -1) : options.host;
  if (!isLoopbackHost(host) && !options.allowRemote) {
    throw new Error(`refusing to listen on non-loopback host ${host} (pass --allow-remote to allow it)`);
  }
  if (options.token === '') throw new Error('the bearer token is empty: give a token, or none');
  if (!isLoopbackHost(host) && options.token === undefined && !options.unauthenticated) {
    throw new Error(
      `refusing to serve non-loopback host ${host} without a bearer token (give a token, or opt out explicitly)`,
    );
  }
  const token = options.token;
  let port = options.port;
  const httpServer = http.createServer(async (req, res) => {
    // A refusal drains the body and closes the connection, so a keep-alive client's next request is clean.
    const refuse = (status: number, message: string) => {
      req.resume();
      res.setHeader('connection', 'close');
      reply(res, status, message);
    };
    try {
      const rejection = hostOriginRejection(
        { host: req.headers.host, origin: req.headers.origin },
        port,
        options.allowRemote ?? false,
      );
      if (rejection) return refuse(403, rejection);
      if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
        res.setHeader('www-authenticate', 'Bearer realm="mcec-bundle mcp"');
        return refuse(401, 'Unauthorized: send Authorization: Bearer <the token mcec-bundle mcp was given>');
      }
      const q = (req.url ?? '').indexOf('?');
      if ((q < 0 ? req.url : req.url!.slice(0, q)) !== ENDPOINT)
        return refuse(404, `not found: use POST ${ENDPOINT}`);
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        return refuse(405, 'this server is stateless: POST only');
      }
      const body = await readBody(req, res);
      if (body === null) return;
      const server = createEvidenceServer(options);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      (options.log ?? ((l: string) => process.stderr.write(`${l}\n`)))(
        `mcec-bundle mcp: ${(err as Error).stack ?? String(err)}`,
      );
      reply(res, 500, 'internal error');
    }
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port, host, () => resolve());
  });
  port = (httpServer.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}${ENDPOINT}`,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
