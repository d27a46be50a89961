/**
 * Masks painted while bundling: the stored masks of a session recorded with mask mode `on-export` (its files
 * are the originals) and the masks of new rules (`mcec-bundle bundle --mask-rules FILE`). The bundle is then
 * built from a view of the session in a temp dir: the log's snapshot with those artifact rows updated, the
 * painted images, links to the rest. The session dir itself is never changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { headerDimensions } from '../artifacts/image-file.js';
import { sniffImageFormat } from '../contract/image-bytes.js';
import type { Envelope, MaskedRegion } from '../contract/types.js';
import { frameOf } from '../mask/frame.js';
import { ScreenKnowledge } from '../mask/knowledge.js';
import { paintMasks } from '../mask/paint.js';
import { planMasks } from '../mask/plan.js';
import type { MaskRule } from '../mask/types.js';
import { ARTIFACTS_DIR, LOG_FILE } from '../paths/naming.js';
import { masksOf } from '../report/masked-images.js';
import { openSessionDb } from '../store/open.js';
import type { ArtifactRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import { isRecord } from '../util/json.js';
import { snapshotSessionDb } from './db-snapshot.js';

/** What the manifest says of masking (`masking` in manifest.json). */
export interface BundleMasking {
  /** `before-write`: every mask was painted when the image was recorded; `on-export`: some while bundling. */
  mode: 'before-write' | 'on-export';
  /** Images painted while this bundle was built (stored on-export masks, new rules). */
  paintedWhileBundling: number;
  /** Rules given to the bundle (`--mask-rules`). */
  bundleRules: number;
  /** Images that had to be masked and could not be decoded: left out of the bundle. */
  notDecodable: number;
}

interface Work {
  rows: ArtifactRow[];
  masks: MaskedRegion[];
}

function parse(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The object holding an image (its json_path's parent, inside nested JSON strings), when it is an object. */
function containerOf(envelope: unknown, jsonPath: string | null): Record<string, unknown> | undefined {
  if (!jsonPath) return undefined;
  const tail = jsonPath.split('/#json').pop()!; // the innermost level; the stored value there is a summary
  const segs = tail.split('/').slice(1, -1);
  let at: unknown = envelope;
  for (const s of segs) {
    at = isRecord(at)
      ? at[s.replace(/~1/g, '/').replace(/~0/g, '~')]
      : Array.isArray(at)
        ? at[Number(s)]
        : undefined;
  }
  return isRecord(at) ? at : undefined;
}

/** Which images need painting, and with which masks (stored on-export ones plus the new rules'). */
function plan(dir: string, rules: readonly MaskRule[]): Map<string, Work> {
  const work = new Map<string, Work>();
  const add = (row: ArtifactRow, masks: MaskedRegion[]) => {
    if (!row.path || masks.length === 0) return;
    const w = work.get(row.path) ?? { rows: [], masks: [] };
    w.rows.push(row);
    for (const m of masks) if (!w.masks.some((x) => JSON.stringify(x) === JSON.stringify(m))) w.masks.push(m);
    work.set(row.path, w);
  };
  const reader = SessionReader.open(dir);
  try {
    const byCall = new Map<number, ArtifactRow[]>();
    for (const row of reader.artifacts()) {
      if (row.masks_painted === 0) add(row, masksOf(row));
      if (row.call_seq != null) byCall.set(row.call_seq, [...(byCall.get(row.call_seq) ?? []), row]);
    }
    if (rules.length === 0) return work;
    // The calls again, in order: where windows and elements were when each image was taken.
    const knowledge = new ScreenKnowledge({ typedText: false, secretFields: false });
    for (const call of reader.calls()) {
      const envelope = parse(call.envelope) as Envelope | undefined;
      const args = parse(call.args);
      const ref = { seq: call.seq, tool: call.tool, args };
      for (const row of byCall.get(call.seq) ?? []) {
        if (!row.path || !row.width || !row.height) continue;
        const own = row.role === 'lastObservation' || row.role === 'host-observation';
        const frame = frameOf(containerOf(envelope, row.json_path), ref, envelope, own);
        add(row, planMasks(frame, { width: row.width, height: row.height }, knowledge, rules));
      }
      knowledge.learn({ ...ref, envelope: isRecord(envelope) ? envelope : undefined });
    }
  } finally {
    reader.close();
  }
  return work;
}

function linkOrCopy(from: string, to: string): void {
  try {
    fs.linkSync(from, to);
  } catch {
    fs.copyFileSync(from, to);
  }
}

/**
 * A view of the session in `tmpDir` with the masks painted that the bundle must paint, or null when there are
 * none (the bundle is built from the session dir itself). `masking` says what was done either way.
 */
export async function maskedSessionView(
  dir: string,
  tmpDir: string,
  rules: readonly MaskRule[],
): Promise<{ dir: string | null; masking: BundleMasking }> {
  const work = plan(dir, rules);
  const onExport = [...work.values()].some((w) => w.rows.some((r) => r.masks_painted === 0));
  const masking: BundleMasking = {
    mode: onExport ? 'on-export' : 'before-write',
    paintedWhileBundling: 0,
    bundleRules: rules.length,
    notDecodable: 0,
  };
  if (work.size === 0) return { dir: null, masking };
  const view = path.join(tmpDir, 'masked-view', path.basename(dir));
  fs.mkdirSync(path.join(view, ARTIFACTS_DIR), { recursive: true });
  snapshotSessionDb(dir, path.join(view, LOG_FILE));
  const updates: Array<{
    id: number;
    masks: string;
    sha256: string | null;
    bytes: number | null;
    path: string | null;
  }> = [];
  for (const entry of fs.readdirSync(path.join(dir, ARTIFACTS_DIR), { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = `${ARTIFACTS_DIR}/${entry.name}`;
    const from = path.join(dir, rel);
    const to = path.join(view, rel);
    const w = work.get(rel);
    if (!w) {
      linkOrCopy(from, to);
      continue;
    }
    const bytes = fs.readFileSync(from);
    const format = sniffImageFormat(bytes);
    const dims = format ? headerDimensions(bytes, format) : undefined;
    const painted = dims
      ? await paintMasks(
          bytes,
          format,
          w.masks.map((m) => m.rect),
        )
      : { error: 'no readable size' };
    const masks = JSON.stringify(w.masks);
    if ('error' in painted) {
      masking.notDecodable += 1; // not copied: the bundle leaves it out (no row names a file there)
      for (const row of w.rows) updates.push({ id: row.id, masks, sha256: null, bytes: null, path: null });
      continue;
    }
    fs.writeFileSync(to, painted.bytes);
    masking.paintedWhileBundling += 1;
    const { createHash } = await import('node:crypto');
    const sha256 = createHash('sha256').update(painted.bytes).digest('hex');
    for (const row of w.rows)
      updates.push({ id: row.id, masks, sha256, bytes: painted.bytes.length, path: rel });
  }
  const db = openSessionDb(path.join(view, LOG_FILE));
  try {
    const set = db.prepare(
      'UPDATE artifacts SET masks = ?, masks_painted = 1, sha256 = ?, bytes = ?, path = ?, error = CASE WHEN ? IS NULL THEN ? ELSE error END WHERE id = ?',
    );
    db.transaction(() => {
      for (const u of updates)
        set.run(
          u.masks,
          u.sha256,
          u.bytes,
          u.path,
          u.path,
          'not in this bundle: it had to be masked and could not be decoded',
          u.id,
        );
    })();
  } finally {
    db.close();
  }
  // Thumbnails of the unchanged images are still good; the painted ones have new sha256s and are made again.
  const thumbs = path.join(dir, 'thumbnails');
  if (fs.existsSync(thumbs)) {
    fs.mkdirSync(path.join(view, 'thumbnails'));
    for (const name of fs.readdirSync(thumbs))
      linkOrCopy(path.join(thumbs, name), path.join(view, 'thumbnails', name));
  }
  return { dir: view, masking };
}
