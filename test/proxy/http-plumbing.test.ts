import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpProxy } from '../../src/proxy/http.js';
import { collectingRecorder, deadPort, post, sleep, startServer, waitFor } from './helpers.js';

// Targets written here by hand cover what a simulator cannot be asked to do: hang, die, speak non-JSON.
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function proxyTo(target: string, extra: { timeoutMs?: number; maxBodyBytes?: number } = {}) {
  const recorder = collectingRecorder();
  const proxy = await startHttpProxy({ listen: { host: '127.0.0.1', port: 0 }, target, recorder, ...extra });
  cleanups.push(() => proxy.close());
  return { proxy, recorder, collected: recorder.collected };
}

describe('HTTP proxy plumbing', () => {
  it('passes status, content type, headers and body bytes through, and never forwards hop-by-hop headers', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const target = await startServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'X-Mcec': 'yes' });
        res.end('{"jsonrpc":"2.0","id":7,"result":{"x":"\\u002B"}}');
      });
    });
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url);
    const answer = await post(proxy.url, '{"jsonrpc":"2.0","id":7,"method":"ping"}', {
      Authorization: 'Bearer s3cret-token',
      'Proxy-Authorization': 'Basic xyz',
    });
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('application/json; charset=utf-8');
    expect(answer.headers['x-mcec']).toBe('yes');
    expect(answer.body.toString()).toBe('{"jsonrpc":"2.0","id":7,"result":{"x":"\\u002B"}}');
    expect(seen[0]!.authorization).toBe('Bearer s3cret-token');
    expect(seen[0]!.host).toBe(`127.0.0.1:${target.port}`);
    expect(seen[0]!['proxy-authorization']).toBeUndefined();
    await waitFor(() => collected.completed.length === 1);
    expect(collected.completed[0]!.response).toEqual({ jsonrpc: '2.0', id: 7, result: { x: '+' } });
    expect(collected.begun[0]!.meta?.transport).toBe('http');
    expect(collected.secrets).toContain('s3cret-token');
    expect(JSON.stringify({ ...collected, secrets: [] })).not.toContain('s3cret');
  });

  it("sends a JSON answer's status and headers before its body when the body stalls, and the whole answer once it comes", async () => {
    let finish: () => void = () => {};
    const target = await startServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '27' });
        res.flushHeaders();
        finish = () => res.end('{"jsonrpc":"2.0","id":1,"result":{}}'.slice(0, 27));
      });
    });
    cleanups.push(() => target.close());
    const { proxy } = await proxyTo(target.url);
    const url = new URL(proxy.url);
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    const headersCame = new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(
        url,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
    const res = await headersCame; // the body is still held back by the target
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('27');
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((resolve) => res.on('end', () => resolve()));
    finish();
    await ended;
    expect(Buffer.concat(chunks).toString()).toBe('{"jsonrpc":"2.0","id":1,"re');
  });

  it('answers 502 when the target is down, and records it', async () => {
    const { proxy, collected } = await proxyTo(`http://127.0.0.1:${await deadPort()}/mcp`);
    const answer = await post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/unreachable/);
    expect(collected.events.find((e) => e.kind === 'proxy-error')?.detail.status).toBe(502);
    expect(collected.failed[0]!.reason).toMatch(/502/);
  });

  it('answers 504 when the target is too slow, and records it', async () => {
    const target = await startServer(() => {}); // never answers
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url, { timeoutMs: 150 });
    const answer = await post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/150 ms/);
    expect(collected.events.find((e) => e.kind === 'proxy-error')?.detail.status).toBe(504);
  });

  it('answers 413 for a body over the limit without forwarding it', async () => {
    let hits = 0;
    const target = await startServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url, { maxBodyBytes: 1024 });
    const big = `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"${'a'.repeat(5000)}"}}`;
    const answer = await post(proxy.url, big);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/1024/);
    // chunked (no Content-Length): cut off while streaming
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = http.request(proxy.url, { method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(500));
      req.end();
    });
    expect(chunked).toBe(413);
    expect(hits).toBe(0);
    expect(collected.events.filter((e) => e.detail.status === 413)).toHaveLength(2);
    // the proxy still works afterwards
    expect((await post(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"ping"}')).status).toBe(200);
  });

  it('rejects a foreign Host or Origin with 403 and does not forward', async () => {
    let hits = 0;
    const target = await startServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    cleanups.push(() => target.close());
    const { proxy } = await proxyTo(target.url);
    const a = await post(proxy.url, '{}', { Host: 'evil.example:80' });
    const b = await post(proxy.url, '{}', { Origin: 'https://evil.example' });
    expect([a.status, b.status]).toEqual([403, 403]);
    expect(hits).toBe(0);
  });

  it('refuses a non-loopback listen host unless allowed', async () => {
    await expect(
      startHttpProxy({
        listen: { host: '0.0.0.0', port: 0 },
        target: 'http://127.0.0.1:1/mcp',
        recorder: collectingRecorder(),
      }),
    ).rejects.toThrow(/non-loopback/);
    await expect(
      startHttpProxy({ listen: { port: 0 }, target: 'ftp://x/mcp', recorder: collectingRecorder() }),
    ).rejects.toThrow(/http/);
  });

  it('survives a client that disconnects mid-call and still records the answer', async () => {
    const target = await startServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end('{"jsonrpc":"2.0","id":1,"result":{"late":true}}'), 200));
    });
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url);
    await new Promise<void>((resolve) => {
      const req = http.request(proxy.url, { method: 'POST' });
      req.on('error', () => resolve());
      req.end('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait-for","arguments":{}}}');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    await waitFor(() => collected.completed.length === 1);
    expect(collected.completed[0]!.response).toMatchObject({ result: { late: true } });
    expect((await post(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"ping"}')).status).toBe(200);
  });

  it('passes a non-JSON answer through and records a non-JSON request as a protocol fault', async () => {
    const target = await startServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'Content-Type': 'text/plain' });
        res.end('nope');
      });
    });
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url);
    const answer = await post(proxy.url, 'this is not json');
    expect(answer.status).toBe(400);
    expect(answer.body.toString()).toBe('nope');
    await waitFor(() => collected.events.some((e) => e.kind === 'protocol-fault'));
    expect(collected.begun).toHaveLength(0);
  });

  it('close() fails exchanges still in flight', async () => {
    const target = await startServer(() => {});
    cleanups.push(() => target.close());
    const recorder = collectingRecorder();
    const proxy = await startHttpProxy({ listen: { port: 0 }, target: target.url, recorder });
    const call = post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}').catch((e: Error) => e);
    await waitFor(() => recorder.collected.begun.length === 1);
    await proxy.close();
    expect(await call).toBeInstanceOf(Error);
    expect(recorder.collected.failed[0]!.reason).toBe('proxy closed');
    await sleep(10);
  });

  it('a cancel names its request by id: without an MCP session id, only when one request in flight has it', async () => {
    // A server without session ids (MCEC): each request waits until the test answers it.
    const held: http.ServerResponse[] = [];
    const target = await startServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        if (body.includes('notifications/cancelled')) {
          res.writeHead(202).end();
          return;
        }
        held.push(res);
      });
    });
    cleanups.push(() => target.close());
    const { proxy, collected } = await proxyTo(target.url);
    const call = (tool: string) =>
      post(
        proxy.url,
        JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: tool } }),
      );
    const cancel = () =>
      post(
        proxy.url,
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 5, reason: 'r' },
        }),
      );
    // Two clients' requests with the same id: a cancel could be either's, so it marks neither.
    const first = call('a');
    const second = call('b');
    await waitFor(() => held.length === 2);
    await cancel();
    await waitFor(() => collected.exchanges.length === 1);
    expect(collected.notes.filter((n) => n.kind === 'cancelled')).toEqual([]);
    for (const res of held.splice(0)) res.end('{"jsonrpc":"2.0","id":5,"result":{"content":[]}}');
    await Promise.all([first, second]);
    // One request with that id: the cancel is its.
    const third = call('c');
    await waitFor(() => held.length === 1);
    await cancel();
    await waitFor(() => collected.notes.some((n) => n.kind === 'cancelled'));
    expect(collected.notes.filter((n) => n.kind === 'cancelled')).toEqual([
      expect.objectContaining({ reason: 'the client cancelled the call (notifications/cancelled): r' }),
    ]);
    held.pop()!.end('{"jsonrpc":"2.0","id":5,"result":{"content":[]}}');
    await third;
  });

  it('close() with a call in flight says nothing of the target: the proxy cut that connection, the target did not', async () => {
    let upstreamClosed!: () => void;
    const cut = new Promise<void>((resolve) => {
      upstreamClosed = resolve;
    });
    let arrived = false;
    const target = await startServer((_req, res) => {
      arrived = true;
      res.on('close', () => upstreamClosed());
    });
    cleanups.push(() => target.close());
    const notices: string[] = [];
    const recorder = collectingRecorder();
    const proxy = await startHttpProxy({
      listen: { port: 0 },
      target: target.url,
      recorder,
      onNotice: (line) => notices.push(line),
    });
    const call = post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}').catch((e: Error) => e);
    // Closed only once the target has the request: cut before it, the target sees no request to close.
    await waitFor(() => recorder.collected.begun.length === 1 && arrived);
    await proxy.close();
    expect(await call).toBeInstanceOf(Error);
    // The target saw its connection closed: the proxy's own destroy of it has been reported by then.
    await cut;
    await new Promise((resolve) => setImmediate(resolve));
    expect(notices.filter((n) => n.includes('unreachable'))).toEqual([]);
    expect(recorder.collected.failed.map((f) => f.reason)).toEqual(['proxy closed']);
  });
});

describe('HTTP proxy pacing', () => {
  /** A recorder with no room until `release()`; `asked` counts the requests that waited for it. */
  function roomlessRecorder() {
    const recorder = collectingRecorder();
    const waiting: Array<() => void> = [];
    recorder.room = () => new Promise<void>((resolve) => waiting.push(resolve));
    return {
      recorder,
      asked: () => waiting.length,
      release: () => {
        for (const resolve of waiting.splice(0)) resolve();
      },
    };
  }

  /** A target that keeps every body it gets (in `seen`) and answers it with `answer(body)`. */
  async function bodyKeepingTarget(answer: (body: string) => string) {
    const seen: string[] = [];
    const target = await startServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        seen.push(body);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(answer(body));
      });
    });
    cleanups.push(() => target.close());
    return { url: target.url, seen };
  }

  it('does not forward a request whose client left while it waited for room (nor after close())', async () => {
    const { url: targetUrl, seen } = await bodyKeepingTarget(() => '{"jsonrpc":"2.0","id":1,"result":{}}');
    const { recorder, asked, release } = roomlessRecorder();
    const proxy = await startHttpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      target: targetUrl,
      recorder,
    });
    cleanups.push(() => proxy.close());

    // The client gives up while its request waits for room.
    const client = http.request(proxy.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
    });
    client.on('error', () => {});
    client.end('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"click"}}');
    await waitFor(() => asked() === 1);
    client.destroy();
    await sleep(50);
    release();
    // The proxy closes while another waits.
    const call = post(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}').catch((e: Error) => e);
    await waitFor(() => asked() === 1);
    await proxy.close();
    expect(await call).toBeInstanceOf(Error);
    release();
    await sleep(100);
    expect(seen).toEqual([]);
    expect(recorder.collected.begun).toHaveLength(0);
    const left = recorder.collected.events.filter((e) => e.kind === 'proxy-error');
    expect(left.map((e) => e.detail.reason)).toEqual([
      'client left before the request was forwarded',
      'client left before the request was forwarded',
    ]);
  });

  it('forwards a request that came while an earlier one waited for room after it, not before', async () => {
    const { url: targetUrl, seen } = await bodyKeepingTarget((body) =>
      body.replace('"method":"tools/list"', '"result":{}'),
    );
    const recorder = collectingRecorder();
    let release = () => {};
    let asked = 0;
    // No room for the first request; room again (past the high mark, not yet the low one) for the second.
    recorder.room = () => {
      asked += 1;
      if (asked > 1) return undefined;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    };
    const proxy = await startHttpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      target: targetUrl,
      recorder,
    });
    cleanups.push(() => proxy.close());
    const first = post(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    await waitFor(() => asked === 1);
    const second = post(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}');
    await waitFor(() => asked === 2);
    await sleep(50);
    release();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(seen.map((body) => JSON.parse(body).id)).toEqual([1, 2]);
  });
});
