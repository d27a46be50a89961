/**
 * The player's data for report.html: frames (each pointing at the thumbnail a timeline row already embeds, so
 * no image is in the page twice) and steps (a call on a frame, its overlay SVG and captions), as JSON with
 * no `<`, `>` or `&` in it, so it sits in the page as text without escaping.
 */
import type { PlayerModel, PlayerStep } from './model.js';
import { overlaySvg } from './overlay-svg.js';

/** The thumbnails placed in the rows: by call seq, each with its image's key. */
export type ThumbsBySeq = ReadonlyMap<number, ReadonlyArray<{ key: string; href: string }>>;

/** What the template gets. */
export interface PlayerView {
  json: string;
  frameCount: number;
  stepCount: number;
  /** Steps left out (by the model's cap or this page's share of bytes). */
  omitted: number;
}

/** A share of the page the player's data may take at most (the rows need the rest). */
const PAGE_SHARE = 0.08;

/**
 * The view of `model`, or null when there is nothing to play (fewer than two steps). `notes` (by image key)
 * is what the stage shows instead of an image the page is read without (a bundle's: why it is not there).
 */
export function playerView(
  model: PlayerModel,
  thumbsBySeq: ThumbsBySeq,
  pageMaxBytes: number,
  notes: ReadonlyMap<string, string> = new Map(),
): PlayerView | null {
  if (model.steps.length < 2) return null;
  const frames = model.frames.map((f) => {
    const thumbs = thumbsBySeq.get(f.seq) ?? [];
    const i = thumbs.findIndex((t) => t.key === f.key);
    const note = notes.get(f.key);
    return {
      ...(note === undefined ? {} : { note }),
      row: f.seq,
      i,
      w: f.width,
      h: f.height,
      kind: f.kind,
      win: f.window ?? '',
      name: f.key.split('/').pop() ?? f.key,
      href: i >= 0 ? thumbs[i]!.href : '',
    };
  });
  let steps: readonly PlayerStep[] = model.steps;
  let omitted = model.stepsOmitted;
  const budget = Math.max(20_000, Math.floor(pageMaxBytes * PAGE_SHARE));
  for (;;) {
    const json = safeJson({ f: frames, s: steps.map((s) => stepData(s, model)) });
    if (Buffer.byteLength(json, 'utf8') <= budget || steps.length <= 2) {
      return { json, frameCount: new Set(steps.map((s) => s.frame)).size, stepCount: steps.length, omitted };
    }
    // Keep the half nearest the failing call (or the end).
    const failing = steps.findIndex((s) => s.failing);
    const keep = Math.ceil(steps.length / 2);
    const centre = failing === -1 ? steps.length - 1 : failing;
    const from = Math.max(0, Math.min(centre - Math.floor(keep * 0.75), steps.length - keep));
    omitted += steps.length - keep;
    steps = steps.slice(from, from + keep);
  }
}

function stepData(s: PlayerStep, model: PlayerModel) {
  const frame = model.frames[s.frame]!;
  const drawn = s.marks.filter((m) => m.kind !== 'caption');
  return {
    q: s.seq,
    f: s.frame,
    t: s.at,
    x: s.failing ? 1 : 0,
    st: s.status,
    title: s.title,
    svg:
      drawn.length > 0 && frame.width > 0 && frame.height > 0
        ? overlaySvg(frame.width, frame.height, drawn)
        : '',
    caps: s.marks.flatMap((m) => (m.kind === 'caption' ? [{ t: m.text, k: m.tone ?? '' }] : [])),
  };
}

/** JSON whose `<`, `>` and `&` are written as \u escapes: it cannot end the element it is in. */
function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
