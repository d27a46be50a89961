/**
 * A client behind a proxy declares steps and a verdict with `notifications/mcec-recorder/*`: both proxies
 * record them in the session and never forward them (the simulator's input is tapped to check that).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DeclarationFilter, MAX_DECLARATION_BYTES } from '../../src/proxy/declarations.js';
import { createRecorder } from '../../src/record/index.js';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { waitFor } from '../proxy/helpers.js';
import { sessionIdFrom } from '../proxy/sim-script.js';
import { events, expectEventsValid, sessionDirs } from '../record/helpers.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { stdioProxy } from '../support/stdio-proxy.js';
import { send, simBehindHttpProxy, toolCall } from './helpers.js';

const TAP_CHILD = fileURLToPath(new URL('./fixtures/sim-stdio-tap.mjs', import.meta.url));

const temp = tempDirPerTest('mcec-verdict-');

const note = (method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', method: `notifications/mcec-recorder/${method}`, params });

function sessionDir(sessionsDir: string, id: string): string {
  return path.join(sessionsDir, sessionDirs(sessionsDir).find((d) => d.endsWith(`-${id}`))!);
}

describe('notifications/mcec-recorder/* through the HTTP proxy', () => {
  it('records steps and a verdict, answers 202 with no body, and never forwards them', async () => {
    const rig = await simBehindHttpProxy(temp.dir);
    let sid = '';
    try {
      sid = sessionIdFrom((await send(rig.url, toolCall(1, 'session-start', {}))).text);
      await send(rig.url, toolCall(2, 'capture', { window: 'Video Player', sessionId: sid }));
      const answers = [
        await send(
          rig.url,
          note('step', { sessionId: sid, name: 'check the player', status: 'failed', detail: 'black' }),
        ),
        await send(
          rig.url,
          note('verdict', { sessionId: sid, passed: false, reason: 'the player stayed black' }),
        ),
        await send(rig.url, note('verdict', { sessionId: sid, passed: 'no' })), // malformed: a fault, not a verdict
        await send(rig.url, note('nonsense', { sessionId: sid })),
      ];
      for (const a of answers) expect(a).toEqual({ status: 202, text: '' });
      // Any other notification still reaches MCEC.
      await send(rig.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      await send(rig.url, toolCall(3, 'session-end', { sessionId: sid }));
    } finally {
      await rig.close();
    }
    expect(rig.received.some((b) => b.includes('mcec-recorder'))).toBe(false);
    expect(rig.received.some((b) => b.includes('notifications/initialized'))).toBe(true);
    expect(rig.received).toHaveLength(4);

    const dir = sessionDir(rig.sessionsDir, sid);
    expect(events(dir, 'step').map((e) => e.data)).toEqual([
      { name: 'check the player', status: 'failed', detail: 'black' },
    ]);
    expect(events(dir, 'verdict').map((e) => e.data)).toEqual([
      { passed: false, reason: 'the player stayed black', via: 'notification' },
    ]);
    expect(events(dir, 'protocol-fault').map((e) => e.data)).toEqual([
      {
        code: -32602,
        message: 'notifications/mcec-recorder/verdict: passed must be true or false',
        id: null,
        method: 'notifications/mcec-recorder/verdict',
        transport: 'http',
      },
      expect.objectContaining({ code: -32602, method: 'notifications/mcec-recorder/nonsense' }),
    ]);
    expectEventsValid(dir);
    const summary = await summarizeSession(dir);
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReasons[0]).toBe('declared failed by the client: the player stayed black');
    expect(summary.steps.map((s) => [s.name, s.status])).toEqual([['check the player', 'failed']]);
  });

  it("without a sessionId, declares into the connection's current session", async () => {
    const rig = await simBehindHttpProxy(temp.dir);
    let sid = '';
    try {
      sid = sessionIdFrom((await send(rig.url, toolCall(1, 'session-start', {}))).text);
      await send(rig.url, toolCall(2, 'find', { window: 'Save As', value: 'Save', sessionId: sid }));
      await send(rig.url, note('step', { name: 'pick Save', status: 'passed' }));
      await send(rig.url, note('verdict', { passed: true, reason: 'the ambiguity is expected' }));
      await send(rig.url, toolCall(3, 'session-end', { sessionId: sid }));
    } finally {
      await rig.close();
    }
    const dir = sessionDir(rig.sessionsDir, sid);
    const summary = await summarizeSession(dir);
    expect(summary.verdict).toBe('PASS');
    expect(summary.verdictReason).toMatch(
      /^declared passed by the client: the ambiguity is expected; overriding: /,
    );
    expect(summary.steps.map((s) => s.name)).toEqual(['pick Save']);
  });
});

/** Collects a stream's lines. */
function lines(stream: Readable): () => string[] {
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  return () => Buffer.concat(parts).toString('utf8').split('\n').filter(Boolean);
}

describe('notifications/mcec-recorder/* through the stdio proxy', () => {
  it('records them and keeps them from the server, passing every other byte on unchanged', async () => {
    const tap = path.join(temp.dir, 'tap.bin');
    const sessionsDir = path.join(temp.dir, 'recorded');
    const recorder = createRecorder({ sessionsDir, transport: 'stdio' });
    const { stdin, stdout, exit } = stdioProxy(recorder, [TAP_CHILD, path.join(temp.dir, 'sim'), tap]);
    const out = lines(stdout);
    const forwarded: string[] = [];
    const request = async (line: string) => {
      const before = out().length;
      stdin.write(`${line}\n`);
      forwarded.push(`${line}\n`);
      await waitFor(() => out().length > before);
      return out()[before]!;
    };
    const sid = sessionIdFrom(await request(toolCall(1, 'session-start', {})));
    await request(toolCall(2, 'capture', { window: 'Video Player', sessionId: sid }));
    stdin.write(`${note('step', { sessionId: sid, name: 'check the player', status: 'failed' })}\r\n`);
    // A declaration split across writes, and one in the same write as a request.
    const verdict = note('verdict', { sessionId: sid, passed: false, reason: 'black again' });
    stdin.write(verdict.slice(0, 20));
    await new Promise((r) => setTimeout(r, 20));
    stdin.write(`${verdict.slice(20)}\n${toolCall(3, 'windows', { sessionId: sid })}\n`);
    forwarded.push(`${toolCall(3, 'windows', { sessionId: sid })}\n`);
    await waitFor(() => out().length === 3);
    const initialized = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
    stdin.write(`${initialized}\n`);
    forwarded.push(`${initialized}\n`);
    await request(toolCall(4, 'session-end', { sessionId: sid }));
    // The last line has no newline: it still reaches the server when the input ends.
    stdin.end(toolCall(5, 'windows', {}));
    forwarded.push(toolCall(5, 'windows', {}));
    expect(await exit).toBe(0);

    expect(fs.readFileSync(tap, 'utf8')).toBe(forwarded.join(''));
    const dir = sessionDir(sessionsDir, sid);
    expect(events(dir, 'step').map((e) => e.data)).toEqual([{ name: 'check the player', status: 'failed' }]);
    expect(events(dir, 'verdict').map((e) => e.data)).toEqual([
      { passed: false, reason: 'black again', via: 'notification' },
    ]);
    expectEventsValid(dir);
    const summary = await summarizeSession(dir);
    expect(summary.verdict).toBe('FAIL');
    expect(summary.verdictReasons[0]).toBe('declared failed by the client: black again');
  });
});

describe('DeclarationFilter', () => {
  const text = (parts: Buffer[]) => Buffer.concat(parts).toString('utf8');

  it('holds a line until its newline and drops it only when it is a recorder notification', () => {
    const f = new DeclarationFilter();
    const decl = note('verdict', { passed: true });
    expect(text(f.push(Buffer.from('{"jsonrpc":"2.0","id":1,')))).toBe('');
    expect(text(f.push(Buffer.from(`"method":"ping"}\n${decl}\n{"a":`)))).toBe(
      '{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    );
    // Named like ours but a request (it has an id): not a notification, so it goes on.
    const request = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'notifications/mcec-recorder/step' });
    expect(text(f.push(Buffer.from(`1}\n${request}\n`)))).toBe(`{"a":1}\n${request}\n`);
    expect(text(f.push(Buffer.from(decl)))).toBe('');
    expect(text(f.end())).toBe('');
    const g = new DeclarationFilter();
    g.push(Buffer.from('not json'));
    expect(text(g.end())).toBe('not json');
  });

  it('streams a line longer than a declaration can be instead of holding it whole', () => {
    const f = new DeclarationFilter();
    const big = Buffer.alloc(MAX_DECLARATION_BYTES + 10, 'a');
    const head = Buffer.from('{"method":"notifications/mcec-recorder/step","x":"');
    expect(text(f.push(head))).toBe('');
    const first = f.push(big);
    expect(Buffer.concat(first).length).toBe(head.length + big.length);
    expect(text(f.push(Buffer.from('"}\n')))).toBe('"}\n');
    // The next line is judged afresh.
    expect(text(f.push(Buffer.from(`${note('step', { name: 'a', status: 'passed' })}\n`)))).toBe('');
  });
});
