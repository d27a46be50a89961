import http from 'node:http';
import { expect } from 'vitest';
import { validateEnvelope } from '../../src/contract/index.js';
import type { CallToolResult, Simulator } from '../../src/sim/index.js';
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
