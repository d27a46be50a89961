import { describe, expect, it } from 'vitest';
import { sessionIdOf } from '../../src/contract/index.js';
import { createSimulator } from '../../src/sim/index.js';

describe('sessionIdOf', () => {
  it('reads the id MCEC gave a session from a CallToolResult and from the JSON-RPC response around it', async () => {
    const sim = createSimulator({ seed: 7 });
    const started = await sim.callTool('session-start', {});
    const envelope = JSON.parse((started.content.at(-1) as { text: string }).text) as { sessionId: string };
    expect(envelope.sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(sessionIdOf(started)).toBe(envelope.sessionId);

    const rpc = await sim.handle({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'windows', arguments: { sessionId: envelope.sessionId } },
    });
    expect(sessionIdOf(rpc)).toBe(envelope.sessionId);
  });

  it('reads bare envelopes and legacy results, and names no session for faults and junk', () => {
    expect(sessionIdOf({ sessionId: 'abc123def456', ok: true, result: {} })).toBe('abc123def456');
    expect(sessionIdOf({ sessionId: null, ok: true, result: {} })).toBeUndefined();
    expect(sessionIdOf({ jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'no' } })).toBeUndefined();
    expect(sessionIdOf('not a result')).toBeUndefined();
    expect(sessionIdOf(undefined)).toBeUndefined();
  });
});
