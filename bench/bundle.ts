/**
 * Bundling a 10,000-call session with 200 captures (recorded through the recorder, captures at a capture's
 * pace so their thumbnails are made meanwhile) with the built CLI `mcec-bundle <id>`, against the floor: yazl
 * writing the same images and tool-calls.jsonl in a node program of its own. Wall time from spawn to exit and
 * peak RSS (GNU time), arms alternated, medians; then the same with 20,000 calls and 400 captures (growth).
 * The zip is verified with `mcec-bundle verify` and `unzip -t`, and built once more with sharp unimportable.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type RecordedSession, recordBigSession } from './lib/session.js';
import { HAVE_GNU_TIME, timedRun } from './lib/spawn.js';
import { alternate, fmtMB, fmtMs, median, round } from './lib/stats.js';
import type { Figure, FigureContext, Row } from './lib/types.js';

/** A capture takes this long at the server (MCEC's take 50-200 ms): the recorder's thumbnails keep up. */
const CAPTURE_MS = 40;

interface Measured {
  session: RecordedSession;
  bundleMs: number[];
  floorMs: number[];
  bundlePeaks: number[];
  floorPeaks: number[];
  /** The same bundle with `--no-gif` (measured for the first session only; empty otherwise). */
  noGifMs: number[];
  noGifPeaks: number[];
  bundleBytes: number;
  floorBytes: number;
  kept: number;
  /** Images in the bundled session (the first calls may land in the recorder's default session). */
  images: number;
  verified: { verify: number | null; unzip: number | null; noSharp: number | null; noSharpPage: boolean };
}

/** Record a session of `calls` calls and `captures` captures, then bundle it against the floor for `rounds`. */
async function measure(
  ctx: FigureContext,
  calls: number,
  captures: number,
  rounds: number,
  withNoGif: boolean,
): Promise<Measured> {
  const base = path.join(ctx.tmp, `s${calls}`);
  const t0 = performance.now();
  const session = await recordBigSession(path.join(base, 'sessions'), calls, captures, undefined, CAPTURE_MS);
  ctx.log(
    `recorded ${calls} calls, ${session.captures} captures in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const thumbsDir = path.join(session.dir, 'thumbnails');
  const kept = fs.existsSync(thumbsDir)
    ? fs.readdirSync(thumbsDir).filter((f) => f.endsWith('-320.webp')).length
    : 0;
  const images = fs.readdirSync(path.join(session.dir, 'artifacts')).filter((f) => f.endsWith('.png')).length;
  const cli = path.join(ctx.root, 'dist', 'cli', 'mcec-bundle.js');
  const zipFile = path.join(base, 'bundle.zip');
  const floorZip = path.join(base, 'floor.zip');
  const peaks = { bundle: [] as number[], noGif: [] as number[], floor: [] as number[] };
  const bundleRun = async (extra: string[], into: number[]) => {
    fs.rmSync(zipFile, { force: true });
    const args = [cli, session.sessionId, '--sessions', session.sessionsDir, '-o', zipFile, ...extra];
    const r = await timedRun(process.execPath, args, { measureMemory: true });
    if (r.code !== 0) throw new Error(`mcec-bundle exited ${r.code}: ${r.stderr.slice(0, 500)}`);
    if (r.peakRss !== null) into.push(r.peakRss);
    return r.ms;
  };
  const bundle = () => bundleRun([], peaks.bundle);
  const noGif = () => bundleRun(['--no-gif'], peaks.noGif);
  await bundle(); // warm-up, and the files the floor zips
  const list = floorFiles(base, zipFile, session.dir);
  const floor = async () => {
    fs.rmSync(floorZip, { force: true });
    const script = path.join(ctx.root, 'bench', 'lib', 'yazl-floor.cjs');
    const r = await timedRun(process.execPath, [script, floorZip, list], { measureMemory: true });
    if (r.code !== 0) throw new Error(`yazl floor exited ${r.code}: ${r.stderr.slice(0, 500)}`);
    if (r.peakRss !== null) peaks.floor.push(r.peakRss);
    return r.ms;
  };
  await floor();
  peaks.bundle.length = 0;
  peaks.floor.length = 0;
  ctx.log(`${calls} calls: ${rounds} rounds`);
  const arms: Record<string, () => Promise<number>> = withNoGif
    ? { floor, noGif, bundle }
    : { floor, bundle };
  const times = await alternate(rounds, arms);
  // Verify and size the full zip (run.gif included): a reversed last round (an even count) wrote --no-gif's last.
  if (withNoGif && rounds % 2 === 0) await bundleRun([], []);
  const verify = await timedRun(process.execPath, [cli, 'verify', zipFile]);
  const unzip = await timedRun('unzip', ['-tq', zipFile]);
  const noSharp = await bundleWithoutSharp(ctx, cli, session, zipFile);
  return {
    session,
    bundleMs: times.bundle ?? [],
    floorMs: times.floor ?? [],
    bundlePeaks: peaks.bundle,
    floorPeaks: peaks.floor,
    noGifMs: times.noGif ?? [],
    noGifPeaks: peaks.noGif,
    bundleBytes: fs.statSync(zipFile).size,
    floorBytes: fs.statSync(floorZip).size,
    kept,
    images,
    verified: { verify: verify.code, unzip: unzip.code, ...noSharp },
  };
}

/** Bundle once more with sharp unimportable (test/record/fixtures/no-sharp.mjs): no thumbnail may need it. */
async function bundleWithoutSharp(ctx: FigureContext, cli: string, s: RecordedSession, zipFile: string) {
  fs.rmSync(zipFile, { force: true });
  const hook = path.join(ctx.root, 'test', 'record', 'fixtures', 'no-sharp.mjs');
  const r = await timedRun(process.execPath, [
    '--import',
    hook,
    cli,
    s.sessionId,
    '--sessions',
    s.sessionsDir,
    '-o',
    zipFile,
  ]);
  const unzip = await timedRun('unzip', ['-p', zipFile, '*/report.html']);
  return { noSharp: r.code, noSharpPage: r.code === 0 && !unzip.stdout.includes('sharp was imported') };
}

/** The floor's files: the session's images (stored) and the bundle's tool-calls.jsonl (deflated). */
function floorFiles(base: string, zipFile: string, sessionDir: string): string {
  const jsonl = path.join(base, 'tool-calls.jsonl');
  const r = spawnSync('unzip', ['-p', zipFile, '*/tool-calls.jsonl'], { maxBuffer: 64 << 20 });
  fs.writeFileSync(jsonl, r.stdout as Buffer);
  const images = fs
    .readdirSync(path.join(sessionDir, 'artifacts'))
    .filter((f) => f.endsWith('.png'))
    .map((f) => ({
      name: `top/artifacts/${f}`,
      file: path.join(sessionDir, 'artifacts', f),
      compress: false,
    }));
  const list = path.join(base, 'floor-files.json');
  fs.writeFileSync(
    list,
    JSON.stringify([...images, { name: 'top/tool-calls.jsonl', file: jsonl, compress: true }]),
  );
  return list;
}

const MB = 1e6;
/**
 * Peak RSS budgets. Issue 30: 150 MB for a bundle, the price of no run-time V8 flags and no copier thread.
 * run.gif is drawn by sharp in the same process, which costs 40-42 MB more (the library, its SVG text
 * renderer, per-thread allocator arenas; BENCHMARKS.md): 190 MB with it (176 MB median, 181 worst at load), 150 MB without (`--no-gif`).
 */
const PEAK_BUDGET_MB = 190;
const NO_GIF_PEAK_BUDGET_MB = 150;

function rowsOf(m: Measured, judged: boolean, first: boolean): Row[] {
  const b = median(m.bundleMs);
  const f = median(m.floorMs);
  const peak = m.bundlePeaks.length > 0 ? Math.max(...m.bundlePeaks) : null;
  const calls = m.session.calls.toLocaleString('en-US');
  const what = `${calls} calls + ${m.session.captures} captures`;
  const checks =
    `mcec-bundle verify ${m.verified.verify === 0 ? 'ok' : 'FAILED'}, unzip -t ${m.verified.unzip === 0 ? 'ok' : 'FAILED'}, ` +
    `built with sharp unimportable: ${m.verified.noSharp === 0 && m.verified.noSharpPage ? 'ok (no decoder loaded)' : 'NEEDED sharp'}.`;
  const ok = m.verified.verify === 0 && m.verified.unzip === 0;
  return [
    {
      name: `time, ${what} (spawn to exit)`,
      budget: first ? '<= 1.5x yazl floor' : 'none (reported)',
      measured: fmtMs(b),
      baseline: `yazl floor ${fmtMs(f)}`,
      ratio: round(b / f, 3),
      holds: first && judged ? b / f <= 1.5 && ok : null,
      notes: [
        `Session: ${what} (800x600 screenshots, ${fmtMB(m.session.pngBytes)} of PNG), ${m.kept} of its ${m.images} captures thumbnailed at record time.`,
        `Bundle ${fmtMB(m.bundleBytes)}; the floor zips the same PNGs (stored) and tool-calls.jsonl (deflated) with yazl, ${fmtMB(m.floorBytes)}. ${checks}`,
      ],
      data: {
        bundleMsPerRound: m.bundleMs.map((v) => round(v, 1)),
        floorMsPerRound: m.floorMs.map((v) => round(v, 1)),
        bundleBytes: m.bundleBytes,
        floorBytes: m.floorBytes,
        thumbnailsKept: m.kept,
        verified: m.verified,
      },
    },
    {
      name: `peak memory, ${what} (max RSS of the mcec-bundle process)`,
      budget: `<= ${PEAK_BUDGET_MB} MB`,
      measured: peak === null ? 'not measured' : fmtMB(peak),
      baseline: m.floorPeaks.length > 0 ? `yazl floor ${fmtMB(Math.max(...m.floorPeaks))}` : 'n/a',
      ratio: peak === null ? null : round(peak / (PEAK_BUDGET_MB * MB), 3),
      holds: peak === null || !judged ? null : peak <= PEAK_BUDGET_MB * MB,
      notes: [
        HAVE_GNU_TIME
          ? 'GNU time -v, maximum resident set size, worst round. Ratio is measured / budget.'
          : 'GNU time missing: VmHWM from a preload.',
      ],
      data: { bundlePeakRssPerRound: m.bundlePeaks, floorPeakRssPerRound: m.floorPeaks },
    },
    ...noGifRows(m, judged, what),
  ];
}

/** The same bundle without run.gif (no image library loaded): its time and its peak. */
function noGifRows(m: Measured, judged: boolean, what: string): Row[] {
  if (m.noGifMs.length === 0) return [];
  const t = median(m.noGifMs);
  const f = median(m.floorMs);
  const peak = m.noGifPeaks.length > 0 ? Math.max(...m.noGifPeaks) : null;
  return [
    {
      name: `time, ${what}, --no-gif (spawn to exit)`,
      budget: 'none (reported)',
      measured: fmtMs(t),
      baseline: `yazl floor ${fmtMs(f)}`,
      ratio: round(t / f, 3),
      holds: null,
      notes: ['The same bundle without run.gif, alternated with the two arms above in each round.'],
      data: { noGifMsPerRound: m.noGifMs.map((v) => round(v, 1)) },
    },
    {
      name: `peak memory, ${what}, --no-gif`,
      budget: `<= ${NO_GIF_PEAK_BUDGET_MB} MB`,
      measured: peak === null ? 'not measured' : fmtMB(peak),
      baseline: m.floorPeaks.length > 0 ? `yazl floor ${fmtMB(Math.max(...m.floorPeaks))}` : 'n/a',
      ratio: peak === null ? null : round(peak / (NO_GIF_PEAK_BUDGET_MB * MB), 3),
      holds: peak === null || !judged ? null : peak <= NO_GIF_PEAK_BUDGET_MB * MB,
      notes: [
        'GNU time -v (or VmHWM), worst round. No image library is loaded: sharp draws only run.gif here.',
      ],
      data: { noGifPeakRssPerRound: m.noGifPeaks },
    },
  ];
}

export const figure: Figure = {
  id: 'bundle',
  title: 'Bundling 10,000 calls + 200 captures, and twice that (mcec-bundle vs the yazl floor)',
  async run(ctx: FigureContext) {
    // Quick mode bundles a twentieth of the sessions, one round; the budgets are judged on the full ones.
    const scale = ctx.quick ? 20 : 1;
    const rounds = ctx.quick ? 1 : 5;
    const judged = !ctx.quick;
    const one = await measure(ctx, 10_000 / scale, 200 / scale, rounds, true);
    const two = await measure(ctx, 20_000 / scale, 400 / scale, rounds, false);
    const rows = [...rowsOf(one, judged, true), ...rowsOf(two, judged, false)];
    const p1 = Math.max(...one.bundlePeaks);
    const p2 = Math.max(...two.bundlePeaks);
    const r1 = median(one.bundleMs) / median(one.floorMs);
    const r2 = median(two.bundleMs) / median(two.floorMs);
    rows.push({
      name: 'growth: peak memory with twice the calls and captures',
      budget: 'flat (<= 1.1x)',
      measured: fmtMB(p2),
      baseline: fmtMB(p1),
      ratio: round(p2 / p1, 3),
      holds: judged && Number.isFinite(p1) && Number.isFinite(p2) ? p2 / p1 <= 1.1 : null,
      notes: [
        `Time against the floor: ${r1.toFixed(2)}x at ${one.session.calls} calls, ${r2.toFixed(2)}x at ${two.session.calls}.`,
      ],
      data: { peak10k: p1, peak20k: p2, ratioToFloor: { one: round(r1, 3), two: round(r2, 3) } },
    });
    if (!judged) for (const r of rows) r.notes.push('Quick mode: smaller sessions, budgets not judged.');
    return { rows, notes: [] };
  },
};
