/**
 * Thumbnails made while recording, after an image is written: a small bounded queue worked one image at a
 * time, apart from the recorder's own queue (a slow decode never holds up a commit or an agent's call). What
 * cannot be taken (the queue full, the recorder under back-pressure, closed) is skipped: a report makes it later.
 */
import { promises as fsp } from 'node:fs';
import type { ImageFormat } from '../contract/image-bytes.js';
import { loadSharp } from '../util/sharp.js';
import {
  isSha256Hex,
  keepThumbnail,
  makeThumbnails,
  readKeptThumbnail,
  THUMBNAIL_WIDTHS,
} from './thumbnail.js';

/** One written image to make thumbnails of. */
export interface ThumbnailJob {
  sessionDir: string;
  sha256: string;
  /** Absolute path of the image file. */
  file: string;
  format: ImageFormat | undefined;
}

export interface ThumbnailQueueOptions {
  /** Images waiting at most (default 64); past it new ones are skipped. */
  maxPending?: number;
  /** Images larger than this are skipped (default 32 MiB: a 4K PNG is 8-25 MB). */
  maxImageBytes?: number;
  /** Test seam: runs before each image is made, and may throw (a bug, a decoder crash). */
  beforeJob?: (job: ThumbnailJob) => void;
}

/** What the queue did. */
export interface ThumbnailCounts {
  made: number;
  /** Not taken (queue full, back-pressure, closed, not PNG or JPEG): a report makes them on demand. */
  skipped: number;
  /** Taken but not made (undecodable, unreadable, disk error): counted, never thrown. */
  failed: number;
}

/** Formats a thumbnail is made of at record time (sharp reads no BMP; a GIF is a recording, never thumbnailed). */
const THUMBNAILED: ReadonlySet<ImageFormat> = new Set<ImageFormat>(['png', 'jpeg']);

export class ThumbnailQueue {
  private readonly maxPending: number;
  private readonly maxImageBytes: number;
  private readonly beforeJob: ((job: ThumbnailJob) => void) | undefined;
  private readonly pending: ThumbnailJob[] = [];
  private running: Promise<void> | null = null;
  private closed = false;
  readonly counts: ThumbnailCounts = { made: 0, skipped: 0, failed: 0 };

  constructor(options: ThumbnailQueueOptions = {}) {
    this.maxPending = Math.max(1, options.maxPending ?? 64);
    this.maxImageBytes = options.maxImageBytes ?? 32 * 1024 * 1024;
    this.beforeJob = options.beforeJob;
  }

  /** Ask for an image's thumbnails; false when it is skipped (made later on demand). Never throws. */
  offer(job: ThumbnailJob, underPressure = false): boolean {
    const take =
      !this.closed &&
      !underPressure &&
      this.pending.length < this.maxPending &&
      isSha256Hex(job.sha256) &&
      job.format !== undefined &&
      THUMBNAILED.has(job.format);
    if (!take) {
      this.counts.skipped += 1;
      return false;
    }
    this.pending.push(job);
    this.running ??= this.work();
    return true;
  }

  /** Resolves once every image taken so far has been made (or failed). */
  async drain(): Promise<void> {
    while (this.running) await this.running;
  }

  /**
   * Take no more; finish what was taken, for at most `timeoutMs`: past it the images still waiting are
   * skipped (a report makes them) and only the one being made is waited for. Idempotent.
   */
  async close(timeoutMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.closed = true;
    if (!this.running) return;
    let timer: NodeJS.Timeout | undefined;
    const late = Number.isFinite(timeoutMs)
      ? new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), timeoutMs);
        })
      : null;
    try {
      const outcome = await Promise.race([this.drain(), ...(late ? [late] : [])]);
      if (outcome === 'late') {
        this.counts.skipped += this.pending.length;
        this.pending.length = 0;
        await this.drain();
      }
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  private async work(): Promise<void> {
    try {
      for (let job = this.pending.shift(); job; job = this.pending.shift()) {
        // A turn of the event loop first: the recorder's own work (and the agent's calls) go before a decode.
        await new Promise((resolve) => setImmediate(resolve));
        if (await this.make(job)) this.counts.made += 1;
        else this.counts.failed += 1;
      }
    } finally {
      this.running = null;
    }
  }

  /** Every width of one image, kept beside it; false when they could not all be made and kept. */
  private async make(job: ThumbnailJob): Promise<boolean> {
    try {
      this.beforeJob?.(job);
      const last = THUMBNAIL_WIDTHS.at(-1)!;
      if (await readKeptThumbnail(job.sessionDir, job.sha256, last)) return true; // another writer made them
      const stat = await fsp.lstat(job.file);
      if (!stat.isFile() || stat.size > this.maxImageBytes) return false;
      const sharp = await loadSharp();
      const thumbs = await makeThumbnails(sharp, await fsp.readFile(job.file));
      let kept = true;
      // Narrowest last: its presence says the set is complete.
      for (const w of THUMBNAIL_WIDTHS) {
        const t = thumbs.get(w);
        kept = t !== undefined && (await keepThumbnail(job.sessionDir, job.sha256, w, t.data)) && kept;
      }
      return kept;
    } catch {
      return false; // a corrupt image or a decoder failure: the report tries again, and says why
    }
  }
}
