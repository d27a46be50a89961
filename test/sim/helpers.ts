import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { validateEnvelope } from '../../src/contract/index.js';
import { type CallToolResult, createSimulator, type Simulator } from '../../src/sim/index.js';
import { tempDir as makeTempDir, removeDir } from '../support/temp.js';

/** Parsed JSON, loosely typed: tests read deep into results and let the assertions do the checking. */
// biome-ignore lint/suspicious/noExplicitAny: assertion-only view of parsed JSON
export type Loose = any;

/** A parsed envelope, loosely typed for assertions. */
export interface Env {
  ok: boolean;
  sessionId: string | null;
  result?: Record<string, Loose>;
  warnings?: Array<{ code: string; detail: string }>;
  error?: {
    code: string;
    category: string;
    detail: string;
    lastObservation?: Record<string, Loose>;
    partialResult?: Record<string, Loose>;
  };
}

/** One tool call: the CallToolResult, its envelope (checked against the contract), and the envelope text. */
export interface Called {
  out: CallToolResult;
  env: Env;
  text: string;
}

/** Parse the envelope out of a CallToolResult and assert it is valid and mirrored by isError. */
export function envelopeFrom(out: CallToolResult): Called {
  const last = out.content[out.content.length - 1]!;
  expect(last.type).toBe('text');
  const text = (last as { text: string }).text;
  const env = JSON.parse(text) as Env;
  const check = validateEnvelope(env);
  expect(check.violations).toEqual([]);
  expect(out.isError).toBe(!env.ok);
  return { out, env, text };
}

/** Call a tool on a simulator and validate what comes back. */
export async function call(
  sim: Simulator,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Called> {
  return envelopeFrom(await sim.callTool(name, args));
}

/** A fresh temp dir, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = makeTempDir();
  return { dir, cleanup: () => removeDir(dir) };
}

/** What a test file gives every simulator it makes: createSimulator's options but the dirs (each gets its own). */
export type SimulatorDefaults = Omit<
  NonNullable<Parameters<typeof createSimulator>[0]>,
  'sessionsRoot' | 'tempDir'
>;

/**
 * Call once at the top of a test file: a temp dir (`dir`, removed after the file's tests) and `sim`, a fresh
 * simulator each call with its own artifact root (`root-<n>`) and temp dir (`temp-<n>`, as `temp`) in it,
 * made with `defaults` and then `extra`.
 */
export function simulatorsInTempDir(defaults: SimulatorDefaults = {}): {
  dir: string;
  sim: (extra?: SimulatorDefaults) => Simulator & { temp: string };
} {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);
  let made = 0;
  return {
    dir,
    sim(extra = {}) {
      made += 1;
      const temp = path.join(dir, `temp-${made}`);
      fs.mkdirSync(temp, { recursive: true });
      const sim = createSimulator({
        ...defaults,
        sessionsRoot: path.join(dir, `root-${made}`),
        tempDir: temp,
        ...extra,
      });
      return Object.assign(sim, { temp });
    },
  };
}

/** One raw HTTP answer. */
export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A request with node:http, so Host and Origin can be set freely. */
export function request(
  url: string,
  options: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    chunked?: boolean;
  } = {},
): Promise<RawAnswer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: options.path ?? u.pathname,
        method: options.method ?? 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', ...options.headers },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(parts).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.chunked && options.body) {
      // No Content-Length: the body goes chunked, so only the bounded read can catch its size.
      const body = Buffer.from(options.body);
      for (let i = 0; i < body.length; i += 256 * 1024) req.write(body.subarray(i, i + 256 * 1024));
      req.end();
    } else req.end(options.body);
  });
}

/** A tools/call JSON-RPC request. */
export function toolsCall(id: number | string, name: string, args: Record<string, unknown> = {}): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
}

/** True when the text holds only printable ASCII (the server escapes everything else). */
export function isPrintableAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}
