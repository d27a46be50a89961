/**
 * Routing as MCEC means its ids (mcec-wire §8), through both proxies in front of the simulator: real HTTP,
 * and a real stdio child process. The same conversation runs through each; the recorded sessions must say
 * where the agent was.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/index.js';
import { createRecorder, type Recorder } from '../../src/record/index.js';
import { listSessionSummaries } from '../../src/sessions/list.js';
import { summarizeSession } from '../../src/sessions/summarize.js';
import { bundleValidators, readZip } from '../bundle/helpers.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { simBehindHttpProxy } from '../support/sim-http-proxy.js';
import { SIM_STDIO_CHILD, stdioProxy } from '../support/stdio-proxy.js';
import { post, waitFor } from './helpers.js';
import { type RecordedSession, readSessions } from './sim-script.js';

const temp = tempDirPerTest('mcec-');

/** One JSON-RPC message out; its answer (or null when none is expected). */
type Send = (message: string, answered?: boolean) => Promise<Record<string, unknown> | null>;

interface Transport {
  recorder: Recorder;
  notices: string[];
  send: Send;
  /** Stop the transport; resolves once the recorder is closed. */
  stop(): Promise<void>;
}

function newRecorder(transport: 'http' | 'stdio'): { recorder: Recorder; notices: string[] } {
  const notices: string[] = [];
  const recorder = createRecorder({
    sessionsDir: path.join(temp.dir, 'recorded'),
    transport,
    stderr: (line) => notices.push(line),
  });
  return { recorder, notices };
}

async function httpTransport(): Promise<Transport> {
  const { recorder, notices } = newRecorder('http');
  const proxy = await simBehindHttpProxy(temp.dir, { recorder });
  return {
    recorder,
    notices,
    async send(message) {
      const answer = await post(proxy.url, message);
      const text = answer.body.toString('utf8');
      return answer.status === 200
        ? (JSON.parse(text) as Record<string, unknown>)
        : { httpStatus: answer.status };
    },
    stop: () => proxy.close(),
  };
}

async function stdioTransport(): Promise<Transport> {
  const { recorder, notices } = newRecorder('stdio');
  const lines: string[] = [];
  let buffered = '';
  const { stdin, stdout, exit } = stdioProxy(recorder, [SIM_STDIO_CHILD, path.join(temp.dir, 'sim')]);
  stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      lines.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      nl = buffered.indexOf('\n');
    }
  });
  let read = 0;
  return {
    recorder,
    notices,
    async send(message, answered = true) {
      stdin.write(`${message}\n`);
      if (!answered) return null;
      // One request at a time: the next line is its answer.
      await waitFor(() => lines.length > read);
      return JSON.parse(lines[read++]!) as Record<string, unknown>;
    },
    async stop() {
      stdin.end();
      expect(await exit).toBe(0);
    },
  };
}

const rpc = (id: unknown, method: string, params?: unknown) => {
  const m: Record<string, unknown> = { jsonrpc: '2.0', method };
  if (id !== undefined) m.id = id;
  if (params !== undefined) m.params = params;
  return JSON.stringify(m);
};
const call = (id: unknown, name: string, args: Record<string, unknown> = {}) =>
  rpc(id, 'tools/call', { name, arguments: args });

/** The envelope of a tools/call answer. */
function envelope(answer: Record<string, unknown> | null): {
  sessionId: string;
  ok: boolean;
  error?: { code: string };
} {
  const result = answer!.result as { content: Array<{ text?: string }> };
  return JSON.parse(result.content[result.content.length - 1]!.text!);
}

/** The conversation, with what the simulator said; the same for both transports. */
async function converse(t: Transport) {
  const init = await t.send(
    rpc(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    }),
  );
  await t.send(rpc(undefined, 'notifications/initialized'), false);
  await t.send(rpc(2, 'tools/list'));
  // protocol faults before any tool call
  expect(((await t.send('this is not json'))!.error as { code: number }).code).toBe(-32700);
  expect(((await t.send(rpc(3, 'bogus/method')))!.error as { code: number }).code).toBe(-32601);

  const def = envelope(await t.send(call(4, 'windows'))).sessionId;
  const sid = envelope(await t.send(call(5, 'session-start'))).sessionId;
  expect(
    envelope(await t.send(call(6, 'find', { window: 'Save As', value: 'Save', sessionId: sid }))).error?.code,
  ).toBe('selector-matched-3');
  await t.send(call(7, 'send_command', { command: 'sim:emergency-stop on', sessionId: sid }));
  const stopped = envelope(await t.send(call(8, 'capture', { window: 'Notepad', sessionId: sid })));
  expect(stopped).toMatchObject({ sessionId: def, error: { code: 'emergency-stopped' } });
  await t.send(call(9, 'send_command', { command: 'sim:emergency-stop off', sessionId: sid }));
  const unknown = envelope(await t.send(call(10, 'find', { value: 'x', sessionId: 'feedfeedfeed' })));
  expect(unknown).toMatchObject({ sessionId: 'feedfeedfeed', error: { code: 'unknown-session' } });
  expect(envelope(await t.send(call(11, 'provision-session', { sessionId: 'install-0001' }))).sessionId).toBe(
    def,
  );
  // id-less and null-id tools/calls: MCEC runs them and answers with id null
  const idless = await t.send(call(undefined, 'displays', { sessionId: sid }));
  expect(idless).toMatchObject({ id: null, result: { isError: false } });
  expect(envelope(idless).sessionId).toBe(sid);
  const nullId = await t.send(call(null, 'windows'));
  expect(nullId).toMatchObject({ id: null });
  expect(envelope(nullId).sessionId).toBe(def);
  // a handler fault on a tools/call: -32603 on stdio, HTTP 500 over HTTP
  await t.send(call(14, 'send_command', { command: 'sim:throw', sessionId: sid }));
  expect(envelope(await t.send(call(15, 'session-end', { sessionId: sid })))).toMatchObject({ ok: true });
  return { def, sid, instructions: (init!.result as { instructions: string }).instructions };
}

function byId(sessions: RecordedSession[], id: string): RecordedSession {
  const s = sessions.find((x) => x.session.session_id === id);
  if (!s)
    throw new Error(
      `no recorded session ${id} among ${sessions.map((x) => x.session.session_id).join(', ')}`,
    );
  return s;
}

for (const [name, start] of [
  ['HTTP', httpTransport],
  ['stdio', stdioTransport],
] as const) {
  describe(`routing through the ${name} proxy`, () => {
    it('files every call where MCEC ran it, with the handshake in the first session and no phantom', async () => {
      const t = await start();
      const { def, sid, instructions } = await converse(t);
      await t.stop();

      const sessions = readSessions(path.join(temp.dir, 'recorded'));
      // exactly the two sessions the agent used: no handshake-only session, none for a rejected id or an install
      expect(sessions.map((s) => s.session.session_id).sort()).toEqual([def, sid].sort());
      const d = byId(sessions, def);
      const s = byId(sessions, sid);

      expect(d.calls.map((c) => [c.tool, c.status, c.rpc_id])).toEqual([
        ['windows', 'ok', '4'],
        ['provision-session', 'failed', '11'], // provisioning not authorized (the simulator's default), in the default session
        ['windows', 'ok', 'null'],
      ]);
      const fault = name === 'stdio' ? '-32603' : 'proxy-error';
      expect(s.calls.map((c) => [c.tool, c.status, c.error_code, c.rpc_id])).toEqual([
        ['session-start', 'ok', null, '5'],
        ['find', 'failed', 'selector-matched-3', '6'],
        ['send_command', 'ok', null, '7'],
        ['capture', 'failed', 'emergency-stopped', '8'],
        ['send_command', 'ok', null, '9'],
        ['find', 'failed', 'unknown-session', '10'],
        ['displays', 'ok', null, null],
        ['send_command', 'fault', fault, '14'],
        ['session-end', 'ok', null, '15'],
      ]);
      // the rejected id is named by the stored envelope and the error detail
      const rejected = s.calls[5]!;
      expect(JSON.parse(rejected.envelope!).sessionId).toBe('feedfeedfeed');
      expect(rejected.error_detail).toContain('feedfeedfeed');
      // the emergency stop shows where the agent was
      expect(s.events.filter((e) => e.kind === 'emergency-stop').map((e) => e.call_seq)).toEqual([4]);
      expect(d.events.some((e) => e.kind === 'emergency-stop')).toBe(false);

      // the handshake and the faults before any call went into the first session a call landed in
      expect(d.events.filter((e) => e.kind === 'exchange').map((e) => e.detail.method)).toEqual([
        'initialize',
        'notifications/initialized',
        'tools/list',
        null,
        'bogus/method',
      ]);
      expect(
        d.events.filter((e) => e.kind === 'protocol-fault').map((e) => [e.call_seq, e.detail.code]),
      ).toEqual([
        [null, -32700],
        [null, -32601],
      ]);
      if (name === 'stdio') {
        expect(
          s.events.filter((e) => e.kind === 'protocol-fault').map((e) => [e.call_seq, e.detail.code]),
        ).toEqual([[8, -32603]]);
      }

      // the server's environment in every session
      const sha = createHash('sha256').update(instructions).digest('hex');
      for (const x of [d, s]) {
        expect(JSON.parse(x.session.environment).server).toEqual({
          name: 'MCEC',
          version: '3.0.0-sim',
          protocolVersion: '2025-06-18',
          // MCEC's connect-time map (the note is left to the redaction rules)
          commandAccess: expect.objectContaining({
            enabledTools: expect.arrayContaining(['capture', 'record']),
            gatedTools: ['launch'],
            enabledRawCommands: [],
          }),
          instructionsSha256: sha,
        });
      }

      // environment.json of a bundle carries it too, valid against its schema
      const bundle = await buildBundle(s.dir, { output: path.join(temp.dir, 's.zip') });
      const envFile = (await readZip(bundle.bundle)).find((e) => e.name.endsWith('environment.json'))!;
      const environment = JSON.parse(envFile.data.toString('utf8'));
      expect(environment.server.instructionsSha256).toBe(sha);
      expect(bundleValidators().environment(environment)).toEqual([]);

      // the summary of the agent's session names the stop and the fault, and fails
      const summary = await summarizeSession(s.dir);
      expect(summary.events.emergencyStop).toBe(true);
      expect(summary.failures.map((f) => f.seq)).toEqual(expect.arrayContaining([4, 8]));
      expect(summary.verdict).toBe('FAIL');
      const listed = await listSessionSummaries(path.join(temp.dir, 'recorded'));
      expect(listed.map((l) => l.id).sort()).toEqual([def, sid].sort());
      expect(t.notices.join('\n')).not.toMatch(/no tool call followed/);
    });

    it('a run with only a handshake writes no session and says what it saw on stderr', async () => {
      const t = await start();
      await t.send(rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {} }));
      await t.send(rpc(2, 'tools/list'));
      await t.send('{"jsonrpc":"2.0","id":3,');
      await t.stop();
      const dir = path.join(temp.dir, 'recorded');
      expect(fs.existsSync(dir) ? fs.readdirSync(dir) : []).toEqual([]);
      const notice = t.notices.join('\n');
      expect(notice).toMatch(/no tool call followed the handshake/);
      expect(notice).toContain('initialize');
      expect(notice).toContain('-32700');
    });
  });
}
