/**
 * The bug bundle: one deterministic zip of a session (rendered reports, the existing bundle's JSON files, the
 * images and a snapshot of the log), written to a temp name and renamed, so no half-written zip is left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type BundleFileName, bundleFileList } from '../contract/bundle-files.js';
import type { MaskRule } from '../mask/types.js';
import { describeFsError } from '../paths/disk-errors.js';
import { isPortableDirName, LOG_FILE, parseSessionDirName, sessionDirName } from '../paths/naming.js';
import {
  pageChunks,
  type ReportHtmlOptions,
  type ReportHtmlPage,
  renderReportHtmlParts,
} from '../report/html/render-html.js';
import { REPORT_HTML_FILE } from '../report/html/write-report.js';
import type { PlayerModel } from '../report/player/model.js';
import { readPlayerModel } from '../report/player/read-model.js';
import { renderBugReport, renderFailureSummary } from '../report/render.js';
import { buildSummary } from '../report/summary.js';
import type { ImageLeftOut, SessionSummary, Verdict } from '../report/types.js';
import { moveIntoPlace, tempNameFor } from '../report/write-atomic.js';
import type { CallRow, SessionRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import {
  expectArray,
  expectBoolean,
  expectFunction,
  expectNonEmptyString,
  expectNumber,
  expectObject,
  expectOptions,
  expectString,
} from '../util/expect.js';
import { makeTempDir, removeBestEffort, removeDeadPartials } from '../util/temp-files.js';
import { CheckedRunGif } from './checked-run-gif.js';
import { bundleDb } from './db-snapshot.js';
import {
  byPath,
  type DroppedFile,
  environmentJson,
  LEFT_OUT_WORDS,
  MANIFEST_VERSION,
  manifestJson,
  sessionJson,
} from './documents.js';
import {
  chooseImagesToDrop,
  type ImageFile,
  imageFault,
  isPrecompressed,
  listImageFiles,
  PNG_ENDS,
  protectedImages,
  type SkippedFile,
} from './images.js';
import { type BundleMasking, maskedSessionView } from './masked-view.js';
import { preloadRunGifDecoder, RUN_GIF_FILE, type RunGif } from './run-gif.js';
import { entryOverhead, estimateZipBytes } from './size-estimate.js';
import { type ToolCallLog, ToolCallLogFile } from './tool-call-log.js';
import { packageVersion } from './version.js';
import { type EntryEnds, type EntryHash, writeZip, type ZipEntry, type ZipSource } from './zip.js';
import { zipEntries as entriesOfZip, entryName, openZip } from './zip-read.js';

/** Options of buildBundle. */
export interface BundleOptions {
  /** Where to write the zip (a file, or an existing directory); default `<sessions dir>/<session dir name>.zip`. */
  output?: string;
  /** Include the images of `artifacts/` (default true). */
  images?: boolean;
  /** Include the session.sqlite snapshot (default true). */
  db?: boolean;
  /** Write run.gif, the run with the agent's actions drawn in, shown by bug-report.md (default true). */
  gif?: boolean;
  /** Drop the oldest images (never the key ones) until the zip fits. */
  maxBytes?: number;
  /** Folder whose templates override the built-in ones by file name. */
  templatesDir?: string;
  /** Also write the zip's report.html into the session dir, beside its artifacts/ (default false). */
  reportHtmlInSessionDir?: boolean;
  /** Progress in work units (calls, then files). */
  onProgress?: (done: number, total: number) => void;
  /**
   * Mask rules applied to the session's images while bundling (`--mask-rules FILE`), on top of the masks
   * stored with each image; the session dir is not changed (see masked-view.ts).
   */
  maskRules?: MaskRule[];
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
  /** Whether the zip fits `maxBytes`; null when no limit was asked for. */
  limitMet: boolean | null;
  /** The session dir's copy of report.html (`reportHtmlInSessionDir`), null when not asked for or not written. */
  reportHtml: string | null;
}

/** What `mcec-bundle <id> --json` prints and the MCP tool bundle answers (`schema/bundle-result.schema.json`). */
export function bundleResultJson(r: BundleResult) {
  const { bundle, sessionId, bytes, files, verdict, dropped, limitMet, reportHtml, warnings } = r;
  return { bundle, sessionId, bytes, files, verdict, dropped, limitMet, reportHtml, warnings };
}

/** zlib level for the log snapshot: it is most of the bytes, and level 6 costs 3x the time for ~10% size. */
const DB_LEVEL = 3;
/** Rewrites allowed when the estimated size was not enough to meet --max-bytes. */
const MAX_SIZE_ROUNDS = 4;

/** A file of the bundle's temp dir. */
interface TempFile {
  file: string;
  size: number;
}

/** tool-calls.jsonl's facts, its bytes in `file`. */
type LogFacts = Omit<ToolCallLog, 'data'> & TempFile;

/** Everything read from the log, before anything is written. */
interface SessionFacts {
  session: SessionRow;
  summary: SessionSummary;
  /** tool-calls.jsonl, written as report.html's plan reads the calls (one pass over the log for both). */
  log: Promise<LogFacts>;
  images: ImageFile[];
  skipped: SkippedFile[];
  /** Images a size cap must keep. */
  keep: Set<string>;
  /** report.html, planned while the zip's earlier entries are written, and streamed into it. */
  report: ReportStream;
  /** Set when the session is still being recorded (its writer alive): the bundle is a snapshot of it. */
  stillRecording: string | null;
  /** run.gif, drawn from the start (its own pass over the log) while report.html is planned; null when none. */
  gif: CheckedRunGif | null;
  /** Why run.gif could not be made, once it is known (a warning, not a failed bundle). */
  gifProblem: string[];
}

/** Images left out of one write of the zip: to meet --max-bytes, and found not to be the log's (`mismatch`, `damaged`). */
interface LeftOut {
  cap: readonly ImageFile[];
  faults: readonly DroppedFile[];
}

/** What one write of the zip is made of. */
interface Layout {
  included: ImageFile[];
  entries: ZipEntry[];
  manifest: (hashes: ReadonlyMap<string, { bytes: number; sha256: string }>) => Promise<Buffer>;
}

/** A text file of the zip: its bytes, or a promise of them (or of a temp file holding them). */
interface BundleText {
  name: BundleFileName;
  data: Buffer | Promise<Buffer | TempFile>;
}

/** Everything a round of writing needs: the session's facts, the rendered documents, the options. */
interface BundlePlan {
  /** Where the bundle's files are read: the session dir, or its masked view in the temp dir. */
  dir: string;
  /** The session dir itself: where the zip goes by default, and report.html when asked. */
  home: string;
  masking: BundleMasking;
  top: string;
  facts: SessionFacts;
  texts: BundleText[];
  /**
   * failure-summary.md and bug-report.md, which name (not link) the images the zip lacks: one pair per write,
   * told how many images it holds and which the log names that it does not.
   */
  documents: (images: {
    inZip: number;
    leftOut: readonly ImageLeftOut[];
    gif: Promise<RunGif | null> | null;
  }) => Array<{
    name: BundleFileName;
    data: Promise<Buffer>;
  }>;
  dbFile: string | null;
  images: ImageFile[];
  dropped: DroppedFile[];
  /** run.gif (made while the zip's first entries are written, again without an image found faulty); null when none. */
  gif: CheckedRunGif | null;
  /** Why run.gif could not be made, once it is known (a warning, not a failed bundle). */
  gifProblem: string[];
  options: BundleOptions & { withImages: boolean; withDb: boolean; withGif: boolean };
}

/** Build the bug bundle of the session in `sessionDir`. */
export async function buildBundle(sessionDir: string, options: BundleOptions = {}): Promise<BundleResult> {
  expectNonEmptyString(sessionDir, 'sessionDir');
  const o = expectOptions(options);
  expectString(o.output, 'options.output', { nonEmpty: true });
  expectNumber(o.maxBytes, 'options.maxBytes', { min: 1, integer: true });
  expectString(o.templatesDir, 'options.templatesDir', { nonEmpty: true });
  for (const key of ['images', 'db', 'gif', 'reportHtmlInSessionDir'])
    expectBoolean(o[key], `options.${key}`);
  expectFunction(o.onProgress, 'options.onProgress');
  expectArray(o.maskRules, 'options.maskRules', expectObject);
  const dir = path.resolve(sessionDir);
  if (!fs.existsSync(path.join(dir, LOG_FILE))) throw new Error(`${dir}: not a session dir (no ${LOG_FILE})`);
  if (options.output !== undefined) refuseOutputInSession(dir, options.output);
  const tmpDir = makeTempDir('mcec-bundle');
  let opened: SessionFacts | null = null;
  // run.gif and bug-report.md, drawn into tmpDir in the background.
  const drawing: Array<Promise<unknown>> = [];
  try {
    const progress = new Progress(options.onProgress);
    // Masks still to paint (mask mode on-export, new rules): the bundle reads a masked view of the session.
    const view = await maskedSessionView(dir, tmpDir, options.maskRules ?? []);
    const source = view.dir ?? dir;
    const facts = await readSession(source, tmpDir, progress, {
      templatesDir: options.templatesDir,
      withGif: options.gif !== false,
      drawing,
    });
    opened = facts;
    const plan = {
      ...(await planBundle(source, tmpDir, facts, options, progress)),
      home: dir,
      masking: view.masking,
    };
    return await writeBundle(plan, progress);
  } finally {
    // A failed bundle may leave run.gif still being drawn into tmpDir: wait for it, so its files are closed.
    // Only cleanup: a removal Windows refuses (an antivirus scan) never fails the bundle or hides its error.
    await Promise.allSettled(drawing);
    await opened?.report.release();
    removeBestEffort(tmpDir);
  }
}

/** The documents rendered, the log snapshot taken, what is left out by the options. */
async function planBundle(
  dir: string,
  tmpDir: string,
  facts: SessionFacts,
  options: BundleOptions,
  progress: Progress,
): Promise<BundlePlan> {
  const withImages = options.images !== false;
  const withDb = options.db !== false;
  const withGif = options.gif !== false;
  const { session, summary } = facts;
  const top = topFolderName(dir, session);
  const { gif, gifProblem } = facts;
  const { templatesDir } = options;
  // Rendered for each write of the zip, with the images it leaves out; bug-report.md also shows run.gif (being
  // drawn since the log was opened), so it is rendered once that is known.
  const documents: BundlePlan['documents'] = ({ inZip, leftOut: imagesLeftOut, gif }) => [
    {
      name: 'failure-summary.md',
      data: renderFailureSummary(summary, { templatesDir, imagesLeftOut }).then(utf8),
    },
    {
      name: 'bug-report.md',
      data: (gif ?? Promise.resolve(null)).then(async (made) =>
        utf8(
          await renderBugReport(summary, {
            templatesDir,
            imagesLeftOut,
            bundleName: defaultZipName(dir),
            runGif: made ? { path: RUN_GIF_FILE, frames: made.frames } : null,
            bundleFiles: bundleFileList({
              images: inZip > 0,
              gif: made !== null,
              db: withDb,
            }),
          }),
        ),
      ),
    },
  ];
  progress.step();
  const dropped: DroppedFile[] = facts.skipped.map(({ path: p, bytes, reason, detail }) => ({
    path: p,
    bytes,
    reason: reason ?? 'unreadable',
    detail,
  }));
  let dbFile: string | null = null;
  if (withDb) dbFile = bundleDb(dir, tmpDir).file;
  else dropped.push({ path: LOG_FILE, bytes: fs.statSync(path.join(dir, LOG_FILE)).size, reason: 'no-db' });
  progress.step();
  if (!withImages) {
    for (const img of facts.images) dropped.push({ path: img.path, bytes: img.bytes, reason: 'no-images' });
  }
  const texts: BundlePlan['texts'] = [
    { name: 'tool-calls.jsonl', data: facts.log },
    { name: 'environment.json', data: jsonBuffer(environmentJson(summary, session.recorder_version)) },
  ];
  const images = withImages ? facts.images : [];
  return {
    dir,
    home: dir,
    masking: { mode: 'before-write', paintedWhileBundling: 0, bundleRules: 0, notDecodable: 0 },
    top,
    facts,
    texts,
    documents,
    dbFile,
    images,
    dropped,
    gif,
    gifProblem,
    options: { ...options, withImages, withDb, withGif },
  };
}

/** The zip's entries and manifest when `leftOut` images are not in it; `copy` gets report.html too. */
function layout(
  plan: BundlePlan,
  leftOut: LeftOut,
  met: boolean | null,
  copy: SessionReportCopy | null,
): Layout {
  const { top, facts, options } = plan;
  const { summary, log } = facts;
  const faulty = new Set(leftOut.faults.map((d) => d.path));
  const included = plan.images.filter((img) => !leftOut.cap.includes(img) && !faulty.has(img.path));
  const dropped = droppedFiles(plan, leftOut);
  const sessionDoc = log.then((l) => ({
    buffer: jsonBuffer(
      sessionJson(summary, {
        artifacts: included.map((img) => img.path),
        toolCallLogTruncated: l.truncated || summary.counts.droppedPayloads > 0,
      }),
    ),
  }));
  // The images the log names that this write lacks: each document (report.html too) names them with why.
  const leftOutImages = imagesLeftOut(dropped);
  const gif = plan.gif?.made() ?? null;
  const texts = [...plan.texts, ...plan.documents({ inZip: included.length, leftOut: leftOutImages, gif })];
  const entries = zipEntries(top, texts, included, plan.dbFile);
  entries.push({ name: inBundle(top, 'session.json'), source: sessionDoc, compress: true });
  entries.push({
    name: inBundle(top, REPORT_HTML_FILE),
    source: { stream: () => facts.report.chunks(copy, leftOutImages) },
    compress: true,
  });
  if (gif) {
    entries.push({
      name: inBundle(top, RUN_GIF_FILE),
      source: gif.then((g): ZipSource => (g ? { file: g.file, size: g.bytes } : { none: true })),
      compress: false,
    });
  }
  entries.sort(byName);
  // Each later source is awaited at its turn (in the zip or the estimate), and fails it there; a failed page
  // plan rejects them all at once, before that turn, which is not "unhandled".
  for (const e of entries) if (e.source instanceof Promise) e.source.catch(() => undefined);
  const manifest = async (
    hashes: ReadonlyMap<string, { bytes: number; sha256: string }>,
  ): Promise<Buffer> => {
    const { lines, calls, truncated, imagesRedacted } = await log;
    const made = gif ? await gif : null;
    return jsonBuffer(
      manifestJson({
        manifestVersion: MANIFEST_VERSION,
        bundle: top,
        sessionId: summary.sessionId,
        generator: { name: 'mcec-recorder', version: packageVersion() },
        files: [...hashes].map(([name, h]) => ({ path: name.slice(top.length + 1), ...h })),
        dropped,
        options: {
          images: options.withImages,
          db: options.withDb,
          maxBytes: options.maxBytes ?? null,
          gif: options.withGif,
        },
        runGif: made ? { frames: made.frames, width: made.width, height: made.height } : null,
        toolCallLog: { lines, calls, truncated, imagesRedacted },
        limit: options.maxBytes === undefined ? null : { maxBytes: options.maxBytes, met: met ?? true },
        masking: plan.masking,
      }),
    );
  };
  return { included, entries, manifest };
}

/**
 * Write the zip under a temp name and rename it. Under --max-bytes: estimate, drop the oldest droppable
 * images, write; drop more and rewrite when the estimate fell short.
 */
async function writeBundle(plan: BundlePlan, progress: Progress): Promise<BundleResult> {
  const { top, facts, options } = plan;
  const { maxBytes } = options;
  const output = resolveOutput(plan.home, options.output);
  await refuseReplacingAnotherBundle(output, top);
  fs.mkdirSync(path.dirname(output), { recursive: true });
  removeDeadPartials(path.dirname(output)); // what killed runs left beside their bundles
  progress.expect(plan.images.length + plan.texts.length + 2 + 4); // + failure-summary.md, bug-report.md
  const warnings: string[] = plan.facts.stillRecording ? [plan.facts.stillRecording] : [];
  let capDrops = maxBytes === undefined ? [] : await firstCapDrops(plan, maxBytes);
  // Images the zip writer found not to be the log's (it hashes each one anyway): the zip is written again
  // without them, so the documents of the bundle kept do not link them.
  let faults: DroppedFile[] = [];
  let met: boolean | null = null;
  let tmp: string | null = null;
  let copy: SessionReportCopy | null = null;
  try {
    for (let round = 0; ; round++) {
      copy?.abort();
      copy = options.reportHtmlInSessionDir ? SessionReportCopy.open(plan.home, warnings) : null;
      const leftOut = { cap: capDrops, faults };
      const { included, entries, manifest } = layout(plan, leftOut, met, copy);
      if (tmp) removeBestEffort(tmp);
      tmp = tempNameFor(output);
      const { bytes, hashes, ends } = await writeZip(
        tmp,
        entries,
        { name: inBundle(top, 'manifest.json'), build: manifest },
        { mtime: new Date(facts.summary.startedAt), onEntry: () => progress.step() },
      );
      const found = imageFaults(top, included, hashes, ends);
      // run.gif shows only images checked to be the log's: drawn again without one that is not.
      const faulty = new Set(found.map((d) => d.path));
      const redrawn = plan.gif ? await plan.gif.keepToChecked(included, faulty) : false;
      if (found.length > 0 || redrawn) {
        faults = [...faults, ...found];
        continue;
      }
      if (maxBytes !== undefined && bytes > maxBytes) {
        const droppable = included.filter((img) => !facts.keep.has(img.path));
        if (droppable.length > 0 && round < MAX_SIZE_ROUNDS) {
          const more = chooseImagesToDrop(droppable, new Set(), bytes, maxBytes, (img) =>
            entryOverhead(`${top}/${img.path}`),
          );
          capDrops = [...capDrops, ...(more.length > 0 ? more : droppable.slice(0, 1))];
          continue;
        }
        if (met === null) {
          met = false; // write it once more, with the manifest saying the cap was not met
          continue;
        }
        const heavy = (name: typeof RUN_GIF_FILE | 'session.sqlite') =>
          hashes.get(inBundle(top, name))?.bytes;
        warnings.push(
          overCapWarning(bytes, maxBytes, droppable.length, capDrops.length, {
            gif: heavy(RUN_GIF_FILE),
            db: heavy('session.sqlite'),
          }),
        );
      }
      // An older zip of the same name may be open in a zip viewer (Windows refuses the rename over it).
      moveIntoPlace(tmp, output);
      tmp = null;
      const dropped = droppedFiles(plan, leftOut).sort(byPath);
      warnings.push(...leftOutWarnings(dropped), ...plan.gifProblem);
      const reportHtml = copy ? copy.commit(warnings) : null;
      copy = null;
      progress.finish();
      return {
        bundle: output,
        bytes,
        files: entries.length + 1,
        dropped,
        verdict: facts.summary.verdict,
        sessionId: facts.summary.sessionId,
        warnings,
        limitMet: maxBytes === undefined ? null : bytes <= maxBytes,
        reportHtml,
      };
    }
  } finally {
    copy?.abort();
    if (tmp) removeBestEffort(tmp);
  }
}

/** The oldest droppable images to leave out so the estimated zip fits `maxBytes`. */
async function firstCapDrops(plan: BundlePlan, maxBytes: number): Promise<ImageFile[]> {
  const { included, entries } = layout(plan, { cap: [], faults: [] }, null, null);
  const estimate = await estimateZipBytes(entries, plan.images.length + plan.dropped.length + 1);
  return chooseImagesToDrop(included, plan.facts.keep, estimate, maxBytes, (img) =>
    entryOverhead(`${plan.top}/${img.path}`),
  );
}

/**
 * Why the zip is still over the cap. run.gif and session.sqlite are never dropped for it (only images are):
 * named with their sizes when the zip holds them, so the user sees what else would make it fit.
 */
function overCapWarning(
  bytes: number,
  maxBytes: number,
  droppable: number,
  dropped: number,
  kept: { gif: number | undefined; db: number | undefined },
): string {
  const others = [
    kept.gif === undefined ? null : `${RUN_GIF_FILE} (${kept.gif} bytes; --no-gif leaves it out)`,
    kept.db === undefined ? null : `session.sqlite (${kept.db} bytes; --no-db leaves it out)`,
  ].filter((x) => x !== null);
  return (
    `the bundle is ${bytes} bytes, over --max-bytes ${maxBytes}: ` +
    (droppable === 0
      ? 'only the images that must stay (the last observation, the failing call) and the text files are left'
      : `still over after dropping ${dropped} images`) +
    (others.length > 0 ? `; it also holds ${others.join(' and ')}` : '')
  );
}

/** What readSession is asked for besides the log. */
interface ReadOptions {
  templatesDir?: string;
  /** Draw run.gif (when the session has two still images or more). */
  withGif: boolean;
  /** Work drawn into the temp dir in the background, waited for before it is removed (run.gif joins it). */
  drawing: Array<Promise<unknown>>;
}

/**
 * Read what the bundle needs from the log; the connection stays open until report.html is written. run.gif
 * starts here, before the page's rows: the player's model on a pass of its own, then sharp draws the frames
 * while the rows are measured; the page is handed the same model.
 */
async function readSession(
  dir: string,
  tmpDir: string,
  progress: Progress,
  read: ReadOptions,
): Promise<SessionFacts> {
  const reader = SessionReader.open(dir);
  let streaming = false;
  try {
    const session = reader.session();
    progress.expect(reader.callCount() + 2);
    const rows = reader.artifacts();
    const { images, skipped } = listImageFiles(dir, rows);
    const drawsGif = read.withGif && stillImages(images) >= 2;
    // sharp's import (~200 ms) goes on while the summary and the model are read.
    if (drawsGif) preloadRunGifDecoder();
    const summary = await buildSummary(reader);
    const keep = protectedImages(summary, rows);
    const gifProblem: string[] = [];
    let player: PlayerModel | null = null;
    let lines: Map<number, string> | undefined;
    let gif: CheckedRunGif | null = null;
    if (drawsGif) {
      // The calls' summary lines are made on this pass too, so the page's rows pass parses no call's JSON again;
      // not while a writer may rewrite a row between the passes (a late answer replaces a timed-out call's row).
      const writable = summary.status === 'open' || summary.openElsewhere !== null;
      const made = writable ? undefined : new Map<number, string>();
      try {
        player = readPlayerModel(reader, summary, made);
        lines = made;
      } catch (err) {
        // No GIF; the page collects its model on its rows pass, and fails there if it must.
        gifProblem.push(`run.gif was not written: ${errorMessage(err)}`);
      }
    }
    if (player) {
      gif = new CheckedRunGif(
        dir,
        player,
        tmpDir,
        skipped.map((s) => s.path),
        new Map(images.map((img) => [img.path, img])),
        (drawing) => read.drawing.push(drawing),
        (problem) => gifProblem.push(problem),
      );
    }
    const log = new ToolCallLogFile(reader, session.session_id, path.join(tmpDir, 'tool-calls.jsonl'), {
      onCall: () => progress.step(),
    });
    // 'open' only while a writer may still run (a dead writer's session reads as 'aborted').
    const live = summary.status === 'open' ? reader.liveWriters()[0] : undefined;
    const stillRecording =
      summary.status === 'open'
        ? `the session is still being recorded${live ? ` (pid ${live.pid} on ${live.host})` : ''}: the bundle holds its calls up to now; bundle it again once the run ended`
        : null;
    const report = new ReportStream(
      reader,
      summary,
      { templatesDir: read.templatesDir },
      tmpDir,
      log,
      player,
      lines,
    );
    streaming = true;
    return {
      session,
      summary,
      log: report.log,
      images,
      skipped,
      keep,
      report,
      stillRecording,
      gif,
      gifProblem,
    };
  } finally {
    if (!streaming) reader.close();
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * report.html for the zip: planned at once (rows measured, thumbnails made, while the images are zipped), then
 * streamed row by row each time the zip asks for it. The reader stays open until `release`.
 */
class ReportStream {
  private readonly page: Promise<ReportHtmlPage>;
  /** tool-calls.jsonl, complete once the plan has read every call. */
  readonly log: Promise<LogFacts>;

  /**
   * `player`: the player's model when read already (run.gif's pass), else the rows pass collects it; `lines`:
   * the calls' summary lines made on that pass, if any.
   */
  constructor(
    private readonly reader: SessionReader,
    summary: SessionSummary,
    options: ReportHtmlOptions,
    spoolDir: string,
    log: ToolCallLogFile,
    player: PlayerModel | null,
    lines: ReadonlyMap<number, string> | undefined,
  ) {
    let ended: (facts: LogFacts) => void = () => undefined;
    let failed: (err: unknown) => void = () => undefined;
    this.log = new Promise<LogFacts>((resolve, reject) => {
      ended = resolve;
      failed = reject;
    });
    // The log is complete as soon as the plan has read the last call (before the bodies are shared out).
    const callRows = {
      add: (row: CallRow) => log.add(row),
      end: () => {
        try {
          ended({ ...log.end(), file: log.file });
        } catch (err) {
          failed(err);
        }
      },
    };
    this.page = renderReportHtmlParts(reader, summary, options, {
      keepRows: false,
      spoolDir,
      callRows,
      ...(player ? { player } : {}),
      ...(lines ? { lines } : {}),
    });
    this.page.catch((err: unknown) => {
      log.abort();
      failed(err);
    });
    // A failed plan fails the zip that asks for the page or the log.
    this.log.catch(() => undefined);
  }

  /**
   * The zip's page, which names the images this write of the zip leaves out (`leftOut`) instead of linking
   * them; `copy`, beside the session's images, gets the page that links them all (the same bytes when none is
   * left out).
   */
  async *chunks(copy: SessionReportCopy | null, leftOut: readonly ImageLeftOut[]): AsyncGenerator<Buffer> {
    const page = await this.page;
    if (leftOut.length > 0) {
      if (copy) for (const chunk of pageChunks(page)) copy.write(chunk);
      yield* pageChunks(page.without(leftOut));
      return;
    }
    for (const chunk of pageChunks(page)) {
      copy?.write(chunk);
      yield chunk;
    }
  }

  /** Wait for the plan to settle and close the log. */
  async release(): Promise<void> {
    await this.page.catch(() => undefined);
    this.reader.close();
  }
}

/**
 * The zip's report.html (the same bytes, as they are streamed) into the session dir, where its image links
 * resolve too: a temp file given the name once the zip is written. A session dir that cannot be written (a
 * read-only copy) leaves a warning, not a failed bundle.
 */
class SessionReportCopy {
  private fd: number | null;

  private constructor(
    private readonly file: string,
    private readonly tmp: string,
    fd: number,
    private readonly warnings: string[],
  ) {
    this.fd = fd;
  }

  /** A fresh temp file beside the session's report.html, or null (and a warning) when it cannot be made. */
  static open(dir: string, warnings: string[]): SessionReportCopy | null {
    removeDeadPartials(dir); // what a killed bundle or report left beside the page, as writeFileAtomic does
    const file = path.join(dir, REPORT_HTML_FILE);
    const tmp = tempNameFor(file);
    try {
      return new SessionReportCopy(file, tmp, fs.openSync(tmp, 'wx'), warnings);
    } catch (err) {
      warnings.push(`report.html was not written into the session dir: ${describeFsError(err)}`);
      return null;
    }
  }

  write(chunk: Buffer): void {
    if (this.fd === null) return;
    try {
      fs.writeSync(this.fd, chunk);
    } catch (err) {
      this.warnings.push(`report.html was not written into the session dir: ${describeFsError(err)}`);
      this.abort();
    }
  }

  /** The page is complete: give it its name. Returns its path, or null when it could not be written. */
  commit(warnings: string[]): string | null {
    if (this.fd === null) return null;
    try {
      fs.closeSync(this.fd);
      this.fd = null;
      moveIntoPlace(this.tmp, this.file);
      return this.file;
    } catch (err) {
      warnings.push(`report.html was not written into the session dir: ${describeFsError(err)}`);
      this.abort();
      return null;
    }
  }

  /** Remove the temp file (a failed or superseded write). */
  abort(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    removeBestEffort(this.tmp);
  }
}

/** Images a GIF can show (a `record` GIF is one item of the player, not a frame of run.gif). */
function stillImages(images: readonly ImageFile[]): number {
  return images.filter((img) => !img.path.toLowerCase().endsWith('.gif')).length;
}

function capDropped(img: ImageFile): DroppedFile {
  return { path: img.path, bytes: img.bytes, reason: 'max-bytes' };
}

/** Everything a write leaves out: what the plan did, the images over the size cap, those found faulty. */
function droppedFiles(plan: BundlePlan, leftOut: LeftOut): DroppedFile[] {
  return [...plan.dropped, ...leftOut.faults, ...leftOut.cap.map((img) => capDropped(img))];
}

/**
 * Images the zip writer read that are not what the log recorded: a sha256 no row of the file has (a file
 * replaced by another of the same size), or a `.png` that is not a whole PNG (verify would fail the zip).
 */
function imageFaults(
  top: string,
  included: readonly ImageFile[],
  hashes: ReadonlyMap<string, EntryHash>,
  ends: ReadonlyMap<string, EntryEnds>,
): DroppedFile[] {
  const found: DroppedFile[] = [];
  const none = Buffer.alloc(0);
  for (const img of included) {
    const name = `${top}/${img.path}`;
    const hash = hashes.get(name);
    if (!hash) continue;
    const end = ends.get(name);
    // Ends are kept for a .png only (its check); another file's sha256 is all there is to compare.
    const fault = imageFault(img, hash.sha256, end?.head ?? none, end?.tail ?? none);
    if (fault) found.push(fault);
  }
  return found;
}

/** The images of `dropped` the log names, each with why in bug-report.md's and failure-summary.md's words. */
function imagesLeftOut(dropped: readonly DroppedFile[]): ImageLeftOut[] {
  const out: ImageLeftOut[] = [];
  for (const d of dropped) {
    if (d.reason === 'no-db' || d.reason === 'no-row') continue;
    // Not carried, but the log's capture as far as is known: its thumbnail stays in report.html.
    const thumbnailStays = d.reason === 'no-images' || d.reason === 'max-bytes';
    out.push({ path: d.path, why: LEFT_OUT_WORDS[d.reason], thumbnailStays });
  }
  return out;
}

/** Paths named in a warning before the rest are only counted. */
const WARNING_PATHS = 5;

/** One warning per reason an image the log names is not in the zip because it is not the log's image. */
function leftOutWarnings(dropped: readonly DroppedFile[]): string[] {
  const warnings: string[] = [];
  const what = {
    missing: [
      'is named by the log but not in the session dir',
      'are named by the log but not in the session dir',
    ],
    mismatch: [
      'is not the file the log recorded (another size or sha256)',
      'are not the files the log recorded (another size or sha256)',
    ],
    damaged: ['is not a whole PNG', 'are not whole PNGs'],
  } as const;
  for (const reason of ['missing', 'mismatch', 'damaged'] as const) {
    const paths = dropped.filter((d) => d.reason === reason).map((d) => d.path);
    if (paths.length === 0) continue;
    const named = paths.slice(0, WARNING_PATHS).join(', ');
    const more = paths.length > WARNING_PATHS ? ` and ${paths.length - WARNING_PATHS} more` : '';
    const [one, many] = what[reason];
    warnings.push(
      `${paths.length === 1 ? `1 image ${one}` : `${paths.length} images ${many}`}, left out (dropped: ${reason}): ${named}${more}`,
    );
  }
  return warnings;
}

function utf8(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

/**
 * The zip's top folder: the session dir's own name (a copy's `... (2)` included, so two copies of one session
 * unzip side by side as they were), or `<yyyyMMdd-HHmmss>-<sessionId>` of its log when that name would not
 * unzip everywhere (isPortableDirName).
 */
function topFolderName(dir: string, session: SessionRow): string {
  const base = path.basename(dir);
  if (isPortableDirName(base)) return base;
  return sessionDirName(new Date(session.started_at), session.session_id);
}

/** The zip's file name when none is given: the session dir's own, so a copy's bundle never replaces another's. */
export function defaultZipName(dir: string): string {
  return `${path.basename(dir)}.zip`;
}

/** Thrown when the zip would be written inside a session dir (a usage error: `mcec-bundle` exits 2). */
export class OutputInSessionError extends Error {
  readonly code = 'ERR_OUTPUT_IN_SESSION';
}

/**
 * Refuse an output inside this session's dir or any other session dir (one holding a session.sqlite): the
 * zip could overwrite a log or an artifact, or end up in the next bundle. Symlinks are resolved.
 */
function refuseOutputInSession(sessionDir: string, output: string): void {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const same = (a: string, b: string) =>
    process.platform === 'win32' ? a.toLowerCase() === b.toLowerCase() : a === b;
  const own = real(sessionDir);
  for (let at = path.resolve(output); ; ) {
    const here = real(at);
    const isSession =
      same(here, own) ||
      (parseSessionDirName(path.basename(here)) !== null && fs.existsSync(path.join(here, LOG_FILE)));
    if (isSession) {
      throw new OutputInSessionError(
        `the output ${output} is inside the session dir ${here}: it could overwrite the session's log; write the bundle elsewhere`,
      );
    }
    const up = path.dirname(at);
    if (up === at) return;
    at = up;
  }
}

/** Thrown when the output is a bundle of another session dir (`mcec-bundle` exits 1, the zip left as it was). */
export class OutputOfAnotherBundleError extends Error {
  readonly code = 'ERR_OUTPUT_OF_ANOTHER_BUNDLE';
}

/**
 * Refuse to replace a zip whose top folder is another session dir's (two copies of one session bundled to one
 * name would leave only the last one's verdict, silently). A file that is not a readable zip is replaced.
 */
async function refuseReplacingAnotherBundle(output: string, top: string): Promise<void> {
  if (!fs.statSync(output, { throwIfNoEntry: false })?.isFile()) return;
  let theirs: string | null = null;
  try {
    const zip = await openZip(output);
    try {
      for await (const entry of entriesOfZip(zip)) {
        theirs = entryName(entry).split('/')[0] ?? null;
        break;
      }
    } finally {
      zip.close();
    }
  } catch {
    return; // not a zip we can read: nothing of another session's to keep
  }
  if (theirs === null || theirs === top) return;
  throw new OutputOfAnotherBundleError(
    `${output} is the bundle of ${JSON.stringify(theirs)}, not of this session dir ${JSON.stringify(top)}; ` +
      `left as it is: remove it first or write this bundle elsewhere (-o)`,
  );
}

function resolveOutput(dir: string, output: string | undefined): string {
  if (output === undefined) return path.join(path.dirname(dir), defaultZipName(dir));
  const abs = path.resolve(output);
  // `-o out/` names a directory, even one that does not exist yet.
  if (output.endsWith('/') || output.endsWith(path.sep)) return path.join(abs, defaultZipName(dir));
  try {
    if (fs.statSync(abs).isDirectory()) return path.join(abs, defaultZipName(dir));
  } catch {
    // not there yet: a file name
  }
  return abs;
}

function jsonBuffer(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`, 'utf8');
}

/** Zip entries of the files and documents (report.html is added by the caller, which sorts them). */
function zipEntries(
  top: string,
  texts: readonly BundleText[],
  images: readonly ImageFile[],
  dbFile: string | null,
): ZipEntry[] {
  const entries: ZipEntry[] = [
    ...texts.map((t) => ({
      name: inBundle(top, t.name),
      source: Buffer.isBuffer(t.data)
        ? { buffer: t.data }
        : t.data.then(
            (f): ZipSource => (Buffer.isBuffer(f) ? { buffer: f } : { file: f.file, size: f.size }),
          ),
      compress: true,
    })),
    ...images.map((img) => ({
      name: `${top}/${img.path}`,
      source: { file: img.file, size: img.bytes },
      compress: !isPrecompressed(img.path),
      // Checked once written (`imageFaults`): verify fails a .png that is not whole.
      ...(img.path.toLowerCase().endsWith('.png') ? { keepEnds: PNG_ENDS } : {}),
    })),
  ];
  if (dbFile) {
    entries.push({
      name: inBundle(top, LOG_FILE),
      source: { file: dbFile, size: fs.statSync(dbFile).size },
      compress: true,
      level: DB_LEVEL,
    });
  }
  return entries;
}

/** A file's entry name in the zip: only a file `BUNDLE_FILES` lists (src/contract/bundle-files.ts) typechecks. */
function inBundle(top: string, name: BundleFileName): string {
  return `${top}/${name}`;
}

/** Sorted path order, by code unit (the manifest is appended last by writeZip). */
function byName(a: ZipEntry, b: ZipEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Progress in work units (calls, then zip entries), reported at most every 1% so a callback cannot slow the
 * build down. The total grows as the work becomes known.
 */
class Progress {
  private done = 0;
  private total = 0;
  private lastReported = -1;

  constructor(private readonly report: ((done: number, total: number) => void) | undefined) {}

  /** More units of work are coming. */
  expect(units: number): void {
    this.total += units;
  }

  step(): void {
    this.done = Math.min(this.total, this.done + 1);
    if (!this.report) return;
    const every = Math.max(1, Math.floor(this.total / 100));
    if (this.done - this.lastReported >= every) {
      this.lastReported = this.done;
      this.report(this.done, this.total);
    }
  }

  finish(): void {
    this.done = this.total;
    if (this.lastReported !== this.done) this.report?.(this.done, this.total);
    this.lastReported = this.done;
  }
}
