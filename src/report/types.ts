/** The summary model: everything the failure summary and the bug report say, built from a session log. */
import type { CallCounts } from '../store/schema.js';

export type Verdict = 'PASS' | 'FAIL';

/** One call, reduced to what a reader of a report needs (strings clipped). */
export interface CallDigest {
  seq: number;
  tool: string;
  status: string;
  startedAt: string;
  durationMs: number | null;
  code: string | null;
  category: string | null;
  detail: string | null;
  /** The next step for the error's category (mcec-wire §7), or null. */
  recovery: string | null;
  /** One line from the per-tool summarizer. */
  line: string;
}

/** An image file kept out of an envelope. */
export interface ImageDigest {
  /** Relative to the session dir (and to the bundle's top folder), e.g. `artifacts/capture-...png`. */
  artifact: string;
  width: number;
  height: number;
  format: string;
  bytes: number;
  seq: number;
  sha256: string | null;
  /** Where the image was found: result, partialResult, image-block, nested or lastObservation. */
  role: string;
  /** The window the image is of (its title), or null when the log does not say. */
  window: string | null;
  /** The tool of the call that made it. */
  tool: string;
}

/** One image with masked regions (src/mask): how many, by reason, and how many were widened (fail-closed). */
export interface MaskedImageDigest {
  artifact: string;
  seq: number;
  regions: number;
  /** `2 typed secret, 1 secret field`. */
  reasons: string;
  widened: number;
  /** False when the session keeps the original (mask mode on-export): bundles paint the regions. */
  painted: boolean;
}

export interface MaskedImagesSummary {
  /** Distinct images with masks. */
  total: number;
  images: MaskedImageDigest[];
  omitted: number;
}

/** The failing call's target window as the log describes it (its own partialResult or an earlier result). */
export interface TargetDigest {
  title: string | null;
  className: string | null;
  process: string | null;
  processId: number | null;
  handle: number | null;
  rect: { x: number; y: number; width: number; height: number } | null;
  /** From the window record when the server said (`elevated`/`isElevated`); null when unknown. */
  elevated: boolean | null;
  /** The display holding the window's centre, from the newest `displays` result before the call. */
  display: {
    name: string;
    primary: boolean;
    dpi: number | null;
    scale: number | null;
    bounds: { x: number; y: number; width: number; height: number };
  } | null;
  /** Which call's result the facts come from, e.g. "call #11's partialResult". */
  source: string;
}

/** A file the server wrote on its own host that the recorder could not copy: where it lies, and why not. */
export interface HostFileDigest {
  seq: number;
  /** host-capture, host-capture-file, host-recording or host-observation. */
  role: string;
  /** The path as the MCEC host wrote it, e.g. `C:\\mcec\\sessions\\...\\capture-....png`. */
  hostPath: string;
  reason: string;
}

/** Evidence files named by paths on the MCEC host, counted by distinct path. */
export interface HostFilesSummary {
  total: number;
  /** Copied into the session's artifacts/. */
  copied: number;
  /** Not copied, newest first (at most 20; the rest in `omitted`). */
  notCopied: HostFileDigest[];
  omitted: number;
}

/** The last good observation: what the agent last saw successfully. */
export interface ObservationDigest {
  seq: number;
  tool: string;
  oneLine: string;
  image: ImageDigest | null;
  /** Where its image lies on the MCEC host when it has no copy here (a path-only capture not readable here). */
  hostPath: string | null;
  /** A compact, clipped copy of the observation (never image bytes, never a whole UIA tree). */
  value: unknown;
  /** The title of the window it observed (the failing call's target when it showed it), null when unknown. */
  window: string | null;
  /** Whether it showed the failing call's target window; null when there is no failing call or it names none. */
  ofFailingTarget: boolean | null;
}

/** One line of the timeline. */
export interface TimelineLine {
  seq: number;
  /** ISO 8601 UTC start time. */
  at: string;
  tool: string;
  status: string;
  /** Formatted duration, e.g. "2.3 s"; "" while pending. */
  duration: string;
  line: string;
  /** The call's arguments as one line of redacted JSON, without the routing sessionId, clipped. */
  args: string;
  code: string | null;
}

/** A step declared by a runner (`step` event). */
export interface StepDigest {
  name: string;
  status: string;
  detail: string | null;
  /** ISO UTC. */
  at: string;
}

/** The summary's counts: the shared ones plus failures and how many of them were recovered. */
export interface SummaryCounts extends CallCounts {
  failures: number;
  recovered: number;
  /** Distinct image files kept (one file however many places in the log refer to it). */
  artifacts: number;
}

/** Everything known about a session, ready for templates. */
export interface SessionSummary {
  sessionId: string;
  /** The id as received when it was not path-safe. */
  originalId: string | null;
  scenario: string | null;
  dirName: string;
  status: 'open' | 'ended' | 'aborted';
  /**
   * When `status` is `aborted` because the log is still open on another host: that host's writer, which never
   * closed it and cannot be checked from here (crashed there, or still writing); null otherwise.
   */
  openElsewhere: { pid: number; host: string } | null;
  verdict: Verdict;
  /** Every reason in plain words; `verdictReason` joins them (see src/report/verdict.ts). */
  verdictReason: string;
  verdictReasons: string[];
  /** The newest declared verdict (end(), recorder.verdict(), mcec-bundle verdict, a proxy notification). */
  passedExplicit: boolean | null;
  /** ISO UTC. */
  startedAt: string;
  endedAt: string | null;
  /** Until ended_at, or until the last activity for a session that has not ended. */
  durationMs: number | null;
  /** Formatted `durationMs`, e.g. "1 min 4 s"; "" when unknown. */
  duration: string;
  counts: SummaryCounts;
  /** On a FAIL: the last unrecovered failure or the pending call, whichever came later; null on a PASS. */
  failingCall: (CallDigest & { args: string; target: TargetDigest | null; targetLine: string | null }) | null;
  /** The calls up to and including the failing call (the newest `timelineLength`; all calls' tail on a PASS). */
  reproduce: { omitted: number; lines: TimelineLine[] };
  /** Newest first; at most `maxFailures`, the rest counted in `failuresOmitted`. */
  failures: Array<CallDigest & { recovered: boolean }>;
  failuresOmitted: number;
  warningsByCode: Array<{ code: string; count: number; example: string }>;
  lastGoodObservation: ObservationDigest | null;
  lastImage: ImageDigest | null;
  suspectImage: ImageDigest | null;
  /** Files the server wrote on its host (path-only captures, capture file, record GIFs, its observations). */
  hostFiles: HostFilesSummary;
  /** Images with regions masked because they may show a secret, counted per image. */
  maskedImages: MaskedImagesSummary;
  timeline: { omitted: number; lines: TimelineLine[] };
  /** Steps declared by a runner (newest 500), and how many older ones were left out. */
  steps: StepDigest[];
  stepsOmitted: number;
  /** The last step whose status says it failed, if any. */
  lastFailedStep: StepDigest | null;
  /** os, node, recorder, server {name, version, protocolVersion?}, display 'WxH', dpi. */
  environment: Record<string, unknown>;
  /** One line per display of the newest successful `displays` call, [] when there was none. */
  displays: string[];
  /** The processes that wrote the log, in the order they first wrote ([] for a log of schema version 1). */
  writers: Array<{ pid: number; host: string; calls: number }>;
  /** When more than one process wrote the log: who, how many calls each, and whether at the same time. */
  writersNote: string | null;
  events: {
    emergencyStop: boolean;
    /** Payloads dropped past `maxLogBytes`, and events a peer sent (notifications, exchanges) past its own budget. */
    truncation: {
      omittedCalls: number;
      omittedBytes: number;
      omittedEvents: number;
      omittedEventBytes: number;
    } | null;
    artifactLimit: { omittedImages: number; omittedBytes: number } | null;
    /** The live OpenTelemetry export's counts (all writers added up), null when it was off. */
    otlpExport: {
      url: string;
      spans: number;
      exported: number;
      /** Spans that will not be delivered (refused, unanswered, or still queued when the writer stopped). */
      dropped: number;
      /** Spans on their way while a writer still runs (0 once none does). */
      queued: number;
      /** A writer still runs: the counts are as of its last commit, not final. */
      writing: boolean;
      lastError: string | null;
    } | null;
  };
}

/** Options for buildSummary. */
export interface SummaryOptions {
  /** Calls in the timeline (default 20). */
  timelineLength?: number;
  /** Failures listed (default 200); older ones are counted, not listed. */
  maxFailures?: number;
}

/** Options for the renderers. */
export interface RenderOptions {
  /** A folder whose `*.hbs` files override the built-in templates of the same name. */
  templatesDir?: string;
  /**
   * Images the log names that the bundle being built leaves out (`artifacts/x.png`), each with why in a few
   * words: they are named, not linked (the zip lacks them). Absent: every image is there.
   */
  imagesLeftOut?: readonly ImageLeftOut[];
}

/** An image the log names that a bundle leaves out (`artifacts/x.png`), with why in the bundle's words. */
export interface ImageLeftOut {
  path: string;
  why: string;
  /**
   * The file is the log's capture, only not carried (`--no-images`, `--max-bytes`): the page keeps its
   * thumbnail (inline, not a link). Absent or false: the file is not the log's capture, so no thumbnail.
   */
  thumbnailStays?: boolean;
}

/** Options for the bug-report renderer. */
export interface BugReportOptions extends RenderOptions {
  /** Name of the zip to attach (default `<dirName>.zip`). */
  bundleName?: string;
  /** The bundle's run.gif (path beside bug-report.md, and its frame count), shown inline; null or absent: none. */
  runGif?: { path: string; frames: number } | null;
  /**
   * The files of the bundle to attach, each with what it holds, named under "Agent evidence"; absent: every file
   * a bundle can hold (`bundleFileList()` of `src/contract/bundle-files.ts`); empty: none are named.
   */
  bundleFiles?: ReadonlyArray<{ name: string; holds: string }>;
}

/** Most characters a rendered document may have (a GitHub issue body's limit). */
export const MAX_DOCUMENT_CHARS = 65_536;
