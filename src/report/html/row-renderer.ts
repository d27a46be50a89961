/** What report.html knows about each call besides its row (warnings, images, recoveries), and rendering a row. */
import { isRasterArtifact } from '../../artifacts/image-file.js';
import type { ArtifactRow, CallRow } from '../../store/schema.js';
import type { SessionReader } from '../../store/session-reader.js';
import { masksOf } from '../masked-images.js';
import { readFailures } from '../server-kind.js';
import { formatBytes, oneLine } from '../text.js';
import { type ImageRef, imageRef } from './image-ref.js';
import {
  type MaskBox,
  type MaskMap,
  type RowCounters,
  type RowImage,
  type RowThumb,
  rowContext,
} from './row-view.js';
import type { ReportTemplate } from './template.js';
import type { ThumbnailPlan } from './thumbnails.js';

/** Warnings a row lists at most. */
const MAX_ROW_WARNINGS = 20;

/** Facts read from the log once, bounded by the log (not by the page). */
export interface CallFacts {
  warningsBySeq: Map<number, Array<{ code: string; detail: string }>>;
  artifactsBySeq: Map<number, ArtifactRow[]>;
  /** Each image file (by key) and the first call that showed it: that call's row owns its thumbnail. */
  firstSeqOfImage: Map<string, number>;
  refs: Map<string, ImageRef>;
  /** sha256 of each image file (by key), as its artifact row recorded it. */
  sha256Of: Map<string, string>;
  imageOwners: Set<number>;
  recoveredSeqs: Set<number>;
}

/** Warnings and images per call, and which failures were recovered. */
export function readCallFacts(reader: SessionReader, artifactBase: string): CallFacts {
  const warningsBySeq = new Map<number, Array<{ code: string; detail: string }>>();
  for (const w of reader.warnings()) {
    const list = warningsBySeq.get(w.call_seq) ?? [];
    if (list.length < MAX_ROW_WARNINGS) {
      list.push({ code: oneLine(w.code, 80), detail: oneLine(w.detail ?? '', 400) });
    }
    warningsBySeq.set(w.call_seq, list);
  }
  const artifactsBySeq = new Map<number, ArtifactRow[]>();
  const firstSeqOfImage = new Map<string, number>();
  const refs = new Map<string, ImageRef>();
  const sha256Of = new Map<string, string>();
  for (const a of reader.artifacts()) {
    if (a.call_seq == null) continue;
    artifactsBySeq.set(a.call_seq, [...(artifactsBySeq.get(a.call_seq) ?? []), a]);
    const ref = imageRef(reader.dir, a.path, artifactBase);
    if (ref && !firstSeqOfImage.has(ref.key)) {
      firstSeqOfImage.set(ref.key, a.call_seq);
      refs.set(ref.key, ref);
    }
    if (ref && a.sha256 && !sha256Of.has(ref.key)) sha256Of.set(ref.key, a.sha256);
  }
  const recoveredSeqs = new Set(
    readFailures(reader, reader.session(), reader.stats(), -1)
      .failures.filter((f) => f.recovered)
      .map((f) => f.seq),
  );
  const imageOwners = new Set(firstSeqOfImage.values());
  return { warningsBySeq, artifactsBySeq, firstSeqOfImage, refs, sha256Of, imageOwners, recoveredSeqs };
}

/** An artifact's masks as labelled boxes (null without masks or without the image's size). */
function maskMap(a: ArtifactRow, thumb: string | null): MaskMap | null {
  const masks = masksOf(a);
  const width = a.width ?? 0;
  const height = a.height ?? 0;
  if (masks.length === 0 || width <= 0 || height <= 0) return null;
  const fs = Math.max(8, Math.round(Math.max(width, height) / 45));
  const boxes: MaskBox[] = masks.slice(0, 64).map((m) => {
    const why = [`masked: ${m.reason} (${m.rule})`];
    if (m.target) why.push(`over ${m.target}`);
    if (m.widened) why.push(`widened: ${m.widened}`);
    return {
      x: m.rect.x,
      y: m.rect.y,
      w: m.rect.width,
      h: m.rect.height,
      tx: m.rect.x + 3,
      ty: m.rect.y + Math.min(Math.max(fs, m.rect.height - 3), fs + 2),
      fs,
      label: `masked: ${oneLine(m.reason, 40)}`,
      title: oneLine(why.join('; '), 600),
    };
  });
  const pending = a.masks_painted === 0 ? ' (painted in bundles; this copy is the original)' : '';
  return { width, height, thumb, label: `${masks.length} masked region(s)${pending}`, boxes };
}

/**
 * Images a page is read without (a bundle's), by key (the artifact path): why, in the bundle's words, and
 * whether the page still shows the capture's thumbnail (a capture the bundle only did not carry).
 */
export type LeftOutKeys = ReadonlyMap<string, { why: string; thumbnailStays: boolean }>;
const NONE_LEFT_OUT: LeftOutKeys = new Map();

/** Where an image left out of a bundle would be: that it is not there, and why. */
export function leftOutNote(why: string): string {
  return `not in this bundle: ${oneLine(why, 200)}`;
}

/** GIFs (`record` recordings) are linked, not thumbnailed: a still of one frame would pass for a capture. */
export function isRecording(key: string): boolean {
  return key.toLowerCase().endsWith('.gif');
}

/** Renders timeline rows; the thumbnail plan, once known, decides the notes of the rows that own an image. */
export class RowRenderer {
  private thumbsKept = new Set<string>();
  private failedThumbs = new Map<string, string>();

  constructor(
    private readonly tpl: ReportTemplate,
    private readonly facts: CallFacts,
    private readonly where: { dir: string; artifactBase: string },
    private readonly special: {
      failingSeq: number | null;
      lastGoodSeq: number | null;
      plainServer?: boolean;
    },
  ) {}

  /** The thumbnails made (or not): rows rendered from now on say so. */
  usePlan(plan: ThumbnailPlan): void {
    this.thumbsKept = new Set(plan.thumbs.keys());
    this.failedThumbs = plan.failed;
  }

  /**
   * One row's HTML (not yet escaped for format characters), its bodies within `allowance` characters. An image
   * of `leftOut` (by key: why, a bundle's page) is named with why instead of linked.
   */
  render(
    row: CallRow,
    line: string,
    allowance: number,
    thumbs: RowThumb[],
    counters: RowCounters,
    leftOut: LeftOutKeys = NONE_LEFT_OUT,
  ): string {
    const { facts, special } = this;
    const context = rowContext(
      this.tpl.hb,
      {
        row,
        line,
        recovered: facts.recoveredSeqs.has(row.seq),
        isFailing: row.seq === special.failingSeq,
        isLastGood: row.seq === special.lastGoodSeq,
        plainServer: special.plainServer === true,
        warnings: facts.warningsBySeq.get(row.seq) ?? [],
        thumbs,
        images: this.imagesOf(row.seq, thumbs, leftOut),
      },
      allowance,
      counters,
    );
    return this.tpl.renderRow(context).trim();
  }

  /** Whether the row of call `seq` shows (or names as seen before) an image of `leftOut`. */
  showsAny(seq: number, leftOut: LeftOutKeys): boolean {
    if (leftOut.size === 0) return false;
    for (const a of this.facts.artifactsBySeq.get(seq) ?? []) {
      const ref = imageRef(this.where.dir, a.path, this.where.artifactBase);
      if (ref && leftOut.has(ref.key)) return true;
    }
    return false;
  }

  private imagesOf(seq: number, thumbs: readonly RowThumb[], leftOut: LeftOutKeys): RowImage[] {
    const list: RowImage[] = [];
    const seen = new Set<string>();
    for (const a of this.facts.artifactsBySeq.get(seq) ?? []) {
      const ref = imageRef(this.where.dir, a.path, this.where.artifactBase);
      if (!ref) {
        list.push({
          href: null,
          // A file the server wrote on its host and that could not be copied: say where it lies.
          label: a.host_path
            ? `${a.role}: on the MCEC host at ${oneLine(a.host_path, 300)}`
            : `${a.role} image not kept`,
          note: oneLine(a.error ?? 'no file', 200),
        });
        continue;
      }
      if (seen.has(ref.key)) continue;
      seen.add(ref.key);
      const dims = a.width && a.height ? `${a.width}x${a.height} ` : '';
      const out = leftOut.get(ref.key);
      if (out !== undefined) {
        const thumb = out.thumbnailStays ? thumbs.find((t) => t.key === ref.key)?.src : undefined;
        list.push({
          href: null,
          label: `${a.role}: ${ref.name} (${dims}${formatBytes(a.bytes)})`,
          note: leftOutNote(out.why),
          mask: maskMap(a, thumb ?? null),
        });
        continue;
      }
      // A file kept as it came (an SVG, an icon) is named, not linked: an SVG from a hostile server may hold
      // script, which opening it from the page would run outside the page's CSP.
      const raster = isRasterArtifact(ref.key);
      list.push({
        href: raster ? ref.href : null,
        label: `${a.role}: ${ref.name} (${dims}${formatBytes(a.bytes)})`,
        note: raster ? this.imageNote(ref.key, seq) : 'kept as it came, not linked (no raster image)',
        mask: maskMap(a, thumbs.find((t) => t.href === ref.href)?.src ?? null),
      });
    }
    return list;
  }

  private imageNote(key: string, seq: number): string {
    const first = this.facts.firstSeqOfImage.get(key);
    if (first !== seq) return `same image as call #${first}`;
    if (isRecording(key)) return 'a GIF recording: open it to play';
    return (
      this.failedThumbs.get(key) ?? (this.thumbsKept.has(key) ? '' : 'no thumbnail (see the note at the top)')
    );
  }
}
