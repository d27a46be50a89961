/**
 * A soak (issue 31): one recorder, 1,000,000 calls through `wrap` (16 in flight, 1 in 20 failing, a distinct
 * 400x300 capture every 200, thumbnails on), then 300,000 calls through each proxy (`mcec-record http`, 8
 * clients at once; `mcec-record stdio`, sequential) in front of the simulator. Every few thousand calls it
 * samples the recording process's RSS, its open file descriptors (/proc/<pid>/fd), the logs' bytes on disk
 * and the calls/s since the last sample; the series goes to bench/soak-series.csv. Asserted: peak RSS flat
 * (<= 1.1x from the base mark, 100,000 calls for wrap and for each proxy, to the end), no
 * growth in descriptors, every call in the log after close, log bytes per call the same in both halves after
 * the base mark. Runs only when asked (`npm run bench -- --only soak [--soak-calls N]`), never in --quick.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRecorder } from '../src/record/index.js';
import { SessionReader } from '../src/store/session-reader.js';
import { type CallToolResult, distinctCapture, screenshotPng, smallResults } from './lib/fixtures.js';
import {
  concurrentCalls,
  StdioClient,
  spawnStdioSim,
  startHttpRecorder,
  startHttpSim,
  stop,
} from './lib/mcp-clients.js';
import { fmtMB, gc, nowMs, round, turn } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

/** Default calls through wrap; each proxy gets 3/10 of them. `--soak-calls N` sets it. */
export const DEFAULT_SOAK_CALLS = 1_000_000;
/**
 * A proxy's heap grows to its working size over its first ~50,000 calls (V8 sizing its young generation);
 * the base mark (100,000 calls) then leaves 200,000 calls in which a leak would show.
 */
const PROXY_SHARE = 0.3;
const IN_FLIGHT = 16;
const CAPTURE_EVERY = 200;
const FAIL_EVERY = 20;
const HTTP_CLIENTS = 8;
/** Flat memory: the peak after the base mark at most this times the peak before it. */
const RSS_BUDGET = 1.1;
/** Linear log: bytes per call in the second half after the base mark at most this times the first half's. */
const LOG_BUDGET = 1.2;

/** One sample; the first comes after the first stretch of calls (a starting process is no baseline). */
interface Sample {
  phase: string;
  calls: number;
  elapsedS: number;
  callsPerS: number;
  rss: number;
  heapUsed: number | null;
  fds: number;
  logBytes: number;
}

/** Bytes of every session log (session.sqlite and its WAL) under a sessions dir. */
function logBytes(sessionsDir: string): number {
  let bytes = 0;
  if (!fs.existsSync(sessionsDir)) return 0;
  for (const d of fs.readdirSync(sessionsDir, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    for (const f of ['session.sqlite', 'session.sqlite-wal']) {
      try {
        bytes += fs.statSync(path.join(sessionsDir, d.name, f)).size;
      } catch {
        // not there (yet)
      }
    }
  }
  return bytes;
}

/** Rows of every session log under a sessions dir, after the writers closed. */
function countRows(sessionsDir: string): { calls: number; failed: number; pending: number; lost: number } {
  const out = { calls: 0, failed: 0, pending: 0, lost: 0 };
  for (const d of fs.readdirSync(sessionsDir, { withFileTypes: true })) {
    if (!d.isDirectory() || !fs.existsSync(path.join(sessionsDir, d.name, 'session.sqlite'))) continue;
    const reader = SessionReader.open(path.join(sessionsDir, d.name));
    try {
      const s = reader.stats();
      out.calls += s.calls;
      out.failed += s.calls - s.ok - s.pending; // a failed find: 'failed' (or 'fault')
      out.pending += s.pending;
      out.lost += s.lostCalls;
    } finally {
      reader.close();
    }
  }
  return out;
}

function fdCount(pid: number | 'self'): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Takes a sample per call mark; calls/s since the previous one. */
class Series {
  readonly samples: Sample[] = [];
  private readonly t0 = nowMs();
  private lastT = this.t0;
  private lastCalls = 0;
  constructor(
    readonly phase: string,
    private readonly read: () => { rss: number; heapUsed: number | null; fds: number; logBytes: number },
  ) {}

  take(calls: number): void {
    const t = nowMs();
    const dt = (t - this.lastT) / 1000;
    this.samples.push({
      phase: this.phase,
      calls,
      elapsedS: (t - this.t0) / 1000,
      callsPerS: dt > 0 ? (calls - this.lastCalls) / dt : 0,
      ...this.read(),
    });
    this.lastT = t;
    this.lastCalls = calls;
  }
}

/** Heap used after a GC (wrap only) at the base mark and at the end: what the recorder retains. */
function heapTrend(before: Sample[], after: Sample[]): Record<string, number> {
  const atBase = before[before.length - 1]?.heapUsed;
  const atEnd = after[after.length - 1]?.heapUsed;
  return typeof atBase === 'number' && typeof atEnd === 'number'
    ? { heapAtBase: atBase, heapAtEnd: atEnd }
    : {};
}

/** The checks of one phase, as rows. */
function phaseRows(
  label: string,
  series: Series,
  baseCalls: number,
  total: number,
  rows: { calls: number; failed: number; pending: number; lost: number },
  expectedFailed: number,
  finalLogBytes: number,
): Row[] {
  const s = series.samples;
  const before = s.filter((x) => x.calls <= baseCalls);
  const after = s.filter((x) => x.calls > baseCalls);
  const peakBefore = Math.max(...before.map((x) => x.rss));
  const peakAfter = Math.max(...after.map((x) => x.rss));
  const rssRatio = peakAfter / peakBefore;
  const atBase = before[before.length - 1]!;
  const last = s[s.length - 1]!;
  const fdsBefore = Math.max(...before.map((x) => x.fds));
  const fdsAfter = Math.max(...after.map((x) => x.fds));
  // A capture or thumbnail being written holds a descriptor for a moment: 2 over the count before, at most.
  const fdsHold = last.fds <= atBase.fds + 2 && fdsAfter <= fdsBefore + 2;
  const mid = after[Math.floor(after.length / 2)]!;
  const slope = (a: Sample, b: Sample) => (b.logBytes - a.logBytes) / Math.max(1, b.calls - a.calls);
  const firstHalf = slope(atBase, mid);
  const secondHalf = slope(mid, last);
  const logRatio = secondHalf / firstHalf;
  const rates = s.slice(1).map((x) => x.callsPerS);
  const heap = heapTrend(before, after);
  const heapNote =
    heap.heapAtBase !== undefined && heap.heapAtEnd !== undefined
      ? [
          `Heap used after a full GC: ${fmtMB(heap.heapAtBase)} at the base mark, ${fmtMB(heap.heapAtEnd)} at the end.`,
        ]
      : [];
  const meanRate = total / last.elapsedS;
  return [
    {
      name: `${label}: peak RSS from ${baseCalls.toLocaleString('en-US')} calls to the end`,
      budget: `<= ${RSS_BUDGET}x the peak before`,
      measured: `${fmtMB(peakAfter)}`,
      baseline: `${fmtMB(peakBefore)} up to ${baseCalls.toLocaleString('en-US')} calls`,
      ratio: round(rssRatio, 3),
      holds: rssRatio <= RSS_BUDGET,
      notes: [
        `${s.length} samples over ${total.toLocaleString('en-US')} calls in ${last.elapsedS.toFixed(0)} s (${Math.round(meanRate).toLocaleString('en-US')} calls/s on average, ${Math.round(Math.min(...rates)).toLocaleString('en-US')}-${Math.round(Math.max(...rates)).toLocaleString('en-US')} between samples).`,
        ...heapNote,
      ],
      data: { peakBefore, peakAfter, ...heap },
    },
    {
      name: `${label}: open file descriptors`,
      budget: 'no growth',
      measured: `${last.fds} at the end, at most ${fdsAfter} after the base mark`,
      baseline: `${atBase.fds} at ${atBase.calls.toLocaleString('en-US')} calls, at most ${fdsBefore} before`,
      ratio: null,
      holds: fdsHold,
      notes: [
        '/proc/<pid>/fd of the recording process; holds when neither the end nor any sample after the base mark is more than 2 above the base count and the peak before it (a capture or thumbnail being written).',
      ],
      data: { atBase: atBase.fds, maxAfter: fdsAfter, last: last.fds },
    },
    {
      name: `${label}: every call in the log after close`,
      budget: `${total.toLocaleString('en-US')} rows, ${expectedFailed.toLocaleString('en-US')} failed, none pending or lost`,
      measured: `${rows.calls.toLocaleString('en-US')} rows, ${rows.failed.toLocaleString('en-US')} failed, ${rows.pending} pending, ${rows.lost} lost`,
      baseline: `${total.toLocaleString('en-US')} calls made`,
      ratio: null,
      holds: rows.calls === total && rows.failed === expectedFailed && rows.pending === 0 && rows.lost === 0,
      notes: [],
      data: rows,
    },
    {
      name: `${label}: log bytes per call, second half after the base mark vs first half`,
      budget: `linear (<= ${LOG_BUDGET}x)`,
      measured: `${secondHalf.toFixed(0)} B per call`,
      baseline: `${firstHalf.toFixed(0)} B per call`,
      ratio: round(logRatio, 3),
      holds: logRatio <= LOG_BUDGET,
      notes: [
        `session.sqlite + WAL on disk at each sample; ${fmtMB(finalLogBytes)} after close (${(finalLogBytes / total).toFixed(0)} B per call).`,
      ],
      data: { firstHalf, secondHalf },
    },
  ];
}

/** Phase 1: calls through one recorder's wrap, in this process. */
async function wrapPhase(total: number, dir: string, log: (m: string) => void) {
  const { find, findFailed } = await smallResults();
  const png = await screenshotPng(400, 300, 1);
  let captures = 0;
  // A failing call looks for an element that is not there (its value says so): the simulator's failure.
  const dispatch = async (tool: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    await turn();
    if (tool === 'capture') return distinctCapture(png, captures++, 400, 300);
    return String(args.value).startsWith('missing') ? findFailed : find;
  };
  const recorder = createRecorder({ sessionsDir: dir, stderr: () => {} });
  const call = recorder.wrap(dispatch);
  const series = new Series('wrap', () => {
    // After a full GC: the heap then says what the recorder retains; RSS is the budget's figure either way.
    gc();
    const m = process.memoryUsage();
    return { rss: m.rss, heapUsed: m.heapUsed, fds: fdCount('self'), logBytes: logBytes(dir) };
  });
  const every = Math.max(1000, Math.round(total / 200));
  let started = 0;
  let done = 0;
  const worker = async () => {
    while (started < total) {
      const i = started++;
      const capture = i % CAPTURE_EVERY === CAPTURE_EVERY - 1;
      const value = i % FAIL_EVERY === 0 ? `missing-${i % 50}` : String(i % 50);
      await (capture
        ? call('capture', { window: 'Untitled - Notepad' })
        : call('find', { window: 'Untitled - Notepad', by: 'automationid', value })
      ).catch(() => {});
      done += 1;
      if (done % every === 0) series.take(done);
      if (done % 100_000 === 0) log(`wrap: ${done.toLocaleString('en-US')} calls`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, () => worker()));
  if (series.samples[series.samples.length - 1]!.calls !== total) series.take(total);
  await recorder.close();
  return { series, rows: countRows(dir), finalLogBytes: logBytes(dir) };
}

/** Phase 2: calls through `mcec-record http` in front of `mcec-sim --http`, 8 clients at once. */
async function httpPhase(root: string, total: number, tmp: string) {
  const dir = path.join(tmp, 'http-sessions');
  const children: ChildProcess[] = [];
  try {
    const target = await startHttpSim(root, path.join(tmp, 'sim-http'));
    children.push(target.child);
    const proxy = await startHttpRecorder(root, target.url, dir);
    children.push(proxy.child);
    const pid = proxy.child.pid!;
    const series = new Series('http', () => ({
      rss: rssOf(pid),
      heapUsed: null,
      fds: fdCount(pid),
      logBytes: logBytes(dir),
    }));
    const agents = Array.from(
      { length: HTTP_CLIENTS },
      () => new http.Agent({ keepAlive: true, maxSockets: 1 }),
    );
    const url = new URL(proxy.url);
    const perClient = Math.max(10, Math.round(total / 100 / HTTP_CLIENTS));
    let done = 0;
    while (done < total) {
      const n = Math.min(perClient, Math.ceil((total - done) / HTTP_CLIENTS));
      await concurrentCalls(agents, url, n, 1 + done);
      done += n * HTTP_CLIENTS;
      series.take(done);
    }
    for (const a of agents) a.destroy();
    await stop(proxy.child); // SIGTERM: the recorder closes, everything committed
    return { series, made: done, rows: countRows(dir), finalLogBytes: logBytes(dir) };
  } finally {
    await Promise.all(children.map(stop));
  }
}

/** Phase 3: sequential calls through `mcec-record stdio -- mcec-sim --stdio`. */
async function stdioPhase(root: string, total: number, tmp: string) {
  const dir = path.join(tmp, 'stdio-sessions');
  const child = spawnStdioSim(root, path.join(tmp, 'sim-stdio'), { recordInto: dir });
  try {
    const pid = child.pid!;
    const client = new StdioClient(child);
    const series = new Series('stdio', () => ({
      rss: rssOf(pid),
      heapUsed: null,
      fds: fdCount(pid),
      logBytes: logBytes(dir),
    }));
    const every = Math.max(100, Math.round(total / 100));
    let done = 0;
    while (done < total) {
      const n = Math.min(every, total - done);
      await client.times(n, 1 + done);
      done += n;
      series.take(done);
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.end(); // the server exits, the recorder closes
    await exited;
    return { series, rows: countRows(dir), finalLogBytes: logBytes(dir) };
  } finally {
    await stop(child);
  }
}

function writeSeries(file: string, series: Series[]): void {
  const lines = ['phase,calls,elapsed_s,calls_per_s,rss_mb,heap_used_mb,fds,log_mb'];
  for (const s of series) {
    for (const x of s.samples) {
      lines.push(
        [
          x.phase,
          x.calls,
          x.elapsedS.toFixed(2),
          Math.round(x.callsPerS),
          (x.rss / 1e6).toFixed(1),
          x.heapUsed === null ? '' : (x.heapUsed / 1e6).toFixed(1),
          x.fds,
          (x.logBytes / 1e6).toFixed(2),
        ].join(','),
      );
    }
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

export const figure: Figure = {
  id: 'soak',
  title: 'Soak: one recorder over 1,000,000 calls, each proxy over 300,000',
  async run(ctx) {
    const total = ctx.soakCalls ?? DEFAULT_SOAK_CALLS;
    const proxyTotal = Math.max(3000, Math.round(total * PROXY_SHARE));
    const started = nowMs();
    ctx.log(`wrap: ${total.toLocaleString('en-US')} calls, ${IN_FLIGHT} in flight`);
    const wrap = await wrapPhase(total, path.join(ctx.tmp, 'wrap-sessions'), ctx.log);
    ctx.log(`http proxy: ${proxyTotal.toLocaleString('en-US')} calls, ${HTTP_CLIENTS} clients`);
    const httpRun = await httpPhase(ctx.root, proxyTotal, ctx.tmp);
    ctx.log(`stdio proxy: ${proxyTotal.toLocaleString('en-US')} calls, sequential`);
    const stdioRun = await stdioPhase(ctx.root, proxyTotal, ctx.tmp);
    const seriesFile = path.join(ctx.root, 'bench', 'soak-series.csv');
    writeSeries(seriesFile, [wrap.series, httpRun.series, stdioRun.series]);
    const wrapBase = Math.min(100_000, Math.round(total / 10));
    const proxyBase = Math.min(100_000, Math.round(proxyTotal / 3));
    const rows = [
      ...phaseRows(
        'wrap',
        wrap.series,
        wrapBase,
        total,
        wrap.rows,
        Math.ceil(total / FAIL_EVERY),
        wrap.finalLogBytes,
      ),
      ...phaseRows(
        'HTTP proxy',
        httpRun.series,
        proxyBase,
        httpRun.made,
        httpRun.rows,
        0,
        httpRun.finalLogBytes,
      ),
      ...phaseRows(
        'stdio proxy',
        stdioRun.series,
        proxyBase,
        proxyTotal,
        stdioRun.rows,
        0,
        stdioRun.finalLogBytes,
      ),
    ];
    const minutes = (nowMs() - started) / 60_000;
    return {
      rows,
      notes: [
        `The whole soak took ${minutes.toFixed(1)} min. Series (RSS, heap, descriptors, log bytes, calls/s per sample): \`bench/soak-series.csv\`.`,
      ],
    };
  },
};
