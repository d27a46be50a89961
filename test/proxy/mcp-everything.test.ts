/**
 * Real MCP software through both proxies: the official SDK client against @modelcontextprotocol/server-everything
 * (Streamable HTTP with streamed answers, and stdio). The client gets what it gets without the proxy, and the
 * recording lists every call with its real outcome, its progress and the server's requests.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { buildToolCallLog } from '../../src/bundle/tool-call-log.js';
import { startHttpProxy } from '../../src/proxy/http.js';
import { createRecorder } from '../../src/record/index.js';
import { replaySession } from '../../src/replay/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { pidAlive } from '../../src/util/temp-files.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { deadPort, waitFor } from './helpers.js';
import { readSessions } from './sim-script.js';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const MCEC_RECORD = path.resolve('dist/cli/mcec-record.js');
const MCEC_BUNDLE = path.resolve('dist/cli/mcec-bundle.js');

const temp = tempDirPerTest('mcp-everything-');

/** server-everything over Streamable HTTP on a free port; resolves once it listens. */
async function startEverythingHttp(): Promise<{ url: string; child: ChildProcess }> {
  const port = await deadPort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  temp.defer(() => {
    child.kill();
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer) => {
      seen += c.toString();
      if (seen.includes('listening on port')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited ${code}: ${seen}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

/** A client that can be sampled, elicited and asked for roots, answering each the same way every time. */
async function connect(transport: Transport): Promise<Client> {
  const client = new Client(
    { name: 'recorder-test', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'sampled answer' },
    model: 'test-model',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { name: 'Ada', check: true, firstLine: 'x', email: 'ada@example.com', integer: 3 },
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: 'file:///work/project', name: 'project' }],
  }));
  await client.connect(transport);
  return client;
}

/**
 * `act` on an SDK client of server-everything behind `mcec-record stdio` recording into `sessionsDir` (made
 * here); resolves once the recorder has written and exited (it does when the server exits: the client closed
 * its stdin).
 */
async function behindStdioRecorder<T>(sessionsDir: string, act: (client: Client) => Promise<T>): Promise<T> {
  fs.mkdirSync(sessionsDir);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCEC_RECORD, 'stdio', '--sessions', sessionsDir, '--', process.execPath, EVERYTHING, 'stdio'],
    stderr: 'ignore',
  });
  const client = await connect(transport);
  const out = await act(client);
  const recorderPid = transport.pid!;
  await client.close();
  await waitFor(() => !pidAlive(recorderPid), 20_000);
  return out;
}

/**
 * `act` on an SDK client of `target` behind a recording HTTP proxy (in process) into `sessionsDir`; the
 * client (its DELETE of the MCP session passes through), the proxy and the recorder closed after.
 */
async function behindHttpRecorder<T>(
  target: string,
  sessionsDir: string,
  act: (client: Client) => Promise<T>,
): Promise<T> {
  return withHttpRecorder(target, sessionsDir, async (url) => {
    const client = await connect(new StreamableHTTPClientTransport(url));
    const out = await act(client);
    await client.close();
    return out;
  });
}

/** `act` with the URL of a recording proxy (its recorder in this process) in front of `target`, both closed after. */
async function withHttpRecorder<T>(
  target: string,
  sessionsDir: string,
  act: (proxyUrl: URL) => Promise<T>,
): Promise<T> {
  const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
  const proxy = await startHttpProxy({ target, recorder, listen: { port: 0 } });
  try {
    return await act(new URL(proxy.url));
  } finally {
    await proxy.close();
    await recorder.close();
  }
}

/** The conversation: every kind of answer server-everything gives (text, image, links, progress, requests). */
async function converse(client: Client): Promise<{ results: unknown[]; progress: number[] }> {
  const progress: number[] = [];
  const results: unknown[] = [];
  const tools = await client.listTools();
  results.push(tools.tools.map((t) => t.name).sort());
  results.push(await client.callTool({ name: 'echo', arguments: { message: 'hello' } }));
  results.push(await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } }));
  results.push(await client.callTool({ name: 'get-tiny-image', arguments: {} }));
  results.push(await client.callTool({ name: 'get-resource-links', arguments: { count: 2 } }));
  results.push(
    await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.4, steps: 2 } },
      undefined,
      { onprogress: (p) => progress.push(p.progress) },
    ),
  );
  results.push(await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } }));
  results.push(await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }));
  results.push(await client.callTool({ name: 'get-roots-list', arguments: {} }));
  results.push(await client.ping());
  return { results, progress };
}

/** The sessions as `mcec-bundle list --json` lists them. */
function listed(root: string): Array<Record<string, unknown>> {
  const out = execFileSync(process.execPath, [MCEC_BUNDLE, 'list', '--json', '--sessions', root], {
    encoding: 'utf8',
  });
  const parsed = JSON.parse(out) as
    | { sessions?: Array<Record<string, unknown>> }
    | Array<Record<string, unknown>>;
  return Array.isArray(parsed) ? parsed : (parsed.sessions ?? []);
}

/** One plain call's row as recorded: ok with no violations and its result kept. */
function expectTruthful(root: string): void {
  const sessions = recorded(root);
  expect(sessions).toHaveLength(1);
  const [s] = sessions;
  // Named after the server and its MCP session, not a 12-hex id that would read as MCEC's.
  expect(s!.session.session_id).toMatch(/^mcp-servers-everything-/);
  for (const c of s!.calls) {
    expect({ tool: c.tool, status: c.status, violations: c.violations }).toEqual({
      tool: c.tool,
      status: 'ok',
      violations: [],
    });
  }
  // get-tiny-image's PNG is an artifact named by its call, not an MCEC capture.
  const tiny = s!.calls.find((c) => c.tool === 'get-tiny-image')!;
  expect(fs.readdirSync(path.join(s!.dir, 'artifacts'))).toEqual([
    expect.stringMatching(new RegExp(`^image-call${tiny.seq}-.+\\.png$`)),
  ]);
  const list = listed(root);
  expect(list).toHaveLength(1);
  expect(list[0]).toMatchObject({ verdict: 'PASS', failures: 0, server: 'mcp-servers/everything' });
}

/** What the recording says of each call: tool, status, and its events' kinds and methods. */
function recorded(root: string) {
  const sessions = readSessions(root);
  return sessions.map((s) => ({
    session: s.session,
    dir: s.dir,
    calls: s.calls.map((c) => ({
      seq: c.seq,
      tool: c.tool,
      status: c.status,
      violations: c.violations === null ? [] : JSON.parse(c.violations),
      events: s.events
        .filter((e) => e.call_seq === c.seq && (e.kind === 'notification' || e.kind === 'server-request'))
        .map((e) => `${e.kind} ${String(e.detail.method)}`),
    })),
    faults: s.events.filter((e) => e.kind === 'protocol-fault' || e.kind === 'proxy-error'),
  }));
}

const EXPECTED_EVENTS: Record<string, string[]> = {
  'trigger-long-running-operation': [
    'notification notifications/progress',
    'notification notifications/progress',
  ],
  'trigger-sampling-request': ['server-request sampling/createMessage'],
  'trigger-elicitation-request': ['server-request elicitation/create'],
};

describe('the SDK client and server-everything through the proxies', () => {
  it('over Streamable HTTP: same results as direct; every call recorded with its outcome, progress and server requests', async () => {
    const server = await startEverythingHttp();
    const direct = await connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const expected = await converse(direct);
    await direct.close();

    const sessionsDir = path.join(temp.dir, 'sessions');
    const got = await behindHttpRecorder(server.url, sessionsDir, converse);

    // The SDK client may drop the last progress that races its answer (direct too): the results must match.
    expect(got.results).toEqual(expected.results);
    expect(got.progress.length).toBeGreaterThan(0);
    const calls = recorded(sessionsDir).flatMap((s) => s.calls);
    expect(calls.map((c) => c.tool)).toEqual([
      'echo',
      'get-sum',
      'get-tiny-image',
      'get-resource-links',
      'trigger-long-running-operation',
      'trigger-sampling-request',
      'trigger-elicitation-request',
      'get-roots-list',
    ]);
    for (const c of calls) expect(c.events).toEqual(EXPECTED_EVENTS[c.tool] ?? []);
    expect(recorded(sessionsDir).flatMap((s) => s.faults)).toEqual([]);
    expectTruthful(sessionsDir);

    // A replay of the recording answers the same conversation with the server's own results: plain
    // CallToolResults as recorded (the image's bytes back from artifacts/), no MCEC envelope added.
    const replay = await replaySession(recorded(sessionsDir)[0]!.dir, { http: { port: 0 }, order: 'strict' });
    temp.defer(async () => {
      await replay.close();
    });
    const replayed = await connect(new StreamableHTTPClientTransport(new URL(replay.url)));
    const again = await converse(replayed);
    // The recorded server offers prompts and resources; this conversation never asked for them, so the replay
    // has no answer: an error saying so (before: "Method not found", as if the server offered none).
    await expect(replayed.listPrompts()).rejects.toThrow(
      /-32601.*the recording holds no prompts\/list request \(the recorded server offers it/,
    );
    await expect(replayed.listResources()).rejects.toThrow(/the recording holds no resources\/list request/);
    await replayed.close();
    expect(again.results).toEqual(expected.results);
    expect((await replay.close()).exitCode).toBe(0);
  }, 120_000);

  it('over stdio (mcec-record stdio): same results as direct; progress and server requests recorded with their calls', async () => {
    const direct = await connect(
      new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }),
    );
    const expected = await converse(direct);
    await direct.close();

    const sessionsDir = path.join(temp.dir, 'sessions');
    const got = await behindStdioRecorder(sessionsDir, converse);

    expect(got.results).toEqual(expected.results);
    const calls = recorded(sessionsDir).flatMap((s) => s.calls);
    expect(calls.map((c) => c.tool)).toContain('trigger-long-running-operation');
    for (const c of calls) expect(c.events).toEqual(EXPECTED_EVENTS[c.tool] ?? []);
    expect(recorded(sessionsDir).flatMap((s) => s.faults)).toEqual([]);
    expectTruthful(sessionsDir);
  }, 120_000);

  it('over stdio, a client that sends its calls before the initialize answer (a script piping lines): read as the server they reach', async () => {
    const sessionsDir = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessionsDir);
    const recorder = spawn(
      process.execPath,
      [MCEC_RECORD, 'stdio', '--sessions', sessionsDir, '--', process.execPath, EVERYTHING, 'stdio'],
      { stdio: ['pipe', 'pipe', 'ignore'] },
    );
    temp.defer(() => {
      recorder.kill('SIGKILL');
    });
    let stdout = '';
    recorder.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    const exited = new Promise((resolve) => recorder.once('exit', resolve));
    // All at once, as `printf ... | mcec-record stdio -- server` sends them: the server is still starting.
    const lines = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'script', version: '1' },
        },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'piped' } },
      },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1, b: 2 } } },
    ];
    recorder.stdin!.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    await waitFor(() => stdout.includes('"id":2') && stdout.includes('"id":3'), 30_000);
    recorder.stdin!.end();
    await exited;

    const sessions = readSessions(sessionsDir);
    expect(sessions.map((x) => x.session.session_id)).toEqual([
      expect.stringMatching(/^mcp-servers-everything-[0-9a-f]{8}$/),
    ]);
    expect(sessions[0]!.calls.map((c) => [c.tool, c.status, c.error_code, c.violations])).toEqual([
      ['echo', 'ok', null, null],
      ['get-sum', 'ok', null, null],
    ]);
    expect(sessions[0]!.events.filter((e) => e.kind === 'exchange').map((e) => e.detail.method)).toEqual(
      expect.arrayContaining(['initialize', 'notifications/initialized']),
    );
  }, 60_000);

  it('a replay answers what the server answered besides tools: resources, prompts, completion, logging level', async () => {
    const server = await startEverythingHttp();
    const ask = async (client: Client) => [
      await client.listResources(),
      await client.readResource({ uri: 'demo://resource/static/document/architecture.md' }),
      await client.listResourceTemplates(),
      await client.listPrompts(),
      await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris' } }),
      await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon', state: 'FR' } }),
      await client.complete({
        ref: { type: 'ref/prompt', name: 'completable-prompt' },
        argument: { name: 'department', value: 'E' },
      }),
      await client.setLoggingLevel('debug'),
    ];
    const sessionsDir = path.join(temp.dir, 'sessions');
    const expected = await behindHttpRecorder(server.url, sessionsDir, async (client) => {
      // One tool call, so the conversation is a session.
      await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
      return ask(client);
    });

    const replay = await replaySession(recorded(sessionsDir)[0]!.dir, { http: { port: 0 } });
    temp.defer(async () => {
      await replay.close();
    });
    const replayed = await connect(new StreamableHTTPClientTransport(new URL(replay.url)));
    expect(await ask(replayed)).toEqual(expected);
    // A request the recording does not hold is a JSON-RPC error saying so, not "Method not found".
    await expect(replayed.getPrompt({ name: 'args-prompt', arguments: { city: 'Rome' } })).rejects.toThrow(
      /the recording holds no prompts\/get with these params/,
    );
    await replayed.close();
  }, 120_000);

  /**
   * The client cancels a call in flight (MCP's notifications/cancelled): the server owes no answer, so the call
   * must be recorded as cancelled by the client, then, not as a proxy failure when the proxy or the server
   * stops later ("proxy closed", "server exited").
   */
  async function cancelOne(client: Client): Promise<void> {
    const abort = new AbortController();
    const call = client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } },
      undefined,
      { signal: abort.signal, onprogress: () => abort.abort('the user gave up') },
    );
    await expect(call).rejects.toThrow(/the user gave up/);
    // A call after it: the cancelled one must not be left pending, nor fail anything that follows.
    expect(await client.callTool({ name: 'echo', arguments: { message: 'after' } })).toMatchObject({
      content: [{ type: 'text', text: 'Echo: after' }],
    });
  }

  function expectCancelled(root: string): void {
    const [s] = readSessions(root);
    const rows = s!.calls.map((c) => ({
      tool: c.tool,
      status: c.status,
      code: c.error_code,
      detail: c.error_detail,
    }));
    expect(rows).toEqual([
      {
        tool: 'trigger-long-running-operation',
        status: 'failed',
        code: 'cancelled',
        detail: 'the client cancelled the call (notifications/cancelled): the user gave up',
      },
      { tool: 'echo', status: 'ok', code: null, detail: null },
    ]);
    expect(s!.events.filter((e) => e.kind === 'proxy-error')).toEqual([]);
    // The progress that came before the cancel, its token as the client sent it (MCP's id, not a secret).
    const progress = s!.events.filter((e) => e.kind === 'notification' && e.call_seq === s!.calls[0]!.seq);
    expect(progress.length).toBeGreaterThan(0);
    const sent = JSON.parse(s!.calls[0]!.rpc_id!);
    for (const e of progress) expect(e.detail.params).toMatchObject({ progressToken: sent });
    // The bundle's tool-calls.jsonl holds what went over the wire: the cancelled call's request and the
    // client's notifications/cancelled, and no response (none came; before, a line claimed the recorder had
    // dropped its payload past the log size limit).
    const reader = SessionReader.open(s!.dir);
    const lines = buildToolCallLog(reader, s!.session.session_id)
      .data.toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { direction: string; method: string; seq?: number; payload: unknown });
    reader.close();
    expect(lines.filter((l) => l.seq === s!.calls[0]!.seq).map((l) => l.direction)).toEqual(['request']);
    expect(lines.filter((l) => l.method === 'notifications/cancelled')).toHaveLength(1);
  }

  it('over Streamable HTTP: a call the client cancels is recorded as cancelled, not as a proxy failure', async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    await behindHttpRecorder(server.url, sessionsDir, cancelOne);
    expectCancelled(sessionsDir);
  }, 120_000);

  it('over stdio (mcec-record stdio): a call the client cancels is recorded as cancelled, not as "server exited"', async () => {
    const sessionsDir = path.join(temp.dir, 'sessions');
    await behindStdioRecorder(sessionsDir, cancelOne);
    expectCancelled(sessionsDir);
  }, 120_000);

  it('a failed run of server-everything reads well: no window, display, envelope, observation or MCEC next step', async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    await behindHttpRecorder(server.url, sessionsDir, async (client) => {
      await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
      await client.callTool({ name: 'get-tiny-image', arguments: {} });
      await client.callTool({ name: 'no-such-tool', arguments: {} });
    });

    const [session] = recorded(sessionsDir);
    const bundle = (...args: string[]) =>
      execFileSync(process.execPath, [MCEC_BUNDLE, ...args, session!.session.session_id, '-s', sessionsDir], {
        encoding: 'utf8',
      });
    const summary = fs.readFileSync(bundle('summary').trim(), 'utf8');
    const bugReport = bundle('issue-body');
    const html = fs.readFileSync(bundle('report').trim(), 'utf8');
    // report.html as a reader sees it: its text, without scripts and styles.
    const page = html
      .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/g, ' ')
      .replace(/<[^>]+>/g, ' ')
      .replace(/&[a-z]+;|&#\d+;/g, ' ');
    for (const text of [summary, bugReport, page]) {
      expect(text).not.toMatch(
        /window unknown|which window|Display|envelope|observation|Next step|next step/i,
      );
      expect(text).toMatch(/call #2 `?get-tiny-image/);
      expect(text).toContain('no-such-tool');
    }
    expect(summary).toContain('failed with `tool-error`');
    // No category is invented for a server that has none (the reader's stand-in is not the server's word).
    for (const text of [summary, bugReport]) expect(text).not.toContain('(internal)');
    expect(summary).not.toMatch(/\n\n\n/); // no section left out leaves its blank line behind
    expect(bugReport).toContain('`no-such-tool` (call #3) succeeds and the scenario passes.\n');
  }, 120_000);
});

/** `mcec-record http` (the CLI, its recorder in a worker) in front of `target`, with `flags`; its URL and stderr. */
async function spawnHttpRecorder(target: string, sessionsDir: string, flags: string[] = []) {
  const proxy = spawn(
    process.execPath,
    [MCEC_RECORD, 'http', '--listen', '127.0.0.1:0', '--target', target, '--sessions', sessionsDir, ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  temp.defer(() => {
    proxy.kill('SIGKILL');
  });
  const out = { url: new URL('http://127.0.0.1/'), stderr: '', stop: async () => {} };
  proxy.stderr!.on('data', (c: Buffer) => {
    out.stderr += c.toString();
  });
  await waitFor(() => /recording http:\/\/127\.0\.0\.1:\d+\/mcp/.test(out.stderr), 20_000);
  out.url = new URL(/recording (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out.stderr)![1]!);
  out.stop = async () => {
    const exited = new Promise((resolve) => proxy.once('exit', resolve));
    proxy.kill('SIGTERM');
    await exited;
  };
  return out;
}

/** A step or verdict declared to the recorder through the proxy (README: "Declaring steps"), naming no sessionId. */
async function declare(client: Client, what: 'step' | 'verdict', params: Record<string, unknown>) {
  const declared = { method: `notifications/mcec-recorder/${what}`, params };
  await client.notification(declared as unknown as Parameters<Client['notification']>[0]);
}
/**
 * server-everything's simulated log messages ("Debug-level message - SessionId ...", and one spelled
 * "Alert level-message"), not its messages about a client's roots.
 */
const isSimulatedLog = (data: unknown) => /level[- ]message/.test(String(data));
const declareStep = (client: Client, name: string) => declare(client, 'step', { name, status: 'passed' });

describe('several MCP sessions through one mcec-record http', () => {
  /** The methods of a session's exchange events, in order. */
  const exchanges = (s: { events: Array<{ kind: string; detail: Record<string, unknown> }> }) =>
    s.events.filter((e) => e.kind === 'exchange').map((e) => e.detail.method);
  /** The session whose calls are these echoes' messages. */
  const echoing = (sessions: ReturnType<typeof readSessions>, message: string) =>
    sessions.find((x) => x.calls.some((c) => String(c.args).includes(message)))!;

  /** `mcec-record http` (the real CLI, its recorder on a worker) in front of server-everything; its stderr so far. */
  async function startRecordingProxy() {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    const proxy = spawn(
      process.execPath,
      [MCEC_RECORD, 'http', '--listen', '127.0.0.1:0', '--target', server.url, '--sessions', sessionsDir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    temp.defer(() => {
      proxy.kill('SIGKILL');
    });
    let stderr = '';
    proxy.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    await waitFor(() => /recording http:\/\/127\.0\.0\.1:\d+\/mcp/.test(stderr), 20_000);
    const url = new URL(/recording (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)![1]!);
    return { proxy, sessionsDir, url, stderr: () => stderr };
  }

  it("each session holds its own MCP session's handshake, never another's; one without a call is named on stderr", async () => {
    const { proxy, sessionsDir, url, stderr } = await startRecordingProxy();

    // A: looks around and leaves without a tool call.
    const a = await connect(new StreamableHTTPClientTransport(url));
    await a.listTools();
    await a.ping();
    await a.close();
    // B calls a tool; C connects while B is open, lists the tools, then both call one.
    const b = await connect(new StreamableHTTPClientTransport(url));
    await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
    const c = await connect(new StreamableHTTPClientTransport(url));
    await c.listTools();
    await b.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } });
    await c.callTool({ name: 'echo', arguments: { message: 'from c' } });
    await b.close();
    await c.close();
    const exited = new Promise((resolve) => proxy.once('exit', resolve));
    proxy.kill('SIGTERM');
    await exited;

    const sessions = readSessions(sessionsDir);
    expect(sessions.map((s) => s.calls.map((call) => call.tool))).toEqual(
      expect.arrayContaining([['echo', 'get-sum'], ['echo']]),
    );
    expect(sessions).toHaveLength(2);
    const bSession = sessions.find((s) => s.calls.length === 2)!;
    const cSession = sessions.find((s) => s.calls.length === 1)!;
    expect(exchanges(bSession)).toEqual(['initialize', 'notifications/initialized']);
    expect(exchanges(cSession)).toEqual(['initialize', 'notifications/initialized', 'tools/list']);
    // A's handshake went nowhere: stderr names it.
    expect(stderr()).toContain(
      'no tool call followed the handshake, so no session was written for it: initialize, notifications/initialized, tools/list, ping',
    );
  }, 120_000);

  it("a client that ends its MCP session (DELETE) ends that session's recording then, not when the proxy stops", async () => {
    const { proxy, sessionsDir, url } = await startRecordingProxy();

    // A ends its MCP session (the SDK's terminateSession: DELETE with its Mcp-Session-Id); B stays.
    const aTransport = new StreamableHTTPClientTransport(url);
    const a = await connect(aTransport);
    await a.callTool({ name: 'echo', arguments: { message: 'from a' } });
    const b = await connect(new StreamableHTTPClientTransport(url));
    await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
    await aTransport.terminateSession();
    await a.close();
    // Read while the proxy writes: a log not yet readable (its first commit under way) reads as not ended.
    const endOf = (message: string) => {
      try {
        const s = echoing(readSessions(sessionsDir), message);
        return s?.events.find((e) => e.kind === 'session-end')?.detail;
      } catch {
        return undefined;
      }
    };
    await waitFor(() => endOf('from a') !== undefined, 20_000);
    expect(endOf('from a')).toEqual({ via: 'mcp-session-delete' });
    expect(echoing(readSessions(sessionsDir), 'from a').session.status).toBe('ended');
    expect(endOf('from b')).toBeUndefined();
    await b.close();
    const exited = new Promise((resolve) => proxy.once('exit', resolve));
    proxy.kill('SIGTERM');
    await exited;
    expect(endOf('from b')).toEqual({ via: 'close' });
  }, 120_000);

  it("what a client's GET stream brings (server-everything's log messages) goes into that client's session", async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    await withHttpRecorder(server.url, sessionsDir, async (url) => {
      const a = await connect(new StreamableHTTPClientTransport(url));
      let messages = 0;
      a.fallbackNotificationHandler = async (n) => {
        if (n.method === 'notifications/message' && isSimulatedLog(n.params?.data)) messages += 1;
      };
      await a.callTool({ name: 'echo', arguments: { message: 'from a' } });
      await a.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      // B's call makes B's session the connection's latest: A's log messages from then on are still A's.
      const b = await connect(new StreamableHTTPClientTransport(url));
      await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
      const before = messages;
      await waitFor(() => messages >= before + 2, 60_000);
      await a.close();
      await b.close();
    });
    const sessions = readSessions(sessionsDir);
    const logOf = (tools: string[]) => {
      const s = sessions.find((x) => x.calls.map((c) => c.tool).join() === tools.join())!;
      return s.events.filter(
        (e) =>
          e.kind === 'notification' &&
          isSimulatedLog((e.detail.params as { data?: unknown } | undefined)?.data),
      );
    };
    expect(sessions).toHaveLength(2);
    expect(logOf(['echo'])).toEqual([]);
    expect(logOf(['echo', 'toggle-simulated-logging']).length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it("a step or verdict a client declares without a sessionId goes into that client's session, even before its first call", async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    await withHttpRecorder(server.url, sessionsDir, async (url) => {
      const a = await connect(new StreamableHTTPClientTransport(url));
      await a.callTool({ name: 'echo', arguments: { message: 'from a' } });
      // B declares before its first call (A's session is the connection's latest), then calls.
      const b = await connect(new StreamableHTTPClientTransport(url));
      await declareStep(b, 'b before its call');
      await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
      // A declares after B's call made B's session the latest.
      await declareStep(a, 'a after b called');
      await declare(a, 'verdict', { passed: false, reason: 'a failed' });
      await a.close();
      await b.close();
    });
    const sessions = readSessions(sessionsDir);
    const declared = (message: string) =>
      echoing(sessions, message)
        .events.filter((e) => e.kind === 'step' || e.kind === 'verdict')
        .map((e) => `${e.kind} ${String(e.detail.name ?? e.detail.reason)}`);
    expect(sessions).toHaveLength(2);
    expect(declared('from a')).toEqual(['step a after b called', 'verdict a failed']);
    expect(declared('from b')).toEqual(['step b before its call']);
  }, 120_000);

  it("a body over --max-body from one client's MCP session is that session's proxy-error; an unknown Mcp-Session-Id's stays the connection's", async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    const proxy = await spawnHttpRecorder(server.url, sessionsDir, ['--max-body', '4096']);
    const a = await connect(new StreamableHTTPClientTransport(proxy.url));
    await a.callTool({ name: 'echo', arguments: { message: 'from a' } });
    const b = await connect(new StreamableHTTPClientTransport(proxy.url));
    await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
    // B's call made B's session the latest; A's oversized call is refused (413) in A's MCP session.
    await expect(
      a.callTool({ name: 'echo', arguments: { message: `from a, too long ${'x'.repeat(8192)}` } }),
    ).rejects.toThrow();
    // An Mcp-Session-Id no call ever ran in names no recorded session: the refusal is the connection's.
    const stray = await fetch(proxy.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': 'no-such-session',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping', params: { pad: 'y'.repeat(8192) } }),
    });
    expect(stray.status).toBe(413);
    await a.close();
    await b.close();
    await proxy.stop();

    const sessions = readSessions(sessionsDir);
    const refused = (message: string) =>
      echoing(sessions, message)
        .events.filter((e) => e.kind === 'proxy-error')
        .map((e) => [e.detail.status, e.detail.reason, e.detail.bytes]);
    expect(sessions).toHaveLength(2);
    expect(refused('from a')).toEqual([[413, 'body too large', expect.any(Number)]]);
    expect(refused('from b')).toEqual([[413, 'body too large', expect.any(Number)]]);
    expect(echoing(sessions, 'from a').calls.map((c) => c.tool)).toEqual(['echo']);
  }, 120_000);

  it("a client's protocol faults, orphan answers and messages over the recording limit go into its session; an unknown Mcp-Session-Id's stay the connection's", async () => {
    const server = await startEverythingHttp();
    const sessionsDir = path.join(temp.dir, 'sessions');
    // server-everything's initialize answer (about 2 KB) fits; its tool list (about 8 KB) does not.
    const limit = ['--max-record-bytes', '4096', '--max-body', '4096'];
    const proxy = await spawnHttpRecorder(server.url, sessionsDir, limit);
    const aTransport = new StreamableHTTPClientTransport(proxy.url);
    const a = await connect(aTransport);
    await a.callTool({ name: 'echo', arguments: { message: 'from a' } });
    const b = await connect(new StreamableHTTPClientTransport(proxy.url));
    await b.callTool({ name: 'echo', arguments: { message: 'from b' } });
    // B's call made B's session the latest: everything below but the last request is A's.
    const post = async (body: string, mcpSessionId: string) => {
      const version = aTransport.protocolVersion;
      const res = await fetch(proxy.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': mcpSessionId,
          ...(version ? { 'Mcp-Protocol-Version': version } : {}),
        },
        body,
      });
      return { status: res.status, text: await res.text() };
    };
    const aId = aTransport.sessionId!;
    // Not JSON: server-everything answers a JSON-RPC -32700 (an exchange, whose fault the recorder reads).
    expect(await post('not json', aId)).toMatchObject({
      status: 400,
      text: expect.stringContaining('-32700'),
    });
    // A batch of one notification: 202 and no JSON-RPC answer (the proxy's own protocol-fault).
    const batchOfNote = JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/test/nothing' }]);
    expect((await post(batchOfNote, aId)).status).toBe(202);
    // A batch with a ping: answered on an event stream with an id no request in flight has (an orphan answer).
    const batchOfPing = JSON.stringify([{ jsonrpc: '2.0', id: 'orphan-1', method: 'ping' }]);
    expect(await post(batchOfPing, aId)).toMatchObject({
      status: 200,
      text: expect.stringContaining('"orphan-1"'),
    });
    // A batch asking for the tools: the stream's one event is over the limit, and no call's.
    const batchOfList = JSON.stringify([{ jsonrpc: '2.0', id: 'list-1', method: 'tools/list' }]);
    expect(await post(batchOfList, aId)).toMatchObject({
      status: 200,
      text: expect.stringContaining('"list-1"'),
    });
    // A's own tools/list: its answer is over the limit (recorded without it), and A gets it whole.
    expect((await a.listTools()).tools.map((t) => t.name)).toContain('echo');
    // Not JSON under an id the server does not know: its 400 has no id (no JSON-RPC answer), and no call ran
    // under that id, so the fault is the connection's (B's session, the latest): the header is the client's word.
    expect((await post('not json', 'no-such-session')).status).toBe(400);
    await a.close();
    await b.close();
    await proxy.stop();

    const sessions = readSessions(sessionsDir);
    expect(sessions).toHaveLength(2);
    const stray = (message: string) =>
      echoing(sessions, message).events.flatMap((e) => {
        if (e.kind === 'protocol-fault') return [`protocol-fault ${String(e.detail.message)}`];
        if (e.kind === 'oversize-message')
          return [`oversize-message ${String(e.detail.method ?? 'of no call')}`];
        const method = e.detail.method;
        if (e.kind !== 'exchange' || (method !== null && method !== 'tools/list')) return [];
        const answer = e.detail.response as { id?: unknown } | null;
        return [`exchange ${String(method)} answered ${JSON.stringify(answer?.id ?? null)}`];
      });
    expect(stray('from a')).toEqual([
      'protocol-fault Parse error: Invalid JSON',
      'exchange null answered null',
      `protocol-fault request batch: ${batchOfNote}`,
      'exchange null answered "orphan-1"',
      `protocol-fault request batch: ${batchOfPing}`,
      'oversize-message of no call',
      `protocol-fault request batch: ${batchOfList}`,
      'exchange tools/list answered null',
      'oversize-message tools/list',
    ]);
    expect(stray('from b')).toEqual(['protocol-fault request not JSON: not json']);
  }, 120_000);
});
