/** The get-text tool as GetTextCommand runs it: a window, a region of it (window-relative), or a screen region. */

import { regionSizeError } from './capture.js';
import { type Rect, type SimWindow, windowInfo } from './desktop.js';
import { blankCheck, blit, createRaster, type Raster } from './raster.js';
import type { ToolContext, ToolSuccess } from './tool-kit.js';
import { hasArea, hasTarget, regionArg, resolveTarget, ToolFailure, target } from './tool-kit.js';

/** The pixels of `r` inside `rect` (relative to r's top-left). */
function crop(r: Raster, rect: Rect): Raster {
  const out = createRaster(rect.width, rect.height, [0, 0, 0]);
  blit(out, r, -rect.x, -rect.y);
  return out;
}

/** The OCR payload and outcome over an image and the text it shows (FinishOcr). */
function finish(
  raster: Raster,
  lines: string[],
  window: SimWindow | undefined,
  region: Record<string, unknown> | undefined,
): ToolSuccess {
  const check = blankCheck(raster);
  const data: Record<string, unknown> = { width: raster.width, height: raster.height, blankCheck: check };
  if (region) data.region = region;
  if (window) data.window = windowInfo(window);
  if (check.blank)
    throw new ToolFailure(
      check.dominantIsDark ? 'frame-all-black' : 'frame-uniform',
      'ocr-blank',
      'Captured region is blank (a flat fill); the window may be minimized, cloaked, or off-screen.',
      data,
    );
  const text = lines.join('\n');
  data.text = text;
  data.lineCount = lines.length;
  data.wordCount = lines.reduce((n, l) => n + l.split(/\s+/).filter(Boolean).length, 0);
  data.language = 'en-US';
  if (text.trim() === '')
    throw new ToolFailure(
      'ocr-no-text',
      'ocr-no-text',
      'OCR could not read any text in the region (low contrast, unsupported script, or too small). Try a larger region, foreground the window, or fall back to capture.',
      data,
    );
  return { result: data };
}

/** MCEC's warning when OCR ran on the on-screen blit (GetTextCommand.cs), on success and failure alike. */
const OCR_FALLBACK = {
  code: 'ocr-fallback',
  detail:
    'PrintWindow was refused; OCR ran on an on-screen blit, which may be wrong for composited/occluded surfaces.',
};

/** The get-text tool. */
export async function runGetText(ctx: ToolContext): Promise<ToolSuccess> {
  const hasWindow = hasTarget(target(ctx.args));
  if (!ctx.printWindowRefused || !hasWindow) return getText(ctx);
  try {
    const out = await getText(ctx);
    return { ...out, warnings: [...(out.warnings ?? []), OCR_FALLBACK] };
  } catch (e) {
    // Argument errors are found before any capture; what OCR decided carries the warning.
    if (!(e instanceof ToolFailure) || e.category === 'invalid-argument' || e.category === 'no-target')
      throw e;
    throw new ToolFailure(e.code, e.category, e.detail, e.partialResult, [...e.warnings, OCR_FALLBACK]);
  }
}

async function getText(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const t = target(args);
  const region = regionArg(args);
  const hasRegion = hasArea(region);
  const sizeError = hasRegion ? regionSizeError(region.width, region.height) : null;
  if (hasRegion && !hasTarget(t)) {
    if (sizeError) throw new ToolFailure('region-too-large', 'invalid-argument', sizeError);
    const lines = desktop.textIn(region);
    return finish(desktop.renderRegion(region), lines, undefined, { ...region, relativeTo: 'screen' });
  }
  const w = resolveTarget(desktop, t);
  const whole = desktop.renderWindow(w);
  if (!hasRegion)
    return finish(
      whole,
      desktop
        .textOf(w)
        .split('\n')
        .filter((l) => l.length > 0),
      w,
      undefined,
    );
  if (sizeError) throw new ToolFailure('region-out-of-bounds', 'invalid-argument', sizeError);
  if (
    region.x < 0 ||
    region.y < 0 ||
    region.x + region.width > whole.width ||
    region.y + region.height > whole.height
  )
    throw new ToolFailure(
      'region-out-of-bounds',
      'invalid-argument',
      `Region (${region.x},${region.y}) ${region.width}x${region.height} is outside the ${whole.width}x${whole.height} window capture. Re-query for fresh bounds or shrink the region.`,
    );
  const onScreen = { x: w.x + region.x, y: w.y + region.y, width: region.width, height: region.height };
  const lines = w.blankCapture || w.minimized ? [] : desktop.textIn(onScreen, w);
  return finish(crop(whole, region), lines, w, { ...region, relativeTo: 'window' });
}
