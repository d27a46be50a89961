import { formatPointer, parseImageDataUri } from '../contract/image-bytes.js';
import type {
  BlankCheck,
  CaptureSummary,
  ImageBytesLocation,
  MaskedRegion,
  Violation,
} from '../contract/types.js';
import { isRecord } from '../util/json.js';
import { type ArtifactStore, failed, type SavedImage } from './artifact-store.js';
import type { HostFileRole } from './host-files.js';
import { decodeBase64Fast, MIME_TYPE } from './image-file.js';
import { cloneJson, getAt, JSON_MARKER, nestedJsonAt, pointerLevels, setAt } from './json-pointer.js';

/** Where an image was found, for the `artifacts` table (host-* roles: a file named by a path on the MCEC host). */
export type ImageRole =
  | 'result'
  | 'partialResult'
  | 'lastObservation'
  | 'image-block'
  | 'nested'
  | HostFileRole;

/** An image about to be saved, as a masker sees it. */
export interface ImageToMask {
  bytes: Buffer;
  /** The object that held it (a capture result, a capture-summary's container), when there is one. */
  container?: Record<string, unknown>;
  role: ImageRole;
}

/** What a masker decided: bytes to save instead (painted), the regions, or why nothing may be stored. */
export interface MaskOutcome {
  bytes?: Buffer;
  masked?: MaskedRegion[];
  /** The original is kept (mask mode on-export): `masked` is painted when it leaves the machine. */
  onExport?: boolean;
  /** The image had to be masked and could not be: it is not stored (the summary's artifactError). */
  refuse?: string;
}

/**
 * Masks an image before it is written (src/mask, wired by the recorder): artifacts writes what it gets back,
 * so an unmasked secret never reaches the disk.
 */
export type ImageMasker = (image: ImageToMask) => Promise<MaskOutcome>;

/** The masks an image got (see MaskOutcome). */
export interface MaskFacts {
  /** The regions masked in the file. */
  masked?: MaskedRegion[];
  /** True when the file is the original and `masked` is painted on export. */
  maskedOnExport?: boolean;
}

/** One image taken out of a value. */
export interface CompactedImage extends SavedImage, MaskFacts {
  role: ImageRole;
  /** JSON pointer (with `#json` markers) of the string that held the bytes (or, for a host file, its path). */
  jsonPath: string;
  /** For a host file: its path on the MCEC host, as the envelope gave it. */
  hostPath?: string;
}

export interface CompactResult {
  /** A deep copy of the input with every located image replaced by a capture summary. */
  value: unknown;
  images: CompactedImage[];
  violations: Violation[];
}

/** A declared size as a non-negative integer (0 when absent or nonsense). */
function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

function finiteNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The declared blankCheck when it has the server's shape. */
function declaredBlankCheck(v: unknown): BlankCheck | undefined {
  if (!isRecord(v)) return undefined;
  const f = v.dominantFraction;
  if (typeof v.blank !== 'boolean' || typeof f !== 'number' || !(f >= 0 && f <= 1)) return undefined;
  return {
    blank: v.blank,
    dominantFraction: f,
    dominantIsDark: v.dominantIsDark === true,
  };
}

/**
 * The capture summary standing for `image`: declared `window`/`handle`/`file` kept from the container,
 * width/height/bytes/encoding from the real image when it was readable (declared values otherwise),
 * the declared blankCheck (else the computed one), and `artifact` (`artifactPath` overrides the image's
 * relative path, e.g. with an absolute one for the agent) or `artifactError`.
 */
export function captureSummaryOf(
  container: Record<string, unknown> | undefined,
  image: SavedImage & MaskFacts,
  artifactPath?: string,
): CaptureSummary {
  const c = container ?? {};
  // Key order follows the server's capture-summary: kind, window, handle, sizes, blankCheck, file, artifact.
  const summary = { kind: 'capture-summary' } as CaptureSummary;
  // Declared values are kept only in the schema's types (schema/capture-summary.schema.json).
  if (isRecord(c.window) || c.window === null) summary.window = c.window as CaptureSummary['window'];
  if (Object.hasOwn(c, 'handle')) summary.handle = Number.isInteger(c.handle) ? (c.handle as number) : null;
  summary.width = image.width ?? count(c.width);
  summary.height = image.height ?? count(c.height);
  summary.encoding =
    image.format ?? image.mimeType ?? (typeof c.encoding === 'string' && c.encoding ? c.encoding : 'unknown');
  summary.bytes = image.bytes > 0 ? image.bytes : count(c.bytes);
  summary.blankCheck = declaredBlankCheck(c.blankCheck) ?? image.blankCheck ?? null;
  if (typeof c.file === 'string' || c.file === null) summary.file = c.file;
  const artifact = artifactPath ?? image.path;
  if (artifact !== undefined && image.error === undefined) summary.artifact = artifact;
  else summary.artifactError = image.error ?? 'no artifact written';
  if (image.sha256) summary.sha256 = image.sha256;
  // Kept as they came, never decoded: the 0 x 0 and the null blankCheck are not facts about a blank image.
  if (image.notRaster) summary.notRaster = true;
  if (image.masked && image.masked.length > 0) {
    summary.masked = image.masked;
    if (image.maskedOnExport) summary.maskedOnExport = true;
  }
  return summary;
}

/** The role of an image from where it sat. */
export function roleOf(jsonPath: string, form: ImageBytesLocation['form']): ImageRole {
  const levels = pointerLevels(jsonPath);
  // An envelope carried as the text block of a CallToolResult is not "nested": judge it by its inner path.
  let level = 0;
  while (level < levels.length - 1) {
    const segs = levels[level]!;
    const n = segs.length;
    const isTextBlock =
      n >= 3 && segs[n - 3] === 'content' && /^\d+$/.test(segs[n - 2]!) && segs[n - 1] === 'text';
    if (!isTextBlock) return 'nested';
    level++;
  }
  if (form === 'image-block') return 'image-block';
  const segs = levels[level]!;
  if (segs[0] === 'error' && segs[1] === 'partialResult') return 'partialResult';
  if (segs[0] === 'error' && segs[1] === 'lastObservation') return 'lastObservation';
  return 'result';
}

interface Entry {
  loc: ImageBytesLocation;
  /** Remaining levels, relative to the document being processed. */
  levels: string[][];
}

interface Job {
  entry: Entry;
  /** Full pointer of the thing replaced (container or string), for violations. */
  replacedPointer: string;
  /** Segments (in the current document) of the thing replaced. */
  replaceSegments: string[];
  container: Record<string, unknown> | undefined;
  kind: 'capture' | 'image-block' | 'string';
  saved?: SavedImage;
  buffer?: Buffer;
  /** What stood between `data:` and `,` of a data: URI replaced in place (`image/svg+xml;base64`). */
  dataUri?: string;
  mask?: MaskOutcome;
}

function sameEncoding(declared: string, format: string): boolean {
  const d = declared.toLowerCase();
  return d === format || (format === 'jpeg' && d === 'jpg');
}

/** Violations: declared sizes or types that disagree with the real image. */
function declaredMismatches(job: Job, image: SavedImage, out: Violation[]): void {
  if (image.width === undefined || image.height === undefined || !image.format) return;
  const c = job.container;
  const at = job.replacedPointer;
  if (job.kind === 'capture' && c) {
    const w = finiteNumber(c.width);
    const h = finiteNumber(c.height);
    const b = finiteNumber(c.bytes);
    if (w !== undefined && w !== image.width)
      out.push({ path: `${at}/width`, message: `declared width ${w} but the image is ${image.width} wide` });
    if (h !== undefined && h !== image.height)
      out.push({
        path: `${at}/height`,
        message: `declared height ${h} but the image is ${image.height} high`,
      });
    if (b !== undefined && b !== image.bytes && !job.mask?.bytes)
      out.push({ path: `${at}/bytes`, message: `declared bytes ${b} but the image has ${image.bytes}` });
    if (typeof c.encoding === 'string' && !sameEncoding(c.encoding, image.format))
      out.push({
        path: `${at}/encoding`,
        message: `declared encoding ${c.encoding} but the image is ${image.format}`,
      });
  } else if (job.kind === 'image-block' && c && typeof c.mimeType === 'string') {
    if (c.mimeType.toLowerCase() !== MIME_TYPE[image.format])
      out.push({
        path: `${at}/mimeType`,
        message: `declared ${c.mimeType} but the image is ${image.format}`,
      });
  }
}

/** Kind of replacement and the segments replaced, from the location's form and key. */
function planJob(doc: unknown, entry: Entry, prefix: string): Job | undefined {
  const segs = entry.levels[0]!;
  const holder = getAt(doc, segs);
  if (typeof holder !== 'string') return undefined;
  const parentSegs = segs.slice(0, -1);
  const key = segs[segs.length - 1] ?? '';
  const parent = segs.length > 0 ? getAt(doc, parentSegs) : undefined;
  // An image block and a capture object are replaced whole; anything else is the string in place.
  const kind =
    entry.loc.form === 'image-block'
      ? 'image-block'
      : entry.loc.form === 'base64-field' && /base64$/i.test(key)
        ? 'capture'
        : 'string';
  if (kind !== 'string' && isRecord(parent)) {
    return {
      entry,
      kind,
      container: parent,
      replaceSegments: parentSegs,
      replacedPointer: prefix + formatPointer(parentSegs),
    };
  }
  return {
    entry,
    container: undefined,
    kind: 'string',
    replaceSegments: segs,
    replacedPointer: prefix + formatPointer(segs),
  };
}

function replacementFor(job: Job, image: SavedImage, blankCheck: BlankCheck | undefined): unknown {
  let withBlank: SavedImage & MaskFacts = blankCheck && !image.blankCheck ? { ...image, blankCheck } : image;
  if (job.mask?.masked?.length) {
    withBlank = { ...withBlank, masked: job.mask.masked };
    if (job.mask.onExport) withBlank.maskedOnExport = true;
  }
  if (job.kind === 'image-block') {
    const block: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(job.container!)) if (k !== 'data' && k !== '__proto__') block[k] = v;
    block.type = 'image';
    if (typeof block.mimeType !== 'string')
      block.mimeType = image.format ? MIME_TYPE[image.format] : 'application/octet-stream';
    block.summary = captureSummaryOf(undefined, withBlank);
    return block;
  }
  const summary = captureSummaryOf(job.kind === 'capture' ? job.container : undefined, withBlank);
  // A replay puts the URI back as it came, not its bare base64 (`data:` plus this, a comma, the bytes).
  if (job.dataUri !== undefined) summary.dataUri = job.dataUri;
  return summary;
}

/** What every level of a compaction shares: the store, and where images and violations are collected. */
interface CompactionSink {
  store: ArtifactStore;
  masker?: ImageMasker;
  /** File name prefix of the images written (default `capture`). */
  namePrefix?: string | undefined;
  images: CompactedImage[];
  violations: Violation[];
}

/** Compact one level of `doc`: the nested JSON strings first, then the images located directly in it. */
async function compactLevel(
  doc: unknown,
  entries: Entry[],
  prefix: string,
  sink: CompactionSink,
): Promise<unknown> {
  const nested = new Map<string, Entry[]>();
  const direct: Entry[] = [];
  for (const e of entries) {
    if (e.levels.length === 1) {
      direct.push(e);
      continue;
    }
    const key = formatPointer(e.levels[0]!);
    const group = nested.get(key) ?? [];
    group.push(e);
    nested.set(key, group);
  }
  for (const [pointer, group] of nested) doc = await compactNested(doc, pointer, group, prefix, sink);
  const jobs: Job[] = [];
  for (const e of direct) {
    const job = planJob(doc, e, prefix);
    if (job) jobs.push(job);
  }
  // Decode and save (decode once here; the store hashes and writes).
  await Promise.all(jobs.map((job) => saveJob(doc, job, sink.store, sink.masker, sink.namePrefix)));
  const blankChecks = await Promise.all(jobs.map((job) => blankCheckFor(job, sink.store)));
  // Replace deepest first, so a replaced container never hides a deeper location.
  const order = jobs
    .map((_, i) => i)
    .sort((a, b) => jobs[b]!.replaceSegments.length - jobs[a]!.replaceSegments.length);
  for (const i of order) {
    const job = jobs[i]!;
    const saved = job.saved!;
    const blankCheck = blankChecks[i] ?? saved.blankCheck ?? declaredBlankCheck(job.container?.blankCheck);
    declaredMismatches(job, saved, sink.violations);
    doc = setAt(doc, job.replaceSegments, replacementFor(job, saved, blankCheck));
    const jsonPath = job.entry.loc.path;
    const record: CompactedImage = { ...saved, role: roleOf(jsonPath, job.entry.loc.form), jsonPath };
    if (blankCheck) record.blankCheck = blankCheck;
    if (job.mask?.masked?.length) {
      record.masked = job.mask.masked;
      if (job.mask.onExport) record.maskedOnExport = true;
    }
    sink.images.push(record);
  }
  return doc;
}

/** A nested JSON string: parsed, compacted inside, serialized back into the (copied) string's place. */
async function compactNested(
  doc: unknown,
  pointer: string,
  group: Entry[],
  prefix: string,
  sink: CompactionSink,
): Promise<unknown> {
  const segs = group[0]!.levels[0]!;
  const inner = nestedJsonAt(doc, segs);
  if (inner === 'no-string') return doc;
  if (inner === 'not-json') {
    sink.violations.push({
      path: prefix + pointer,
      message: 'image bytes located in a string that is not JSON',
    });
    return doc;
  }
  const innerEntries = group.map((e) => ({ loc: e.loc, levels: e.levels.slice(1) }));
  const compacted = await compactLevel(inner.value, innerEntries, `${prefix}${pointer}/${JSON_MARKER}`, sink);
  return setAt(doc, segs, JSON.stringify(compacted));
}

/** Decode a job's bytes and save them in the store (bad base64 is an artifactError, not a throw). */
async function saveJob(
  doc: unknown,
  job: Job,
  store: ArtifactStore,
  masker?: ImageMasker,
  namePrefix?: string,
): Promise<void> {
  const text = getAt(doc, job.entry.levels[0]!) as string;
  const uri = parseImageDataUri(text);
  if (uri && job.kind === 'string') job.dataUri = text.slice(5, uri.start - 1);
  const decoded = decodeBase64Fast(uri ? text.slice(uri.start) : text);
  if (!Buffer.isBuffer(decoded)) {
    job.saved = failed(`bad base64: ${decoded.error}`, 'invalid');
    return;
  }
  let bytes = decoded;
  if (masker) {
    const role = roleOf(job.entry.loc.path, job.entry.loc.form);
    job.mask = await masker({ bytes: decoded, ...(job.container ? { container: job.container } : {}), role });
    if (job.mask.refuse !== undefined) {
      job.saved = failed(job.mask.refuse, 'refused');
      return;
    }
    if (job.mask.bytes) bytes = job.mask.bytes;
  }
  job.buffer = bytes;
  const known = job.kind === 'capture' ? declaredBlankCheck(job.container?.blankCheck) : undefined;
  const declaredMimeType = job.entry.loc.mimeType;
  job.saved = await store.save(bytes, {
    ...(known ? { knownBlankCheck: known } : {}),
    ...(namePrefix ? { namePrefix } : {}),
    ...(declaredMimeType ? { declaredMimeType } : {}),
  });
}

/**
 * A job's blankCheck: undefined when the capture declares one (it wins), else one known for the same bytes,
 * else computed (a full decode) unless the bytes are no image.
 */
async function blankCheckFor(job: Job, store: ArtifactStore): Promise<BlankCheck | undefined> {
  const saved = job.saved!;
  if (job.kind === 'capture' && declaredBlankCheck(job.container?.blankCheck)) return undefined;
  if (saved.blankCheck) return saved.blankCheck; // declared with another copy of the same bytes
  if (!job.buffer || !saved.sha256) return undefined;
  if (saved.failure === 'invalid' || saved.notRaster) return undefined;
  return store.ensureBlankCheck(saved.sha256, job.buffer);
}

/**
 * Replace every located inline image in a deep copy of `value` by a capture summary of its artifact
 * (capture objects become summaries, image blocks get `summary` instead of `data`, data: URIs and bare base64
 * strings become summaries in place, bytes inside JSON strings are replaced in the nested JSON). Never throws
 * for bad bytes: those get `artifactError`. The input is not modified.
 */
export async function compactImages(
  value: unknown,
  locations: ImageBytesLocation[],
  store: ArtifactStore,
  masker?: ImageMasker,
  /** File name prefix of the images written (default `capture`). */
  namePrefix?: string,
): Promise<CompactResult> {
  const images: CompactedImage[] = [];
  const violations: Violation[] = [];
  const copy = cloneJson(value);
  const entries = locations.map((loc) => ({ loc, levels: pointerLevels(loc.path) }));
  const out = await compactLevel(copy, entries, '', {
    store,
    images,
    violations,
    ...(masker ? { masker } : {}),
    namePrefix,
  });
  const rank = new Map(locations.map((l, i) => [l.path, i]));
  images.sort((a, b) => (rank.get(a.jsonPath) ?? 0) - (rank.get(b.jsonPath) ?? 0));
  return { value: out, images, violations };
}
