/** The images with regions masked because they may show a secret (src/mask): per image, how many and why. */
import type { MaskedRegion } from '../contract/types.js';
import { safeRelativePath } from '../paths/naming.js';
import type { ArtifactRow } from '../store/schema.js';
import { isRecord } from '../util/json.js';
import { oneLine } from './text.js';
import type { MaskedImageDigest, MaskedImagesSummary } from './types.js';

/** Most masked images listed in a summary (the rest are counted). */
const MAX_LISTED = 50;

/** An artifact row's masks (its `masks` JSON), read defensively: a bad value is no masks. */
export function masksOf(row: Pick<ArtifactRow, 'masks'>): MaskedRegion[] {
  if (typeof row.masks !== 'string' || row.masks.length > 200_000) return [];
  try {
    const parsed = JSON.parse(row.masks) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (m): m is MaskedRegion =>
        isRecord(m) && isRecord(m.rect) && typeof m.reason === 'string' && typeof m.rule === 'string',
    );
  } catch {
    return [];
  }
}

/** Each masked image once (its first row), with its regions counted by reason, widened ones counted. */
export function maskedImagesOf(rows: readonly ArtifactRow[]): MaskedImagesSummary {
  const seen = new Set<string>();
  const images: MaskedImageDigest[] = [];
  let total = 0;
  for (const row of rows) {
    const masks = masksOf(row);
    const artifact = safeRelativePath(row.path);
    if (masks.length === 0 || !artifact || row.call_seq == null || seen.has(artifact)) continue;
    seen.add(artifact);
    total += 1;
    if (images.length >= MAX_LISTED) continue;
    const byReason = new Map<string, number>();
    for (const m of masks) byReason.set(m.reason, (byReason.get(m.reason) ?? 0) + 1);
    images.push({
      artifact,
      seq: row.call_seq,
      regions: masks.length,
      reasons: [...byReason].map(([reason, n]) => `${n} ${oneLine(reason, 40)}`).join(', '),
      widened: masks.filter((m) => m.widened !== undefined).length,
      painted: row.masks_painted !== 0,
    });
  }
  return { total, images, omitted: total - images.length };
}
