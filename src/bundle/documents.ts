/**
 * The JSON files of a bundle: session.json, environment.json and manifest.json. Field names follow the
 * existing MCEC evidence bundle (mcec-wire §6); every time in them comes from the log, never from "now".
 */
import type { FailureFacts } from '../report/summary-facts.js';
import type { SessionSummary } from '../report/types.js';
import { isRecord } from '../util/json.js';
import type { BundleMasking } from './masked-view.js';

/** Version of the manifest.json layout. */
export const MANIFEST_VERSION = 1;

/** `session.json`: the existing bundle's fields plus endedAt, status, verdict, counts and the failing call. */
export interface SessionJson {
  sessionId: string;
  scenario: string | null;
  issue: null;
  startedAt: string;
  passed: boolean;
  lastObservation: string | null;
  steps: Array<{ name: string; status: string; detail: string | null; at: string }>;
  toolCallLogTruncated: boolean;
  artifacts: string[];
  originalId: string | null;
  endedAt: string | null;
  durationMs: number | null;
  status: 'open' | 'ended' | 'aborted';
  verdict: 'PASS' | 'FAIL';
  verdictReason: string;
  counts: SessionSummary['counts'];
  failingCall: FailureFacts | null;
}

/** Build session.json from the summary; `artifacts` are the image paths inside the bundle. */
export function sessionJson(
  summary: SessionSummary,
  extra: { artifacts: string[]; toolCallLogTruncated: boolean },
): SessionJson {
  const f = summary.failingCall;
  return {
    sessionId: summary.sessionId,
    scenario: summary.scenario,
    issue: null,
    startedAt: summary.startedAt,
    passed: summary.verdict === 'PASS',
    lastObservation: summary.lastGoodObservation ? oneLine(summary.lastGoodObservation.oneLine) : null,
    steps: summary.steps.map((s) => ({ name: s.name, status: s.status, detail: s.detail, at: s.at })),
    toolCallLogTruncated: extra.toolCallLogTruncated,
    artifacts: extra.artifacts,
    originalId: summary.originalId,
    endedAt: summary.endedAt,
    durationMs: summary.durationMs,
    status: summary.status,
    verdict: summary.verdict,
    verdictReason: summary.verdictReason,
    counts: summary.counts,
    failingCall: f
      ? {
          seq: f.seq,
          tool: f.tool,
          status: f.status,
          code: f.code,
          category: f.category,
          detail: f.detail,
          recovery: f.recovery,
        }
      : null,
  };
}

/** `environment.json`: the existing bundle's fields (dotnet is always null here) plus node, recorder, server. */
export interface EnvironmentJson {
  sessionId: string;
  timestamp: string;
  os: unknown;
  dotnet: null;
  mcecVersion: string | null;
  display: string | null;
  dpi: number | null;
  host: string | null;
  mcpUrl: string | null;
  node: string | null;
  recorder: string | null;
  server: Record<string, unknown> | null;
}

/** Build environment.json from what the log recorded; `timestamp` is the session's start. */
export function environmentJson(summary: SessionSummary, recorderVersion: string | null): EnvironmentJson {
  const env = summary.environment ?? {};
  const server = isRecord(env.server) ? env.server : null;
  return {
    sessionId: summary.sessionId,
    timestamp: summary.startedAt,
    os: env.os ?? null,
    dotnet: null,
    mcecVersion: server && typeof server.version === 'string' ? server.version : null,
    display: stringOrNull(env.display),
    dpi: typeof env.dpi === 'number' ? env.dpi : null,
    host: stringOrNull(env.host),
    mcpUrl: stringOrNull(env.mcpUrl),
    node: stringOrNull(env.node),
    recorder: stringOrNull(env.recorder) ?? recorderVersion,
    server,
  };
}

/** One file listed in the manifest. */
export interface ManifestFile {
  path: string;
  bytes: number;
  sha256: string;
}

/** Something left out of the bundle, and why. */
export interface DroppedFile {
  path: string;
  bytes: number;
  reason: DropReason;
  detail?: string;
}

/** Why a file was left out (`schema/manifest.schema.json` says each). */
export type DropReason =
  | 'no-images'
  | 'no-db'
  | 'max-bytes'
  | 'unreadable'
  | 'no-row'
  | 'missing'
  | 'mismatch'
  | 'damaged';

/** An image the log names that is not in the zip, in the words failure-summary.md and bug-report.md use. */
export const LEFT_OUT_WORDS: Readonly<Record<Exclude<DropReason, 'no-db' | 'no-row'>, string>> = {
  'no-images': 'images were left out (--no-images)',
  'max-bytes': 'left out to fit --max-bytes',
  unreadable: 'not a regular file, or a name unsafe in a zip',
  missing: 'the session dir has no such file',
  mismatch: 'the file is not the one the log recorded (another size or sha256)',
  damaged: 'the file is not a whole PNG',
};

/** `manifest.json`: every other file of the bundle with its size and sha256, and what was left out. */
export interface ManifestJson {
  manifestVersion: number;
  bundle: string;
  sessionId: string;
  generator: { name: string; version: string };
  files: ManifestFile[];
  dropped: DroppedFile[];
  options: { images: boolean; db: boolean; maxBytes: number | null; gif: boolean };
  /** run.gif's frames and size; null when there is none (turned off, or fewer than two images). */
  runGif: { frames: number; width: number; height: number } | null;
  toolCallLog: { lines: number; calls: number; truncated: boolean; imagesRedacted: number };
  limit: { maxBytes: number; met: boolean } | null;
  /** How the images' masks were painted (src/mask): when recorded (`before-write`) or some while bundling. */
  masking: BundleMasking;
}

/** The manifest with its keys in their documented order (JSON key order is part of the bytes). */
export function manifestJson(m: ManifestJson): ManifestJson {
  return {
    manifestVersion: m.manifestVersion,
    bundle: m.bundle,
    sessionId: m.sessionId,
    generator: m.generator,
    files: [...m.files].sort(byPath),
    dropped: [...m.dropped].sort(byPath),
    options: { images: m.options.images, db: m.options.db, maxBytes: m.options.maxBytes, gif: m.options.gif },
    runGif: m.runGif,
    toolCallLog: m.toolCallLog,
    limit: m.limit,
    masking: m.masking,
  };
}

/** Order by path, by code unit (the same in every locale). */
export function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

function stringOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null;
}

/** Collapse whitespace so a multi-line description fits the existing bundle's one-line field. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
