/**
 * Handles bounded in the HTTP proxy: the built `mcec-record http` under `ulimit -n 256`, 32 keep-alive
 * clients recording 400 sessions (3 calls each, left open) through it to the simulator: six times the old
 * fixed pool of 64 logs, so past its first 64 sessions every one evicts another's handle. The log pool is
 * sized from the process's file limit, so the sockets keep room: no client gets a 502 and every call is in
 * its log. Before, the pool kept 64 logs (192 descriptors) whatever the limit: 1,276 of 3,000 calls were
 * answered 502 and 2,814 lost from the recording.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { listSessions } from '../../src/store/session-reader.js';
import { ROOT } from '../support/programs.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { tmpfsTempDir } from '../support/temp.js';
import { removeRoot, reportFigure } from './helpers.js';

const RECORD_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-record.js');
const SESSIONS = 400;
const CLIENTS = 32;

/** One tools/call; the simulator's own 503 (over its 16 requests in flight, as MCEC) is tried again. */
async function rpcCall(
  agent: http.Agent,
  url: URL,
  id: number,
  name: string,
  args: object,
  statuses: Map<number, number>,
): Promise<{ status: number; body: string }> {
  for (;;) {
    const res = await rpcOnce(agent, url, id, name, args);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status !== 503 || !res.body.includes('Server busy')) return res;
  }
}

function rpcOnce(agent: http.Agent, url: URL, id: number, name: string, args: object) {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args },
  });
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (s: string) => {
          text += s;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('handles: the HTTP proxy under ulimit -n 256', () => {
  const root = tmpfsTempDir('mcec-pfd-');
  afterAll(() => removeRoot(root));

  it('32 keep-alive clients, 400 open sessions: no 502, every call recorded', async () => {
    const { listener: upstream } = await simOnHttp(path.join(root, 'sim'), { seed: 11 });
    const sessionsDir = path.join(root, 'sessions');
    const child = spawn(
      'bash',
      [
        '-c',
        'ulimit -n 256 && exec "$0" "$@"',
        process.execPath,
        RECORD_CLI,
        'http',
        '--listen',
        '127.0.0.1:0',
        '--target',
        upstream.url,
        '--sessions',
        sessionsDir,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<URL>((resolve, reject) => {
        const timer = setInterval(() => {
          const m = /recording (http:\/\/\S+) ->/.exec(stderr);
          if (m) {
            clearInterval(timer);
            resolve(new URL(m[1]!));
          }
        }, 20);
        child.on('exit', () => {
          clearInterval(timer);
          reject(new Error(`mcec-record exited: ${stderr}`));
        });
      });
      const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
      const statuses = new Map<number, number>();
      let next = 0;
      let id = 0;
      const t0 = performance.now();
      const worker = async () => {
        while (next < SESSIONS) {
          next += 1;
          const start = await rpcCall(agent, url, ++id, 'session-start', {}, statuses);
          if (start.status !== 200) continue;
          const envelope = JSON.parse(JSON.parse(start.body).result.content.at(-1).text);
          const sessionId = envelope.sessionId as string;
          for (const [tool, args] of [
            ['find', { sessionId, window: 'Save As', value: 'Save' }],
            ['windows', { sessionId }],
          ] as const) {
            await rpcCall(agent, url, ++id, tool, args, statuses);
          }
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, worker));
      const wallMs = Math.round(performance.now() - t0);
      agent.destroy();
      child.kill('SIGINT');
      expect(await exited, stderr).toBe(0);
      const busy = statuses.get(503) ?? 0;
      statuses.delete(503);
      expect(Object.fromEntries(statuses)).toEqual({ 200: SESSIONS * 3 });
      expect(stderr).toMatch(/may open 256 files \(ulimit -n\): keeping at most 42 session logs open/);
      expect(stderr).not.toMatch(/recording failed|unable to open/i);
      const sessions = listSessions(sessionsDir);
      expect(sessions).toHaveLength(SESSIONS);
      let recorded = 0;
      for (const s of sessions) {
        const db = new Database(path.join(s.dir, 'session.sqlite'), { readonly: true, fileMustExist: true });
        recorded += db
          .prepare("SELECT count(*) FROM calls WHERE status != 'pending'")
          .pluck()
          .get() as number;
        db.close();
      }
      // Every 200 the clients got is a completed call in its log. A busy answer is a call too when the
      // simulator gave it; the proxy's own 503 (MCEC's front door: past 16 in flight) never reached a server.
      expect(recorded - SESSIONS * 3).toBeGreaterThanOrEqual(0);
      expect(recorded - SESSIONS * 3).toBeLessThanOrEqual(busy);
      reportFigure('proxy-handles', { sessions: SESSIONS, calls: recorded, busyRetried: busy, wallMs });
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await upstream.close();
      fs.rmSync(path.join(root, 'sim'), { recursive: true, force: true });
    }
  }, 600_000);
});
