/** Capture thumbnails for report.html: resized with sharp, embedded as data: URIs, kept within a byte budget. */
import fs from 'node:fs';

/** One image the page would like a thumbnail of. */
export interface ThumbnailRequest {
  /** Stable key (the artifact path relative to the session dir). */
  key: string;
  /** Absolute path of the image file. */
  file: string;
  /** sha256 (hex) of the image's bytes, as its artifact row recorded it: names its stored thumbnails. */
  sha256?: string | null;
  /** Always kept when anything is (the failing call's suspect image, the last good observation's). */
  priority: boolean;
  /** Recency: higher is newer (the call's seq). */
  order: number;
}

/** A thumbnail ready to embed. */
export interface Thumbnail {
  key: string;
  /** `data:image/webp;base64,...` */
  src: string;
  width: number;
  height: number;
}

/** Which thumbnails the page gets and why some are missing. */
export interface ThumbnailPlan {
  thumbs: Map<string, Thumbnail>;
  /** Width the thumbnails were made at (the widest tried that fits), 0 when there were none. */
  width: number;
  /** Images left without a thumbnail (over `maxCount`, or to stay within the byte budget). */
  omitted: number;
  /** Of `omitted`, those left out by `maxCount` alone. */
  capped: number;
  /** Images whose file could not be read or decoded: key -> reason (short, no paths outside the session). */
  failed: Map<string, string>;
  /** Sum of the data: URI lengths (characters = bytes, they are ASCII). */
  bytes: number;
}

export interface ThumbnailOptions {
  /** Widths tried in order, widest first (default 320, 160, 80). */
  widths?: number[];
  /** Images decoded at once (default 2: each libvips worker costs memory, and the machine may have 2 cores). */
  concurrency?: number;
  /** Images sampled to estimate the size per width before making the rest (default 6). */
  sampleSize?: number;
  /** Most thumbnails besides the priority ones (default: no limit); decoding costs ~10 ms of CPU per capture. */
  maxCount?: number;
}

/** The widest thumbnail made by default (the width report.html promises, which `verifyBundle` checks). */
export const MAX_THUMBNAIL_WIDTH = 320;
const DEFAULT_WIDTHS = [MAX_THUMBNAIL_WIDTH, 160, 80];
/** A very tall capture is clipped to this height ratio so one thumbnail cannot dominate the page. */
export const MAX_ASPECT = 2;
/** Source images larger than this many pixels are refused rather than decoded (a hostile or corrupt file). */
const MAX_INPUT_PIXELS = 80_000_000;
const DATA_PREFIX = 'data:image/webp;base64,';

type Sharp = typeof import('sharp')['default'];

async function loadSharp(): Promise<Sharp> {
  const sharp = (await import('sharp')).default;
  // Each image is decoded once: libvips' operation cache (up to 50 MB by default) would only hold dead pixels.
  sharp.cache(false);
  return sharp;
}

async function encode(
  sharp: Sharp,
  input: Buffer,
  width: number,
): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS })
    .resize({ width, height: width * MAX_ASPECT, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 60, effort: 2 })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function toThumb(key: string, out: { data: Buffer; width: number; height: number }): Thumbnail {
  return { key, src: DATA_PREFIX + out.data.toString('base64'), width: out.width, height: out.height };
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return 'image file missing';
  if (code === 'EACCES' || code === 'EPERM') return 'image file not readable';
  if (code === 'ENOTFILE') return 'not a regular file';
  const message = err instanceof Error ? err.message : String(err);
  // sharp's messages are short and do not echo file contents; clip anyway.
  const first = message.split('\n', 1)[0] ?? '';
  return `not decodable: ${first.slice(0, 120)}`;
}

async function mapPool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return out;
}

/** The image's bytes: a regular file only (a symlink could point anywhere on the machine). */
async function readImage(file: string): Promise<Buffer> {
  const stat = await fs.promises.lstat(file);
  if (!stat.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
  return fs.promises.readFile(file);
}

/** Make thumbnails for `requests` within `budgetBytes`: narrower first, then fewer (priority, then newest). */
export async function planThumbnails(
  requests: ThumbnailRequest[],
  budgetBytes: number,
  options: ThumbnailOptions = {},
): Promise<ThumbnailPlan> {
  const widths = (options.widths ?? DEFAULT_WIDTHS).filter((w) => w > 0).sort((a, b) => b - a);
  const concurrency = Math.max(1, options.concurrency ?? 2);
  const sampleSize = Math.max(1, options.sampleSize ?? 6);
  const maxCount = Math.max(0, options.maxCount ?? Number.POSITIVE_INFINITY);
  const plan: ThumbnailPlan = {
    thumbs: new Map(),
    width: 0,
    omitted: 0,
    capped: 0,
    failed: new Map(),
    bytes: 0,
  };
  const unique = new Map<string, ThumbnailRequest>();
  for (const r of requests) {
    const seen = unique.get(r.key);
    if (!seen) unique.set(r.key, { ...r });
    else {
      seen.priority ||= r.priority;
      seen.order = Math.max(seen.order, r.order);
    }
  }
  // Priority first, then newest first: the order in which images keep their thumbnails.
  const all = [...unique.values()].sort((a, b) =>
    a.priority !== b.priority ? (a.priority ? -1 : 1) : b.order - a.order,
  );
  const priorityCount = all.filter((r) => r.priority).length;
  const ranked = all.slice(0, priorityCount + Math.min(maxCount, all.length - priorityCount));
  plan.capped = all.length - ranked.length;
  if (ranked.length === 0 || widths.length === 0) {
    plan.omitted = plan.capped;
    return plan;
  }
  const sharp = await loadSharp();

  // Sample the first few (the ones kept longest) to estimate the size per image; narrower only when needed.
  const samples = new Map<string, Map<number, Thumbnail & { data: Buffer }>>();
  await mapPool(ranked.slice(0, sampleSize), concurrency, async (req) => {
    try {
      const widest = await encode(sharp, await readImage(req.file), widths[0]!);
      samples.set(req.key, new Map([[widths[0]!, { ...toThumb(req.key, widest), data: widest.data }]]));
    } catch (err) {
      plan.failed.set(req.key, reasonOf(err));
    }
  });
  const candidates = ranked.filter((r) => !plan.failed.has(r.key));
  const average = async (w: number): Promise<number> => {
    let sum = 0;
    for (const [key, perWidth] of samples) {
      let t = perWidth.get(w);
      if (!t) {
        // From the widest sample (a small WebP), not from the source: cheap.
        const out = await encode(sharp, perWidth.get(widths[0]!)!.data, w);
        t = { ...toThumb(key, out), data: out.data };
        perWidth.set(w, t);
      }
      sum += t.src.length;
    }
    return samples.size === 0 ? 0 : sum / samples.size;
  };
  // The widest width at which every image is expected to fit; else the narrowest, and only as many as fit.
  let width = widths.at(-1)!;
  for (const w of widths) {
    // 10% headroom: the sample's average is only an estimate of the rest.
    if ((await average(w)) * candidates.length <= budgetBytes * 0.9) {
      width = w;
      break;
    }
  }
  const avg = await average(width);
  const expected = avg > 0 ? Math.floor((budgetBytes * 0.9) / avg) : candidates.length;
  const keepPriority = candidates.filter((r) => r.priority).length;
  const chosen = candidates.slice(0, Math.max(keepPriority, Math.min(candidates.length, expected)));

  const made = await mapPool(chosen, concurrency, async (req): Promise<Thumbnail | null> => {
    const sampled = samples.get(req.key)?.get(width);
    if (sampled) return { key: sampled.key, src: sampled.src, width: sampled.width, height: sampled.height };
    try {
      return toThumb(req.key, await encode(sharp, await readImage(req.file), width));
    } catch (err) {
      plan.failed.set(req.key, reasonOf(err));
      return null;
    }
  });
  // The estimate can be off: drop from the least important end until the real total fits.
  let total = 0;
  const kept: Thumbnail[] = [];
  made.forEach((thumb, i) => {
    if (!thumb) return;
    const isPriority = chosen[i]!.priority;
    if (!isPriority && total + thumb.src.length > budgetBytes) return;
    kept.push(thumb);
    total += thumb.src.length;
  });
  for (const t of kept) plan.thumbs.set(t.key, t);
  plan.width = kept.length > 0 ? width : 0;
  plan.bytes = total;
  // Images that failed while being made are reported as failed, not as omitted.
  const failedLate = chosen.filter((r) => plan.failed.has(r.key)).length;
  plan.omitted = plan.capped + Math.max(0, candidates.length - kept.length - failedLate);
  return plan;
}
