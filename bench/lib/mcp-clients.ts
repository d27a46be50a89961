/** Clients of the simulator and the recording proxies, over HTTP and stdio, as the proxy and soak figures drive them. */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { nowMs } from './stats.js';

export const FIND = { window: 'Untitled - Notepad', by: 'automationid', value: '15' };

/** The built simulator and recorder CLIs of the repo at `root`. */
function clis(root: string): { sim: string; rec: string } {
  return {
    sim: path.join(root, 'dist', 'cli', 'mcec-sim.js'),
    rec: path.join(root, 'dist', 'cli', 'mcec-record.js'),
  };
}

/** `mcec-sim --http` on a free loopback port (seed 7, its artifacts in `simDir`), once it names its URL. */
export function startHttpSim(root: string, simDir: string): Promise<{ child: ChildProcess; url: string }> {
  return startServer(
    [clis(root).sim, '--http', '127.0.0.1:0', '--seed', '7', '--sessions', simDir],
    /listening on (http:\/\/\S+)/,
  );
}

/** `mcec-record http` on a free loopback port in front of `target`, recording into `sessionsDir`. */
export function startHttpRecorder(
  root: string,
  target: string,
  sessionsDir: string,
): Promise<{ child: ChildProcess; url: string }> {
  return startServer(
    [clis(root).rec, 'http', '--listen', '127.0.0.1:0', '--target', target, '--sessions', sessionsDir],
    /recording (http:\/\/\S+) ->/,
  );
}

/**
 * `mcec-sim --stdio` (seed 7, its artifacts in `simDir`) on pipes: alone, behind `mcec-record stdio`
 * recording into a sessions dir, or behind the bare pass-through `bench/lib/bare-stdio-proxy.cjs` (the
 * stdio proxy's floor).
 */
export function spawnStdioSim(
  root: string,
  simDir: string,
  through?: { recordInto: string } | { bare: string },
): ChildProcess {
  const { sim, rec } = clis(root);
  const server = [sim, '--stdio', '--seed', '7', '--sessions', simDir];
  const front =
    through === undefined
      ? null
      : 'bare' in through
        ? [through.bare, '--']
        : [rec, 'stdio', '--sessions', through.recordInto, '--'];
  const args = front === null ? server : [...front, process.execPath, ...server];
  return spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Start a CLI child and wait for the line that names its URL. */
export function startServer(args: string[], pattern: RegExp): Promise<{ child: ChildProcess; url: string }> {
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
export function stop(child: ChildProcess): Promise<void> {
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
export function post(agent: http.Agent, url: URL, body: string): Promise<string> {
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
export async function httpCalls(
  agent: http.Agent,
  url: URL,
  calls: number,
  idBase: number,
): Promise<number[]> {
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

/** Per-call times (ms) of `agents.length` clients at once, each making `calls` sequential calls on its own agent. */
export async function concurrentCalls(
  agents: http.Agent[],
  url: URL,
  calls: number,
  idBase: number,
): Promise<number[]> {
  const each = await Promise.all(agents.map((a, k) => httpCalls(a, url, calls, idBase + k * calls)));
  return each.flat();
}

/** A newline-delimited JSON-RPC client over a child's stdio. */
export class StdioClient {
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
