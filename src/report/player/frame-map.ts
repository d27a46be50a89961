/**
 * Screen pixels to image pixels, by MCEC's rules (mcec-wire.md §9): a window capture's image starts at the
 * window's top-left (GetWindowRect) and is scaled by `maxWidth`/`scale`; a region capture starts at the
 * region's top-left; element rectangles and click/drag/focus results are screen pixels. The scale is measured
 * (image size over the rectangle's size), so a downscale and any DPI scaling between the two are both
 * covered; when the two axes disagree, or the rectangle is unknown, the mapping is refused with a reason.
 * Pure: no I/O.
 */

/** A rectangle in pixels. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A point in pixels. */
export interface Point {
  x: number;
  y: number;
}

/** Where an image lies on the screen. */
export interface FrameGeometry {
  /** The screen rectangle the image shows (the window's rect, or the capture region); null when not known. */
  screen: Rect | null;
  /** The image's own size in pixels (after any downscale). */
  image: { width: number; height: number };
  /** Why `screen` is null (said in the overlay). */
  unknown?: string;
}

/** A mapping, or why none is drawn. */
export type Mapped<T> = ({ ok: true } & T) | { ok: false; reason: string };

/** Axes whose scales differ by more than this share are not one image of that rectangle. */
const SCALE_TOLERANCE = 0.03;
/** Windows parks a minimized window at -32000,-32000. */
const MINIMIZED_AT = -32000;

/** The image-per-screen-pixel scale of a frame, or why it cannot be trusted. */
export function frameScale(g: FrameGeometry): Mapped<{ sx: number; sy: number }> {
  const s = g.screen;
  if (!s) return { ok: false, reason: g.unknown ?? 'where this image lies on the screen is not recorded' };
  if (s.x <= MINIMIZED_AT && s.y <= MINIMIZED_AT) {
    return { ok: false, reason: 'the window was minimized when this image was taken' };
  }
  if (!(s.width > 0 && s.height > 0 && g.image.width > 0 && g.image.height > 0)) {
    return { ok: false, reason: 'this image or its window has no size' };
  }
  const sx = g.image.width / s.width;
  const sy = g.image.height / s.height;
  // Rounding of a downscaled side costs at most a pixel; more than that is not the same rectangle.
  const slack = SCALE_TOLERANCE + 1 / Math.min(g.image.width, g.image.height);
  if (Math.abs(sx / sy - 1) > slack) {
    return {
      ok: false,
      reason: `the image (${g.image.width}x${g.image.height}) is not its window's ${s.width}x${s.height} scaled evenly`,
    };
  }
  return { ok: true, sx, sy };
}

/** A screen point in image pixels; refused when the scale is uncertain or the point is outside the image. */
export function mapPoint(g: FrameGeometry, p: Point): Mapped<Point> {
  const scale = frameScale(g);
  if (!scale.ok) return scale;
  const s = g.screen!;
  const x = (p.x - s.x) * scale.sx;
  const y = (p.y - s.y) * scale.sy;
  if (x < 0 || y < 0 || x > g.image.width || y > g.image.height) {
    return { ok: false, reason: `screen point ${p.x},${p.y} is outside this image` };
  }
  return { ok: true, x, y };
}

/** A screen rectangle in image pixels, clipped to the image; refused when it does not touch the image. */
export function mapRect(g: FrameGeometry, r: Rect): Mapped<Rect> {
  const scale = frameScale(g);
  if (!scale.ok) return scale;
  const s = g.screen!;
  const x1 = Math.max(0, (r.x - s.x) * scale.sx);
  const y1 = Math.max(0, (r.y - s.y) * scale.sy);
  const x2 = Math.min(g.image.width, (r.x + r.width - s.x) * scale.sx);
  const y2 = Math.min(g.image.height, (r.y + r.height - s.y) * scale.sy);
  if (x2 <= x1 || y2 <= y1) {
    return { ok: false, reason: `screen rectangle ${rectText(r)} is outside this image` };
  }
  return { ok: true, x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
}

/** `x,y WxH`, as the overlay says a rectangle. */
export function rectText(r: Rect): string {
  return `${r.x},${r.y} ${r.width}x${r.height}`;
}

/** The same rectangle (a window that did not move or resize). */
export function sameRect(a: Rect, b: Rect): boolean {
  return a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;
}

/** `{x, y, width, height}` of numbers, else null. */
export function rectOf(value: unknown): Rect | null {
  if (!value || typeof value !== 'object') return null;
  // Read by name (no closure, no array): every result's window and element goes through here.
  const { x, y, width, height } = value as Record<string, unknown>;
  if (!isFiniteNumber(x) || !isFiniteNumber(y) || !isFiniteNumber(width) || !isFiniteNumber(height)) {
    return null;
  }
  return { x, y, width, height };
}

function isFiniteNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** `[x, y]` (as click/drag/focus results give points) or `{x, y}`, else null. */
export function pointOf(value: unknown): Point | null {
  if (Array.isArray(value) && value.length >= 2) {
    const [x, y] = value;
    if (typeof x === 'number' && typeof y === 'number' && Number.isFinite(x) && Number.isFinite(y))
      return { x, y };
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (typeof v.x === 'number' && typeof v.y === 'number' && Number.isFinite(v.x) && Number.isFinite(v.y)) {
    return { x: v.x, y: v.y };
  }
  return null;
}

/** The first MCEC version whose click/drag pixels with a window target are window-relative. */
const RELATIVE_PIXELS_SINCE: readonly [number, number, number] = [3, 0, 28];

/**
 * How a click's or drag's pixel endpoint given with a window target is read by this server: `relative`
 * since MCEC 3.0.28, `absolute` before, null when the version is not known (or not MCEC's numbering).
 */
export function targetPixelsAre(serverVersion: string | null | undefined): 'relative' | 'absolute' | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(serverVersion?.trim() ?? '');
  if (!m) return null;
  const v = [Number(m[1]), Number(m[2]), Number(m[3])];
  for (let i = 0; i < 3; i++) {
    if (v[i]! !== RELATIVE_PIXELS_SINCE[i])
      return v[i]! > RELATIVE_PIXELS_SINCE[i]! ? 'relative' : 'absolute';
  }
  return 'relative';
}

/** True when the arguments name a window (MCEC's target selectors: window, handle, process, className, foreground). */
export function hasWindowTarget(args: Record<string, unknown>): boolean {
  const text = (k: string) => typeof args[k] === 'string' && (args[k] as string) !== '';
  return (
    text('window') ||
    text('process') ||
    text('className') ||
    (typeof args.handle === 'number' && args.handle > 0) ||
    args.foreground === true
  );
}

/**
 * The screen point of a click/drag pixel endpoint from its arguments (the call's result gives it directly
 * when the call succeeded): window-relative with a target since MCEC 3.0.28, else absolute.
 */
export function endpointOnScreen(
  endpoint: Point,
  args: Record<string, unknown>,
  serverVersion: string | null | undefined,
  windowRect: Rect | null,
): Mapped<Point> {
  if (!hasWindowTarget(args)) return { ok: true, ...endpoint };
  const reading = targetPixelsAre(serverVersion);
  if (reading === 'absolute') return { ok: true, ...endpoint };
  if (reading === null) {
    return {
      ok: false,
      reason:
        "the server's version is not recorded: pixels given with a window target are window-relative since MCEC 3.0.28, absolute before",
    };
  }
  if (!windowRect) return { ok: false, reason: "the target window's position is not recorded" };
  return { ok: true, x: windowRect.x + endpoint.x, y: windowRect.y + endpoint.y };
}
