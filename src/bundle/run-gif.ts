/**
 * run.gif: the player's steps as an animated GIF for an issue tracker, the same marks burned in (the step's
 * call as a title, its captions at the bottom, the failing step framed in red). Bounded: at most 60 frames
 * (those around the failing call first), 800 px wide, 5 MB; a session with fewer than two images gets none.
 * Frames are small when there are many (a pixel budget), and then made from the 320 px thumbnails the
 * recorder kept, so a big session costs no PNG decode. sharp is imported only here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadSharp, readKeptThumbnail } from '../artifacts/thumbnail.js';
import type { PlayerModel, PlayerStep } from '../report/player/model.js';
import { overlaySvg } from '../report/player/overlay-svg.js';

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
}

/**
 * Pixels of all frames together at most: memory (4 bytes each while encoding) and time (the GIF encoder
 * quantizes every frame) grow with it; 60 frames come out about 260 px wide, 8 frames 800.
 */
const PIXEL_BUDGET = 3_000_000;
const MIN_WIDTH = 200;
/** Below this width the frames come from the kept 320 px thumbnails. */
const THUMB_WIDTH = 320;
const MIN_WIDTH_FROM_IMAGES = 400;
/** Labels at least this high in the GIF's pixels. */
const MIN_FONT_PX = 10;
const BACKGROUND = { r: 31, g: 35, b: 40, alpha: 1 };

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

/** How long each frame stays: the real gap to the next step, between 0.6 and 2.5 s; the failure 3 s. */
function delays(steps: readonly PlayerStep[]): number[] {
  return steps.map((s, i) => {
    if (s.failing || i === steps.length - 1) return 3000;
    const gap = steps[i + 1]!.at - s.at;
    return Math.round(Math.max(600, Math.min(2500, gap)));
  });
}

/**
 * Write run.gif of `model` into `file`, or return null when the session has fewer than two images (or none
 * of them could be read). The images are read from `sessionDir`.
 */
export async function writeRunGif(
  sessionDir: string,
  model: PlayerModel,
  file: string,
  limits: RunGifLimits = RUN_GIF_LIMITS,
): Promise<RunGif | null> {
  const images = model.frames.filter((f) => f.kind === 'image' && f.width > 0 && f.height > 0);
  if (images.length < 2) return null;
  const drawable = model.steps.filter((s) => {
    const f = model.frames[s.frame]!;
    return f.kind === 'image' && f.width > 0 && f.height > 0;
  });
  let steps = chooseSteps(drawable, limits.maxFrames);
  let colours = 128;
  for (let round = 0; round < 4; round++) {
    const made = await encode(sessionDir, model, steps, limits, colours);
    if (!made) return null;
    if (made.data.length <= limits.maxBytes || steps.length <= 2) {
      await fs.promises.writeFile(file, made.data);
      return { file, bytes: made.data.length, frames: steps.length, width: made.width, height: made.height };
    }
    // Too big: fewer colours first, then half the frames (around the failure).
    if (colours > 32) colours /= 2;
    else steps = chooseSteps(steps, Math.max(2, Math.floor(steps.length / 2)));
  }
  return null;
}

/** The GIF's bytes, or null when no frame could be read. */
async function encode(
  sessionDir: string,
  model: PlayerModel,
  steps: readonly PlayerStep[],
  limits: RunGifLimits,
  colours: number,
): Promise<{ data: Buffer; width: number; height: number } | null> {
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
  const page = width * height * 4;
  const pages = Buffer.alloc(page * steps.length);
  const shown: number[] = [];
  // One frame at a time: a decoded image is let go before the next is read.
  for (const [i, step] of steps.entries()) {
    const frame = frames[i]!;
    const source = await sourceOf(sessionDir, frame, fromThumbs);
    if (!source) continue;
    const fh = Math.min(height, Math.max(1, Math.round((width * frame.height) / frame.width)));
    const svg = overlaySvg(frame.width, frame.height, step.marks, {
      width,
      height: fh,
      captions: true,
      title: step.title,
      failing: step.failing,
      minFontPx: MIN_FONT_PX,
    });
    try {
      const raw = await sharp(source, { limitInputPixels: 100_000_000 })
        .resize(width, fh, { fit: 'fill' })
        .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
        .extend({ top: 0, bottom: height - fh, left: 0, right: 0, background: BACKGROUND })
        .ensureAlpha()
        .raw()
        .toBuffer();
      // The SVG is the resized image's size, drawn at the top-left; the canvas below it is background.
      raw.copy(pages, shown.length * page, 0, page);
      shown.push(i);
    } catch {
      // an unreadable image: the GIF goes on without it
    }
  }
  if (shown.length < 2) return null;
  const wait = delays(shown.map((i) => steps[i]!));
  const data = await sharp(pages.subarray(0, page * shown.length), {
    raw: { width, height: height * shown.length, channels: 4, pageHeight: height },
  })
    .gif({ loop: 0, delay: wait, colours, effort: 4, dither: 0, keepDuplicateFrames: true })
    .toBuffer();
  return { data, width, height };
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
