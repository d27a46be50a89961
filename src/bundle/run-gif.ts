/**
 * run.gif: the player's steps as an animated GIF for an issue tracker, the same marks burned in (the step's
 * call as a title, its captions at the bottom, the failing step framed in red). Bounded: at most 60 frames
 * (those around the failing call first), 800 px wide, 5 MB; a session with fewer than two images gets none.
 * Frames are small when there are many (a pixel budget), and then made from the 320 px thumbnails the
 * recorder kept, so a big session costs no PNG decode. sharp (imported only here) draws each frame to raw
 * pixels (an image shown by steps in a row is decoded and resized once); gif-writer.ts maps it to a fixed
 * palette that holds the marks' colours exactly and appends it to the file, so memory holds a few frames
 * whatever the count.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readKeptThumbnail } from '../artifacts/thumbnail.js';
import type { PlayerFrame, PlayerModel, PlayerStep } from '../report/player/model.js';
import { OVERLAY_COLOURS, overlaySvg } from '../report/player/overlay-svg.js';
import { loadSharp, type Sharp } from '../util/sharp.js';
import { removeBestEffort } from '../util/temp-files.js';
import { GifFileWriter, GifPalette, rgbOf } from './gif-writer.js';

/** Bounds of run.gif. */
export interface RunGifLimits {
  maxFrames: number;
  maxWidth: number;
  maxBytes: number;
}

export const RUN_GIF_LIMITS: Readonly<RunGifLimits> = Object.freeze({
  maxFrames: 60,
  maxWidth: 800,
  maxBytes: 5_000_000,
});

/** The bundle's file name. */
export const RUN_GIF_FILE = 'run.gif';

/** What was written. */
export interface RunGif {
  file: string;
  bytes: number;
  frames: number;
  width: number;
  height: number;
  /** The images (keys, `artifacts/x.png`) its frames show, each once. */
  images: string[];
}

/**
 * Pixels of all frames together at most: time (every frame drawn, mapped and compressed) and the GIF's
 * size grow with it; 60 frames come out about 260 px wide, 8 frames 800.
 */
const PIXEL_BUDGET = 3_000_000;
const MIN_WIDTH = 200;
/** Below this width the frames come from the kept 320 px thumbnails. */
const THUMB_WIDTH = 320;
const MIN_WIDTH_FROM_IMAGES = 400;
/** Labels at least this high in the GIF's pixels. */
const MIN_FONT_PX = 10;
const BACKGROUND = { r: 31, g: 35, b: 40, alpha: 1 };
/** Kept thumbnails read ahead of the frame being drawn (an image file: one, it may be megabytes). */
const THUMBS_READ_AHEAD = 4;
const DONE: Promise<Buffer | null> = Promise.resolve(null);
const DONE_RESIZED: Promise<Resized | null> = Promise.resolve(null);

/**
 * Start importing sharp now (~200 ms of loading), so it is there when the first frame is drawn. A failed
 * import is the GIF's warning once it asks for sharp, so it is not reported here.
 */
export function preloadRunGifDecoder(): void {
  loadSharp().catch(() => undefined);
}

/** The steps shown: the failing one, then its neighbours (two before for each after), in run order. */
export function chooseSteps(steps: readonly PlayerStep[], max: number): PlayerStep[] {
  if (steps.length <= max) return [...steps];
  const failing = steps.findIndex((s) => s.failing);
  const centre = failing === -1 ? steps.length - 1 : failing;
  const picked = new Set<number>([centre]);
  let before = centre - 1;
  let after = centre + 1;
  while (picked.size < max && (before >= 0 || after < steps.length)) {
    for (let i = 0; i < 2 && before >= 0 && picked.size < max; i++) picked.add(before--);
    if (after < steps.length && picked.size < max) picked.add(after++);
  }
  return [...picked].sort((a, b) => a - b).map((i) => steps[i]!);
}

/** How long a frame stays: the real gap to the next step shown, between 0.6 and 2.5 s; the failure and the last 3 s. */
function delayOf(step: PlayerStep, next: PlayerStep | null): number {
  if (step.failing || !next) return 3000;
  return Math.round(Math.max(600, Math.min(2500, next.at - step.at)));
}

/**
 * Write run.gif of `model` into `file`, or return null when the session has fewer than two images (or none
 * of them could be read). The images are read from `sessionDir`; those of `skip` (by key: files the bundle
 * found not to be the log's) are not, and their steps get no frame, as for a file that is not there.
 */
export async function writeRunGif(
  sessionDir: string,
  model: PlayerModel,
  file: string,
  limits: RunGifLimits = RUN_GIF_LIMITS,
  skip: ReadonlySet<string> = new Set(),
): Promise<RunGif | null> {
  const images = model.frames.filter((f) => f.kind === 'image' && f.width > 0 && f.height > 0);
  if (images.length < 2) return null;
  const drawable = model.steps.filter((s) => {
    const f = model.frames[s.frame]!;
    return f.kind === 'image' && f.width > 0 && f.height > 0;
  });
  let steps = chooseSteps(drawable, limits.maxFrames);
  for (let round = 0; round < 4; round++) {
    const made = await encode(sessionDir, model, steps, limits, file, skip);
    if (!made) {
      removeBestEffort(file);
      return null;
    }
    if (made.bytes <= limits.maxBytes || steps.length <= 2) return { file, ...made };
    // Too big: half the frames (around the failure).
    steps = chooseSteps(steps, Math.max(2, Math.floor(steps.length / 2)));
  }
  removeBestEffort(file);
  return null;
}

/** The GIF's palette: a colour cube, greys, and exactly the overlay's colours and the background. */
let palette: GifPalette | undefined;
function runGifPalette(): GifPalette {
  palette ??= new GifPalette([...OVERLAY_COLOURS.map(rgbOf), [BACKGROUND.r, BACKGROUND.g, BACKGROUND.b]]);
  return palette;
}

/**
 * Write the GIF of `steps` into `file`, one frame at a time (each drawn by sharp, then mapped to the fixed
 * palette and compressed as it comes), or null when fewer than two frames could be read.
 */
async function encode(
  sessionDir: string,
  model: PlayerModel,
  steps: readonly PlayerStep[],
  limits: RunGifLimits,
  file: string,
  skip: ReadonlySet<string>,
): Promise<Omit<RunGif, 'file'> | null> {
  const sharp = await loadSharp();
  const frames = steps.map((s) => model.frames[s.frame]!);
  const aspect = Math.min(2, Math.max(...frames.map((f) => f.height / f.width)));
  const widest = Math.max(...frames.map((f) => f.width));
  const byBudget = Math.floor(Math.sqrt(PIXEL_BUDGET / (steps.length * aspect)));
  const fromThumbs = byBudget < MIN_WIDTH_FROM_IMAGES;
  const width = Math.max(
    Math.min(MIN_WIDTH, widest),
    Math.min(limits.maxWidth, widest, fromThumbs ? Math.min(THUMB_WIDTH, byBudget) : byBudget),
  );
  const height = Math.max(16, Math.round(width * aspect));
  const gif = await GifFileWriter.open(file, runGifPalette(), width, height);
  const page = width * height * 3;
  // A frame is written once the next one is known: its delay is the gap to the next step shown. Meanwhile
  // the next frame is drawn and the bytes of a few after it read (kept thumbnails are a few KB): each is a
  // string of waits, and the rows pass beside the GIF gives the event loop a turn only every 2 ms.
  const sourcesAhead = fromThumbs ? THUMBS_READ_AHEAD : 1;
  const sources: Array<Promise<Buffer | null>> = [];
  const draws: Array<Promise<Buffer | null>> = [];
  // Steps in a row on one image read and resize it once, and draw their own marks on it.
  let resized: Promise<Resized | null> = DONE_RESIZED;
  const drawAhead = (upTo: number) => {
    for (let i = sources.length; i < Math.min(steps.length, upTo + sourcesAhead); i++) {
      const same = i > 0 && steps[i]!.frame === steps[i - 1]!.frame;
      const read = same || skip.has(frames[i]!.key) ? DONE : sourceOf(sessionDir, frames[i]!, fromThumbs);
      read.catch(() => undefined); // awaited by its draw
      sources.push(read);
    }
    for (let i = draws.length; i < Math.min(steps.length, upTo); i++) {
      const frame = frames[i]!;
      if (i === 0 || steps[i]!.frame !== steps[i - 1]!.frame) {
        resized = sources[i]!.then((source) =>
          source ? resizeImage(sharp, source, frame, width, height) : null,
        );
        resized.catch(() => undefined); // awaited by its draws
      }
      const draw = resized.then((image) =>
        image ? drawFrame(sharp, image, frame, steps[i]!, height) : null,
      );
      draw.catch(() => undefined); // awaited at its turn
      draws.push(draw);
      sources[i] = DONE; // its bytes are let go once resized
    }
  };
  let pending: { pixels: Buffer; step: PlayerStep } | null = null;
  const shown = new Set<string>();
  try {
    for (const [i, step] of steps.entries()) {
      drawAhead(i + 2);
      const pixels = await draws[i]!;
      draws[i] = DONE; // its pixels are let go once written
      if (!pixels || pixels.length < page) continue; // an unreadable image: the GIF goes on without it
      if (pending) await gif.addFrame(pending.pixels, 3, delayOf(pending.step, step));
      pending = { pixels, step };
      shown.add(frames[i]!.key);
    }
    if (pending) await gif.addFrame(pending.pixels, 3, delayOf(pending.step, null));
  } catch (err) {
    await Promise.allSettled([...sources, ...draws]); // none still reading when the caller removes the files
    await gif.abandon();
    throw err;
  }
  if (gif.frames < 2) {
    await gif.abandon();
    return null;
  }
  await gif.close();
  return { bytes: gif.bytes, frames: gif.frames, width, height, images: [...shown] };
}

/**
 * An image at the GIF's width, `width` x `height`: its raw pixels (`channels` each), or for a 16-bit PNG its
 * bytes, resized again for each step (8 bits would round its pixels before the marks are drawn on them).
 */
type Resized = { width: number; height: number } & (
  | { data: Buffer; channels: 1 | 2 | 3 | 4 }
  | { source: Buffer }
);

/** The image (`source`) resized to `width` (its height as the GIF's frames fit it), or null when unreadable. */
async function resizeImage(
  sharp: Sharp,
  source: Buffer,
  frame: PlayerFrame,
  width: number,
  height: number,
): Promise<Resized | null> {
  const fh = Math.min(height, Math.max(1, Math.round((width * frame.height) / frame.width)));
  if (isSixteenBitPng(source)) return { source, width, height: fh };
  try {
    const { data, info } = await resized(sharp, source, width, fh)
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { data, width, height: fh, channels: info.channels };
  } catch {
    return null;
  }
}

function resized(sharp: Sharp, source: Buffer, width: number, height: number) {
  return sharp(source, { limitInputPixels: 100_000_000 }).resize(width, height, { fit: 'fill' });
}

/** A PNG of 16 bits per sample (IHDR's bit depth, byte 24). */
function isSixteenBitPng(data: Buffer): boolean {
  return (
    data.length > 24 &&
    data.readUInt32BE(0) === 0x89504e47 &&
    data.toString('latin1', 12, 16) === 'IHDR' &&
    data[24] === 16
  );
}

/**
 * One frame's RGB pixels, `width` x `height`: the resized image with the step's marks drawn, background
 * below. Drawing on the resized pixels gives the same bytes as resizing and drawing in one pipeline.
 */
async function drawFrame(
  sharp: Sharp,
  image: Resized,
  frame: PlayerFrame,
  step: PlayerStep,
  height: number,
): Promise<Buffer | null> {
  const svg = overlaySvg(frame.width, frame.height, step.marks, {
    width: image.width,
    height: image.height,
    captions: true,
    title: step.title,
    failing: step.failing,
    minFontPx: MIN_FONT_PX,
  });
  const { width } = image;
  try {
    // The SVG is the resized image's size, drawn at the top-left; the canvas below it is background.
    const base =
      'data' in image
        ? sharp(image.data, { raw: { width, height: image.height, channels: image.channels } })
        : resized(sharp, image.source, width, image.height);
    return await base
      .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
      .extend({ top: 0, bottom: height - image.height, left: 0, right: 0, background: BACKGROUND })
      .removeAlpha()
      .raw()
      .toBuffer();
  } catch {
    return null;
  }
}

/** The bytes a frame is drawn from: its kept 320 px thumbnail (small GIFs), else the image file. */
async function sourceOf(
  sessionDir: string,
  frame: PlayerModel['frames'][number],
  fromThumbs: boolean,
): Promise<Buffer | null> {
  if (fromThumbs && frame.sha256) {
    const kept = await readKeptThumbnail(sessionDir, frame.sha256, THUMB_WIDTH);
    if (kept) return kept.data;
  }
  const file = path.join(sessionDir, frame.key);
  try {
    const stat = await fs.promises.lstat(file);
    if (!stat.isFile()) return null;
    return await fs.promises.readFile(file);
  } catch {
    return null;
  }
}
