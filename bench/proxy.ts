/**
 * The recording proxy's added latency per call on loopback: the simulator (`mcec-sim --http`, a child) called
 * directly, against the same calls through `mcec-record http` (a child) in front of it. Sequential calls of
 * a small tool (find) over keep-alive connections, arms alternated per round, medians per call. The stdio
 * proxy is measured the same way: `mcec-sim --stdio` directly vs `mcec-record stdio -- mcec-sim --stdio`.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { childPids, processCpuMs } from './lib/cpu.js';
import {
  concurrentCalls,
  httpCalls,
  StdioClient,
  spawnStdioSim,
  startHttpRecorder,
  startHttpSim,
  startServer,
  stop,
} from './lib/mcp-clients.js';
import { alternate, fmtMs, median, percentile, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

const BARE_PROXY = fileURLToPath(new URL('./lib/bare-proxy.cjs', import.meta.url));
const BARE_STDIO_PROXY = fileURLToPath(new URL('./lib/bare-stdio-proxy.cjs', import.meta.url));
/** Clients at once in the concurrent HTTP rows. */
const CLIENTS = 8;

export const figure: Figure = {
  id: 'proxy',
  title: 'Recording proxy: added latency per call on loopback',
  async run(ctx) {
    const rounds = ctx.quick ? 3 : 10;
    const calls = ctx.quick ? 100 : 1000;
    const sessions = path.join(ctx.tmp, 'sessions');
    const rows: Row[] = [];
    const children: ChildProcess[] = [];
    try {
      // HTTP: simulator and proxies as separate processes, as they would run. The floor is a bare Node
      // pass-through proxy (bench/lib/bare-proxy.cjs) in front of the same simulator.
      const target = await startHttpSim(ctx.root, path.join(ctx.tmp, 'sim'));
      children.push(target.child);
      const bare = await startServer([BARE_PROXY, target.url], /listening on (http:\/\/\S+)/);
      children.push(bare.child);
      const proxy = await startHttpRecorder(ctx.root, target.url, path.join(sessions, 'http'));
      children.push(proxy.child);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const clientAgents = Array.from(
        { length: CLIENTS },
        () => new http.Agent({ keepAlive: true, maxSockets: 1 }),
      );
      const urls = { direct: new URL(target.url), bare: new URL(bare.url), recorded: new URL(proxy.url) };
      const pids = { bare: bare.child.pid!, recorded: proxy.child.pid! };
      for (const url of Object.values(urls)) {
        await httpCalls(agent, url, 200, 1);
        await concurrentCalls(clientAgents, url, 25, 1);
      }
      const perClient = Math.max(25, Math.round(calls / 4));
      ctx.log(
        `http: ${rounds} rounds x (${calls} sequential + ${CLIENTS} clients x ${perClient}) calls per arm`,
      );
      let id = 1000;
      type Arm = keyof typeof urls;
      const armStats = () => ({ p50: [] as number[], p99: [] as number[] });
      const seq = { direct: armStats(), bare: armStats(), recorded: armStats() };
      const conc = { direct: armStats(), bare: armStats(), recorded: armStats() };
      const cpuPerCall = { bare: [] as number[], recorded: [] as number[] };
      const runArm = async (arm: Arm) => {
        const pid = arm === 'direct' ? undefined : pids[arm];
        const cpu0 = pid === undefined ? 0 : processCpuMs(pid);
        id += calls;
        const t = await httpCalls(agent, urls[arm], calls, id);
        seq[arm].p50.push(median(t));
        seq[arm].p99.push(percentile(t, 99));
        if (pid !== undefined)
          cpuPerCall[arm as 'bare' | 'recorded'].push((processCpuMs(pid) - cpu0) / calls);
        id += CLIENTS * perClient;
        const c = await concurrentCalls(clientAgents, urls[arm], perClient, id);
        conc[arm].p50.push(median(c));
        conc[arm].p99.push(percentile(c, 99));
        return 0;
      };
      await alternate(rounds, {
        direct: () => runArm('direct'),
        bare: () => runArm('bare'),
        recorded: () => runArm('recorded'),
      });
      agent.destroy();
      for (const a of clientAgents) a.destroy();
      /** Per round: what an arm added over the direct calls of the same round. */
      const addedOver = (arm: number[], direct: number[]) => arm.map((v, i) => v - direct[i]!);
      const added = (stats: typeof seq, key: 'p50' | 'p99') => ({
        bare: median(addedOver(stats.bare[key], stats.direct[key])),
        recorded: median(addedOver(stats.recorded[key], stats.direct[key])),
      });
      const seqP50 = added(seq, 'p50');
      rows.push({
        name: 'HTTP proxy (mcec-record http), median call',
        budget: '<= 1 ms added at the median',
        measured: `${fmtMs(seqP50.recorded)} added (${fmtMs(median(seq.recorded.p50))} per call)`,
        baseline: `${fmtMs(median(seq.direct.p50))} per call direct`,
        ratio: round(seqP50.recorded / 1, 3),
        holds: seqP50.recorded <= 1,
        notes: [
          `${rounds} rounds x ${calls} sequential tools/call find requests per arm, one keep-alive connection, arms alternated (direct, bare proxy, mcec-record).`,
          'Ratio is added ms / 1 ms.',
        ],
        data: {},
      });
      const floorRow = (name: string, stats: typeof seq, key: 'p50' | 'p99', how: string): Row => {
        const a = added(stats, key);
        const ratio = a.recorded / a.bare;
        return {
          name,
          budget: '<= 1.25x the bare proxy',
          measured: `${fmtMs(a.recorded)} added (${fmtMs(median(stats.recorded[key]))} per call)`,
          baseline: `bare proxy ${fmtMs(a.bare)} added (${fmtMs(median(stats.bare[key]))} per call); direct ${fmtMs(median(stats.direct[key]))}`,
          ratio: round(ratio, 3),
          holds: ratio <= 1.25,
          notes: [
            `${how}; ${key === 'p50' ? 'median' : 'p99'} per round, added = arm - direct in the same round, median over ${rounds} rounds.`,
          ],
          data: {
            [`${key}MsPerRound`]: {
              direct: stats.direct[key].map((v) => round(v, 4)),
              bare: stats.bare[key].map((v) => round(v, 4)),
              recorded: stats.recorded[key].map((v) => round(v, 4)),
            },
          },
        };
      };
      const seqHow = `${calls} sequential calls per round on one keep-alive connection`;
      const concHow = `${CLIENTS} clients x ${perClient} calls at once per round, each on its own keep-alive connection`;
      rows.push(floorRow('HTTP proxy vs bare pass-through, sequential, median added', seq, 'p50', seqHow));
      rows.push(floorRow('HTTP proxy vs bare pass-through, sequential, p99 added', seq, 'p99', seqHow));
      rows.push(
        floorRow(`HTTP proxy vs bare pass-through, ${CLIENTS} clients, median added`, conc, 'p50', concHow),
      );
      rows.push(
        floorRow(`HTTP proxy vs bare pass-through, ${CLIENTS} clients, p99 added`, conc, 'p99', concHow),
      );
      const cpu = { bare: median(cpuPerCall.bare), recorded: median(cpuPerCall.recorded) };
      rows.push({
        name: 'HTTP proxy CPU per call (proxy process, sequential)',
        budget: 'none (reported)',
        measured: `${fmtMs(cpu.recorded)} per call`,
        baseline: `bare proxy ${fmtMs(cpu.bare)} per call`,
        ratio: round(cpu.recorded / cpu.bare, 3),
        holds: null,
        notes: [
          'CPU time of the proxy process (all its threads, /proc/<pid>/task/*/schedstat) over the sequential calls of a round, per call; median over rounds.',
        ],
        data: {
          cpuMsPerCall: {
            bare: cpuPerCall.bare.map((v) => round(v, 5)),
            recorded: cpuPerCall.recorded.map((v) => round(v, 5)),
          },
        },
      });
      await stop(proxy.child);
      await stop(bare.child);
      await stop(target.child);

      // stdio: the simulator alone, behind a bare pass-through (the floor), and behind the stdio proxy.
      const directChild = spawnStdioSim(ctx.root, path.join(ctx.tmp, 'sim2'));
      children.push(directChild);
      const bareChild = spawnStdioSim(ctx.root, path.join(ctx.tmp, 'sim4'), { bare: BARE_STDIO_PROXY });
      children.push(bareChild);
      const proxiedChild = spawnStdioSim(ctx.root, path.join(ctx.tmp, 'sim3'), {
        recordInto: path.join(sessions, 'stdio'),
      });
      children.push(proxiedChild);
      const stdioArms = { direct: directChild, bare: bareChild, proxied: proxiedChild };
      const clients = {
        direct: new StdioClient(directChild),
        bare: new StdioClient(bareChild),
        proxied: new StdioClient(proxiedChild),
      };
      for (const client of Object.values(clients)) {
        await client.call(1, 'initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'bench', version: '0' },
        });
        await client.times(200, 10);
      }
      ctx.log(`stdio: ${rounds} rounds x ${calls} calls per arm`);
      const s50 = { direct: [] as number[], bare: [] as number[], proxied: [] as number[] };
      // CPU per call: the simulator's when called directly; a front process's own (not its child's).
      const proxiedSim = childPids(proxiedChild.pid!)[0];
      const sCpu = {
        direct: [] as number[],
        bare: [] as number[],
        proxy: [] as number[],
        proxiedSim: [] as number[],
      };
      let sid = 1000;
      const stdioArm = (arm: keyof typeof stdioArms, cpu: number[], simCpu?: number[]) => async () => {
        sid += calls;
        const pid = stdioArms[arm].pid!;
        const cpu0 = processCpuMs(pid);
        const sim0 = simCpu && proxiedSim !== undefined ? processCpuMs(proxiedSim) : 0;
        s50[arm].push(median(await clients[arm].times(calls, sid)));
        cpu.push((processCpuMs(pid) - cpu0) / calls);
        if (simCpu && proxiedSim !== undefined) simCpu.push((processCpuMs(proxiedSim) - sim0) / calls);
        return 0;
      };
      await alternate(rounds, {
        direct: stdioArm('direct', sCpu.direct),
        bare: stdioArm('bare', sCpu.bare),
        proxied: stdioArm('proxied', sCpu.proxy, sCpu.proxiedSim),
      });
      const sAdded = median(s50.proxied.map((v, i) => v - s50.direct[i]!));
      rows.push({
        name: 'stdio proxy (mcec-record stdio), median call',
        budget: '<= 1 ms added at the median',
        measured: `${fmtMs(sAdded)} added (${fmtMs(median(s50.proxied))} per call)`,
        baseline: `${fmtMs(median(s50.direct))} per call direct; bare pass-through ${fmtMs(median(s50.bare))}`,
        ratio: round(sAdded / 1, 3),
        holds: sAdded <= 1,
        notes: [`${rounds} rounds x ${calls} sequential calls per arm over pipes, arms alternated.`],
        data: {
          p50MsPerRound: {
            direct: s50.direct.map((v) => round(v, 4)),
            bare: s50.bare.map((v) => round(v, 4)),
            proxied: s50.proxied.map((v) => round(v, 4)),
          },
        },
      });
      const proxyCpu = median(sCpu.proxy);
      const directCpu = median(sCpu.direct);
      const bareCpu = median(sCpu.bare);
      const cpuData = {
        cpuMsPerCall: {
          direct: sCpu.direct.map((v) => round(v, 5)),
          bare: sCpu.bare.map((v) => round(v, 5)),
          proxy: sCpu.proxy.map((v) => round(v, 5)),
          proxiedSim: sCpu.proxiedSim.map((v) => round(v, 5)),
        },
      };
      rows.push({
        name: 'stdio proxy CPU per call (mcec-record stdio process)',
        budget: 'none (reported; issue 31: halve it)',
        measured: `${fmtMs(proxyCpu)} per call`,
        baseline: `simulator ${fmtMs(directCpu)} per call direct`,
        ratio: round(proxyCpu / directCpu, 3),
        holds: null,
        notes: [
          'CPU time of the proxy process (all its threads, /proc/<pid>/task/*/schedstat; its child simulator not included) over the sequential calls of a round, per call; median over rounds.',
          `The simulator behind it: ${fmtMs(median(sCpu.proxiedSim))} per call.`,
        ],
        data: cpuData,
      });
      rows.push({
        name: 'stdio proxy CPU per call vs a bare pass-through',
        budget: 'none (reported)',
        measured: `${fmtMs(proxyCpu)} per call`,
        baseline: `bare pass-through ${fmtMs(bareCpu)} per call (${round(bareCpu / directCpu, 2)}x the simulator's)`,
        ratio: round(proxyCpu / bareCpu, 3),
        holds: null,
        notes: [
          "The floor of forwarding alone: bench/lib/bare-stdio-proxy.cjs pipes the client's bytes to the same simulator and its answers back (two pipe reads and two pipe writes per call, as the proxy's), no line splitting, no recording. Same CPU measure, same rounds.",
        ],
        data: cpuData,
      });
      for (const child of Object.values(stdioArms)) child.stdin!.end();
    } finally {
      await Promise.all(children.map(stop));
    }
    return { rows, notes: [] };
  },
};
