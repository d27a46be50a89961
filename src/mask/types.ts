/** The mask room's shapes: rectangles, the masks a capture gets, and the user's rules. */
import type { MaskedRegion } from '../contract/types.js';

/** A rectangle: screen pixels, window-relative pixels or image pixels, as each use says. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One region painted over in a stored image (listed in its capture-summary as `masked`): `rect` in image
 * pixels; `reason` in words (typed secret, pasted secret, secret field, user rule); `rule` which rule
 * (typed-text, clipboard-paste, secret-field, user:<label>); `target` what it covers; `widened` why more. */
export type MaskEntry = MaskedRegion;

/** A window as MCEC's selectors name it (title substring, process, class, handle). */
export interface WindowSelector {
  /** Title substring, case-insensitive (MCEC's `window`). */
  title?: string;
  /** Process name, case-insensitive, `.exe` optional. */
  process?: string;
  className?: string;
  handle?: number;
}

/** An element as MCEC's selectors name it: `by` (name, automationid, classname) and `value`. */
export interface ElementSelector {
  by?: 'name' | 'automationid' | 'classname';
  value: string;
}

/**
 * A user's mask rule. `window` alone: the whole window. With `element`: that element wherever the recorder
 * has seen it (in that window only, when `window` is given; there an unseen element masks the whole window).
 * With `rect`: a rectangle relative to the window's top-left, in the window's pixels. `element` without
 * `window` applies in every window.
 */
export interface MaskRule {
  window?: WindowSelector;
  element?: ElementSelector;
  rect?: Rect;
  /** Shown in the capture-summary and report.html (`user:<label>`); default the rule's index. */
  label?: string;
}

/** Where masks are painted. */
export type MaskMode = 'before-write' | 'on-export';

/** The recorder's and the bundle's masking options (`createRecorder({ mask })`). */
export interface MaskOptions {
  /** Turn every mask off (default true). */
  enabled?: boolean;
  /** Mask what was typed, set (invoke setvalue) or pasted into an element (default true). */
  typedText?: boolean;
  /** Mask Edit elements whose name or automation id is a secret key (default true). */
  secretFields?: boolean;
  /** The user's rules. */
  rules?: MaskRule[];
  /**
   * `before-write` (default): images are masked before their file is written; nothing unmasked reaches the
   * disk. `on-export`: the recorder keeps the originals in the session dir and lists their masks; bundles
   * (and other exports) paint them.
   */
  mode?: MaskMode;
}
