/**
 * Streamed answers (MCP's Streamable HTTP) through the HTTP proxy: passed through live, headers at once,
 * recorded message by message; GET streams outlive the call timeout; client replies are replies.
 */

import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpProxy, startHttpProxy } from '../../src/proxy/index.js';
import { SseParser } from '../../src/proxy/sse.js';
import { collectingRecorder, post, sleep, startServer, waitFor } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function proxyTo(target: string, recorder = collectingRecorder(), timeoutMs = 150_000) {
  const proxy: HttpProxy = await startHttpProxy({
    target,
    recorder,
    listen: { port: 0 },
    timeoutMs,
  });
  cleanups.push(() => proxy.close());
  return { proxy, recorder };
}

function sse(message: unknown, id?: string): string {
  return `event: message\n${id ? `id: ${id}\n` : ''}data: ${JSON.stringify(message)}\n\n`;
}

/** Open a request and resolve when its status line and headers arrive (the body is read on). */
function openStream(
  url: string,
  method: string,
  body: string | undefined,
  headers: Record<string, string> = {},
): Promise<{
  res: http.IncomingMessage;
  at: number;
  chunks: Array<{ at: number; text: string }>;
  req: http.ClientRequest;
}> {
  return new Promise((resolve, reject) => {
    const chunks: Array<{ at: number; text: string }> = [];
    const req = http.request(
      url,
      {
        method,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        res.on('data', (c: Buffer) => chunks.push({ at: performance.now(), text: c.toString('utf8') }));
        res.on('error', () => {});
        resolve({ res, at: performance.now(), chunks, req });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('SseParser', () => {
  it('splits events on any line ending, joins data lines, skips comments, and bounds an event', () => {
    const events: unknown[] = [];
    const parser = new SseParser((e) => events.push(e), 40);
    const text = `: ping\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: 7\rdata:x\r\rdata: ${'y'.repeat(60)}\n\ndata: z\n`;
    // Byte by byte: line endings and UTF-8 split across chunks.
    for (const byte of Buffer.from(`${text}\ndata: é\n\n`)) parser.push(Buffer.from([byte]));
    parser.end();
    expect(events).toEqual([
      { kind: 'data', data: '{"a":\n1}' },
      { kind: 'data', data: 'x' },
      { kind: 'oversize', bytes: expect.any(Number) },
      { kind: 'data', data: 'z' },
      { kind: 'data', data: 'é' },
    ]);
  });
});

describe('HTTP proxy: streamed answers', () => {
  it('sends a streamed answer`s headers at once and each event as it comes, and records it message by message', async () => {
    let headersSentAt = 0;
    let firstEventSentAt = 0;
    let answerSentAt = 0;
    const replies: unknown[] = [];
    const server = await startServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const message = JSON.parse(Buffer.concat(parts).toString('utf8'));
        if (!('method' in message)) {
          replies.push(message); // the client's reply to our sampling request
          res.writeHead(202).end();
          return;
        }
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
          'mcp-session-id': 's-1',
        });
        res.flushHeaders();
        headersSentAt = performance.now();
        setTimeout(() => {
          firstEventSentAt = performance.now();
          res.write(
            sse(
              {
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { progressToken: 'p1', progress: 1, total: 2 },
              },
              'e1',
            ),
          );
          res.write(
            sse(
              {
                jsonrpc: '2.0',
                id: 0,
                method: 'sampling/createMessage',
                params: { maxTokens: 5, messages: [] },
              },
              'e2',
            ),
          );
        }, 1000);
        setTimeout(() => {
          answerSentAt = performance.now();
          res.end(
            sse(
              { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'done' }] } },
              'e3',
            ),
          );
        }, 3000);
      });
    });
    cleanups.push(server.close);
    const { proxy, recorder } = await proxyTo(server.url, collectingRecorder(), 500);

    const call = {
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'slow', arguments: {}, _meta: { progressToken: 'p1' } },
    };
    const stream = await openStream(proxy.url, 'POST', JSON.stringify(call), { 'mcp-session-id': 's-1' });
    const headersLag = stream.at - headersSentAt;
    expect(stream.res.statusCode).toBe(200);
    expect(stream.res.headers['content-type']).toBe('text/event-stream');
    expect(stream.res.headers['mcp-session-id']).toBe('s-1');
    // The client's reply to the sampling request, on its own POST (as MCP clients send it).
    await waitFor(() => stream.chunks.some((c) => c.text.includes('sampling/createMessage')), 10_000);
    const firstChunkLag = stream.chunks[0]!.at - firstEventSentAt;
    const reply = await post(
      proxy.url,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        result: { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' },
      }),
      { 'mcp-session-id': 's-1' },
    );
    expect(reply.status).toBe(202);
    await waitFor(() => stream.res.complete);
    const body = stream.chunks.map((c) => c.text).join('');

    // Headers long before the answer (the 500 ms timeout does not cut the live stream), events as they come.
    expect(headersLag).toBeLessThan(1000);
    expect(firstChunkLag).toBeLessThan(1000);
    expect(answerSentAt - headersSentAt).toBeGreaterThan(2500);
    expect(body).toContain('"result"');
    expect(replies).toHaveLength(1);

    const c = recorder.collected;
    await waitFor(() => c.completed.length === 1);
    expect(c.completed[0]!.response).toEqual({
      jsonrpc: '2.0',
      id: 5,
      result: { content: [{ type: 'text', text: 'done' }] },
    });
    expect(c.failed).toEqual([]);
    expect(c.callEvents.map((e) => [e.kind, e.detail.method])).toEqual([
      ['notification', 'notifications/progress'],
      ['server-request', 'sampling/createMessage'],
    ]);
    expect(c.callEvents[1]!.detail).toMatchObject({
      id: 0,
      result: { model: 'm' },
      params: { maxTokens: 5 },
    });
    // No proxy error, no protocol fault: the reply is a reply.
    expect(c.events.filter((e) => e.kind === 'proxy-error' || e.kind === 'protocol-fault')).toEqual([]);
    console.log(
      `streamed answer: headers +${headersLag.toFixed(1)} ms, first event +${firstChunkLag.toFixed(1)} ms after the server sent them`,
    );
  }, 30_000);

  it('passes a GET stream through with no timeout and DELETE unchanged, recording what the server sends on it', async () => {
    const deletes: string[] = [];
    const server = await startServer((req, res) => {
      if (req.method === 'DELETE') {
        deletes.push(String(req.headers['mcp-session-id']));
        res.writeHead(200, { 'content-type': 'text/plain' }).end('bye');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      setTimeout(
        () =>
          res.write(
            sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }),
          ),
        900,
      );
    });
    cleanups.push(server.close);
    const { proxy, recorder } = await proxyTo(server.url, collectingRecorder(), 200);
    const start = performance.now();
    const stream = await openStream(proxy.url, 'GET', undefined);
    expect(performance.now() - start).toBeLessThan(1000);
    await waitFor(() => stream.chunks.length > 0, 10_000);
    await sleep(300); // well past the 200 ms call timeout and its silences
    expect(stream.res.destroyed).toBe(false);
    expect(stream.chunks.map((c) => c.text).join('')).toContain('notifications/message');
    await waitFor(() => recorder.collected.events.some((e) => e.kind === 'notification'));
    expect(recorder.collected.events.filter((e) => e.kind === 'proxy-error')).toEqual([]);
    stream.req.destroy();

    const del = await post(proxy.url, '', { 'mcp-session-id': 's-9' }, 'DELETE');
    expect(del.status).toBe(200);
    expect(del.body.toString()).toBe('bye');
    expect(deletes).toEqual(['s-9']);
  }, 30_000);

  it("an event over the recording limit that no call takes is an oversize-message of its stream's MCP session", async () => {
    const big = (data: string) =>
      sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });
    const server = await startServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (req.method === 'GET') {
          res.end(big('g'.repeat(6000)));
          return;
        }
        // Before the answer (it could have been the answer: held until the stream ends), the answer, after it.
        res.write(big('b'.repeat(5000)));
        res.write(sse({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } }));
        res.end(big('a'.repeat(7000)));
      });
    });
    cleanups.push(server.close);
    const recorder = collectingRecorder();
    const proxy = await startHttpProxy({
      target: server.url,
      recorder,
      listen: { port: 0 },
      maxRecordBytes: 4096,
      maxBodyBytes: 4096,
    });
    cleanups.push(() => proxy.close());
    const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } });
    expect((await post(proxy.url, call, { 'mcp-session-id': 'client-a' })).status).toBe(200);
    const stream = await openStream(proxy.url, 'GET', undefined, { 'mcp-session-id': 'client-b' });
    await waitFor(() => stream.res.complete);

    const oversize = () => recorder.collected.events.filter((e) => e.kind === 'oversize-message');
    await waitFor(() => oversize().length === 3);
    const seen = oversize().map((e) => [e.mcpSessionId, e.detail.direction, e.detail.limit, e.detail.bytes]);
    expect(seen).toEqual([
      ['client-a', 'answer', 4096, expect.any(Number)],
      ['client-a', 'answer', 4096, expect.any(Number)],
      ['client-b', 'answer', 4096, expect.any(Number)],
    ]);
    // Each event's own size: the one after the answer at once, the one held before it once the stream ended.
    expect(seen.map((x) => Math.round((x[3] as number) / 1000))).toEqual([7, 5, 6]);
    expect(recorder.collected.completed).toHaveLength(1);
    expect(recorder.collected.oversize).toEqual([]);
  });

  it('fails a call whose event stream ends without its answer', async () => {
    const server = await startServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'bye' } }),
        );
      });
    });
    cleanups.push(server.close);
    const { proxy, recorder } = await proxyTo(server.url);
    const answer = await post(
      proxy.url,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } }),
    );
    expect(answer.status).toBe(200);
    await waitFor(() => recorder.collected.failed.length === 1);
    expect(recorder.collected.failed[0]!.reason).toMatch(/event stream ended without an answer/);
    expect(recorder.collected.callEvents.map((e) => e.detail.method)).toEqual(['notifications/message']);
  });
});
