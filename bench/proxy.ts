/**
 * The recording proxy's added latency per call on loopback: the simulator (`mcec-sim --http`, a child) called
 * directly, against the same calls through `mcec-record http` (a child) in front of it. Sequential calls of
 * a small tool (find) over keep-alive connections, arms alternated per round, medians per call. The stdio
 * proxy is measured the same way: `mcec-sim --stdio` directly vs `mcec-record stdio -- mcec-sim --stdio`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { alternate, fmtMs, median, nowMs, percentile, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

const FIND = { window: 'Untitled - Notepad', by: 'automationid', value: '15' };

/** Start a CLI child and wait for the line that names its URL. */
function startServer(args: string[], pattern: RegExp): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = '';
    const onData = (b: Buffer) => {
      seen += b.toString('utf8');
      const m = pattern.exec(seen);
      if (m) resolve({ child, url: m[1]! });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${seen.slice(0, 500)}`)));
    setTimeout(
      () => reject(new Error(`no URL from ${args.join(' ')}: ${seen.slice(0, 500)}`)),
      15_000,
    ).unref();
  });
}

/** Stop a child with SIGTERM (SIGKILL after 3 s) and wait for it. */
function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** POST one JSON-RPC message over a keep-alive agent; resolves with the body. */
function post(agent: http.Agent, url: URL, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString('utf8'))
            : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Per-call times (ms) of `calls` sequential tools/call find requests to `url`. */
async function httpCalls(agent: http.Agent, url: URL, calls: number, idBase: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: idBase + i,
      method: 'tools/call',
      params: { name: 'find', arguments: FIND },
    });
    const t0 = nowMs();
    await post(agent, url, body);
    times.push(nowMs() - t0);
  }
  return times;
}

/** A newline-delimited JSON-RPC client over a child's stdio. */
class StdioClient {
  private readonly waiting = new Map<number, () => void>();
  constructor(readonly child: ChildProcess) {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      let id: unknown;
      try {
        id = (JSON.parse(line) as { id?: unknown }).id;
      } catch {
        return;
      }
      const done = typeof id === 'number' ? this.waiting.get(id) : undefined;
      if (done) {
        this.waiting.delete(id as number);
        done();
      }
    });
    child.stderr!.resume();
  }
  call(id: number, method: string, params: unknown): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
  async times(calls: number, idBase: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < calls; i++) {
      const t0 = nowMs();
      await this.call(idBase + i, 'tools/call', { name: 'find', arguments: FIND });
      out.push(nowMs() - t0);
    }
    return out;
  }
}

export const figure: Figure = {
  id: 'proxy',
  title: 'Recording proxy: added latency per call on loopback',
  async run(ctx) {
    const rounds = ctx.quick ? 4 : 10;
    const calls = ctx.quick ? 200 : 1000;
    const sim = path.join(ctx.root, 'dist', 'cli', 'mcec-sim.js');
    const rec = path.join(ctx.root, 'dist', 'cli', 'mcec-record.js');
    const sessions = path.join(ctx.tmp, 'sessions');
    const rows: Row[] = [];
    const children: ChildProcess[] = [];
    try {
      // HTTP: simulator and proxy as separate processes, as they would run.
      const target = await startServer(
        [sim, '--http', '127.0.0.1:0', '--seed', '7', '--sessions', path.join(ctx.tmp, 'sim')],
        /listening on (http:\/\/\S+)/,
      );
      children.push(target.child);
      const proxy = await startServer(
        [
          rec,
          'http',
          '--listen',
          '127.0.0.1:0',
          '--target',
          target.url,
          '--sessions',
          path.join(sessions, 'http'),
        ],
        /recording (http:\/\/\S+) ->/,
      );
      children.push(proxy.child);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const direct = new URL(target.url);
      const through = new URL(proxy.url);
      await httpCalls(agent, direct, 200, 1);
      await httpCalls(agent, through, 200, 1);
      ctx.log(`http: ${rounds} rounds x ${calls} calls per arm`);
      let id = 1000;
      const p50 = { direct: [] as number[], proxied: [] as number[] };
      const p99 = { direct: [] as number[], proxied: [] as number[] };
      await alternate(rounds, {
        direct: async () => {
          id += calls;
          const t = await httpCalls(agent, direct, calls, id);
          p50.direct.push(median(t));
          p99.direct.push(percentile(t, 99));
          return 0;
        },
        proxied: async () => {
          id += calls;
          const t = await httpCalls(agent, through, calls, id);
          p50.proxied.push(median(t));
          p99.proxied.push(percentile(t, 99));
          return 0;
        },
      });
      agent.destroy();
      const addedPerRound = p50.proxied.map((v, i) => v - p50.direct[i]!);
      const added = median(addedPerRound);
      rows.push({
        name: 'HTTP proxy (mcec-record http), median call',
        budget: '<= 1 ms added at the median',
        measured: `${fmtMs(added)} added (${fmtMs(median(p50.proxied))} per call)`,
        baseline: `${fmtMs(median(p50.direct))} per call direct`,
        ratio: round(added / 1, 3),
        holds: added <= 1,
        notes: [
          `${rounds} rounds x ${calls} sequential tools/call find requests per arm, one keep-alive connection, arms alternated.`,
          `p99: ${fmtMs(median(p99.proxied))} proxied vs ${fmtMs(median(p99.direct))} direct. Ratio is added ms / 1 ms.`,
        ],
        data: {
          p50MsPerRound: {
            direct: p50.direct.map((v) => round(v, 4)),
            proxied: p50.proxied.map((v) => round(v, 4)),
          },
          p99MsPerRound: {
            direct: p99.direct.map((v) => round(v, 4)),
            proxied: p99.proxied.map((v) => round(v, 4)),
          },
        },
      });
      await stop(proxy.child);
      await stop(target.child);

      // stdio: the simulator alone vs behind the stdio proxy.
      const directChild = spawn(
        process.execPath,
        [sim, '--stdio', '--seed', '7', '--sessions', path.join(ctx.tmp, 'sim2')],
        {
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      children.push(directChild);
      const proxiedChild = spawn(
        process.execPath,
        [
          rec,
          'stdio',
          '--sessions',
          path.join(sessions, 'stdio'),
          '--',
          process.execPath,
          sim,
          '--stdio',
          '--seed',
          '7',
          '--sessions',
          path.join(ctx.tmp, 'sim3'),
        ],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      children.push(proxiedChild);
      const a = new StdioClient(directChild);
      const b = new StdioClient(proxiedChild);
      await a.call(1, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '0' },
      });
      await b.call(1, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '0' },
      });
      await a.times(200, 10);
      await b.times(200, 10);
      ctx.log(`stdio: ${rounds} rounds x ${calls} calls per arm`);
      const s50 = { direct: [] as number[], proxied: [] as number[] };
      let sid = 1000;
      await alternate(rounds, {
        direct: async () => {
          sid += calls;
          s50.direct.push(median(await a.times(calls, sid)));
          return 0;
        },
        proxied: async () => {
          sid += calls;
          s50.proxied.push(median(await b.times(calls, sid)));
          return 0;
        },
      });
      const sAdded = median(s50.proxied.map((v, i) => v - s50.direct[i]!));
      rows.push({
        name: 'stdio proxy (mcec-record stdio), median call',
        budget: '<= 1 ms added at the median',
        measured: `${fmtMs(sAdded)} added (${fmtMs(median(s50.proxied))} per call)`,
        baseline: `${fmtMs(median(s50.direct))} per call direct`,
        ratio: round(sAdded / 1, 3),
        holds: sAdded <= 1,
        notes: [`${rounds} rounds x ${calls} sequential calls per arm over pipes, arms alternated.`],
        data: {
          p50MsPerRound: {
            direct: s50.direct.map((v) => round(v, 4)),
            proxied: s50.proxied.map((v) => round(v, 4)),
          },
        },
      });
      directChild.stdin!.end();
      proxiedChild.stdin!.end();
    } finally {
      await Promise.all(children.map(stop));
    }
    return { rows, notes: [] };
  },
};
