/** The MCP server suites' material: sessions made by the recorder and the demo, the SDK client on either transport. */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createRecorder, sessionIdOf } from '../../src/index.js';
import { createSimulator, DEMO_SCENARIO, runDemo } from '../../src/sim.js';
import { BUNDLE_CLI, ROOT } from '../support/programs.js';

/** A secret the passing run sent under a secret key and inline; the log holds it redacted. */
export const SECRET = 'hunter2-Sup3rS3cret-7f3a9c';

/**
 * A passing run of the demo's scenario (recorded through wrap against the simulator, with a secret in its
 * arguments), then the demo itself (which fails): diff's last passing run of the demo is the first one.
 */
export async function recordDemoSessions(
  sessionsDir: string,
): Promise<{ passDir: string; failDir: string; failId: string }> {
  fs.mkdirSync(sessionsDir, { recursive: true });
  const simRoot = fs.mkdtempSync(path.join(sessionsDir, '..', 'sim-'));
  const sim = createSimulator({ sessionsRoot: simRoot });
  const recorder = createRecorder({ sessionsDir, scenario: DEMO_SCENARIO, stderr: () => {} });
  const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  const sid = sessionIdOf(await call('session-start', {}))!;
  await call('windows', { sessionId: sid });
  await call('displays', { sessionId: sid });
  await call('capture', { sessionId: sid, window: 'Untitled - Notepad' });
  await call('query', { sessionId: sid, window: 'Untitled - Notepad' });
  await call('send_command', { sessionId: sid, command: `login --password ${SECRET}`, apiToken: SECRET });
  await call('capture', { sessionId: sid, window: 'Untitled - Notepad' });
  await call('session-end', { sessionId: sid });
  await recorder.end(sid, { passed: true, reason: 'the invoice was saved' });
  await recorder.close();
  fs.rmSync(simRoot, { recursive: true, force: true });
  const passDir = fs.readdirSync(sessionsDir).find((n) => n.endsWith(sid))!;
  // The demo's dir name must sort after the passing run's (both carry the second they started).
  await new Promise((r) => setTimeout(r, 1100));
  // Its own runDemo, not test/support/demo-session.ts: the demo must start after the passing run, as recorded.
  const demo = await runDemo({ sessionsDir, stderr: () => {} });
  return { passDir: path.join(sessionsDir, passDir), failDir: demo.sessionDir, failId: demo.sessionId };
}

/** Validators of schema/ files (Ajv2020, strict), with every file loaded so cross-file $refs resolve. */
export function schemaValidator(): (name: string, value: unknown) => string[] {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const dir = path.join(ROOT, 'schema');
  for (const f of fs.readdirSync(dir)) {
    if (f.endsWith('.schema.json')) ajv.addSchema(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
  }
  return (name, value) => {
    const fn = ajv.getSchema(`urn:mcec-recorder:schema:${name}`);
    if (!fn) throw new Error(`no schema ${name}`);
    return fn(value) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
  };
}

/** An SDK client connected to `mcec-bundle mcp` over stdio. */
export async function stdioClient(sessionsDir: string): Promise<{ client: Client; close(): Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BUNDLE_CLI, 'mcp', '--sessions', sessionsDir],
    cwd: ROOT,
    // The test's whole environment, not the SDK's safe few variables: under faketime the server must read
    // the test's clock (sessions "since yesterday" are generated from it).
    env: Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'mcec-test', version: '1' });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

/**
 * `mcec-bundle mcp --listen 127.0.0.1:0` (or the `--listen` in `extra`) started; resolves with its URL once it
 * listens. `env` is added to the child's environment; `stderr` collects what it prints.
 */
export function startHttpServer(
  sessionsDir: string,
  extra: string[] = [],
  env: Record<string, string> = {},
  stderr: string[] = [],
): Promise<{ url: string; child: ChildProcess }> {
  const listen = extra.includes('--listen') ? [] : ['--listen', '127.0.0.1:0'];
  const child = spawn(process.execPath, [BUNDLE_CLI, 'mcp', '--sessions', sessionsDir, ...listen, ...extra], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      err += s;
      stderr.push(s);
      const m = /on (http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve({ url: m[1]!, child });
    });
    child.on('exit', (code) => reject(new Error(`mcec-bundle mcp exited ${code}: ${err}`)));
  });
}

/** An SDK client over Streamable HTTP. */
export async function httpClient(url: string): Promise<{ client: Client; close(): Promise<void> }> {
  const client = new Client({ name: 'mcec-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, close: () => client.close() };
}

/** Stop a child this suite started and wait for its exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}
