/**
 * Capture compaction (find the image bytes in an envelope, decode, hash, write the artifact, read its
 * header with sharp, build the capture summary) against its floor: base64 decode + file write + sharp
 * metadata of the same PNG. 1920x1080 and 3840x2160 screenshots with real content (MB-sized PNGs); then the
 * same with no blankCheck in the envelope, so the recorder computes it (a full decode; reported only).
 * A capture CallToolResult recorded end to end through `wrap` (to flush) is held to the floor of reading
 * MCEC's answer exactly: one `JSON.parse` of its envelope text (which holds the same base64 again, with the
 * server's `\u002B` escapes) + decode + sha256 + write + sharp metadata of the bytes, in sequence; issue 31's
 * floor without the parse is reported beside it. Every arm's process CPU time and minor page faults are kept
 * beside its wall time (this VM's first touch of fresh memory costs about 5 us a page).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ArtifactStore, compactImages } from '../src/artifacts/index.js';
import { findImageBytes } from '../src/contract/index.js';
import { createRecorder, type Dispatch } from '../src/record/index.js';
import { captureCallToolResult, captureEnvelope, screenshotPng } from './lib/fixtures.js';
import { alternate, fmtMB, fmtMs, gcSettled, median, nowMs, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

interface Sample {
  png: Buffer;
  base64: string;
  width: number;
  height: number;
  /** The envelope text of this capture's CallToolResult, as `recorded` receives it. */
  envelopeText: string;
}

type SharpModule = typeof import('sharp')['default'];

/** A fresh, empty directory for one measurement (created outside the timed part). */
function freshDir(base: string, name: string): string {
  const dir = path.join(base, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'artifacts'), { recursive: true });
  return dir;
}

/** What one timed part cost the whole process (all threads): CPU time and minor page faults. */
interface Cost {
  cpuMs: number;
  minorFaults: number;
}

/** Wall ms of `fn`, its CPU time and minor page faults pushed onto `costs` (read outside the timed part). */
async function timed(costs: Cost[], fn: () => Promise<void>): Promise<number> {
  const cpu0 = process.cpuUsage();
  const faults0 = process.resourceUsage().minorPageFault;
  const t0 = nowMs();
  await fn();
  const ms = nowMs() - t0;
  const cpu = process.cpuUsage(cpu0);
  costs.push({
    cpuMs: (cpu.user + cpu.system) / 1000,
    minorFaults: process.resourceUsage().minorPageFault - faults0,
  });
  return ms;
}

/**
 * What a floor does beside decode, write and header read: `plain` nothing; `hashed` the sha256 of the bytes
 * after the decode; `wire` first one `JSON.parse` of the envelope text (what any exact reader of MCEC's answer
 * does first: the wire reference's "match bytes only after JSON.parse"), then the hashed floor.
 */
type FloorKind = 'plain' | 'hashed' | 'wire';

/** A floor of the given kind (see FloorKind). */
async function floor(
  sharp: SharpModule,
  s: Sample,
  dir: string,
  costs: Cost[],
  kind: FloorKind,
): Promise<number> {
  const file = path.join(dir, 'artifacts', 'floor.png');
  let width: number | undefined;
  await gcSettled();
  const ms = await timed(costs, async () => {
    if (kind === 'wire' && typeof JSON.parse(s.envelopeText) !== 'object')
      throw new Error('the envelope text is not an object');
    const buf = Buffer.from(s.base64, 'base64');
    if (kind !== 'plain') createHash('sha256').update(buf).digest('hex');
    await fs.promises.writeFile(file, buf);
    width = (await sharp(buf).metadata()).width;
  });
  if (width !== s.width) throw new Error('floor read a wrong width');
  return ms;
}

/** What no order of the work can go below: this thread's decode and sha256 of the bytes (no file, no header). */
async function decodeAndHash(s: Sample, costs: Cost[]): Promise<number> {
  let length = 0;
  await gcSettled();
  const ms = await timed(costs, async () => {
    const buf = Buffer.from(s.base64, 'base64');
    createHash('sha256').update(buf).digest('hex');
    length = buf.length;
  });
  if (length !== s.png.length) throw new Error('decode gave a wrong length');
  return ms;
}

/** The recorder's compaction of one capture envelope (into a fresh store, so nothing is deduplicated). */
async function compaction(s: Sample, dir: string, withBlankCheck: boolean, costs: Cost[]): Promise<number> {
  const env = captureEnvelope(s.png, s.width, s.height, withBlankCheck, s.base64);
  const store = new ArtifactStore({ sessionDir: dir, maxArtifactBytes: 1e12 });
  let out: Awaited<ReturnType<typeof compactImages>> | undefined;
  await gcSettled();
  const ms = await timed(costs, async () => {
    out = await compactImages(env, findImageBytes(env), store);
  });
  const img = out?.images[0];
  if (!img || img.error || img.width !== s.width)
    throw new Error(`compaction failed: ${img?.error ?? 'no image'}`);
  if (!withBlankCheck && !img.blankCheck) throw new Error('blankCheck was not computed');
  return ms;
}

/** A capture CallToolResult (image block + envelope with the same bytes) recorded through wrap, to flush. */
async function recorded(s: Sample, dir: string, costs: Cost[]): Promise<number> {
  const result = captureCallToolResult(s.png, s.width, s.height);
  const recorder = createRecorder({ sessionsDir: dir, stderr: () => {}, thumbnails: false });
  const wrapped = recorder.wrap<Dispatch>(async () => result);
  await wrapped('find', {}); // opens the session log (not timed); find is not an observation tool
  await recorder.flush();
  await gcSettled();
  const ms = await timed(costs, async () => {
    await wrapped('capture', { window: 'Notepad' });
    await recorder.flush();
  });
  const info = recorder.session(recorder.defaultSessionId);
  await recorder.close();
  if (!info || info.counts.artifacts < 1) throw new Error('the capture was not recorded as an artifact');
  return ms;
}

export const figure: Figure = {
  id: 'compaction',
  title: 'Capture compaction vs its floor (decode + write + sharp metadata)',
  async run(ctx) {
    const sharp = (await import('sharp')).default;
    const sizes: Array<[number, number]> = ctx.quick
      ? [[1920, 1080]]
      : [
          [1920, 1080],
          [3840, 2160],
        ];
    const rounds = ctx.quick ? 3 : 15;
    const rows: Row[] = [];
    for (const [width, height] of sizes) {
      const samples: Sample[] = [];
      for (let v = 0; v < 3; v++) {
        const png = await screenshotPng(width, height, v + 1);
        const text = captureCallToolResult(png, width, height).content.find((b) => b.type === 'text');
        if (text?.type !== 'text') throw new Error('the capture result has no envelope text');
        samples.push({ png, base64: png.toString('base64'), width, height, envelopeText: text.text });
      }
      const label = `${width}x${height}`;
      const sample = (r: number) => samples[r % samples.length]!;
      ctx.log(`${label}: PNG ${fmtMB(samples[0]!.png.length)}, ${rounds} rounds`);
      // One measurement of each arm: a sample, a fresh directory for its files, where its costs go.
      const arms = {
        floor: (x: Sample, dir: string, c: Cost[]) => floor(sharp, x, dir, c, 'plain'),
        floorHashed: (x: Sample, dir: string, c: Cost[]) => floor(sharp, x, dir, c, 'hashed'),
        floorWire: (x: Sample, dir: string, c: Cost[]) => floor(sharp, x, dir, c, 'wire'),
        decodeAndHash: (x: Sample, _dir: string, c: Cost[]) => decodeAndHash(x, c),
        compaction: (x: Sample, dir: string, c: Cost[]) => compaction(x, dir, true, c),
        blankCheck: (x: Sample, dir: string, c: Cost[]) => compaction(x, dir, false, c),
        recorded: (x: Sample, dir: string, c: Cost[]) => recorded(x, dir, c),
      };
      type ArmName = keyof typeof arms;
      const names = Object.keys(arms) as ArmName[];
      // Warm up each path twice (sharp's thread pool, JIT, first touch of big buffers).
      const unused: Cost[] = [];
      for (let w = 0; w < 2; w++)
        for (const name of names) await arms[name](sample(w), freshDir(ctx.tmp, `warm-${name}`), unused);
      const costs = Object.fromEntries(names.map((name) => [name, [] as Cost[]])) as Record<ArmName, Cost[]>;
      const times = await alternate(
        rounds,
        Object.fromEntries(
          names.map((name) => [
            name,
            (r: number) => arms[name](sample(r), freshDir(ctx.tmp, `${name}-${r}`), costs[name]),
          ]),
        ) as Record<ArmName, (r: number) => Promise<number>>,
      );
      for (const entry of fs.readdirSync(ctx.tmp))
        fs.rmSync(path.join(ctx.tmp, entry), { recursive: true, force: true });
      const f = median(times.floor);
      const fh = median(times.floorHashed);
      const fw = median(times.floorWire);
      const dh = median(times.decodeAndHash);
      const c = median(times.compaction);
      const b = median(times.blankCheck);
      const e = median(times.recorded);
      /** Median CPU ms and minor faults per round of an arm, as the notes say them. */
      const said = (arm: Cost[]) =>
        `${fmtMs(median(arm.map((x) => x.cpuMs)))} CPU, ${median(arm.map((x) => x.minorFaults))} minor faults`;
      const data = (arm: number[], armCosts: Cost[], base = times.floor, baseCosts = costs.floor) => ({
        subjectMsPerRound: arm.map((v) => round(v, 3)),
        floorMsPerRound: base.map((v) => round(v, 3)),
        subjectCpuMsPerRound: armCosts.map((x) => round(x.cpuMs, 3)),
        floorCpuMsPerRound: baseCosts.map((x) => round(x.cpuMs, 3)),
        subjectMinorFaultsPerRound: armCosts.map((x) => x.minorFaults),
        floorMinorFaultsPerRound: baseCosts.map((x) => x.minorFaults),
        pngBytes: samples.map((s) => s.png.length),
      });
      rows.push({
        name: `${label} PNG (${fmtMB(samples[0]!.png.length)}), blankCheck declared`,
        budget: '<= 1.3x floor',
        measured: fmtMs(c),
        baseline: fmtMs(f),
        ratio: round(c / f, 3),
        holds: c / f <= 1.3,
        notes: [
          `findImageBytes + compactImages into a fresh store; ${rounds} rounds, arms alternated, medians.`,
          `Per round (medians): subject ${said(costs.compaction)}; floor ${said(costs.floor)}.`,
          `This thread's decode + sha256 alone (no file, no header): ${fmtMs(dh)}, ${round(dh / f, 3)}x the floor (${said(costs.decodeAndHash)}).`,
        ],
        data: {
          ...data(times.compaction, costs.compaction),
          decodeAndHashMsPerRound: times.decodeAndHash.map((v) => round(v, 3)),
        },
      });
      rows.push({
        name: `${label} PNG, blankCheck computed`,
        budget: 'none (reported)',
        measured: fmtMs(b),
        baseline: fmtMs(f),
        ratio: round(b / f, 3),
        holds: null,
        notes: ['The envelope has no blankCheck, so the recorder decodes the image to compute it.'],
        data: data(times.blankCheck, costs.blankCheck),
      });
      rows.push({
        name: `${label} capture through wrap, to flush (image block + envelope)`,
        budget: '<= 1.3x (parse the envelope text + decode + sha256 + write + metadata)',
        measured: fmtMs(e),
        baseline: fmtMs(fw),
        ratio: round(e / fw, 3),
        holds: e / fw <= 1.3,
        notes: [
          'End to end, thumbnails off: parse the CallToolResult (the envelope text holds the same base64, with',
          "the server's \\u002B escapes), compact both copies (one file, deduplicated), redact, commit. Floor:",
          'one JSON.parse of the same envelope text, then decode + sha256 + fs.promises.writeFile + sharp metadata',
          'of the bytes, in sequence: the least an exact reader of the answer does.',
          `Per round (medians): subject ${said(costs.recorded)}; floor ${said(costs.floorWire)}.`,
        ],
        data: data(times.recorded, costs.recorded, times.floorWire, costs.floorWire),
      });
      rows.push({
        name: `${label} capture through wrap, to flush, vs issue 31's floor (no parse)`,
        budget:
          "none (reported; issue 31's 1.3x leaves out the envelope's second copy, see Reading the results)",
        measured: fmtMs(e),
        baseline: fmtMs(fh),
        ratio: round(e / fh, 3),
        holds: null,
        notes: [
          'The same subject against decode + sha256 + write + metadata of one copy, as issue 31 worded it; the',
          `envelope text's parse alone is the floors' difference: ${fmtMs(fw - fh)}.`,
          `Per round (medians): floor ${said(costs.floorHashed)}.`,
        ],
        data: data(times.recorded, costs.recorded, times.floorHashed, costs.floorHashed),
      });
    }
    return {
      rows,
      notes: [
        'Floor: `Buffer.from(base64, "base64")`, `fs.promises.writeFile`, `sharp(buf).metadata()`, in sequence; the',
        "wrap rows' floors also hash the bytes (sha256) after the decode, the first of them after one JSON.parse of the envelope text. CPU time and minor page faults are the",
        "whole process's (all threads) over each arm's timed part (`process.cpuUsage`, `process.resourceUsage`).",
        "Every arm starts after a full GC and once the collector's helper threads are idle again (`gcSettled`): their",
        'sweeping (about 3 ms of CPU after a 4K round) otherwise ran in the timed part, on the core a parallel arm uses.',
      ],
    };
  },
};
