/**
 * Bundling a 10,000-call session with 200 captures (recorded through the recorder) with the built CLI
 * `mcec-bundle <id>`, against `zip -r` of the same session dir: wall time from spawn to exit and peak RSS
 * (GNU time), arms alternated, medians. The zip is verified once with `mcec-bundle verify` and `unzip -t`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { recordBigSession } from './lib/session.js';
import { HAVE_GNU_TIME, timedRun } from './lib/spawn.js';
import { alternate, fmtMB, fmtMs, median, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

export const figure: Figure = {
  id: 'bundle',
  title: 'Bundling a 10,000-call session with 200 captures (mcec-bundle vs zip -r)',
  async run(ctx) {
    // Quick mode bundles a fifth of the session; the time and memory budgets are judged on the full one.
    const calls = ctx.quick ? 2_000 : 10_000;
    const captures = ctx.quick ? 40 : 200;
    const rounds = ctx.quick ? 2 : 7;
    const judged = !ctx.quick;
    const sessionsDir = path.join(ctx.tmp, 'sessions');
    const t0 = performance.now();
    const session = await recordBigSession(sessionsDir, calls, captures);
    ctx.log(
      `recorded ${calls} calls, ${session.captures} captures in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const dirName = fs.readdirSync(sessionsDir).find((d) => d.endsWith(session.sessionId))!;
    const sessionDir = path.join(sessionsDir, dirName);
    const artifacts = fs.readdirSync(path.join(sessionDir, 'artifacts'));
    const dbBytes = fs.statSync(path.join(sessionDir, 'session.sqlite')).size;
    const cli = path.join(ctx.root, 'dist', 'cli', 'mcec-bundle.js');
    const outDir = path.join(ctx.tmp, 'out');
    fs.mkdirSync(outDir);
    const bundleZip = path.join(outDir, 'bundle.zip');
    const plainZip = path.join(outDir, 'plain.zip');
    const peaks = { bundle: [] as number[], zip: [] as number[] };

    const bundle = async () => {
      fs.rmSync(bundleZip, { force: true });
      const r = await timedRun(
        process.execPath,
        [cli, session.sessionId, '--sessions', sessionsDir, '-o', bundleZip],
        {
          measureMemory: true,
        },
      );
      if (r.code !== 0) throw new Error(`mcec-bundle exited ${r.code}: ${r.stderr.slice(0, 500)}`);
      if (r.peakRss !== null) peaks.bundle.push(r.peakRss);
      return r.ms;
    };
    const zip = async () => {
      fs.rmSync(plainZip, { force: true });
      const r = await timedRun('zip', ['-r', '-q', plainZip, dirName], {
        cwd: sessionsDir,
        measureMemory: true,
      });
      if (r.code !== 0) throw new Error(`zip exited ${r.code}: ${r.stderr.slice(0, 500)}`);
      if (r.peakRss !== null) peaks.zip.push(r.peakRss);
      return r.ms;
    };
    // Warm up: the page cache holds the session's files for both arms.
    await zip();
    await bundle();
    peaks.bundle.length = 0;
    peaks.zip.length = 0;
    ctx.log(`${rounds} rounds`);
    const times = await alternate(rounds, { zip, bundle });

    const verify = await timedRun(process.execPath, [cli, 'verify', bundleZip]);
    const unzipT = await timedRun('unzip', ['-tq', bundleZip]);
    const bundleBytes = fs.statSync(bundleZip).size;
    const zipBytes = fs.statSync(plainZip).size;
    const b = median(times.bundle);
    const z = median(times.zip);
    const peak = peaks.bundle.length > 0 ? Math.max(...peaks.bundle) : null;
    const sessionNote =
      `Session: ${calls.toLocaleString('en-US')} calls, ${session.captures} captures (800x600 screenshots, ` +
      `${fmtMB(session.pngBytes)} of PNG), session.sqlite ${fmtMB(dbBytes)}, ${artifacts.length} artifact files.`;
    const verified = verify.code === 0 && unzipT.code === 0;
    const rows: Row[] = [
      {
        name: `wall time, mcec-bundle <id> (spawn to exit), ${calls.toLocaleString('en-US')} calls`,
        budget: '< 2 s',
        measured: fmtMs(b),
        baseline: `zip -r ${fmtMs(z)}`,
        ratio: round(b / 2000, 3),
        holds: judged ? b < 2000 : null,
        notes: [sessionNote, 'Ratio is measured / budget here.'],
        data: {
          bundleMsPerRound: times.bundle.map((v) => round(v, 1)),
          zipMsPerRound: times.zip.map((v) => round(v, 1)),
        },
      },
      {
        name: 'time vs zip -r of the same session dir',
        budget: '<= 1.5x zip -r',
        measured: fmtMs(b),
        baseline: fmtMs(z),
        ratio: round(b / z, 3),
        holds: judged ? b / z <= 1.5 : null,
        notes: [
          `Bundle ${fmtMB(bundleBytes)} (PNGs stored, text deflated, plus rendered reports and a log snapshot);`,
          `zip -r ${fmtMB(zipBytes)} (deflates everything). Verified: mcec-bundle verify ${verify.code === 0 ? 'ok' : 'FAILED'}, unzip -t ${unzipT.code === 0 ? 'ok' : 'FAILED'}.`,
        ],
        data: { bundleBytes, zipBytes, verifyCode: verify.code, unzipTestCode: unzipT.code },
      },
      {
        name: 'peak memory (max RSS of the mcec-bundle process)',
        budget: '< 200 MB',
        measured: peak === null ? 'not measured' : fmtMB(peak),
        baseline: peaks.zip.length > 0 ? `zip -r ${fmtMB(Math.max(...peaks.zip))}` : 'n/a',
        ratio: peak === null ? null : round(peak / 200e6, 3),
        holds: peak === null || !judged ? null : peak < 200e6,
        notes: [
          HAVE_GNU_TIME
            ? 'GNU time -v, maximum resident set size, worst round.'
            : 'GNU time missing: not measured.',
        ],
        data: { bundlePeakRssPerRound: peaks.bundle, zipPeakRssPerRound: peaks.zip },
      },
    ];
    if (!judged) for (const r of rows) r.notes.push('Quick mode: a smaller session, budget not judged.');
    if (!verified) {
      rows[1]!.holds = false;
      rows[1]!.notes.push('The bundle did not verify: see data.');
    }
    return { rows, notes: [] };
  },
};
