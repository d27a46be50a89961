/** The record tool (RecordCommand.cs, GifRecorder.cs): one GIF recording per server, written to a real file. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Warning } from '../contract/types.js';
import { downscale, regionSizeError } from './capture.js';
import { windowInfo } from './desktop.js';
import { fillRect, type Raster } from './raster.js';
import type { ToolContext, ToolSuccess } from './tool-kit.js';
import {
  hasArea,
  hasTarget,
  int,
  regionArg,
  resolveWindow,
  sleep,
  str,
  ToolFailure,
  target,
} from './tool-kit.js';

/** The operator limits the simulated server runs with (AppSettings AgentRecordMax*). */
export interface RecordLimits {
  /** Frames per second at most (server default 30). */
  maxFps: number;
  /** Longest recording in ms (server default 60000). */
  maxDurationMs: number;
  /** Most frames (server default 600; the simulator's default is 50 so a GIF stays small in memory). */
  maxFrames: number;
  /** Widest frame (server default 1280). */
  maxWidth: number;
}

export const DEFAULT_RECORD_LIMITS: RecordLimits = {
  maxFps: 30,
  maxDurationMs: 60_000,
  maxFrames: 50,
  maxWidth: 1280,
};

const DEFAULT_FPS = 5;
const DISCARDED_CODE = 'unfetched-recording-discarded';
const DISCARDED_DETAIL =
  'A previous recording auto-stopped and its GIF was never fetched; it has been discarded and replaced by this recording.';

interface Recording {
  startedMs: number;
  fps: number;
  maxFrames: number;
  maxWidth: number;
  maxDurationMs: number;
  target: Record<string, unknown>;
  /** The target's pixels when the recording started (the simulated desktop does not move by itself). */
  raster: Raster;
}

/** The server's single recorder: idle, recording, or completed (auto-stopped, GIF not fetched yet). */
export class SimRecorder {
  private current: Recording | undefined;

  constructor(readonly limits: RecordLimits = DEFAULT_RECORD_LIMITS) {}

  /** When the capture loop of `r` stops by itself: at its duration or its frame cap. */
  private static autoStopMs(r: Recording): number {
    return Math.min(r.maxDurationMs, (r.maxFrames - 1) * (1000 / r.fps));
  }

  /** True while a recording runs (an auto-stopped one no longer counts, as GifRecorder.IsRecording). */
  get isRecording(): boolean {
    const r = this.current;
    return r !== undefined && performance.now() - r.startedMs < SimRecorder.autoStopMs(r);
  }

  /** Start; true when a completed, never-fetched recording was discarded to make room. */
  start(r: Omit<Recording, 'startedMs'>): boolean {
    const discarded = this.current !== undefined;
    this.current = { ...r, startedMs: performance.now() };
    return discarded;
  }

  /** Stop (or claim the auto-stopped recording): its frames and timing, or undefined when there is none. */
  stop(): { recording: Recording; frames: number; durationMs: number } | undefined {
    const r = this.current;
    if (!r) return undefined;
    this.current = undefined;
    const elapsed = Math.min(performance.now() - r.startedMs, SimRecorder.autoStopMs(r));
    const frames = Math.min(r.maxFrames, Math.floor(elapsed / (1000 / r.fps)) + 1);
    return { recording: r, frames, durationMs: Math.round(elapsed) };
  }
}

const clamp = (v: number, min: number, max: number) => Math.max(min, Math.min(max, v));

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `yyyyMMdd-HHmmss` in LOCAL time: the server names a default GIF with DateTime.Now. */
function localStamp(d: Date): string {
  return `${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
}

/** An animated GIF of `frames` frames of `r`, a small dark pointer moving across them so every frame differs. */
export async function encodeGif(r: Raster, frames: number, delayMs: number): Promise<Buffer> {
  const page = r.width * r.height * 3;
  const tall = Buffer.alloc(page * frames);
  for (let i = 0; i < frames; i++) {
    r.data.copy(tall, i * page);
    const frame: Raster = { width: r.width, height: r.height, data: tall.subarray(i * page, (i + 1) * page) };
    const step = frames > 1 ? i / (frames - 1) : 0;
    fillRect(
      frame,
      Math.round(step * (r.width - 12)),
      Math.round(step * (r.height - 12)),
      12,
      12,
      [16, 16, 16],
    );
  }
  const { default: sharp } = await import('sharp');
  return sharp(tall, {
    raw: { width: r.width, height: r.height * frames, channels: 3, pageHeight: r.height },
  })
    .gif({ delay: new Array<number>(frames).fill(delayMs), loop: 0 })
    .toBuffer();
}

function fail(
  code: string,
  category: 'invalid-argument' | 'no-target' | 'internal',
  detail: string,
  warned: boolean,
) {
  const warnings: Warning[] = warned ? [{ code: DISCARDED_CODE, detail: DISCARDED_DETAIL }] : [];
  return new ToolFailure(code, category, detail, undefined, warnings);
}

async function doStart(ctx: ToolContext, oneshot: boolean): Promise<ToolSuccess> {
  const { args, recorder } = ctx;
  if (recorder.isRecording)
    throw fail(
      'recording-in-progress',
      'invalid-argument',
      'A recording is already in progress. Stop it first (action=stop).',
      false,
    );
  const t = target(args);
  const region = regionArg(args);
  const isRegion = hasArea(region) && !hasTarget(t);
  if (isRegion) {
    const sizeError = regionSizeError(region.width, region.height);
    if (sizeError) throw fail('region-too-large', 'invalid-argument', sizeError, false);
  }
  const { maxFps, maxDurationMs, maxFrames, maxWidth } = recorder.limits;
  const fpsArg = int(args, 'fps') ?? 0;
  const durationArg = int(args, 'durationMs') ?? 0;
  const widthArg = int(args, 'maxWidth') ?? 0;
  const fps = clamp(fpsArg > 0 ? fpsArg : DEFAULT_FPS, 1, maxFps);
  const loopMs = oneshot
    ? clamp(durationArg > 0 ? durationArg : maxDurationMs, 1, maxDurationMs)
    : maxDurationMs;
  let raster: Raster;
  let described: Record<string, unknown>;
  if (isRegion) {
    raster = ctx.desktop.renderRegion(region);
    described = { type: 'region', ...region };
  } else {
    if (!hasTarget(t)) throw fail('window-not-found', 'no-target', 'No matching window', false);
    let w: ReturnType<typeof resolveWindow>;
    try {
      w = resolveWindow(ctx.desktop, t);
    } catch {
      throw fail('window-not-found', 'no-target', 'No matching window', false);
    }
    raster = ctx.desktop.renderWindow(w);
    described = { ...windowInfo(w) };
  }
  const discarded = recorder.start({
    fps,
    maxFrames,
    maxWidth: clamp(widthArg > 0 ? widthArg : maxWidth, 1, maxWidth),
    maxDurationMs: loopMs,
    target: described,
    raster,
  });
  if (!oneshot) {
    const warnings: Warning[] = discarded ? [{ code: DISCARDED_CODE, detail: DISCARDED_DETAIL }] : [];
    return { result: { recording: true, fps, maxDurationMs: loopMs, target: described }, warnings };
  }
  // A one-shot waits out its loop plus a short grace, then stops, encodes and writes, as the server does.
  await sleep(loopMs + 200);
  return doStop(ctx, discarded);
}

async function doStop(ctx: ToolContext, warnDiscarded = false): Promise<ToolSuccess> {
  const stopped = ctx.recorder.stop();
  if (!stopped)
    throw fail(
      'no-recording',
      'invalid-argument',
      'No recording is in progress or awaiting fetch.',
      warnDiscarded,
    );
  const { recording, frames, durationMs } = stopped;
  // Frames wider than the operator's limit are resampled as a capture is.
  const raster = await downscale(recording.raster, recording.maxWidth);
  const gif = await encodeGif(raster, frames, Math.floor(1000 / recording.fps));
  const file = str(ctx.args, 'file');
  const out = file || path.join(ctx.tempDir, `mcec-rec-${localStamp(ctx.now())}.gif`);
  const data: Record<string, unknown> = {
    frames,
    durationMs,
    fps: recording.fps,
    width: raster.width,
    height: raster.height,
    bytes: gif.length,
    target: recording.target,
  };
  try {
    await writeFile(out, gif);
  } catch (e) {
    throw fail(
      'record-write-failed',
      'internal',
      `Recorded ${frames} frames but could not write GIF to '${out}': ${(e as Error).message}`,
      warnDiscarded,
    );
  }
  data.file = out;
  const warnings: Warning[] = warnDiscarded ? [{ code: DISCARDED_CODE, detail: DISCARDED_DETAIL }] : [];
  return { result: data, warnings };
}

/** The record tool: start | stop | oneshot (default oneshot with durationMs, else start). */
export async function runRecord(ctx: ToolContext): Promise<ToolSuccess> {
  const raw = str(ctx.args, 'action');
  const action =
    raw === undefined || raw.trim() === ''
      ? (int(ctx.args, 'durationMs') ?? 0) > 0
        ? 'oneshot'
        : 'start'
      : raw.trim().toLowerCase();
  if (action === 'stop') return doStop(ctx);
  if (action === 'start' || action === 'oneshot') return doStart(ctx, action === 'oneshot');
  throw fail(
    'record-action-unknown',
    'invalid-argument',
    `Unknown record action '${action}'. Use start, stop, or oneshot.`,
    false,
  );
}
