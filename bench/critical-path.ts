/**
 * Critical-path latency that recording adds to a small non-image call (a successful `find`), against the
 * naive logger: `fs.appendFileSync(path, JSON.stringify(record) + "\n")` around the same dispatch.
 *
 * Per call we time the wrapped dispatch from call to resolution and subtract the bare dispatch's time; the
 * dispatch resolves at once, so the timed window holds only the wrapper's own work. Between calls the loop
 * gets one turn (an agent's calls are separated by I/O), which is when the recorder's queue runs: that work
 * is off the critical path by design and is measured by the throughput figure instead.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createRecorder } from '../src/record/index.js';
import type { RecorderOptions } from '../src/record/types.js';
import { type CallToolResult, distinctCapture, screenshotPng, smallResults } from './lib/fixtures.js';
import { alternate, fmtMs, gc, mean, median, nowMs, percentile, round, turn } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

type Call = (tool: string, args: Record<string, unknown>) => Promise<unknown>;

/** Per-call times (ms) of `calls` sequential calls, one loop turn between calls (not timed). */
async function timeCalls(call: Call, calls: number, args: Record<string, unknown>): Promise<number[]> {
  const times = new Array<number>(calls);
  for (let i = 0; i < calls; i++) {
    const t0 = nowMs();
    await call('find', args);
    times[i] = nowMs() - t0;
    await turn();
  }
  return times;
}

interface ArmStats {
  p50: number[];
  mean: number[];
  p99: number[];
}

function emptyStats(): ArmStats {
  return { p50: [], mean: [], p99: [] };
}

/** Measure bare, naive and recorded arms for one result; returns the per-round stats of each arm. */
async function measure(
  result: CallToolResult,
  rounds: number,
  calls: number,
  tmp: string,
  label: string,
  extra: Partial<RecorderOptions> = {},
): Promise<{ bare: ArmStats; naive: ArmStats; recorded: ArmStats; recorderCounts: unknown }> {
  const args = { window: 'Untitled - Notepad', by: 'automationid', value: '15' };
  const bare: Call = async () => result;
  const logFile = path.join(tmp, `naive-${label}.jsonl`);
  const naive: Call = async (tool, a) => {
    const output = await bare(tool, a);
    fs.appendFileSync(
      logFile,
      `${JSON.stringify({ ts: new Date().toISOString(), tool, args: a, output })}\n`,
    );
    return output;
  };
  const recorder = createRecorder({
    sessionsDir: path.join(tmp, `sessions-${label}`),
    stderr: () => {},
    ...extra,
  });
  const recorded = recorder.wrap(bare);

  // Warm up every arm (JIT, the first touch of fresh memory, the log's first open).
  for (const call of [bare, naive, recorded]) await timeCalls(call, Math.min(2000, calls), args);
  await recorder.flush();

  const stats = { bare: emptyStats(), naive: emptyStats(), recorded: emptyStats() };
  const add = (s: ArmStats, times: number[]) => {
    s.p50.push(median(times));
    s.mean.push(mean(times));
    s.p99.push(percentile(times, 99));
  };
  await alternate(rounds, {
    bare: async () => {
      gc();
      add(stats.bare, await timeCalls(bare, calls, args));
      return 0;
    },
    naive: async () => {
      gc();
      add(stats.naive, await timeCalls(naive, calls, args));
      return 0;
    },
    recorded: async () => {
      gc();
      add(stats.recorded, await timeCalls(recorded, calls, args));
      await recorder.flush(); // the round's backlog is not left for the next arm to pay for
      return 0;
    },
  });
  const info = recorder.session(recorder.defaultSessionId);
  await recorder.close();
  return { ...stats, recorderCounts: info?.counts };
}

/** Added latency per round (arm minus bare) for a statistic, then the median over rounds. */
export function added(arm: number[], bare: number[]): { perRound: number[]; median: number } {
  const perRound = arm.map((v, i) => v - bare[i]!);
  return { perRound, median: median(perRound) };
}

function row(
  name: string,
  stat: 'p50' | 'mean',
  m: Awaited<ReturnType<typeof measure>>,
  notes: string[],
  budgeted: boolean,
): Row {
  const rec = added(m.recorded[stat], m.bare[stat]);
  const nai = added(m.naive[stat], m.bare[stat]);
  const ratio = rec.median / nai.median;
  return {
    name,
    budget: budgeted ? '<= 1.0x naive logger' : 'none (reported)',
    measured: `${fmtMs(rec.median)} added per call`,
    baseline: `${fmtMs(nai.median)} added per call`,
    ratio: round(ratio, 3),
    holds: budgeted ? ratio <= 1.0 : null,
    notes,
    data: {
      statistic: stat === 'p50' ? 'median per call within a round' : 'mean per call within a round',
      addedMsPerRound: {
        recorded: rec.perRound.map((v) => round(v, 6)),
        naive: nai.perRound.map((v) => round(v, 6)),
      },
      bareMs: round(median(m.bare[stat]), 6),
      naiveMs: round(median(m.naive[stat]), 6),
      recordedMs: round(median(m.recorded[stat]), 6),
      p99Ms: {
        bare: round(median(m.bare.p99), 6),
        naive: round(median(m.naive.p99), 6),
        recorded: round(median(m.recorded.p99), 6),
      },
      recorderCounts: m.recorderCounts,
    },
  };
}

export const figure: Figure = {
  id: 'critical-path',
  title: 'Critical-path latency added to a small non-image call',
  async run(ctx) {
    const rounds = ctx.quick ? 3 : 10;
    const calls = ctx.quick ? 1000 : 10000;
    const { find, findFailed } = await smallResults();
    ctx.log(`find ok: ${rounds} rounds x ${calls} calls per arm`);
    const ok = await measure(find, rounds, calls, ctx.tmp, 'ok');
    const okBytes = JSON.stringify(find).length;
    const rows: Row[] = [
      row(
        'successful find (median call)',
        'p50',
        ok,
        [
          `CallToolResult of ${okBytes} bytes from the simulator; ${rounds} rounds x ${calls} calls per arm, arms alternated.`,
          'Timed window: call to resolution; the queue (parse, redact, commit) runs between calls, off the critical path.',
        ],
        true,
      ),
      row(
        'successful find (mean call, includes GC pauses)',
        'mean',
        ok,
        ['Same calls, mean instead of median: rare slow calls (GC, back-pressure) count here.'],
        true,
      ),
    ];
    // Live OpenTelemetry export on, to a collector on this machine that accepts everything.
    const collector = await startCollector();
    try {
      ctx.log(`find ok with live OTLP export: ${rounds} rounds x ${calls} calls per arm`);
      const exported = await measure(find, rounds, calls, ctx.tmp, 'otlp', {
        otlp: { url: collector.url, maxQueueSize: 1_000_000 },
      });
      rows.push(
        row(
          'successful find with live OTLP export on (median call)',
          'p50',
          exported,
          [
            'createRecorder({ otlp }) sending to a local OTLP/HTTP endpoint: spans are planned from the committed log',
            `after each commit, off the critical path (${collector.requests()} export requests served).`,
          ],
          true,
        ),
      );
    } finally {
      await collector.close();
    }
    // Captures between the timed calls, their thumbnails made meanwhile: on against off, in the same run.
    const thumbRounds = ctx.quick ? 2 : 6;
    const thumbCalls = ctx.quick ? 500 : 4000;
    ctx.log(`find ok while captures are thumbnailed: ${thumbRounds} rounds x ${thumbCalls} calls per arm`);
    const thumbs = await measureWithCaptures(find, thumbRounds, thumbCalls, ctx.tmp);
    rows.push(thumbnailRow(thumbs, thumbRounds, thumbCalls));
    // A failed call waits for the queue: it may get the session's last good observation attached.
    const failRounds = ctx.quick ? 2 : 4;
    const failCalls = ctx.quick ? 300 : 1500;
    ctx.log(`find failed: ${failRounds} rounds x ${failCalls} calls per arm`);
    const failed = await measure(findFailed, failRounds, failCalls, ctx.tmp, 'failed');
    rows.push(
      row(
        'failed find, selector-matched-3 (median call)',
        'p50',
        failed,
        [
          'A failure may get the last good observation attached; it is built on the spot from memory, and waits',
          'for the queue only while an earlier observation or image bytes of its own are still being processed.',
          'The design budgets every non-image call, so the budget is applied here too.',
        ],
        true,
      ),
    );
    return { rows, notes: [] };
  },
};

/** A capture between timed calls every this many calls (an agent captures every few actions). */
export const CAPTURE_EVERY = 40;

/**
 * The same timed finds through two recorders, thumbnails on and off, with an untimed capture of a distinct
 * 800x600 screenshot every CAPTURE_EVERY calls: the on arm makes their thumbnails while the finds are timed.
 */
export async function measureWithCaptures(
  find: CallToolResult,
  rounds: number,
  calls: number,
  tmp: string,
  arms: { label: string; on: Partial<RecorderOptions>; off: Partial<RecorderOptions> } = {
    label: 'thumbs',
    on: { thumbnails: true },
    off: { thumbnails: false },
  },
): Promise<{ on: number[]; off: number[]; bare: number[]; made: number }> {
  const args = { window: 'Untitled - Notepad', by: 'automationid', value: '15' };
  const base = await screenshotPng(800, 600, 77);
  let variant = 0;
  const dispatch = async (tool: string) => (tool === 'capture' ? captureOf(base, variant++) : find);
  const recorders = {
    on: createRecorder({
      sessionsDir: path.join(tmp, `sessions-${arms.label}-on`),
      stderr: () => {},
      ...arms.on,
    }),
    off: createRecorder({
      sessionsDir: path.join(tmp, `sessions-${arms.label}-off`),
      stderr: () => {},
      ...arms.off,
    }),
  };
  const timed = async (call: Call): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < calls; i++) {
      if (i % CAPTURE_EVERY === 0) await call('capture', args);
      const t0 = nowMs();
      await call('find', args);
      times.push(nowMs() - t0);
      await turn();
    }
    return median(times);
  };
  const wrapped = { on: recorders.on.wrap(dispatch), off: recorders.off.wrap(dispatch) };
  for (const call of [dispatch, wrapped.on, wrapped.off]) await timed(call); // warm-up
  const out = await alternate(rounds, {
    bare: async () => timed(dispatch),
    on: async () => timed(wrapped.on),
    off: async () => timed(wrapped.off),
  });
  for (const r of Object.values(recorders)) await r.close();
  const thumbsOf = (dir: string) =>
    fs.readdirSync(dir).reduce((n, d) => {
      const t = path.join(dir, d, 'thumbnails');
      return n + (fs.existsSync(t) ? fs.readdirSync(t).filter((f) => f.endsWith('-320.webp')).length : 0);
    }, 0);
  return { ...out, made: thumbsOf(path.join(tmp, `sessions-${arms.label}-on`)) };
}

/** A distinct 800x600 capture (see distinctCapture). */
function captureOf(png: Buffer, n: number): CallToolResult {
  return distinctCapture(png, n, 800, 600);
}

function thumbnailRow(
  m: { on: number[]; off: number[]; bare: number[]; made: number },
  rounds: number,
  calls: number,
): Row {
  const on = added(m.on, m.bare);
  const off = added(m.off, m.bare);
  const ratio = on.median / off.median;
  return {
    name: 'successful find while captures are thumbnailed (median call)',
    budget: '<= 1.2x thumbnails off',
    measured: `${fmtMs(on.median)} added per call`,
    baseline: `${fmtMs(off.median)} added per call, thumbnails off`,
    ratio: round(ratio, 3),
    holds: ratio <= 1.2,
    notes: [
      `${rounds} rounds x ${calls} timed finds per arm, an untimed capture (800x600, distinct) every ${CAPTURE_EVERY} calls;`,
      `the on arm made ${m.made} sets of thumbnails meanwhile. Both arms in the same run, alternated.`,
    ],
    data: { addedMsPerRound: { on: on.perRound, off: off.perRound }, thumbnailsMade: m.made },
  };
}

/** An OTLP/HTTP endpoint that reads each request and answers 200: the collector's cost is not ours. */
async function startCollector(): Promise<{ url: string; requests(): number; close(): Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
