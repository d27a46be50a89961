/**
 * A collector that answers 200 and then drips its body (one byte every 200 ms, for ever): every export has
 * a wall-clock deadline, so the built `mcec-bundle export --otlp` ends (exit 1, the spans dropped) and a
 * recorder with a live export exits by itself soon after `close()`. Before, both hung for ever.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';

const CHILD = fileURLToPath(new URL('./fixtures/drip-recorder-child.mjs', import.meta.url));

let root: string;
let server: http.Server;
let url: string;
let requests = 0;

beforeAll(async () => {
  root = tempDir('mcec-drip-');
  server = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      const timer = setInterval(() => res.write('x'), 200);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  removeDir(root);
});

describe('a collector that drips its answer', () => {
  it('mcec-bundle export --otlp ends within its deadline, the spans counted as dropped', async () => {
    const sessionsDir = path.join(root, 'sessions');
    const s = FixtureSession.create(sessionsDir);
    s.call(calls.displays());
    s.call(calls.findSave());
    s.end();
    const before = requests;
    const t = performance.now();
    const res = await runNode([BUNDLE_CLI, 'export', s.sessionId, '--otlp', url, '--json'], {
      env: { MCEC_SESSIONS_DIR: sessionsDir },
    });
    const ms = performance.now() - t;
    expect(requests).toBeGreaterThan(before);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stdout + res.stderr).toMatch(/did not answer within 10000 ms|dropped/);
    // The default 10 s export limit, plus start-up and the loaded machine.
    expect(ms).toBeLessThan(40_000);
  }, 90_000);

  it('a recorder with a live export exits by itself soon after close()', async () => {
    const child = spawn(process.execPath, [CHILD, path.join(root, 'live'), url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s;
    });
    let closedAt = 0;
    child.stdout.once('data', () => {
      closedAt = performance.now();
    });
    const exited = await new Promise<number | null>((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('exit', (code) => {
        clearTimeout(kill);
        resolve(code);
      });
    });
    expect(exited).toBe(0);
    const { closeMs } = JSON.parse(out) as { closeMs: number };
    // close() waits its shutdownTimeoutMs (1 s); then nothing of the collector's holds the exit.
    expect(closeMs).toBeLessThan(10_000);
    expect(performance.now() - closedAt).toBeLessThan(5_000);
    expect(fs.existsSync(path.join(root, 'live'))).toBe(true);
  }, 90_000);
});
