/**
 * The front door per target: MCEC's exact refusals (statuses, texts, content type, Host before Origin, 16 in
 * flight, 1 MiB) in front of MCEC; the MCP specification's (Origin validation, a configurable body limit) in
 * front of any other server, chosen by what its initialize answer says (or --server).
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpProxyOptions, startHttpProxy } from '../../src/proxy/index.js';
import { collectingRecorder, post, startServer, waitFor } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A target that answers initialize as `name` and echoes the size of anything else. */
async function target(name: string, holdMs = 0) {
  const server = await startServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const message = JSON.parse(body.toString('utf8'));
      const result =
        message.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name, version: '1' } }
          : { content: [{ type: 'text', text: `${body.length} bytes` }] };
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      }, holdMs);
    });
  });
  cleanups.push(server.close);
  return server;
}

async function proxyTo(url: string, extra: Partial<HttpProxyOptions> = {}) {
  const recorder = collectingRecorder();
  const proxy = await startHttpProxy({ target: url, recorder, listen: { port: 0 }, ...extra });
  cleanups.push(() => proxy.close());
  return { proxy, recorder };
}

const initialize = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
const echo = (bytes: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'x'.repeat(bytes) } },
  });

describe('HTTP proxy gates in front of MCEC', () => {
  it("answers with MCEC's statuses, texts and content type, Host checked before Origin", async () => {
    const mcec = await target('MCEC');
    const { proxy, recorder } = await proxyTo(mcec.url);
    expect((await post(proxy.url, initialize)).status).toBe(200);

    const both = await post(proxy.url, echo(1), { Host: 'evil.example', Origin: 'https://evil.example' });
    expect([both.status, both.contentType, both.body.toString()]).toEqual([
      403,
      'application/json',
      '{"error":"Forbidden: Host must be a loopback authority"}',
    ]);
    const origin = await post(proxy.url, echo(1), { Origin: 'https://evil.example' });
    expect([origin.status, origin.contentType, origin.body.toString()]).toEqual([
      403,
      'application/json',
      '{"error":"Forbidden: cross-origin requests are not allowed"}',
    ]);
    const big = await post(proxy.url, echo(1024 * 1024));
    expect([big.status, big.contentType, big.body.toString()]).toEqual([
      413,
      'application/json',
      '{"error":"Request body exceeds 1048576 bytes"}',
    ]);
    const path = await post(proxy.url.replace(/\/mcp$/, '/other'), echo(1));
    expect([path.status, path.contentType, path.body.toString()]).toEqual([
      404,
      'application/json',
      '{"error":"Not found: only POST /mcp is supported"}',
    ]);
    await waitFor(() => recorder.collected.events.filter((e) => e.kind === 'proxy-error').length === 4);
  });

  it('answers 503 past 16 requests in flight, as MCEC does, and serves them all once they finish', async () => {
    const mcec = await target('MCEC', 4000);
    const { proxy } = await proxyTo(mcec.url);
    const answers = await Promise.all(Array.from({ length: 17 }, () => post(proxy.url, echo(1))));
    const busy = answers.filter((a) => a.status === 503);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(16);
    expect(busy.map((a) => [a.contentType, a.body.toString()])).toEqual([
      ['application/json', '{"error":"Server busy: more than 16 requests in flight"}'],
    ]);
    expect((await post(proxy.url, echo(1))).status).toBe(200);
  }, 30_000);
});

describe('HTTP proxy gates in front of another MCP server', () => {
  it('after an initialize naming another server: its body limit (4 MiB) and the MCP spec Origin rule', async () => {
    const other = await target('mcp-servers/everything');
    const { proxy } = await proxyTo(other.url);
    expect((await post(proxy.url, initialize)).status).toBe(200);
    const big = await post(proxy.url, echo(1_500_000));
    expect(big.status).toBe(200);
    expect(JSON.parse(big.body.toString()).result.content[0].text).toMatch(/^15000\d\d bytes$/);
    const origin = await post(proxy.url, echo(1), { Origin: 'https://evil.example' });
    expect(origin.status).toBe(403);
    expect(JSON.parse(origin.body.toString())).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Invalid Origin header' },
      id: null,
    });
    // No in-flight cap of MCEC's: 20 at once all pass.
    const many = await Promise.all(Array.from({ length: 20 }, () => post(proxy.url, echo(1))));
    expect(many.every((a) => a.status === 200)).toBe(true);
    const over = await post(proxy.url, echo(5 * 1024 * 1024));
    expect(over.status).toBe(413);
  }, 30_000);

  it('--server mcp with its own body limit applies from the first request', async () => {
    const other = await target('anything');
    const { proxy } = await proxyTo(other.url, { server: 'mcp', maxBodyBytes: 2000 });
    expect((await post(proxy.url, echo(1000))).status).toBe(200);
    const over = await post(proxy.url, echo(3000));
    expect(over.status).toBe(413);
    expect(JSON.parse(over.body.toString())).toMatchObject({
      error: { message: 'Request body exceeds 2000 bytes' },
    });
  });
});

describe('HTTP proxy gates on every method and path (issue 32 #12)', () => {
  /** A target that answers anything with 200 and keeps what reached it (method and request-target). */
  async function witness() {
    const reached: string[] = [];
    const server = await startServer((req, res) => {
      reached.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`target saw ${req.method}`);
      });
    });
    cleanups.push(server.close);
    return { url: server.url, reached };
  }

  /** A request with its request-target as written (a URL would have its dot segments removed first). */
  function rawPath(
    url: string,
    requestTarget: string,
    method: string,
  ): Promise<{ status: number; body: Buffer }> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, path: requestTarget, method, agent: false },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  const EVIL_HOST = { Host: 'evil.example' };
  const EVIL_ORIGIN = { Origin: 'https://evil.example' };

  for (const kind of ['mcec', 'mcp'] as const) {
    it(`${kind}: Host and Origin gate GET and DELETE too; only they pass through on the endpoint; other paths and methods are refused`, async () => {
      const t = await witness();
      const { proxy, recorder } = await proxyTo(t.url, { server: kind });
      const forbidden = (status: number, body: Buffer) => [status, JSON.parse(body.toString())];
      const hostText =
        kind === 'mcec'
          ? { error: 'Forbidden: Host must be a loopback authority' }
          : { jsonrpc: '2.0', error: { code: -32000, message: 'Invalid Host header' }, id: null };
      const originText =
        kind === 'mcec'
          ? { error: 'Forbidden: cross-origin requests are not allowed' }
          : { jsonrpc: '2.0', error: { code: -32000, message: 'Invalid Origin header' }, id: null };
      for (const method of ['GET', 'DELETE']) {
        const a = await post(proxy.url, '', EVIL_HOST, method);
        expect(forbidden(a.status, a.body), `${method} evil Host`).toEqual([403, hostText]);
        const b = await post(proxy.url, '', EVIL_ORIGIN, method);
        expect(forbidden(b.status, b.body), `${method} evil Origin`).toEqual([403, originText]);
      }
      expect(t.reached).toEqual([]);

      // After the checks, GET and DELETE on the endpoint pass through (an MCP server's stream, its session end).
      const get = await post(proxy.url, '', {}, 'GET');
      expect([get.status, get.body.toString()]).toEqual([200, 'target saw GET']);
      const del = await post(`${proxy.url}?x=1`, '', {}, 'DELETE');
      expect([del.status, del.body.toString()]).toEqual([200, 'target saw DELETE']);
      expect(t.reached).toEqual(['GET /mcp', 'DELETE /mcp?x=1']);

      // Any other method on the endpoint, and any method on any other path: refused, never forwarded.
      const methodText =
        kind === 'mcec'
          ? { error: 'Only POST /mcp is supported' }
          : { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null };
      for (const method of ['PUT', 'PATCH']) {
        const a = await post(proxy.url, '{}', {}, method);
        expect(forbidden(a.status, a.body), method).toEqual([405, methodText]);
      }
      const refusedPaths: Array<[string, string]> = [
        ['GET', '/admin'],
        ['GET', '/x/../admin'],
        ['DELETE', '/sessions'],
        ['PUT', '/anything'],
        ['GET', '/mcp/'],
        ['GET', '/./mcp'],
      ];
      for (const [method, p] of refusedPaths) {
        const a = await rawPath(proxy.url, p, method);
        // MCEC checks the method before the path: anything but POST is its 405; another server's is 404.
        const expected =
          kind === 'mcec'
            ? [405, { error: 'Only POST /mcp is supported' }]
            : [404, { jsonrpc: '2.0', error: { code: -32000, message: 'Not found' }, id: null }];
        expect(forbidden(a.status, a.body), `${method} ${p}`).toEqual(expected);
      }
      expect(t.reached).toEqual(['GET /mcp', 'DELETE /mcp?x=1']);
      // Every refusal is recorded, with its method and path.
      const refusals = recorder.collected.events.filter((e) => e.kind === 'proxy-error');
      expect(refusals.map((e) => e.detail.status)).toEqual([
        403,
        403,
        403,
        403,
        405,
        405,
        ...refusedPaths.map(() => (kind === 'mcec' ? 405 : 404)),
      ]);
      expect(refusals.at(-1)!.detail).toMatchObject({ method: 'GET', path: '/./mcp', server: kind });
    });
  }
});
