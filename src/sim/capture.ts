/** The capture tool as the server runs it (CaptureCommand.cs, CaptureContent.cs): window or region, downscale, file, path-only. */
import { writeFile } from 'node:fs/promises';
import type { Warning } from '../contract/types.js';
import { type SimWindow, windowInfo } from './desktop.js';
import { blankCheck, encodePng, type Raster } from './raster.js';
import type { ToolContext, ToolSuccess } from './tool-kit.js';
import {
  badArguments,
  hasArea,
  hasTarget,
  int,
  num,
  regionArg,
  resolveTarget,
  roundHalfEven,
  str,
  ToolFailure,
  target,
} from './tool-kit.js';

/** Per side and in all, the biggest region the server captures (ScreenCapture.cs, #158). */
export const MAX_REGION_DIMENSION = 16_384;
export const MAX_REGION_PIXELS = 64_000_000;

/** A captured image: its pixels (after any downscale), its PNG, and the window it shows. */
export interface Frame {
  raster: Raster;
  png: Buffer;
  window?: SimWindow;
}

/** The server's region-size check: null when acceptable, else the region-too-large detail. */
export function regionSizeError(width: number, height: number): string | null {
  if (width <= 0 || height <= 0) return 'Region has no area to capture.';
  if (width > MAX_REGION_DIMENSION || height > MAX_REGION_DIMENSION)
    return `Region ${width}x${height} exceeds the capture limit of ${MAX_REGION_DIMENSION} px per side. Request a smaller region.`;
  if (width * height > MAX_REGION_PIXELS)
    return `Region ${width}x${height} (${width * height} px) exceeds the capture limit of ${MAX_REGION_PIXELS} px total. Request a smaller region.`;
  return null;
}

/** The window payload in the server's key order: handle, width, height, encoding, bytes, base64, window, blankCheck. */
export function windowCaptureData(frame: Frame & { window: SimWindow }): Record<string, unknown> {
  return {
    handle: frame.window.handle,
    width: frame.raster.width,
    height: frame.raster.height,
    encoding: 'png',
    bytes: frame.png.length,
    base64: frame.png.toString('base64'),
    window: windowInfo(frame.window),
    blankCheck: blankCheck(frame.raster),
  };
}

/** The region payload in the server's key order: encoding, width, height, bytes, base64, blankCheck. */
function regionCaptureData(frame: Frame): Record<string, unknown> {
  return {
    encoding: 'png',
    width: frame.raster.width,
    height: frame.raster.height,
    bytes: frame.png.length,
    base64: frame.png.toString('base64'),
    blankCheck: blankCheck(frame.raster),
  };
}

/**
 * The capture arguments the server refuses as bad-arguments before running (CaptureContent.ValidateArgs):
 * a present `maxWidth` that is not a positive integer, a present `scale` outside (0, 1]. Null counts as present.
 */
export function captureArgsError(args: Record<string, unknown>): string | null {
  if ('maxWidth' in args) {
    const v = int(args, 'maxWidth');
    if (v === undefined || v <= 0) return 'capture maxWidth must be a positive integer when provided.';
  }
  if ('scale' in args) {
    const v = num(args, 'scale');
    if (v === undefined || v <= 0 || v > 1)
      return 'capture scale must be a number in the range (0, 1] when provided.';
  }
  return null;
}

/** The output width the server picks for maxWidth/scale (never upscaled; .NET rounding). */
export function downscaledWidth(width: number, maxWidth: number, scale: number): number {
  let w = width;
  if (maxWidth > 0) w = Math.min(w, maxWidth);
  if (scale > 0) w = Math.min(w, Math.max(1, roundHalfEven(width * scale)));
  return w;
}

/** Resample a raster to `width` keeping its aspect (the server's HighQualityBicubic; here sharp's cubic). */
export async function downscale(r: Raster, width: number): Promise<Raster> {
  if (width >= r.width) return r;
  const height = Math.max(1, roundHalfEven(r.height * (width / r.width)));
  const { default: sharp } = await import('sharp');
  const data = await sharp(r.data, { raw: { width: r.width, height: r.height, channels: 3 } })
    .resize(width, height, { fit: 'fill', kernel: 'cubic' })
    .raw()
    .toBuffer();
  return { width, height, data };
}

/** True when capture keeps inline bytes and an image block (CaptureContent.WantsInlineImage). */
export function wantsInlineImage(args: Record<string, unknown>): boolean {
  return args.pathOnly !== true && args.returnImage !== false;
}

/** Write the PNG to `file` when asked: `file` on success, `fileError` (the OS message) when the write failed. */
async function writeFileIfRequested(
  args: Record<string, unknown>,
  png: Buffer,
  data: Record<string, unknown>,
) {
  const file = str(args, 'file');
  if (!file) return;
  try {
    await writeFile(file, png);
    data.file = file;
  } catch (e) {
    data.fileError = (e as Error).message;
  }
}

/**
 * Path-only shaping (CaptureContent.ApplyPathOnlyMode): unless the caller wants the image inline, the bytes
 * go to a real file in the session's artifact dir, `artifact` names it (absolute), and `base64` is removed.
 * Applied to failures' data too, so a blank window's partialResult carries a path, not bytes.
 */
async function applyPathOnlyMode(ctx: ToolContext, data: Record<string, unknown>): Promise<void> {
  if (wantsInlineImage(ctx.args)) return;
  const base64 = data.base64;
  if (typeof base64 !== 'string' || base64.length === 0) return;
  try {
    data.artifact = await ctx.sessions.writePathOnlyArtifact(
      ctx.session,
      Buffer.from(base64, 'base64'),
      'png',
    );
  } catch {
    data.artifactError = 'Could not write capture bytes to the session artifact directory.';
  }
  delete data.base64;
}

/** Render what a capture sees, downscaled as asked. */
async function grab(ctx: ToolContext, raster: Raster): Promise<{ raster: Raster; png: Buffer }> {
  const width = downscaledWidth(raster.width, int(ctx.args, 'maxWidth') ?? 0, num(ctx.args, 'scale') ?? 0);
  const scaled = await downscale(raster, width);
  return { raster: scaled, png: await encodePng(scaled) };
}

/** The capture tool. */
export async function runCapture(ctx: ToolContext): Promise<ToolSuccess> {
  const { args, desktop } = ctx;
  const problem = captureArgsError(args);
  if (problem) throw badArguments(problem);
  const t = target(args);
  const region = regionArg(args);
  // A region counts only without a window selector; a target plus a region is a window capture.
  const isRegion = hasArea(region) && !hasTarget(t);
  const warnings: Warning[] = [];
  let data: Record<string, unknown>;
  let failure: ToolFailure | undefined;
  if (isRegion) {
    const sizeError = regionSizeError(region.width, region.height);
    if (sizeError) throw new ToolFailure('region-too-large', 'invalid-argument', sizeError);
    // Pixels off every monitor come back black, as CopyFromScreen returns them.
    const frame = await grab(ctx, desktop.renderRegion(region));
    data = regionCaptureData(frame);
    await writeFileIfRequested(args, frame.png, data);
    if ((data.blankCheck as { blank: boolean }).blank)
      warnings.push({
        code: 'capture-blank',
        detail: 'Captured region is blank (a flat fill); it may be off-screen or genuinely empty.',
      });
  } else {
    const window = resolveTarget(desktop, t);
    const frame = { ...(await grab(ctx, desktop.renderWindow(window))), window };
    data = windowCaptureData(frame);
    await writeFileIfRequested(args, frame.png, data);
    const check = data.blankCheck as { blank: boolean; dominantIsDark: boolean };
    // PrintWindow refused: MCEC blits the screen instead and warns (CaptureCommand.cs).
    if (ctx.printWindowRefused)
      warnings.push({
        code: 'capture-fallback',
        detail:
          'PrintWindow was refused; used an on-screen blit, which returns black for composited/occluded surfaces and cannot see windows behind others.',
      });
    if (check.blank)
      failure = new ToolFailure(
        check.dominantIsDark ? 'frame-all-black' : 'frame-uniform',
        'capture-blank',
        ctx.printWindowRefused
          ? 'Captured frame is blank; PrintWindow was refused and the on-screen-blit fallback returned a flat image (composited/occluded/minimized window or a locked session).'
          : 'Captured frame is blank (a flat fill); the window may be minimized, cloaked, or rendering off-screen.',
        data,
        warnings,
      );
  }
  await applyPathOnlyMode(ctx, data);
  if (failure) throw failure;
  const image = wantsInlineImage(args) && typeof data.base64 === 'string' ? data.base64 : undefined;
  return image ? { result: data, warnings, image } : { result: data, warnings };
}
