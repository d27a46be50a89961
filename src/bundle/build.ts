/**
 * The bug bundle: one deterministic zip of a session (rendered reports, the existing bundle's JSON files, the
 * images and a snapshot of the log), written to a temp name and renamed, so no half-written zip is left.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { renderBugReport, renderFailureSummary } from '../report/render.js';
import { buildSummary } from '../report/summary.js';
import type { SessionSummary, Verdict } from '../report/types.js';
import { LOG_FILE, parseSessionDirName, sessionDirName } from '../store/layout.js';
import type { SessionRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import { bundleDb } from './db-snapshot.js';
import {
  type DroppedFile,
  environmentJson,
  MANIFEST_VERSION,
  type ManifestJson,
  sessionJson,
} from './documents.js';
import {
  chooseImagesToDrop,
  type ImageFile,
  isPrecompressed,
  listImageFiles,
  protectedImages,
} from './images.js';
import { buildToolCallLog, type ToolCallLog } from './tool-call-log.js';
import { packageVersion } from './version.js';
import { writeZip, type ZipEntry } from './zip.js';

/** Options of buildBundle. */
export interface BundleOptions {
  /** Where to write the zip (a file, or an existing directory); default `<sessions dir>/<session dir name>.zip`. */
  output?: string;
  /** Include the images of `artifacts/` (default true). */
  images?: boolean;
  /** Include the session.sqlite snapshot (default true). */
  db?: boolean;
  /** Drop the oldest images (never the key ones) until the zip fits. */
  maxBytes?: number;
  /** Folder whose templates override the built-in ones by file name. */
  templatesDir?: string;
  /** Progress in work units (calls, then files). */
  onProgress?: (done: number, total: number) => void;
}

/** What buildBundle wrote. */
export interface BundleResult {
  /** Absolute path of the zip. */
  bundle: string;
  bytes: number;
  /** Files in the zip. */
  files: number;
  dropped: DroppedFile[];
  verdict: Verdict;
  sessionId: string;
  /** Things the caller should tell the user (e.g. a size cap that could not be met). */
  warnings: string[];
}

/** zlib level for the log snapshot: it is most of the bytes, and level 6 costs 3x the time for ~10% size. */
const DB_LEVEL = 3;
/** Extra bytes assumed per entry beyond its data when estimating a zip's size (headers, descriptor). */
const ENTRY_OVERHEAD = 30 + 46 + 24 + 16;
/** End-of-central-directory records (zip64 included) plus slack. */
const ZIP_OVERHEAD = 22 + 56 + 20 + 256;
/** Rewrites allowed when the estimated size was not enough to meet --max-bytes. */
const MAX_SIZE_ROUNDS = 4;

/** Build the bug bundle of the session in `sessionDir`. */
export async function buildBundle(sessionDir: string, options: BundleOptions = {}): Promise<BundleResult> {
  const dir = path.resolve(sessionDir);
  if (!fs.existsSync(path.join(dir, LOG_FILE))) throw new Error(`${dir}: not a session dir (no ${LOG_FILE})`);
  if (options.maxBytes !== undefined && !(Number.isSafeInteger(options.maxBytes) && options.maxBytes > 0)) {
    throw new Error(`maxBytes must be a positive integer, got ${options.maxBytes}`);
  }
  const withImages = options.images !== false;
  const withDb = options.db !== false;
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-bundle-'));
  try {
    const reader = SessionReader.open(dir);
    let summary: SessionSummary;
    let session: SessionRow;
    let log: ToolCallLog;
    let found: ReturnType<typeof listImageFiles>;
    let keep: Set<string>;
    let progress: Progress;
    try {
      session = reader.session();
      const calls = reader.callCount();
      summary = await buildSummary(reader);
      const rows = reader.artifacts();
      found = listImageFiles(dir, rows);
      keep = protectedImages(summary, rows);
      progress = new Progress(calls + found.images.length + 8, options.onProgress);
      log = buildToolCallLog(reader, session.session_id, { onCall: () => progress.step() });
      progress.jumpTo(calls);
    } finally {
      reader.close();
    }

    const top = topFolderName(dir, session);
    const canonicalZip = `${top}.zip`;
    const [failureSummary, bugReport] = await Promise.all([
      renderFailureSummary(summary, { templatesDir: options.templatesDir }),
      renderBugReport(summary, { templatesDir: options.templatesDir, bundleName: canonicalZip }),
    ]);
    progress.step();

    let dbFile: string | null = null;
    const dropped: DroppedFile[] = found.skipped.map((s) => ({
      path: s.path,
      bytes: s.bytes,
      reason: 'unreadable' as const,
      detail: s.detail,
    }));
    if (withDb) {
      dbFile = bundleDb(dir, session, tmpDir).file;
    } else {
      dropped.push({ path: LOG_FILE, bytes: fs.statSync(path.join(dir, LOG_FILE)).size, reason: 'no-db' });
    }
    progress.step();

    let images = found.images;
    if (!withImages) {
      for (const img of images) dropped.push({ path: img.path, bytes: img.bytes, reason: 'no-images' });
      images = [];
    }

    const texts: Array<{ name: string; data: Buffer }> = [
      { name: 'failure-summary.md', data: Buffer.from(failureSummary, 'utf8') },
      { name: 'bug-report.md', data: Buffer.from(bugReport, 'utf8') },
      { name: 'tool-calls.jsonl', data: log.data },
      {
        name: 'environment.json',
        data: jsonBuffer(environmentJson(summary, session.recorder_version)),
      },
    ];

    const output = resolveOutput(dir, top, options.output);
    fs.mkdirSync(path.dirname(output), { recursive: true });
    const mtime = new Date(summary.startedAt);
    const warnings: string[] = [];

    // Under --max-bytes: estimate, drop the oldest droppable images, write; rewrite if the estimate was short.
    let capDrops: ImageFile[] = [];
    let met: boolean | null = null;
    let written: { bytes: number; files: number; tmp: string } | null = null;
    for (let round = 0; ; round++) {
      const included = images.filter((img) => !capDrops.includes(img));
      const sessionDoc = sessionJson(summary, {
        artifacts: included.map((img) => img.path),
        toolCallLogTruncated: log.truncated || summary.counts.droppedPayloads > 0,
      });
      const allDropped: DroppedFile[] = [
        ...dropped,
        ...capDrops.map((img) => ({ path: img.path, bytes: img.bytes, reason: 'max-bytes' as const })),
      ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      const entries = zipEntries(
        top,
        [...texts, { name: 'session.json', data: jsonBuffer(sessionDoc) }],
        included,
        dbFile,
      );

      if (options.maxBytes !== undefined && round === 0) {
        const estimate = await estimateZipBytes(entries, images.length + dropped.length);
        const extra = chooseImagesToDrop(included, keep, estimate, options.maxBytes, (img) =>
          entryOverhead(`${top}/${img.path}`),
        );
        if (extra.length > 0) {
          capDrops = [...capDrops, ...extra];
          continue;
        }
      }

      const manifestBase: Omit<ManifestJson, 'files'> = {
        manifestVersion: MANIFEST_VERSION,
        bundle: top,
        sessionId: summary.sessionId,
        generator: { name: 'mcec-recorder', version: packageVersion() },
        dropped: allDropped,
        options: { images: withImages, db: withDb, maxBytes: options.maxBytes ?? null },
        toolCallLog: {
          lines: log.lines,
          calls: log.calls,
          truncated: log.truncated,
          imagesRedacted: log.imagesRedacted,
        },
        limit: null,
      };
      const tmp = `${output}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
      const finalManifest = (
        hashes: ReadonlyMap<string, { bytes: number; sha256: string }>,
        metNow: boolean | null,
      ) => {
        const files = [...hashes.entries()]
          .map(([name, h]) => ({ path: name.slice(top.length + 1), bytes: h.bytes, sha256: h.sha256 }))
          .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
        const limit =
          options.maxBytes !== undefined ? { maxBytes: options.maxBytes, met: metNow ?? true } : null;
        const manifest: ManifestJson = { ...manifestBase, files, limit };
        return jsonBuffer({
          manifestVersion: manifest.manifestVersion,
          bundle: manifest.bundle,
          sessionId: manifest.sessionId,
          generator: manifest.generator,
          files: manifest.files,
          dropped: manifest.dropped,
          options: manifest.options,
          toolCallLog: manifest.toolCallLog,
          limit: manifest.limit,
        });
      };
      let bytes: number;
      try {
        const res = await writeZip(
          tmp,
          entries,
          { name: `${top}/manifest.json`, build: (h) => finalManifest(h, met) },
          { mtime, onEntry: () => progress.step() },
        );
        bytes = res.bytes;
      } catch (err) {
        fs.rmSync(tmp, { force: true });
        throw err;
      }
      if (written) fs.rmSync(written.tmp, { force: true });
      written = { bytes, files: entries.length + 1, tmp };

      if (options.maxBytes === undefined || bytes <= options.maxBytes) break;
      const remaining = included.filter((img) => !keep.has(img.path));
      if (remaining.length === 0 || round >= MAX_SIZE_ROUNDS) {
        if (met === null) {
          // Say so in the manifest: write once more with limit.met = false (same entries, same size).
          met = false;
          continue;
        }
        warnings.push(
          `the bundle is ${bytes} bytes, over --max-bytes ${options.maxBytes}: ` +
            'only images that must stay (the last observation, the failing call) and the text files are left',
        );
        break;
      }
      const extra = chooseImagesToDrop(remaining, new Set(), bytes, options.maxBytes, (img) =>
        entryOverhead(`${top}/${img.path}`),
      );
      capDrops = [...capDrops, ...(extra.length > 0 ? extra : remaining.slice(0, 1))];
    }

    fs.renameSync(written.tmp, output);
    progress.finish();
    const allDropped = [
      ...dropped,
      ...capDrops.map((img) => ({ path: img.path, bytes: img.bytes, reason: 'max-bytes' as const })),
    ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return {
      bundle: output,
      bytes: written.bytes,
      files: written.files,
      dropped: allDropped,
      verdict: summary.verdict,
      sessionId: summary.sessionId,
      warnings,
    };
  } finally {
    fs.rmSync(tmpDir, { recursive: true, force: true });
  }
}

/** `<yyyyMMdd-HHmmss>-<sessionId>`: the session dir's own name when it has that form. */
function topFolderName(dir: string, session: SessionRow): string {
  const base = path.basename(dir);
  if (parseSessionDirName(base)) return base;
  return sessionDirName(new Date(session.started_at), session.session_id);
}

function resolveOutput(dir: string, top: string, output: string | undefined): string {
  if (output === undefined) return path.join(path.dirname(dir), `${top}.zip`);
  const abs = path.resolve(output);
  // `-o out/` names a directory, even one that does not exist yet.
  if (output.endsWith('/') || output.endsWith(path.sep)) return path.join(abs, `${top}.zip`);
  try {
    if (fs.statSync(abs).isDirectory()) return path.join(abs, `${top}.zip`);
  } catch {
    // not there yet: a file name
  }
  return abs;
}

function jsonBuffer(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`, 'utf8');
}

/** Zip entries in sorted path order (the manifest is appended last by writeZip). */
function zipEntries(
  top: string,
  texts: Array<{ name: string; data: Buffer }>,
  images: readonly ImageFile[],
  dbFile: string | null,
): ZipEntry[] {
  const entries: ZipEntry[] = [
    ...texts.map((t) => ({ name: `${top}/${t.name}`, source: { buffer: t.data }, compress: true })),
    ...images.map((img) => ({
      name: `${top}/${img.path}`,
      source: { file: img.file, size: img.bytes },
      compress: !isPrecompressed(img.path),
    })),
  ];
  if (dbFile) {
    entries.push({
      name: `${top}/${LOG_FILE}`,
      source: { file: dbFile, size: fs.statSync(dbFile).size },
      compress: true,
      level: DB_LEVEL,
    });
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function entryOverhead(name: string): number {
  return ENTRY_OVERHEAD + 2 * Buffer.byteLength(name);
}

/** An upper-bound estimate of the zip's size: exact deflate sizes of the text, stored sizes of images. */
async function estimateZipBytes(entries: readonly ZipEntry[], manifestFiles: number): Promise<number> {
  let total = ZIP_OVERHEAD + entryOverhead('x'.repeat(120)) + 200 * (manifestFiles + entries.length) + 1024;
  for (const entry of entries) {
    total += entryOverhead(entry.name);
    if (!entry.compress) {
      total += 'buffer' in entry.source ? entry.source.buffer.length : entry.source.size;
    } else if ('buffer' in entry.source) {
      total += zlib.deflateRawSync(entry.source.buffer, { level: entry.level ?? 6 }).length;
    } else {
      total += await deflatedFileSize(entry.source.file, entry.level ?? 6);
    }
  }
  return total;
}

function deflatedFileSize(file: string, level: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const deflate = zlib.createDeflateRaw({ level });
    deflate.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    deflate.on('end', () => resolve(size));
    deflate.on('error', reject);
    const input = fs.createReadStream(file);
    input.on('error', reject);
    input.pipe(deflate);
  });
}

/** Progress in work units, reported at most every 1% so a callback cannot slow the build down. */
class Progress {
  private done = 0;
  private lastReported = -1;

  constructor(
    private readonly total: number,
    private readonly report: ((done: number, total: number) => void) | undefined,
  ) {}

  step(): void {
    this.jumpTo(this.done + 1);
  }

  jumpTo(done: number): void {
    this.done = Math.min(this.total, Math.max(this.done, done));
    if (!this.report) return;
    const step = Math.max(1, Math.floor(this.total / 100));
    if (this.done === this.total || this.done - this.lastReported >= step) {
      this.lastReported = this.done;
      this.report(this.done, this.total);
    }
  }

  finish(): void {
    this.jumpTo(this.total);
  }
}
