// Screen-to-image mapping by MCEC's rules: window and region captures, downscales, DPI-scaled images, and the
// cases where the overlay must say it is unsure instead of drawing.
import { describe, expect, it } from 'vitest';
import {
  endpointOnScreen,
  type FrameGeometry,
  frameScale,
  mapPoint,
  mapRect,
  targetPixelsAre,
} from '../../src/report/player/frame-map.js';

const notepad = { x: 120, y: 80, width: 800, height: 600 };
const full: FrameGeometry = { screen: notepad, image: { width: 800, height: 600 } };

describe('mapPoint / mapRect', () => {
  it('maps a window capture from its top-left, one to one', () => {
    expect(mapPoint(full, { x: 520, y: 380 })).toEqual({ ok: true, x: 400, y: 300 });
    expect(mapRect(full, { x: 200, y: 140, width: 100, height: 40 })).toEqual({
      ok: true,
      x: 80,
      y: 60,
      width: 100,
      height: 40,
    });
  });

  it('follows a maxWidth/scale downscale (both axes by the same ratio)', () => {
    const half: FrameGeometry = { screen: notepad, image: { width: 400, height: 300 } };
    expect(frameScale(half)).toEqual({ ok: true, sx: 0.5, sy: 0.5 });
    expect(mapPoint(half, { x: 520, y: 380 })).toEqual({ ok: true, x: 200, y: 150 });
    // A rounded height (a 333 px wide copy of 800x600 is 250 high) is still the same picture.
    const odd: FrameGeometry = { screen: notepad, image: { width: 333, height: 250 } };
    expect(frameScale(odd).ok).toBe(true);
  });

  it('follows a DPI-scaled image of a window whose rect is in other pixels (125%)', () => {
    const dpi: FrameGeometry = { screen: notepad, image: { width: 1000, height: 750 } };
    expect(mapPoint(dpi, { x: 520, y: 380 })).toEqual({ ok: true, x: 500, y: 375 });
  });

  it('maps a region capture from the region, and a screen point on a second monitor', () => {
    const region: FrameGeometry = {
      screen: { x: 1920, y: 0, width: 1280, height: 1024 },
      image: { width: 640, height: 512 },
    };
    expect(mapPoint(region, { x: 2560, y: 512 })).toEqual({ ok: true, x: 320, y: 256 });
  });

  it('refuses, with a reason, what it cannot map truthfully', () => {
    expect(mapPoint({ screen: null, image: { width: 10, height: 10 } }, { x: 1, y: 1 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not recorded'),
    });
    const stretched: FrameGeometry = { screen: notepad, image: { width: 800, height: 450 } };
    expect(mapPoint(stretched, { x: 520, y: 380 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not its window'),
    });
    const minimized: FrameGeometry = {
      screen: { x: -32000, y: -32000, width: 160, height: 28 },
      image: { width: 160, height: 28 },
    };
    expect(mapPoint(minimized, { x: -31990, y: -31990 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('minimized'),
    });
    expect(mapPoint(full, { x: 10, y: 10 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('outside'),
    });
    expect(mapRect(full, { x: 2000, y: 10, width: 5, height: 5 })).toMatchObject({ ok: false });
  });

  it('clips a rectangle that sticks out of the image', () => {
    expect(mapRect(full, { x: 100, y: 60, width: 40, height: 40 })).toEqual({
      ok: true,
      x: 0,
      y: 0,
      width: 20,
      height: 20,
    });
  });
});

describe('click and drag pixels with a window target (MCEC 3.0.28)', () => {
  it('reads the version', () => {
    expect(targetPixelsAre('3.0.28')).toBe('relative');
    expect(targetPixelsAre('3.0.29.0')).toBe('relative');
    expect(targetPixelsAre('3.1.0')).toBe('relative');
    expect(targetPixelsAre('3.0.27')).toBe('absolute');
    expect(targetPixelsAre('2.9.99')).toBe('absolute');
    expect(targetPixelsAre(null)).toBeNull();
    expect(targetPixelsAre('dev')).toBeNull();
  });

  it('adds the window origin since 3.0.28, not before, and says so when the version is unknown', () => {
    const args = { window: 'Notepad', at: { x: 10, y: 20 } };
    expect(endpointOnScreen({ x: 10, y: 20 }, args, '3.0.29', notepad)).toEqual({ ok: true, x: 130, y: 100 });
    expect(endpointOnScreen({ x: 10, y: 20 }, args, '3.0.27', notepad)).toEqual({ ok: true, x: 10, y: 20 });
    expect(endpointOnScreen({ x: 10, y: 20 }, args, null, notepad)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('3.0.28'),
    });
    expect(endpointOnScreen({ x: 10, y: 20 }, args, '3.0.29', null)).toMatchObject({ ok: false });
    // Without a target, pixels are absolute on every version.
    expect(endpointOnScreen({ x: 10, y: 20 }, { at: { x: 10, y: 20 } }, null, null)).toEqual({
      ok: true,
      x: 10,
      y: 20,
    });
  });
});
