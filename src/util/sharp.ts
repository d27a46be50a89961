/** sharp, the image library: imported on first use only (it costs ~50 MB and ~100 ms), one way for every room. */

export type Sharp = typeof import('sharp')['default'];

let sharpModule: Promise<Sharp> | undefined;

/**
 * sharp, with libvips' operation cache off: each image is decoded once, so the cache (up to 50 MB and 20
 * open files by default) would only hold dead pixels, and on Windows its open files could not be deleted
 * (a long-running `mcec-bundle mcp` would keep a pruned session's images locked).
 */
export function loadSharp(): Promise<Sharp> {
  sharpModule ??= import('sharp').then((m) => {
    m.default.cache(false);
    return m.default;
  });
  return sharpModule;
}
