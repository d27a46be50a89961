/**
 * A step's marks as one SVG laid over its frame: the same drawing in report.html's player (over the image,
 * which is not altered) and burned into run.gif. Its viewBox is the frame's own pixels; sizes of strokes and
 * text follow the frame's width so a label stays readable when the image is shown small. Pure: no I/O.
 */
import type { Mark } from './marks.js';

/** Options of overlaySvg. */
export interface OverlayOptions {
  /** Rendered size (default the frame's): run.gif draws at its own width. */
  width?: number;
  height?: number;
  /** Draw the captions (typed text, keys, notes) as lines at the bottom (run.gif); the page lists them as text. */
  captions?: boolean;
  /** A title line at the top (run.gif: the step's call). */
  title?: string;
  /** A red frame around the whole image: the failing call's step. */
  failing?: boolean;
  /** Text at least this many pixels high once rendered at `width` (run.gif's small frames). */
  minFontPx?: number;
}

const COLORS = {
  point: '#0969da',
  found: '#1a7f37',
  ambiguous: '#bf8700',
  missing: '#cf222e',
  window: '#8250df',
  failed: '#cf222e',
  note: '#ffd33d',
  text: '#ffffff',
} as const;
/** Caption bars' fills beside COLORS, and the title bar of a step that did not fail. */
const CAPTION_NOTE = '#6e5800';
const NEUTRAL = '#24292f';

/**
 * Every colour the overlay draws, as #rrggbb: run.gif's palette holds each exactly, so a failing step's red
 * frame stays that red.
 */
export const OVERLAY_COLOURS: readonly string[] = Object.freeze([
  ...new Set<string>([...Object.values(COLORS), CAPTION_NOTE, NEUTRAL]),
]);

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const n = (v: number) => String(Math.round(v * 10) / 10);

/** The SVG of `marks` over a frame of `frameWidth` x `frameHeight` pixels. */
export function overlaySvg(
  frameWidth: number,
  frameHeight: number,
  marks: readonly Mark[],
  options: OverlayOptions = {},
): string {
  const w = Math.max(1, frameWidth);
  const h = Math.max(1, frameHeight);
  // One unit is 1/520 of the frame's width: labels of about 12 px on a 700 px stage, 9 px in a 520 px GIF.
  const shown = (options.width ?? w) / w;
  const u = Math.max(Math.max(w, h * 1.2) / 520, (options.minFontPx ?? 0) / 9 / shown);
  const font = 9 * u;
  const stroke = 1.6 * u;
  const parts: string[] = [];
  const labelAt = (x: number, y: number, text: string, color: string) => {
    const tw = Math.min(w, text.length * font * 0.56 + 4 * u);
    const lx = Math.max(0, Math.min(x, w - tw));
    const ly = y - font - 3 * u < 0 ? y + 2 * u : y - font - 3 * u;
    parts.push(
      `<rect x="${n(lx)}" y="${n(ly)}" width="${n(tw)}" height="${n(font + 3 * u)}" rx="${n(2 * u)}" fill="${color}" fill-opacity="0.9"/>`,
      `<text x="${n(lx + 2 * u)}" y="${n(ly + font)}" font-size="${n(font)}" fill="${COLORS.text}">${esc(text)}</text>`,
    );
  };
  for (const m of marks) {
    if (m.kind === 'box') {
      const color = COLORS[m.tone];
      const dash = m.elsewhere ? ` stroke-dasharray="${n(4 * u)} ${n(3 * u)}"` : '';
      parts.push(
        `<rect x="${n(m.x)}" y="${n(m.y)}" width="${n(m.width)}" height="${n(m.height)}" fill="${color}" fill-opacity="0.12" stroke="${color}" stroke-width="${n(stroke)}"${dash}/>`,
      );
      labelAt(m.x, m.y, m.label, color);
    } else if (m.kind === 'point') {
      const color = m.failed ? COLORS.failed : COLORS.point;
      const r = 6 * u;
      parts.push(
        `<circle class="pt" cx="${n(m.x)}" cy="${n(m.y)}" r="${n(r)}" fill="${color}" fill-opacity="0.25" stroke="${color}" stroke-width="${n(stroke)}"/>`,
        `<path d="M${n(m.x - r * 1.6)} ${n(m.y)}H${n(m.x + r * 1.6)}M${n(m.x)} ${n(m.y - r * 1.6)}V${n(m.y + r * 1.6)}" stroke="${color}" stroke-width="${n(stroke * 0.7)}"/>`,
      );
      labelAt(m.x + r, m.y - r, m.label, color);
    } else if (m.kind === 'arrow') {
      const color = m.failed ? COLORS.failed : COLORS.point;
      const angle = Math.atan2(m.y2 - m.y1, m.x2 - m.x1);
      const head = 8 * u;
      const wing = (a: number) => `${n(m.x2 - head * Math.cos(a))} ${n(m.y2 - head * Math.sin(a))}`;
      parts.push(
        `<circle cx="${n(m.x1)}" cy="${n(m.y1)}" r="${n(3 * u)}" fill="${color}"/>`,
        `<path d="M${n(m.x1)} ${n(m.y1)}L${n(m.x2)} ${n(m.y2)}" stroke="${color}" stroke-width="${n(stroke * 1.4)}"/>`,
        `<path d="M${n(m.x2)} ${n(m.y2)}L${wing(angle - 0.45)}L${wing(angle + 0.45)}Z" fill="${color}"/>`,
      );
      labelAt(m.x1, m.y1 - 4 * u, m.label, color);
    }
  }
  if (options.captions) {
    const lines = marks.filter((m) => m.kind === 'caption').slice(-4);
    const lh = font + 5 * u;
    lines.forEach((m, i) => {
      const y = h - (lines.length - i) * lh;
      const color = m.tone === 'failed' ? COLORS.failed : m.tone === 'note' ? CAPTION_NOTE : NEUTRAL;
      parts.push(
        `<rect x="0" y="${n(y)}" width="${n(w)}" height="${n(lh)}" fill="${color}" fill-opacity="0.85"/>`,
        `<text x="${n(4 * u)}" y="${n(y + font + u)}" font-size="${n(font)}" fill="${COLORS.text}">${esc(m.text)}</text>`,
      );
    });
  }
  if (options.title) {
    parts.push(
      `<rect x="0" y="0" width="${n(w)}" height="${n(font + 6 * u)}" fill="${options.failing ? COLORS.failed : NEUTRAL}" fill-opacity="0.85"/>`,
      `<text x="${n(4 * u)}" y="${n(font + 2 * u)}" font-size="${n(font)}" font-weight="bold" fill="${COLORS.text}">${esc(options.title)}</text>`,
    );
  }
  if (options.failing) {
    parts.push(
      `<rect x="${n(stroke)}" y="${n(stroke)}" width="${n(w - 2 * stroke)}" height="${n(h - 2 * stroke)}" fill="none" stroke="${COLORS.failed}" stroke-width="${n(stroke * 2)}"/>`,
    );
  }
  const size = `width="${n(options.width ?? w)}" height="${n(options.height ?? h)}"`;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${n(w)} ${n(h)}" ${size} font-family="DejaVu Sans,Arial,sans-serif">${parts.join('')}</svg>`;
}
