import { describe, expect, it } from 'vitest';
import { BoundedMessage, EDGE_BYTES, peekAnswer } from '../../src/proxy/bounded.js';
import { LineSplitter } from '../../src/proxy/lines.js';
import { formatDuration, timeoutFor, timeoutPolicy } from '../../src/proxy/timeouts.js';
import { endpointPathRejection, normalizedPath } from '../../src/wire/gates.js';

const MiB = 1024 * 1024;
const call = (name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('per-tool timeouts', () => {
  const policy = timeoutPolicy(150_000, { record: 90_000, 'wait-for': 600_000 });

  it('takes the tool setting, else the default; non-tool requests get the default', () => {
    expect(timeoutFor(policy, call('record'))).toEqual({ ms: 90_000, source: 'tool', tool: 'record' });
    expect(timeoutFor(policy, call('windows'))).toEqual({ ms: 150_000, source: 'default', tool: 'windows' });
    expect(timeoutFor(policy, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).toEqual({
      ms: 150_000,
      source: 'default',
    });
    expect(timeoutFor(policy, undefined).ms).toBe(150_000);
  });

  it("raises the default to the call's own timeout plus 30 s, but never overrides a tool setting", () => {
    expect(timeoutFor(policy, call('find', { timeout: 200_000 }))).toEqual({
      ms: 230_000,
      source: 'argument',
      tool: 'find',
    });
    expect(timeoutFor(policy, call('windows', { timeoutMs: 125_000 })).ms).toBe(155_000);
    expect(timeoutFor(policy, call('find', { timeout: 5000 })).ms).toBe(150_000);
    expect(timeoutFor(policy, call('wait-for', { timeout: 900_000 })).ms).toBe(600_000);
    // hostile arguments: not numbers, negative, huge
    expect(timeoutFor(policy, call('find', { timeout: '9e99' })).ms).toBe(150_000);
    expect(timeoutFor(policy, call('find', { timeout: -5 })).ms).toBe(150_000);
    expect(timeoutFor(policy, call('find', { timeout: 1e300 })).ms).toBe(150_000);
    expect(timeoutFor(policy, call('find', { timeout: 2 ** 52 })).ms).toBe(24 * 3_600_000);
  });

  it("counts a record one-shot's durationMs like a timeout argument (the operator may raise MCEC's 60 s limit)", () => {
    const plain = timeoutPolicy(150_000);
    expect(timeoutFor(plain, call('record', { action: 'oneshot', durationMs: 300_000 }))).toEqual({
      ms: 330_000,
      source: 'argument',
      tool: 'record',
    });
    expect(timeoutFor(plain, call('record', { durationMs: 60_000 })).ms).toBe(150_000);
    // Only record's durationMs is a wait; a per-tool setting still wins.
    expect(timeoutFor(plain, call('drag', { durationMs: 300_000 })).ms).toBe(150_000);
    expect(timeoutFor(policy, call('record', { durationMs: 300_000 })).ms).toBe(90_000);
  });

  it('formats durations for messages', () => {
    expect([formatDuration(250), formatDuration(150_000), formatDuration(90_500)]).toEqual([
      '250 ms',
      '150 s',
      '90.5 s',
    ]);
  });
});

describe('request paths', () => {
  it('forwards only the exact endpoint path, with or without a query', () => {
    expect(endpointPathRejection('/mcp', '/mcp')).toBeNull();
    expect(endpointPathRejection('/mcp?x=1&y=/../z', '/mcp')).toBeNull();
    for (const p of ['/./mcp', '/%2e/mcp', '/x/../mcp', '//mcp', '/MCP', '/m%63p', '/mcp#x', '\\mcp']) {
      expect(endpointPathRejection(p, '/mcp'), p).toMatch(/reads as \/mcp once normalized/);
    }
    expect(endpointPathRejection('http://127.0.0.1:5152/mcp', '/mcp')).toMatch(/normalized/);
    for (const p of ['/mcp/', '/mcpx', '/', '', '/x/mcp', undefined]) {
      expect(endpointPathRejection(p, '/mcp'), String(p)).toBe('path is not /mcp');
    }
  });

  it('normalizes like a lenient server would, only to name a refusal', () => {
    expect(normalizedPath('/a/./b/../c//d?q#f')).toBe('/a/c/d');
    expect(normalizedPath('/%2E%2e/mcp')).toBe('/mcp');
    expect(normalizedPath('http://evil.example:80/x/../mcp')).toBe('/mcp');
    expect(normalizedPath('/mcp/')).toBe('/mcp/');
  });
});

describe('bounded messages and lines', () => {
  it('keeps a message whole up to the cap, then only its edges', () => {
    const small = new BoundedMessage(10);
    small.push(Buffer.from('12345'));
    small.push(Buffer.from('67890'));
    expect(small.whole()?.toString()).toBe('1234567890');
    const big = new BoundedMessage(MiB);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let maxHeld = 0;
    for (let i = 0; i < 160; i++) {
      big.push(chunk);
      maxHeld = Math.max(maxHeld, big.heldBytes);
    }
    big.push(Buffer.from('THE-END'));
    expect(big.oversize).toBe(true);
    expect(big.whole()).toBeNull();
    expect(big.bytes).toBe(160 * 64 * 1024 + 7);
    expect(maxHeld).toBeLessThanOrEqual(MiB + chunk.length);
    expect(big.heldBytes).toBe(2 * EDGE_BYTES);
    const edges = big.edges();
    expect(edges.tail.subarray(-7).toString()).toBe('THE-END');
    expect(edges.head.length).toBe(EDGE_BYTES);
  });

  it('passes an over-cap line on as edges without ever holding it whole', () => {
    const lines: string[] = [];
    const oversize: Array<{ bytes: number; head: string; tail: string }> = [];
    const splitter = new LineSplitter((l) => lines.push(l.toString()), {
      maxLineBytes: MiB,
      onOversizeLine: (e) =>
        oversize.push({
          bytes: e.bytes,
          head: e.head.subarray(0, 12).toString(),
          tail: e.tail.subarray(-5).toString(),
        }),
    });
    const chunk = Buffer.alloc(64 * 1024, 0x78);
    let maxHeld = 0;
    splitter.push(Buffer.from('small one\n{"jsonrpc":'));
    for (let i = 0; i < 10 * 16; i++) {
      splitter.push(chunk);
      maxHeld = Math.max(maxHeld, splitter.heldBytes);
    }
    splitter.push(Buffer.from('}}end\nnext line\n'));
    // a whole over-cap line inside a single chunk is not handed out either
    const single = Buffer.concat([Buffer.alloc(MiB + 1, 0x79), Buffer.from('\nlast')]);
    splitter.push(single);
    splitter.end();
    expect(lines).toEqual(['small one', 'next line', 'last']);
    expect(oversize).toEqual([
      { bytes: 11 + 10 * MiB + 5, head: '{"jsonrpc":x', tail: '}}end' },
      { bytes: MiB + 1, head: 'yyyyyyyyyyyy', tail: 'yyyyy' },
    ]);
    expect(maxHeld).toBeLessThanOrEqual(MiB + chunk.length);
    expect(splitter.heldBytes).toBe(0);
  });

  it('reads the id, a JSON-RPC error and isError from the edges of an answer', () => {
    const edgesOf = (text: string) => {
      const m = new BoundedMessage(16);
      m.push(Buffer.from(text));
      return m.edges();
    };
    const filler = 'A'.repeat(200_000);
    expect(
      peekAnswer(
        edgesOf(
          `{"jsonrpc":"2.0","id":"r-\\u00e9","result":{"content":[{"type":"image","data":"${filler}"},` +
            `{"type":"text","text":"{\\"isError\\":true}"}],"isError":false}}`,
        ),
      ),
    ).toEqual({ id: 'r-é', rpcError: false, isError: false });
    expect(peekAnswer(edgesOf(`{ "id" : 42 , "error": {"code":-32603,"message":"${filler}"}}`))).toEqual({
      id: 42,
      rpcError: true,
    });
    expect(peekAnswer(edgesOf(`{"jsonrpc":"2.0","result":{"x":"${filler}"},"id":7}`))).toEqual({
      rpcError: false,
    });
    expect(peekAnswer(edgesOf('not json at all'))).toEqual({ rpcError: false });
    expect(peekAnswer(edgesOf(`{"id":null,"result":"${filler}","isError" : true}`))).toEqual({
      id: null,
      rpcError: false,
      isError: true,
    });
  });
});
