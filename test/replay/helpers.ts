/** Helpers for the replay suites: a demo recorded with the raw answers kept, and a stdio JSON-RPC client. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll } from 'vitest';
import { DEMO_SCENARIO } from '../../src/demo/run-demo.js';
import { runScriptedAgent, type ScriptedRun } from '../../src/demo/scripted-agent.js';
import { createRecorder } from '../../src/record/recorder.js';
import { type CallToolResult, createSimulator } from '../../src/sim/index.js';
import { tempDir as makeTempDir } from '../support/temp.js';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const REPLAY_CLI = path.join(root, 'dist/cli/mcec-replay.js');
export const RECORD_CLI = path.join(root, 'dist/cli/mcec-record.js');

/** A fresh temp dir. */
export function tempDir(): string {
  return makeTempDir('mcec-replay-test-');
}

/** One call as the agent saw it on the wire. */
export interface WireCall {
  tool: string;
  args: Record<string, unknown>;
  output: CallToolResult;
}

/** The demo recorded through `wrap`, with every raw answer the simulator sent. */
export interface RecordedDemo {
  sessionsDir: string;
  sessionDir: string;
  sessionId: string;
  run: ScriptedRun;
  wire: WireCall[];
}

/** Record the demo's scripted agent against the simulator (as runDemo does), keeping the raw answers. */
export async function recordDemo(sessionsDir: string): Promise<RecordedDemo> {
  const sim = createSimulator({ sessionsRoot: path.join(sessionsDir, '..', 'sim-artifacts') });
  const recorder = createRecorder({ sessionsDir, scenario: DEMO_SCENARIO, stderr: () => {} });
  const initialize = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18' },
  };
  recorder.recordExchange(initialize, await sim.handle(initialize));
  const wire: WireCall[] = [];
  const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
    const output = await sim.callTool(tool, args);
    wire.push({ tool, args: structuredClone(args), output: structuredClone(output) });
    return output;
  });
  const run = await runScriptedAgent(dispatch, recorder);
  await recorder.end(run.sessionId, { passed: run.passed, reason: run.reason });
  await recorder.flush();
  const dir = recorder.session(run.sessionId)!.dir;
  await recorder.close();
  return { sessionsDir, sessionDir: dir, sessionId: run.sessionId, run, wire };
}

/**
 * The suite's recorded demo: recorded once before its tests into a temp dir (`work`, where tests may write
 * too), removed after them. Read `demo` and `work` inside hooks and tests.
 */
export function useRecordedDemo(): { readonly demo: RecordedDemo; readonly work: string } {
  let work: string | undefined;
  let demo: RecordedDemo | undefined;
  beforeAll(async () => {
    work = tempDir();
    demo = await recordDemo(path.join(work, 'sessions'));
  });
  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });
  return {
    get demo() {
      if (!demo) throw new Error('the recorded demo is read before its beforeAll ran');
      return demo;
    },
    get work() {
      if (!work) throw new Error('the demo work dir is read before its beforeAll ran');
      return work;
    },
  };
}

/** The scripted agent's calls without their one-line descriptions' volatile parts: what it did and learned. */
export function callsOf(run: ScriptedRun) {
  return run.calls.map((c) => ({
    tool: c.tool,
    args: c.args,
    ok: c.ok,
    code: c.code,
    warnings: c.warnings,
    line: c.line,
  }));
}

/** A spawned `mcec-replay --stdio` with a JSON-RPC client on its pipes. */
export class StdioReplay {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  private buffer = '';
  private nextId = 1;
  private readonly waiting = new Map<number, (msg: Record<string, unknown>) => void>();
  readonly exited: Promise<number | null>;
  /** Every line the replay wrote, raw. */
  readonly lines: string[] = [];

  /** Spawn `mcec-replay ARGS`, or with `program` (a built CLI's path) that program with ARGS. */
  constructor(args: string[], env: NodeJS.ProcessEnv = {}, program = REPLAY_CLI) {
    this.child = spawn(process.execPath, [program, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    this.child.stderr.setEncoding('utf8').on('data', (s: string) => {
      this.stderr += s;
    });
    this.child.stdout.setEncoding('utf8').on('data', (s: string) => {
      this.buffer += s;
      let nl = this.buffer.indexOf('\n');
      while (nl >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.lines.push(line);
        const msg = JSON.parse(line) as Record<string, unknown>;
        const resolve = this.waiting.get(msg.id as number);
        if (resolve) {
          this.waiting.delete(msg.id as number);
          resolve(msg);
        }
        nl = this.buffer.indexOf('\n');
      }
    });
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** Send a request and wait for its answer (rejects when the replay exits first). */
  request(method: string, params?: unknown): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const message = { jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) };
    return new Promise((resolve, reject) => {
      this.waiting.set(id, resolve);
      this.exited.then(() => {
        if (this.waiting.delete(id))
          reject(new Error(`the replay exited before answering ${method}: ${this.stderr}`));
      });
      this.child.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** A dispatch for the scripted agent: tools/call over the pipe, the CallToolResult back. */
  dispatch = async (tool: string, args: Record<string, unknown>): Promise<unknown> => {
    const answer = await this.request('tools/call', { name: tool, arguments: args });
    return answer.result;
  };

  /** Close stdin and wait for the exit code. */
  async end(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }
}

/** The replay report's validator, compiled from schema/replay-report.schema.json with Ajv2020 (strict). */
export function reportValidator(): (value: unknown) => string[] {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const fn = ajv.compile(
    JSON.parse(fs.readFileSync(path.join(root, 'schema/replay-report.schema.json'), 'utf8')),
  );
  return (value: unknown) =>
    fn(JSON.parse(JSON.stringify(value)))
      ? []
      : (fn.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
}

/** Parsed JSON, loosely typed: tests read deep into envelopes and let the assertions do the checking. */
// biome-ignore lint/suspicious/noExplicitAny: assertion-only view of parsed JSON
export type Loose = any;

/** The envelope of a CallToolResult, loosely typed for assertions. */
export function env(out: unknown): Loose {
  const content = (out as CallToolResult).content;
  return JSON.parse((content[content.length - 1] as { text: string }).text);
}
