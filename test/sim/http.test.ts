import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type HttpListener, MAX_BODY_BYTES, type Simulator } from '../../src/sim/index.js';
import { envelopeFrom, isPrintableAscii, type Loose, request, tempDir, toolsCall } from './helpers.js';

const tmp = tempDir();
let sim: Simulator;
let open: HttpListener;
let guarded: HttpListener;
const TOKEN = 'tok-3f9a+/=';

beforeAll(async () => {
  sim = createSimulator({ seed: 1, sessionsRoot: path.join(tmp.dir, 'sessions'), pollMs: 10 });
  open = await sim.listenHttp({ port: 0 });
  guarded = await sim.listenHttp({ port: 0, token: TOKEN });
});
afterAll(async () => {
  await open.close();
  await guarded.close();
  tmp.cleanup();
});

/** A non-200 answer: status and the single `error` string. */
function expectRejection(answer: { status: number; text: string }, status: number): void {
  expect(answer.status).toBe(status);
  const body = JSON.parse(answer.text);
  expect(Object.keys(body)).toEqual(['error']);
  expect(typeof body.error).toBe('string');
}

describe('HTTP POST /mcp: success', () => {
  it('listens on an ephemeral loopback port and answers the JSON-RPC object with status 200', async () => {
    expect(open.port).toBeGreaterThan(0);
    expect(open.url).toBe(`http://127.0.0.1:${open.port}/mcp`);
    const a = await request(open.url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 'a', method: 'initialize', params: {} }),
    });
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(a.text);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 'a', result: { serverInfo: { name: 'MCEC' } } });
    expect(body.result.serverInfo.version).toMatch(/^3\.0\.\d+-sim$/);
    expect(typeof body.result.protocolVersion).toBe('string');
  });

  it('a capture body is the JSON-RPC response, with server escaping on the raw bytes', async () => {
    const a = await request(open.url, { body: toolsCall(7, 'capture', { window: 'Untitled - Notepad' }) });
    expect(a.status).toBe(200);
    expect(isPrintableAscii(a.text)).toBe(true);
    expect(a.text).toContain('\\u002B');
    expect(a.text).not.toContain('+');
    expect(a.text).not.toContain('<');
    const body = JSON.parse(a.text);
    expect(body.id).toBe(7);
    expect(body.result.content.map((b: Loose) => b.type)).toEqual(['image', 'text']);
    expect(body.result.isError).toBe(false);
    const { env } = envelopeFrom(body.result);
    expect(env.result!.base64).toBe(body.result.content[0].data);
  });

  it("the Notepad text comes back escaped as the server writes it (< > & ' and non-ASCII)", async () => {
    const a = await request(open.url, {
      body: toolsCall(8, 'find', { window: 'Notepad', by: 'automationid', value: '15' }),
    });
    expect(a.text).toContain('\\\\u003Cworld\\\\u003E'); // envelope JSON inside the JSON-RPC string
    expect(a.text).toContain('caf\\\\u00E9');
    const env = JSON.parse(JSON.parse(a.text).result.content[0].text);
    expect(env.result.element.value).toBe("Hello + <world> & 'friends' — café ☕ 1+1=2");
  });

  it('protocol faults come back as 200 with JSON-RPC errors', async () => {
    const parse = JSON.parse((await request(open.url, { body: '{"jsonrpc":' })).text);
    expect(parse).toMatchObject({ id: null, error: { code: -32700 } });
    const batch = JSON.parse(
      (await request(open.url, { body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]) })).text,
    );
    expect(batch).toMatchObject({ id: null, error: { code: -32600 } });
    const missing = await request(open.url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'resources/list' }),
    });
    expect(missing.status).toBe(200);
    expect(JSON.parse(missing.text)).toMatchObject({ id: 5, error: { code: -32601 } });
    const invalid = JSON.parse(
      (await request(open.url, { body: JSON.stringify({ id: 6, method: 'ping' }) })).text,
    );
    expect(invalid).toMatchObject({ id: 6, error: { code: -32600 } });
  });

  it('a notification is answered with a bare {"jsonrpc":"2.0"}', async () => {
    const a = await request(open.url, {
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.text)).toEqual({ jsonrpc: '2.0' });
  });

  it('a handler fault is 500 with an {"error"} body', async () => {
    expectRejection(
      await request(open.url, { body: toolsCall(1, 'send_command', { command: 'sim:throw' }) }),
      500,
    );
  });
});

describe('HTTP gates', () => {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

  it('405 for a method other than POST', async () => {
    expectRejection(await request(open.url, { method: 'GET' }), 405);
    expectRejection(await request(open.url, { method: 'PUT', body: ping }), 405);
  });

  it('404 for a path that is not exactly /mcp', async () => {
    for (const p of ['/', '/mcp/', '/MCP', '/mcp/x', '/other'])
      expectRejection(await request(open.url, { path: p, body: ping }), 404);
  });

  it('403 for a non-loopback Host, a wrong port, or a non-loopback Origin', async () => {
    expectRejection(await request(open.url, { body: ping, headers: { host: 'evil.example' } }), 403);
    expectRejection(
      await request(open.url, { body: ping, headers: { host: `127.0.0.1:${open.port + 1}` } }),
      403,
    );
    expectRejection(
      await request(open.url, { body: ping, headers: { origin: 'https://evil.example' } }),
      403,
    );
    expectRejection(await request(open.url, { body: ping, headers: { origin: 'null' } }), 403);
    // loopback spellings pass
    const loopback: Array<Record<string, string>> = [
      { host: `localhost:${open.port}` },
      { host: `[::1]:${open.port}` },
      { origin: 'http://localhost:3000' },
      { origin: 'http://127.0.0.1' },
      // IPv4-mapped loopback, which a URL normalizes to ::ffff:7f00:1 (refused before one rule served both)
      { origin: 'http://[::ffff:127.0.0.1]:3000' },
      { host: `[::ffff:127.0.0.1]:${open.port}` },
    ];
    for (const headers of loopback)
      expect((await request(open.url, { body: ping, headers })).status).toBe(200);
  });

  it('401 without the right bearer token when a token is configured', async () => {
    expectRejection(await request(guarded.url, { body: ping }), 401);
    expectRejection(
      await request(guarded.url, { body: ping, headers: { authorization: 'Bearer wrong' } }),
      401,
    );
    expectRejection(await request(guarded.url, { body: ping, headers: { authorization: TOKEN } }), 401);
    const ok = await request(guarded.url, { body: ping, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.text).not.toContain(TOKEN);
  });

  it('413 for a body over 1 MB, declared or chunked', async () => {
    const big = `{"jsonrpc":"2.0","id":1,"method":"ping","pad":"${'x'.repeat(MAX_BODY_BYTES)}"}`;
    expectRejection(await request(open.url, { body: big }), 413);
    expectRejection(await request(open.url, { body: big, chunked: true }), 413);
    // just under the cap is fine
    const fits = `{"jsonrpc":"2.0","id":1,"method":"ping","pad":"${'x'.repeat(MAX_BODY_BYTES - 100)}"}`;
    expect((await request(open.url, { body: fits })).status).toBe(200);
  });

  it('503 past 16 requests in flight; the 16 still complete', async () => {
    const slow = Array.from({ length: 16 }, (_, i) =>
      request(open.url, {
        body: toolsCall(i, 'wait-for', { window: 'Notepad', value: 'Never', timeout: 600 }),
      }),
    );
    await new Promise((r) => setTimeout(r, 150));
    expectRejection(await request(open.url, { body: ping }), 503);
    const answers = await Promise.all(slow);
    for (const a of answers) {
      expect(a.status).toBe(200);
      const env = JSON.parse(JSON.parse(a.text).result.content[0].text);
      expect(env.error.code).toBe('wait-condition-timeout');
    }
    expect((await request(open.url, { body: ping })).status).toBe(200);
  });

  it('refuses to bind a non-loopback address without a token', async () => {
    await expect(sim.listenHttp({ host: '0.0.0.0', port: 0 })).rejects.toThrow(/token/);
  });
});
