/**
 * The MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, every active server scenario) against the
 * simulator and server-everything: directly, through `mcec-record http`, and against a replay of what the
 * proxy recorded. The suite speaks only Streamable HTTP to a server (`--url`), so the stdio proxy is not in it
 * (test/proxy/mcp-everything.test.ts drives that one with the SDK client). It needs Node 22: CI runs this file
 * in its Node 22 pass; under Node 20 it runs when MCEC_NODE22 names a Node 22 binary, else it is skipped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaySession } from '../../src/replay/index.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { tempDir } from '../support/temp.js';
import { type Checks, differences, node22, passedScenarios, runConformance } from './conformance-suite.js';
import { deadPort } from './helpers.js';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const MCEC_RECORD = path.resolve('dist/cli/mcec-record.js');
const NODE22 = node22();

let tmp: string;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(() => {
  tmp = tempDir('conformance-');
});
afterAll(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => {});
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Resolve once `child` printed `text` on stdout or stderr; the text seen so far is passed to `pick`. */
function waitForOutput<T>(child: ChildProcess, pick: (seen: string) => T | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer) => {
      seen += c.toString();
      const got = pick(seen);
      if (got !== undefined) resolve(got);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${child.spawnfile} exited ${code}: ${seen}`)));
  });
}

/** SIGTERM `child` and wait for it to exit (mcec-record writes its sessions on the way out). */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill();
  return exited;
}

/** server-everything over Streamable HTTP on a free port. */
async function startEverything(): Promise<string> {
  const port = await deadPort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => stopChild(child));
  await waitForOutput(child, (seen) => (seen.includes('listening on port') ? true : undefined));
  return `http://127.0.0.1:${port}/mcp`;
}

/** The simulator over HTTP, in process. */
async function startSim(): Promise<string> {
  const { listener } = await simOnHttp(path.join(tmp, 'sim-sessions'), { seed: 7 });
  cleanups.push(() => listener.close());
  return listener.url;
}

/** `mcec-record http` in front of `target`, recording into `sessionsDir`: its URL, and a stop that waits for its exit. */
async function startRecordCli(
  target: string,
  sessionsDir: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [MCEC_RECORD, 'http', '--listen', '127.0.0.1:0', '--target', target, '--sessions', sessionsDir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  cleanups.push(() => stopChild(child));
  const url = await waitForOutput(
    child,
    (seen) => /recording (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(seen)?.[1],
  );
  return { url, stop: () => stopChild(child) };
}

/** Session dirs under `root` (the dirs holding a session.sqlite). */
function sessionDirs(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .map((d) => path.join(root, d))
    .filter((d) => fs.existsSync(path.join(d, 'session.sqlite')));
}

/**
 * What each server passes directly (every check SUCCESS). The suite's other scenarios call tools these
 * servers do not have (test_image_content, ...) or methods they do not serve.
 */
const SIM_PASSES = [
  'dns-rebinding-protection',
  'ping',
  'server-initialize',
  'tools-call-error',
  'tools-call-simple-text',
  'tools-list',
];
const EVERYTHING_PASSES = [
  'logging-set-level',
  'ping',
  'prompts-list',
  'resources-list',
  'resources-subscribe',
  'resources-unsubscribe',
  'server-initialize',
  'server-sse-multiple-streams',
  'tools-call-error',
  'tools-call-simple-text',
  'tools-list',
];
/**
 * The passed scenarios a replay can serve: those that make a tool call. The others open an MCP session that
 * makes none (initialize, ping, tools/list, resources/*, prompts/list, logging/setLevel, the DNS-rebinding
 * probes, three concurrent POST streams), and a session without a tool call writes no session dir (the
 * handshake alone is a stderr note): there is no recording of them to replay. A replay also answers only
 * initialize, ping, tools/list and tools/call (anything else -32601), as JSON (MCEC's wire: no SSE stream).
 */
const REPLAYED = {
  'tools-call-error': { differences: {}, sameResults: true },
  'tools-call-simple-text': { differences: {}, sameResults: true },
};

/** The tool each scenario calls, for the scenarios whose exchanges a recording can hold (they make a tool call). */
const SCENARIO_TOOL: Record<string, string> = {
  'tools-call-simple-text': 'test_simple_text',
  'tools-call-error': 'test_error_handling',
};

/** The session dir under `root` whose log holds a call of `tool`. */
function sessionWithTool(root: string, tool: string): string | undefined {
  return sessionDirs(root).find((dir) => {
    const db = new Database(path.join(dir, 'session.sqlite'), { readonly: true });
    try {
      return db.prepare('SELECT 1 FROM calls WHERE tool = ?').get(tool) !== undefined;
    } finally {
      db.close();
    }
  });
}

/**
 * Each replayable scenario the server passed, against a replay (`replaySession`, what `mcec-replay --listen`
 * serves) of the session the proxy recorded it in: its checks' differences from the direct run.
 */
async function replayEach(recorded: string, scenarios: string[], direct: Checks, label: string) {
  const outcome: Record<string, unknown> = {};
  for (const scenario of scenarios) {
    const dir = sessionWithTool(recorded, SCENARIO_TOOL[scenario]!);
    if (!dir) {
      outcome[scenario] = 'no session holds its call';
      continue;
    }
    const replay = await replaySession(dir, { http: { port: 0 } });
    const got = await runConformance(
      NODE22!,
      replay.url,
      path.join(tmp, `${label}-replay`, scenario),
      scenario,
    );
    await replay.close();
    const mine = new Map([...direct].filter(([k]) => k.startsWith(`${scenario}/`)));
    const results = (checks: Checks) =>
      Object.fromEntries([...(checks.results ?? [])].filter(([k]) => k.startsWith(`${scenario}/`)));
    // The same checks, and the same CallToolResult the check saw (the suite's checks are lenient about it).
    outcome[scenario] = {
      differences: differences(mine, got),
      sameResults: isDeepStrictEqual(results(direct), results(got)),
    };
  }
  return outcome;
}

describe.skipIf(NODE22 === null)('the MCP conformance suite through mcec-record http and a replay', () => {
  it('the simulator: check for check the same results through the proxy as direct; a replay passes what it passed', async () => {
    const target = await startSim();
    const direct = await runConformance(NODE22!, target, path.join(tmp, 'sim-direct'));
    const recorded = path.join(tmp, 'sim-recorded');
    const proxy = await startRecordCli(target, recorded);
    const proxied = await runConformance(NODE22!, proxy.url, path.join(tmp, 'sim-proxied'));
    await proxy.stop();
    expect(direct.size).toBeGreaterThan(20);
    expect(differences(direct, proxied)).toEqual({});
    const passed = passedScenarios(direct);
    expect(passed).toEqual(SIM_PASSES);
    expect(
      await replayEach(
        recorded,
        passed.filter((p) => SCENARIO_TOOL[p]),
        direct,
        'sim',
      ),
    ).toEqual(REPLAYED);
  }, 180_000);

  it('server-everything: the same through the proxy as direct, but that the proxy refuses a DNS-rebinding Host', async () => {
    const target = await startEverything();
    const direct = await runConformance(NODE22!, target, path.join(tmp, 'everything-direct'));
    const recorded = path.join(tmp, 'everything-recorded');
    const proxy = await startRecordCli(target, recorded);
    const proxied = await runConformance(NODE22!, proxy.url, path.join(tmp, 'everything-proxied'));
    await proxy.stop();
    expect(direct.size).toBeGreaterThan(20);
    // server-everything has no DNS-rebinding protection; the proxy applies the MCP specification's Host and
    // Origin validation in front of it (403), so that one check passes through the proxy only.
    expect(differences(direct, proxied)).toEqual({
      'dns-rebinding-protection/localhost-host-rebinding-rejected': [
        'FAILURE: Expected HTTP 4xx for invalid Host/Origin headers, got 200',
        'SUCCESS',
      ],
    });
    const passed = passedScenarios(direct);
    expect(passed).toEqual(EVERYTHING_PASSES);
    expect(
      await replayEach(
        recorded,
        passed.filter((p) => SCENARIO_TOOL[p]),
        direct,
        'everything',
      ),
    ).toEqual(REPLAYED);
  }, 180_000);
});
