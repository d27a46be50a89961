/**
 * Where a capture's masks fall: the secrets and rules that apply to what the image shows, placed in image
 * pixels. Fail-closed: a region that cannot be placed with confidence (the window moved or was resized since
 * the element was seen, the element is partly outside, the image's scale is unclear, its place on screen is
 * unknown) grows, up to the whole image, and says why in `widened`.
 */
import {
  elementMatches,
  type KnownElement,
  type KnownWindow,
  type ScreenKnowledge,
  type SecretPlace,
  sameRect,
  windowMatches,
} from './knowledge.js';
import { ruleName } from './rules.js';
import type { MaskEntry, MaskRule, Rect } from './types.js';

/** What an image shows: a screen rectangle, and for a window capture the window (only its pixels). */
export interface ImageFrame {
  screen: Rect;
  window?: { handle: number; title: string; className: string; processName: string };
}

/** More regions than this in one image: the whole image is masked instead. */
export const MAX_MASKS_PER_IMAGE = 64;

/** A region before it is mapped into the image: screen pixels, or the whole image. */
interface Candidate {
  screen: Rect | 'whole';
  reason: string;
  rule: string;
  target?: string;
  widened?: string;
}

const REASONS: Record<SecretPlace['kind'], { reason: string; rule: string }> = {
  typed: { reason: 'typed secret', rule: 'typed-text' },
  pasted: { reason: 'pasted secret', rule: 'clipboard-paste' },
  field: { reason: 'secret field', rule: 'secret-field' },
};

function clip(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function describeElement(e: KnownElement, windowTitle: string | undefined): string {
  const id = e.automationId !== undefined ? ` (automationid ${clip(e.automationId, 40)})` : '';
  const name = e.name !== undefined ? ` '${clip(e.name, 60)}'` : '';
  return `${e.controlType}${name}${id}${windowTitle !== undefined ? ` in '${clip(windowTitle, 60)}'` : ''}`;
}

function describeWindow(w: { title: string; handle: number } | undefined, fallback = 'its window'): string {
  return w ? `window '${clip(w.title, 60)}'` : fallback;
}

function contains(outer: Rect, inner: Rect): boolean {
  return (
    inner.x >= outer.x &&
    inner.y >= outer.y &&
    inner.x + inner.width <= outer.x + outer.width &&
    inner.y + inner.height <= outer.y + outer.height
  );
}

function intersects(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

/** Why an element's last known place does not hold in a window seen at `now` (undefined: it holds). */
function drift(e: KnownElement, now: Rect): string | undefined {
  const was = e.windowRect;
  if (sameRect(was, now)) return undefined;
  const parts: string[] = [];
  if (was.x !== now.x || was.y !== now.y) parts.push(`moved from ${was.x},${was.y} to ${now.x},${now.y}`);
  if (was.width !== now.width || was.height !== now.height)
    parts.push(`resized from ${was.width}x${was.height} to ${now.width}x${now.height}`);
  return `the window ${parts.join(' and ')} since the element was seen (call #${e.seq}): widened to the window`;
}

/** An element in a window capture of `frame`: its rect, or the whole window when it cannot be trusted. */
function placeInWindow(e: KnownElement, frame: ImageFrame, base: Omit<Candidate, 'screen'>): Candidate {
  const moved = drift(e, frame.screen);
  if (moved) return { ...base, screen: 'whole', widened: moved };
  if (!contains(frame.screen, e.rect))
    return {
      ...base,
      screen: 'whole',
      widened: 'the element is partly outside its window: widened to the window',
    };
  return { ...base, screen: e.rect };
}

/** An element in a region capture: its rect, plus its window's latest rect when the window moved since. */
function placeOnScreen(
  e: KnownElement,
  latest: KnownWindow | undefined,
  base: Omit<Candidate, 'screen'>,
): Candidate[] {
  const moved = latest ? drift(e, latest.rect) : undefined;
  if (!moved || !latest) return [{ ...base, screen: e.rect }];
  return [
    { ...base, screen: e.rect, widened: moved },
    { ...base, screen: latest.rect, widened: moved },
  ];
}

function secretCandidates(k: ScreenKnowledge, frame: ImageFrame): Candidate[] {
  const out: Candidate[] = [];
  const w = frame.window;
  for (const s of k.secretPlaces()) {
    const kind = REASONS[s.kind];
    if (s.unplaced) {
      out.push({
        ...kind,
        screen: 'whole',
        widened: 'typed while no known control had focus: it may be anywhere',
      });
      continue;
    }
    const title = s.handle !== undefined ? k.window(s.handle)?.title : undefined;
    const target = s.element
      ? describeElement(s.element, title)
      : s.handle !== undefined
        ? describeWindow(k.window(s.handle), `window ${s.handle}`)
        : `window ${JSON.stringify(s.selector)}`;
    const base = { ...kind, target };
    if (w) {
      const here =
        s.handle !== undefined ? s.handle === w.handle : s.selector ? windowMatches(s.selector, w) : false;
      if (!here) continue;
      if (s.element) out.push(placeInWindow(s.element, frame, base));
      else
        out.push({
          ...base,
          screen: 'whole',
          widened: 'the element it went to is not known: widened to the window',
        });
      continue;
    }
    const latest = s.handle !== undefined ? k.window(s.handle) : undefined;
    if (s.element) out.push(...placeOnScreen(s.element, latest, base));
    else if (latest)
      out.push({
        ...base,
        screen: latest.rect,
        widened: 'the element it went to is not known: widened to the window',
      });
    else out.push({ ...base, screen: 'whole', widened: "the window's place on screen is not known" });
  }
  return out;
}

function ruleCandidates(k: ScreenKnowledge, frame: ImageFrame, rules: readonly MaskRule[]): Candidate[] {
  const out: Candidate[] = [];
  const w = frame.window;
  rules.forEach((rule, i) => {
    const base = { reason: 'user rule', rule: ruleName(rule, i) };
    // The windows the rule's window part names, as this image shows them.
    const windows: Array<{ handle: number; title: string; rect: Rect }> = [];
    if (rule.window) {
      if (w) {
        if (windowMatches(rule.window, w))
          windows.push({ handle: w.handle, title: w.title, rect: frame.screen });
      } else for (const kw of k.knownWindows()) if (windowMatches(rule.window, kw)) windows.push(kw);
    }
    if (rule.element) {
      const sel = rule.element;
      const ruleWindow = rule.window;
      if (ruleWindow && windows.length === 0) return; // its window is not in this image
      const scope = w ? [w.handle] : ruleWindow ? windows.map((x) => x.handle) : [undefined];
      for (const handle of scope) {
        const found = k
          .elementsOf(handle)
          .filter(
            (e) => elementMatches(sel, e) && (!ruleWindow || windows.some((x) => x.handle === e.handle)),
          );
        for (const e of found) {
          const target = describeElement(e, k.window(e.handle)?.title);
          if (w) out.push(placeInWindow(e, frame, { ...base, target }));
          else out.push(...placeOnScreen(e, k.window(e.handle), { ...base, target }));
        }
        if (found.length === 0 && ruleWindow && handle !== undefined) {
          const win = windows.find((x) => x.handle === handle);
          if (!win) continue;
          out.push({
            ...base,
            target: describeWindow(win),
            screen: w ? 'whole' : win.rect,
            widened: 'the element has not been seen in this window: widened to the window',
          });
        }
      }
      return;
    }
    for (const win of windows) {
      const target = describeWindow(win);
      if (!rule.rect) {
        out.push({ ...base, target, screen: w ? 'whole' : win.rect });
        continue;
      }
      const r = rule.rect;
      out.push({
        ...base,
        target,
        screen: { x: win.rect.x + r.x, y: win.rect.y + r.y, width: r.width, height: r.height },
      });
    }
  });
  return out;
}

function joinWhy(a: string | undefined, b: string | undefined): string | undefined {
  return a && b ? `${a}; ${b}` : (a ?? b);
}

/**
 * The masks of an image of `image.width` x `image.height` showing `frame` (undefined: its place is unknown),
 * given what the session knows and the user's rules. Empty when nothing applies.
 */
export function planMasks(
  frame: ImageFrame | undefined,
  image: { width: number; height: number },
  knowledge: ScreenKnowledge,
  rules: readonly MaskRule[],
): MaskEntry[] {
  const whole: Rect = { x: 0, y: 0, width: image.width, height: image.height };
  if (image.width <= 0 || image.height <= 0) return [];
  if (!frame) {
    if (knowledge.empty && rules.length === 0) return [];
    return [
      {
        rect: whole,
        reason: knowledge.empty ? 'user rule' : 'secret on screen',
        rule: knowledge.empty ? 'user:*' : 'unplaced-image',
        widened: "the image's place on screen is not known, and the session has secrets or mask rules",
      },
    ];
  }
  const candidates = [...secretCandidates(knowledge, frame), ...ruleCandidates(knowledge, frame, rules)];
  if (candidates.length === 0) return [];
  const f = frame.screen;
  const sx = image.width / Math.max(1, f.width);
  const sy = image.height / Math.max(1, f.height);
  const aspectOff = Math.abs(sx - sy) * Math.max(f.width, f.height) > 2;
  const exact = sx === 1 && sy === 1;
  const pad = exact ? 0 : Math.ceil(2 * Math.max(sx, sy)) + 1;
  const scaleNote = exact
    ? undefined
    : `image scaled x${sx.toFixed(3).replace(/\.?0+$/, '')} from ${f.width}x${f.height}: rounded out by ${pad} px`;
  const out: MaskEntry[] = [];
  const seen = new Set<string>();
  for (const c of candidates) {
    let rect: Rect;
    let widened = c.widened;
    if (c.screen === 'whole' || aspectOff) {
      rect = whole;
      if (aspectOff && c.screen !== 'whole')
        widened = joinWhy(
          widened,
          `the image (${image.width}x${image.height}) does not have the frame's shape (${f.width}x${f.height}): widened to the image`,
        );
    } else {
      if (!intersects(c.screen, f)) continue;
      const x0 = Math.max(0, Math.floor((c.screen.x - f.x) * sx) - pad);
      const y0 = Math.max(0, Math.floor((c.screen.y - f.y) * sy) - pad);
      const x1 = Math.min(image.width, Math.ceil((c.screen.x + c.screen.width - f.x) * sx) + pad);
      const y1 = Math.min(image.height, Math.ceil((c.screen.y + c.screen.height - f.y) * sy) + pad);
      if (x1 <= x0 || y1 <= y0) continue;
      rect = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
      widened = joinWhy(widened, scaleNote);
    }
    const entry: MaskEntry = { rect, reason: c.reason, rule: c.rule };
    if (c.target !== undefined) entry.target = c.target;
    if (widened !== undefined) entry.widened = widened;
    const key = JSON.stringify([rect, c.reason, c.rule, c.target]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(entry);
  }
  if (out.length > MAX_MASKS_PER_IMAGE)
    return [
      {
        rect: whole,
        reason: out[0]!.reason,
        rule: out[0]!.rule,
        widened: `more than ${MAX_MASKS_PER_IMAGE} regions: the whole image`,
      },
    ];
  return out;
}
