/**
 * `mcec-record http` records in a worker thread that commits each batch it is sent (src/proxy/README.md): the
 * calls it forwarded are committed while it runs, not only at its close, so another process reads them from the
 * log (and a crash loses only the last batch's). The built CLI in front of the simulator.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { listSessions } from '../../src/store/session-reader.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { ROOT } from '../support/programs.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { post, waitFor } from './helpers.js';

const RECORD_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-record.js');
const temp = tempDirPerTest();

/** A tools/call over HTTP; the answer's body as text (200 expected). */
async function call(url: URL, id: number, name: string, args: object): Promise<string> {
  const answer = await post(
    url.href,
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
  );
  const text = answer.body.toString('utf8');
  if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${text}`);
  return text;
}

/** Completed calls in every session log under `dir`, read by a connection of this process (not the proxy's). */
function completedCalls(dir: string): number {
  let n = 0;
  for (const s of listSessions(dir)) {
    const db = new Database(path.join(s.dir, 'session.sqlite'), { readonly: true, fileMustExist: true });
    try {
      n += db.prepare("SELECT count(*) FROM calls WHERE status != 'pending'").pluck().get() as number;
    } finally {
      db.close();
    }
  }
  return n;
}

describe('mcec-record http: commits while it runs', () => {
  it('a reader sees each forwarded call in its session log before the proxy stops', async () => {
    const { listener: upstream } = await simOnHttp(path.join(temp.dir, 'sim'), { seed: 11 });
    temp.defer(() => upstream.close());
    const sessionsDir = path.join(temp.dir, 'sessions');
    const child = spawn(
      process.execPath,
      [RECORD_CLI, 'http', '--listen', '127.0.0.1:0', '--target', upstream.url, '--sessions', sessionsDir],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    temp.defer(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await waitFor(() => /recording (http:\/\/\S+) ->/.test(stderr) || child.exitCode !== null, 15_000);
    const url = new URL(/recording (http:\/\/\S+) ->/.exec(stderr)?.[1] ?? 'http://127.0.0.1:1/');
    expect(child.exitCode, stderr).toBeNull();
    const start = await call(url, 1, 'session-start', {});
    const sessionId = JSON.parse(JSON.parse(start).result.content.at(-1).text).sessionId as string;
    await call(url, 2, 'find', { sessionId, window: 'Save As', value: 'Save' });
    await call(url, 3, 'windows', { sessionId });
    // Committed while it runs: polled (not timed), the proxy still running and not told to flush.
    await waitFor(() => {
      try {
        return completedCalls(sessionsDir) === 3;
      } catch {
        return false; // the log being created as we look
      }
    }, 10_000);
    expect(child.exitCode).toBeNull();
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(0);
    expect(completedCalls(sessionsDir)).toBe(3);
  }, 60_000);
});
