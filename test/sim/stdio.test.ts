import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulator, MAX_IN_FLIGHT } from '../../src/sim/index.js';
import { envelopeFrom, tempDir, toolsCall } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** Serve a simulator over in-memory streams and collect each response line with the time it came out. */
function serve() {
  const sim = createSimulator({ seed: 2, sessionsRoot: path.join(tmp.dir, 's'), pollMs: 10 });
  const input = new PassThrough();
  const output = new PassThrough();
  const out: Array<{ at: number; msg: Record<string, unknown> }> = [];
  let buffered = '';
  output.setEncoding('utf8');
  output.on('data', (t: string) => {
    buffered += t;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      out.push({ at: Date.now(), msg: JSON.parse(buffered.slice(0, nl)) });
      buffered = buffered.slice(nl + 1);
    }
  });
  const done = sim.serveStdio(input, output);
  return { input, out, done };
}

const slow = (id: number) => toolsCall(id, 'wait-for', { window: 'Notepad', value: 'Never', timeout: 300 });
const ping = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });

describe('serveStdio', () => {
  it('runs up to 16 requests at once: a ping behind 15 slow calls overtakes them', async () => {
    const { input, out, done } = serve();
    for (let i = 1; i < MAX_IN_FLIGHT; i++) input.write(`${slow(i)}\n`);
    input.write(`${ping(100)}\n`);
    input.end();
    await done;
    expect(out).toHaveLength(MAX_IN_FLIGHT);
    expect(out[0]!.msg.id).toBe(100); // the slow ones cannot finish before their 300 ms
  });

  it('holds the 17th request until a slot frees', async () => {
    const { input, out, done } = serve();
    const t0 = Date.now();
    for (let i = 1; i <= MAX_IN_FLIGHT; i++) input.write(`${slow(i)}\n`);
    input.write(`${ping(100)}\n`);
    input.end();
    await done;
    expect(out).toHaveLength(MAX_IN_FLIGHT + 1);
    const pong = out.findIndex((o) => o.msg.id === 100);
    expect(pong).toBeGreaterThan(0);
    expect(out[pong]!.at - t0).toBeGreaterThanOrEqual(280);
    for (const o of out.filter((x) => x.msg.id !== 100))
      expect(envelopeFrom((o.msg as { result: never }).result).env.error?.code).toBe(
        'wait-condition-timeout',
      );
  });

  it('skips blank lines, accepts CRLF, and resolves at end of input with nothing in flight', async () => {
    const { input, out, done } = serve();
    input.write(`\n   \n${ping(1)}\r\n${ping(2)}`); // the last line has no newline: read at end of input
    input.end();
    await done;
    expect(out.map((o) => o.msg.id).sort()).toEqual([1, 2]);
  });
});
