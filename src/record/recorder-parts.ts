/**
 * The recorder's parts, built from its options: the redactor, the failure ledger, the sessions (registry,
 * log pool, catalog touches, live export), the thumbnail queue and the two recordings (calls, events). The
 * coordinator (recorder.ts) owns them; what they ask of it (its stage runner, whether it is closed, the queue's
 * pressure) goes in as functions, so no part holds the coordinator itself.
 */

import { HostFileCollector } from '../artifacts/host-files.js';
import { ThumbnailQueue } from '../artifacts/thumbnail-queue.js';
import { createRedactor, type Redactor } from '../redact/redactor.js';
import { CatalogTouches } from '../store/catalog-touches.js';
import { LogPool, logPoolSizeForProcess } from '../store/log-pool.js';
import { CallRecording } from './call-recording.js';
import type { Clock } from './clock.js';
import { EventRecording } from './event-recording.js';
import { FailureLedger } from './failure-ledger.js';
import { type LiveExportHook, openLiveExport } from './live-export.js';
import { CaptureMasking } from './masking.js';
import { SessionRegistry } from './session-registry.js';
import type { RecorderFaults, RecorderOptions, RecordStage } from './types.js';

const MiB = 1024 * 1024;
/** Default stored payload per session. */
export const DEFAULT_MAX_LOG_BYTES = 8 * MiB;
/** Default artifact bytes per session. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 512 * MiB;
/** How long a failing log waits before the next commit attempt. */
export const COMMIT_RETRY_MS = 100;
/** The stored last good observation is clipped to this (the agent still gets it whole). */
const MAX_OBSERVATION_CHARS = 256 * 1024;

/** What the coordinator has decided before its parts exist. */
export interface PartsContext {
  sessionsDir: string;
  defaultSessionId: string;
  clock: Clock;
  faults: RecorderFaults | undefined;
  fillLastObservation: boolean;
  observationTools: ReadonlySet<string>;
}

/** What the parts ask of the coordinator that owns them. */
export interface PartsOwner {
  /** Run one stage (the fault seam; a throw tagged with the stage's name). */
  stage<T>(name: RecordStage, fn: () => T): T;
  /** True once the recorder closed. */
  closed(): boolean;
  /** True while the record queue is over its high-water mark (thumbnails are skipped then). */
  underPressure(): boolean;
  /** Some log was made dirty outside the queue's jobs: commit it at the next interval. */
  wakeQueue(): void;
}

export interface RecorderParts {
  redactor: Redactor;
  ledger: FailureLedger;
  catalogTouches: CatalogTouches;
  /** The live OpenTelemetry export, when on: fed after each commit, off the agent's calls. */
  liveExport: LiveExportHook | null;
  registry: SessionRegistry;
  /** Thumbnails of written captures, made apart from the queue (null when `thumbnails: false`). */
  thumbnails: ThumbnailQueue | null;
  calls: CallRecording;
  events: EventRecording;
}

/** Build the recorder's parts from its (checked) options. */
export function buildRecorderParts(
  options: RecorderOptions,
  context: PartsContext,
  owner: PartsOwner,
): RecorderParts {
  const { sessionsDir, clock, faults, observationTools } = context;
  const redactor = createRedactor(options.redact ?? {});
  const maxLogBytes = options.limits?.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
  const scrubText = (text: string) => redactor.scrubText(text);
  const ledger = new FailureLedger({
    stderr: options.stderr ?? ((line) => process.stderr.write(`${line}\n`)),
    scrubText,
    clock,
    commitRetryMs: COMMIT_RETRY_MS,
  });
  const catalogTouches = new CatalogTouches(sessionsDir, (line) => ledger.notice(line));
  const liveExport = openLiveExport(
    options.otlp,
    options.transport,
    (line) => ledger.notice(line),
    // Counts changed after a commit (a batch answered): commit those sessions again, unless closed.
    (ids) => {
      if (owner.closed()) return;
      registry.markDirtyByIds(ids);
      owner.wakeQueue();
    },
  );
  const registry = new SessionRegistry({
    sessionsDir,
    defaultSessionId: context.defaultSessionId,
    scenario: options.scenario ?? null,
    maxLogBytes,
    maxArtifactBytes: options.limits?.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES,
    clock,
    logPool: new LogPool(options.maxOpenLogs ?? logPoolSizeForProcess((line) => ledger.notice(line))),
    faults,
    ledger,
    scrubText,
    observationTools,
    redact: (value) => redactor.redact(value),
    maxObservationChars: Math.min(MAX_OBSERVATION_CHARS, maxLogBytes),
    liveExport,
    catalogTouches,
  });
  const thumbnails = options.thumbnails === false ? null : new ThumbnailQueue();
  const calls = new CallRecording({
    registry,
    ledger,
    redactor,
    hostFiles: new HostFileCollector({
      enabled: options.copyHostFiles !== false,
      pathMap: options.hostPathMap ?? [],
      ...(options.limits?.maxHostFileBytes ? { maxFileBytes: options.limits.maxHostFileBytes } : {}),
    }),
    clock,
    stage: (name, fn) => owner.stage(name, fn),
    closed: () => owner.closed(),
    fillLastObservation: context.fillLastObservation,
    observationTools,
    thumbnails: thumbnails ? { queue: thumbnails, underPressure: () => owner.underPressure() } : null,
    masking:
      options.mask?.enabled === false
        ? null
        : new CaptureMasking(
            { typedText: options.redact?.keepTypedText !== true, ...options.mask },
            options.redact?.keys ?? [],
          ),
  });
  const events = new EventRecording({
    registry,
    redactor,
    stage: (name, fn) => owner.stage(name, fn),
    closed: () => owner.closed(),
  });
  return { redactor, ledger, catalogTouches, liveExport, registry, thumbnails, calls, events };
}
