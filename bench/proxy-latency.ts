/**
 * Latency the recording proxies add to a call on loopback, against calling the simulator directly in the
 * same run. Every party is its own process, as in use: the simulator (`mcec-sim`), the proxy
 * (`mcec-record`, recording into SQLite) and this client. Calls are sequential, a small non-image `find`;
 * per round we take each arm's median call, and the figure is the median over rounds of (proxied - direct).
 * Budget (issue 6): at most 1 ms added at the median for HTTP; stdio is measured the same way.
 *
 * Run alone: `npx tsx bench/proxy-latency.ts [--quick]` (needs a built dist/).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { alternate, fmtMs, median, nowMs, round } from './lib/stats.js';
import type { Figure, FigureContext, Row } from './lib/types.js';

const BUDGET_MS = 1;
const FIND = { name: 'find', arguments: { window: 'Untitled - Notepad', by: 'automationid', value: '15' } };

/** Start a program and wait until its stderr matches `ready`; resolves with the first capture group. */
function startAndWait(
  args: string[],
  ready: RegExp,
  cwd: string,
): Promise<{ child: ChildProcessWithoutNullStreams; match: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd });
    let err = '';
    const timer = setTimeout(() => reject(new Error(`not ready in 20 s: ${args.join(' ')}\n${err}`)), 20_000);
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      const m = ready.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m[1]! });
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code} before ready: ${args.join(' ')}\n${err}`)));
  });
}

function stop(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('close', () => resolve());
    child.kill('SIGINT');
  });
}

/** Sequential HTTP calls over one keep-alive connection; per-call times in ms. */
function httpCaller(url: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let id = 0;
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: FIND });
      const req = http.request(
        url,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return {
    async time(calls: number): Promise<number[]> {
      const times: number[] = [];
      for (let i = 0; i < calls; i++) {
        const t0 = nowMs();
        await once();
        times.push(nowMs() - t0);
      }
      return times;
    },
    close: () => agent.destroy(),
  };
}

/** Sequential calls over a child's stdin/stdout (one response line per request); per-call times in ms. */
function stdioCaller(child: ChildProcessWithoutNullStreams) {
  let id = 0;
  let buffered = '';
  let waiting: (() => void) | null = null;
  child.stdout.on('data', (c: Buffer) => {
    buffered += c.toString('utf8');
    const nl = buffered.lastIndexOf('\n');
    if (nl >= 0) {
      buffered = buffered.slice(nl + 1);
      const w = waiting;
      waiting = null;
      w?.();
    }
  });
  const once = () =>
    new Promise<void>((resolve) => {
      waiting = resolve;
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: FIND })}\n`,
      );
    });
  return {
    async time(calls: number): Promise<number[]> {
      const times: number[] = [];
      for (let i = 0; i < calls; i++) {
        const t0 = nowMs();
        await once();
        times.push(nowMs() - t0);
      }
      return times;
    },
  };
}

interface Arms {
  direct: number[];
  proxied: number[];
}

async function measureArms(
  direct: { time(n: number): Promise<number[]> },
  proxied: { time(n: number): Promise<number[]> },
  rounds: number,
  calls: number,
): Promise<Arms> {
  await direct.time(Math.min(300, calls));
  await proxied.time(Math.min(300, calls));
  return alternate(rounds, {
    direct: async () => median(await direct.time(calls)),
    proxied: async () => median(await proxied.time(calls)),
  });
}

function row(name: string, arms: Arms, notes: string[]): Row {
  const addedPerRound = arms.proxied.map((p, i) => p - arms.direct[i]!);
  const added = median(addedPerRound);
  const directMs = median(arms.direct);
  const proxiedMs = median(arms.proxied);
  return {
    name,
    budget: `<= ${BUDGET_MS} ms added at the median`,
    measured: `${fmtMs(added)} added per call (${fmtMs(proxiedMs)} through the proxy)`,
    baseline: `${fmtMs(directMs)} per direct call`,
    ratio: round(proxiedMs / directMs, 3),
    holds: added <= BUDGET_MS,
    notes,
    data: {
      addedMsPerRound: addedPerRound.map((v) => round(v, 6)),
      directMedianMsPerRound: arms.direct.map((v) => round(v, 6)),
      proxiedMedianMsPerRound: arms.proxied.map((v) => round(v, 6)),
      addedMedianMs: round(added, 6),
    },
  };
}

export const figure: Figure = {
  id: 'proxy',
  title: 'Latency the recording proxy adds per call on loopback',
  async run(ctx: FigureContext) {
    const rounds = ctx.quick ? 4 : 10;
    const calls = ctx.quick ? 300 : 1000;
    const dist = (name: string) => path.join(ctx.root, 'dist', 'cli', name);
    const rows: Row[] = [];

    ctx.log(`http: ${rounds} rounds x ${calls} calls per arm`);
    const sim = await startAndWait(
      [dist('mcec-sim.js'), '--http', '127.0.0.1:0', '--seed', '7', '--sessions', path.join(ctx.tmp, 'sim')],
      /listening on (http:\S+)/,
      ctx.tmp,
    );
    const proxy = await startAndWait(
      [
        dist('mcec-record.js'),
        'http',
        '--listen',
        '127.0.0.1:0',
        '--target',
        sim.match,
        '--sessions',
        path.join(ctx.tmp, 'rec-http'),
      ],
      /recording (http:\S+)/,
      ctx.tmp,
    );
    const direct = httpCaller(sim.match);
    const proxied = httpCaller(proxy.match);
    try {
      rows.push(
        row('HTTP: small find, sequential, keep-alive', await measureArms(direct, proxied, rounds, calls), [
          'Three processes: client, mcec-record http (recording to SQLite), mcec-sim --http; all on 127.0.0.1.',
          `${rounds} rounds x ${calls} calls per arm, arms alternated; per-round medians, then the median of the differences.`,
        ]),
      );
    } finally {
      direct.close();
      proxied.close();
      await stop(proxy.child);
      await stop(sim.child);
    }

    ctx.log(`stdio: ${rounds} rounds x ${calls} calls per arm`);
    const simArgs = [dist('mcec-sim.js'), '--stdio', '--seed', '7', '--sessions', path.join(ctx.tmp, 'sim')];
    const bare = spawn(process.execPath, simArgs, { cwd: ctx.tmp });
    const recorded = spawn(
      process.execPath,
      [
        dist('mcec-record.js'),
        'stdio',
        '--sessions',
        path.join(ctx.tmp, 'rec-stdio'),
        '--',
        process.execPath,
        ...simArgs,
      ],
      { cwd: ctx.tmp },
    );
    try {
      rows.push(
        row(
          'stdio: small find, sequential',
          await measureArms(stdioCaller(bare), stdioCaller(recorded), rounds, calls),
          [
            'mcec-record stdio runs mcec-sim --stdio as its child: one more process hop each way than the direct arm.',
          ],
        ),
      );
    } finally {
      bare.stdin.end();
      recorded.stdin.end();
      await Promise.all([bare, recorded].map((c) => new Promise((r) => c.once('close', r))));
    }
    return { rows, notes: [] };
  },
};

// Standalone: print the rows.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-bench-proxy-'));
  const quick = process.argv.includes('--quick');
  figure
    .run({ quick, root, tmp, log: (m) => process.stderr.write(`${m}\n`) })
    .then((result) => {
      for (const r of result.rows) {
        process.stdout.write(`${r.name}: ${r.measured}; baseline ${r.baseline}; holds: ${r.holds}\n`);
      }
    })
    .finally(() => fs.rmSync(tmp, { recursive: true, force: true }));
}
