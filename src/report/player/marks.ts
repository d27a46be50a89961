/**
 * What the agent did, as marks on an image: a point with its button, a drag arrow, an element's box with its
 * selector and outcome, a caption for typed text and keys, and a note where a mark could not be placed.
 * Coordinates are image pixels of the frame they are drawn on. Pure: no I/O.
 */

/** How a box reads: found, ambiguous (one box per candidate), not found, a window, another window. */
export type BoxTone = 'found' | 'ambiguous' | 'missing' | 'window';

/** One thing drawn over a frame. */
export type Mark =
  | { kind: 'point'; x: number; y: number; label: string; failed?: boolean }
  | { kind: 'arrow'; x1: number; y1: number; x2: number; y2: number; label: string; failed?: boolean }
  | {
      kind: 'box';
      x: number;
      y: number;
      width: number;
      height: number;
      label: string;
      tone: BoxTone;
      /** In another window than the image shows: where it is on the screen, not something the image shows. */
      elsewhere?: boolean;
    }
  /** A line of text under the image: typed text, keys, an outcome, or why a mark is not drawn. */
  | { kind: 'caption'; text: string; tone?: 'note' | 'failed' };

/** Marks a step keeps at most (an ambiguous selector can match many elements). */
export const MAX_MARKS = 12;
/** Characters of a label drawn on the image at most, and of a caption (a line of text under it). */
export const MAX_LABEL_CHARS = 90;
export const MAX_CAPTION_CHARS = 240;

/** A label clipped to `max` characters on one line. */
export function label(text: string, max = MAX_LABEL_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
