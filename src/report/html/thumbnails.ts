/**
 * Capture thumbnails for report.html, embedded as data: URIs and kept within a byte budget. Each is read from
 * where the recorder kept it (`thumbnails/`, see src/artifacts/README.md), or made from the image with
 * sharp, which is imported only then: a session whose thumbnails were all made at record time needs no decoder.
 */
import fs from 'node:fs';
import {
  encodeThumbnail,
  keepThumbnail,
  MAX_ASPECT,
  MAX_THUMBNAIL_WIDTH,
  readKeptThumbnail,
  THUMBNAIL_WIDTHS,
  type ThumbnailImage,
} from '../../artifacts/thumbnail.js';
import { loadSharp } from '../../util/sharp.js';

export { MAX_ASPECT, MAX_THUMBNAIL_WIDTH };

/** One image the page would like a thumbnail of. */
export interface ThumbnailRequest {
  /** Stable key (the artifact path relative to the session dir). */
  key: string;
  /** Absolute path of the image file. */
  file: string;
  /** sha256 (hex) of the image's bytes, as its artifact row recorded it: names its kept thumbnails. */
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
  /** Thumbnails read from where the recorder kept them, and made here (a decode each). */
  sources: { kept: number; made: number };
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
  /** The session dir whose `thumbnails/` holds kept thumbnails (read first, and kept there when made). */
  sessionDir?: string;
}

const DATA_PREFIX = 'data:image/webp;base64,';
/** Thumbnails asked for at once: most are kept ones, a few small reads each, so several are in flight. */
const READS_AT_ONCE = 16;

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

/** The image must be a regular file (a symlink could point anywhere on the machine), kept thumbnail or not. */
async function checkImageFile(file: string): Promise<void> {
  const stat = await fs.promises.lstat(file);
  if (!stat.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
}

/** At most `limit` jobs run at once; the others wait their turn in order. */
class Slots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running += 1;
    try {
      return await job();
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }
}

/**
 * Thumbnails of one plan, by image and width: a kept one when there is one, else made (the widest from the
 * image, the narrower from the widest, as the recorder makes them) and kept for next time. Kept ones are read
 * several at a time; images are decoded `decodes` at a time (each decode holds an image and a libvips worker).
 */
class ThumbnailSource {
  private readonly made = new Map<string, Map<number, Promise<ThumbnailImage>>>();
  private readonly decodes: Slots;
  readonly counts = { kept: 0, made: 0 };

  constructor(
    private readonly widths: readonly number[],
    private readonly sessionDir: string | undefined,
    decodes: number,
  ) {
    this.decodes = new Slots(decodes);
  }

  /** The thumbnail of `req` at `width` (one of the plan's widths); throws with the reason it cannot be had. */
  get(req: ThumbnailRequest, width: number): Promise<ThumbnailImage> {
    let perWidth = this.made.get(req.key);
    if (!perWidth) {
      perWidth = new Map();
      this.made.set(req.key, perWidth);
    }
    let pending = perWidth.get(width);
    if (!pending) {
      pending = this.fetch(req, width);
      perWidth.set(width, pending);
    }
    return pending;
  }

  private async fetch(req: ThumbnailRequest, width: number): Promise<ThumbnailImage> {
    await checkImageFile(req.file);
    const canonical = THUMBNAIL_WIDTHS.includes(width) && this.widths[0] === THUMBNAIL_WIDTHS[0];
    if (canonical && this.sessionDir && req.sha256) {
      const kept = await readKeptThumbnail(this.sessionDir, req.sha256, width);
      if (kept) {
        this.counts.kept += 1;
        return kept;
      }
    }
    const sharp = await loadSharp();
    const widest = this.widths[0]!;
    // The narrower are made from the widest, which is had first (outside the slot: it takes one itself).
    const from = width === widest ? null : (await this.get(req, widest)).data;
    const made = await this.decodes.run(async () =>
      encodeThumbnail(sharp, from ?? (await fs.promises.readFile(req.file)), width),
    );
    this.counts.made += 1;
    if (canonical && this.sessionDir && req.sha256) {
      await keepThumbnail(this.sessionDir, req.sha256, width, made.data); // best effort, for next time
    }
    return made;
  }

  /** Let go of every thumbnail held at other widths than `width` (the plan settled on one). */
  keepOnly(width: number): void {
    for (const perWidth of this.made.values()) {
      for (const w of [...perWidth.keys()]) if (w !== width) perWidth.delete(w);
    }
  }
}

function toThumb(key: string, image: ThumbnailImage): Thumbnail {
  return { key, src: DATA_PREFIX + image.data.toString('base64'), width: image.width, height: image.height };
}

/** Each image once (priority wins, newest order), priority first then newest; past `maxCount` left out. */
function rankRequests(
  requests: ThumbnailRequest[],
  maxCount: number,
): { ranked: ThumbnailRequest[]; capped: number } {
  const unique = new Map<string, ThumbnailRequest>();
  for (const r of requests) {
    const seen = unique.get(r.key);
    if (!seen) unique.set(r.key, { ...r });
    else {
      seen.priority ||= r.priority;
      seen.order = Math.max(seen.order, r.order);
      seen.sha256 ??= r.sha256;
    }
  }
  const all = [...unique.values()].sort((a, b) =>
    a.priority !== b.priority ? (a.priority ? -1 : 1) : b.order - a.order,
  );
  const priorityCount = all.filter((r) => r.priority).length;
  const ranked = all.slice(0, priorityCount + Math.min(maxCount, all.length - priorityCount));
  return { ranked, capped: all.length - ranked.length };
}

/**
 * The widest width at which every candidate is expected to fit (from the samples' average size, 10% headroom),
 * else the narrowest; and how many are expected to fit at it.
 */
async function chooseWidth(
  source: ThumbnailSource,
  samples: ThumbnailRequest[],
  candidates: number,
  budgetBytes: number,
  widths: readonly number[],
): Promise<{ width: number; expected: number }> {
  const average = async (w: number): Promise<number> => {
    let sum = 0;
    for (const req of samples) sum += toThumb(req.key, await source.get(req, w)).src.length;
    return samples.length === 0 ? 0 : sum / samples.length;
  };
  let width = widths.at(-1)!;
  for (const w of widths) {
    if ((await average(w)) * candidates <= budgetBytes * 0.9) {
      width = w;
      break;
    }
  }
  const avg = await average(width);
  return { width, expected: avg > 0 ? Math.floor((budgetBytes * 0.9) / avg) : candidates };
}

/** Make thumbnails for `requests` within `budgetBytes`: narrower first, then fewer (priority, then newest). */
export async function planThumbnails(
  requests: ThumbnailRequest[],
  budgetBytes: number,
  options: ThumbnailOptions = {},
): Promise<ThumbnailPlan> {
  const widths = (options.widths ?? [...THUMBNAIL_WIDTHS]).filter((w) => w > 0).sort((a, b) => b - a);
  const decodes = Math.max(1, options.concurrency ?? 2);
  const sampleSize = Math.max(1, options.sampleSize ?? 6);
  const { ranked, capped } = rankRequests(
    requests,
    Math.max(0, options.maxCount ?? Number.POSITIVE_INFINITY),
  );
  const plan: ThumbnailPlan = {
    thumbs: new Map(),
    width: 0,
    omitted: capped,
    capped,
    failed: new Map(),
    bytes: 0,
    sources: { kept: 0, made: 0 },
  };
  if (ranked.length === 0 || widths.length === 0) return plan;
  const source = new ThumbnailSource(widths, options.sessionDir, decodes);

  // Sample the first few (the ones kept longest) to estimate the size per image; narrower only when needed.
  const sampled = ranked.slice(0, sampleSize);
  await mapPool(sampled, READS_AT_ONCE, async (req) => {
    await source.get(req, widths[0]!).catch((err: unknown) => plan.failed.set(req.key, reasonOf(err)));
  });
  const samples = sampled.filter((r) => !plan.failed.has(r.key));
  const candidates = ranked.filter((r) => !plan.failed.has(r.key));
  const { width, expected } = await chooseWidth(source, samples, candidates.length, budgetBytes, widths);
  source.keepOnly(width);
  const keepPriority = candidates.filter((r) => r.priority).length;
  const chosen = candidates.slice(0, Math.max(keepPriority, Math.min(candidates.length, expected)));
  const made = await mapPool(chosen, READS_AT_ONCE, async (req): Promise<Thumbnail | null> => {
    try {
      return toThumb(req.key, await source.get(req, width));
    } catch (err) {
      plan.failed.set(req.key, reasonOf(err));
      return null;
    }
  });
  fitBudget(plan, made, chosen, budgetBytes);
  plan.width = plan.thumbs.size > 0 ? width : 0;
  // Images that failed while being made are reported as failed, not as omitted.
  const failedLate = chosen.filter((r) => plan.failed.has(r.key)).length;
  plan.omitted = capped + Math.max(0, candidates.length - plan.thumbs.size - failedLate);
  plan.sources = { ...source.counts };
  return plan;
}

/** The estimate can be off: drop from the least important end until the real total fits (priority always stays). */
function fitBudget(
  plan: ThumbnailPlan,
  made: Array<Thumbnail | null>,
  chosen: ThumbnailRequest[],
  budgetBytes: number,
): void {
  let total = 0;
  made.forEach((thumb, i) => {
    if (!thumb) return;
    if (!chosen[i]!.priority && total + thumb.src.length > budgetBytes) return;
    plan.thumbs.set(thumb.key, thumb);
    total += thumb.src.length;
  });
  plan.bytes = total;
}
