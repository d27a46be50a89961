/**
 * Recording one tool call, off the critical path: its start (redacted args, the pending row) and its
 * completion (parse, route, compact images and host files, hand a waiting caller its value, redact, enforce
 * the payload budget, write the row, its warnings, artifacts and events). Also a late answer that replaces a
 * proxy timeout, and what is kept when a stage fails.
 */
import fs from 'node:fs';
import { isStoreFault } from '../artifacts/artifact-store.js';
import type { CompactedImage } from '../artifacts/compact.js';
import { compactImages } from '../artifacts/compact.js';
import type { HostFileCollector, HostFileRef } from '../artifacts/host-files.js';
import type { ThumbnailQueue } from '../artifacts/thumbnail-queue.js';
import { findImageBytes } from '../contract/image-bytes.js';
import { readPlainToolResult, readToolOutput } from '../contract/read-tool-output.js';
import type { Envelope, ToolOutput, Violation } from '../contract/types.js';
import type { Redactor } from '../redact/redactor.js';
import { isRecord } from '../util/json.js';
import { agentValue, unrecordedValue } from './agent-value.js';
import type { ClientSaw, LateAnswer, RecordedCall } from './call.js';
import type { Clock } from './clock.js';
import type { FailureLedger } from './failure-ledger.js';
import type { CaptureMasking } from './masking.js';
import {
  envelopeText,
  isPlainResponse,
  mayHoldImageBytes,
  plainResponseJson,
  quickOutcome,
  responseShape,
  thrownFailure,
  thrownMessage,
} from './outcome.js';
import {
  answeredRow,
  artifactRow,
  metadataOnlyRow,
  oversizeDetail,
  oversizeRow,
  pendingRow,
  transportFaultRow,
} from './rows.js';
import type { RecordedSession } from './session.js';
import type { SessionRegistry } from './session-registry.js';
import { stageOf } from './stages.js';
import { isoTime } from './time.js';
import type { RecordStage } from './types.js';
import { jsonOrNull, withoutImageBytes } from './values.js';

type Compaction = Awaited<ReturnType<typeof compactImages>>;
type ImageBytesLocation = ReturnType<typeof findImageBytes>[number];

/** What the recording of a call needs from the recorder. */
export interface CallRecordingDeps {
  registry: SessionRegistry;
  ledger: FailureLedger;
  redactor: Redactor;
  hostFiles: HostFileCollector;
  /** The recorder's clocks (the wall clock stamps artifact rows and events). */
  clock: Clock;
  /** Run a stage (fault seam, throws tagged with the stage). */
  stage: <T>(name: RecordStage, fn: () => T) => T;
  /** True once the recorder has closed: nothing more is written. */
  closed: () => boolean;
  fillLastObservation: boolean;
  observationTools: ReadonlySet<string>;
  /** Thumbnails of the images written (null: off); `underPressure` says the recorder's queue is past its mark. */
  thumbnails: { queue: ThumbnailQueue; underPressure: () => boolean } | null;
  /** Secrets out of the pixels: masks each image before it is written (null: masking off). */
  masking: CaptureMasking | null;
}

/** A completed call on its way to the log. */
interface Completion {
  call: RecordedCall;
  s: RecordedSession;
  out: ToolOutput | undefined;
  env: Envelope | undefined;
  response: unknown;
  violations: Violation[];
  /** Paths of evidence files on the MCEC host that the envelope names (copied while compacting). */
  hostRefs: HostFileRef[];
  /** Why the payload is not stored at all (metadata only). */
  dropPayload?: string;
}

export class CallRecording {
  private readonly deps: CallRecordingDeps;

  constructor(deps: CallRecordingDeps) {
    this.deps = deps;
  }

  // ---------------------------------------------------------------- start

  /** The call starts in the session it names (or the default one): its args and its pending row. */
  begin(call: RecordedCall): void {
    const { registry, stage } = this.deps;
    if (this.deps.closed()) return;
    // Started before the answer that names the server's default session was processed (the agent's next call
    // comes before the queue's turn): file it there now, not in a placeholder made and dropped again per call.
    if (call.startVia === 'default') call.startsIn(registry.startOf(call.namedSessionId));
    const s = registry.obtain(call.startSessionId, call.startVia, call.startedAt);
    s.callStarted(call);
    if (call.mcpSessionHash) s.noteMcpSession(call.mcpSessionHash, call.startedAt);
    const argsJson = stage('redact', () => this.storedArgsJson(call.tool, call.args));
    const dropped = argsJson !== null && !s.admitPayload(argsJson.length);
    if (dropped) s.payloadOmitted(argsJson.length, true);
    call.argsRecorded(argsJson, dropped);
    const log = registry.logOf(s);
    if (!log) return;
    // A call that has already returned gets its completed row soon (its job is queued): one row, not two.
    stage('begin', () => log.beginCall(pendingRow(call), call.endedAt !== undefined));
    call.pendingRowHandedOver();
    s.markDirty();
  }

  /** Redacted arguments as JSON, any image bytes replaced by a marker (args never make artifacts). */
  private storedArgsJson(tool: string, args: unknown): string | null {
    const redacted = this.deps.redactor.redactArgs(tool, args);
    const json = jsonOrNull(redacted);
    // Text without an image hint cannot hold what findImageBytes finds: skip the walk and a second stringify.
    if (json === null || !mayHoldImageBytes(json)) return json;
    return jsonOrNull(withoutImageBytes(redacted));
  }

  // ---------------------------------------------------------------- completion

  /** A completed call, then the note of what its client saw meanwhile (if anything). */
  complete(call: RecordedCall): Promise<void> | undefined {
    const done = this.completeCall(call);
    if (!call.clientSaw && !call.traceparent) return done;
    const note = () => {
      this.noteTraceParent(call);
      this.noteClientSaw(call);
    };
    if (done) return done.then(note);
    note();
    return undefined;
  }

  /** The server answered after the proxy had answered the client with a timeout: the real outcome replaces it. */
  late(call: RecordedCall, late: LateAnswer, saw: ClientSaw): Promise<void> | undefined {
    const s = call.session;
    if (this.deps.closed() || !s) return undefined;
    s.callReopened(call); // the timeout's fault was counted; the real outcome is counted instead
    call.answered({ ...late, clientSaw: saw });
    return this.complete(call);
  }

  /** The call's output read: as MCEC's envelope, or (a server that is not MCEC, no envelope) as a plain result. */
  private read(call: RecordedCall): ToolOutput {
    const read = call.readEarly ?? readToolOutput(call.output);
    return (call.plainServer ? readPlainToolResult(call.output, read) : undefined) ?? read;
  }

  private completeCall(call: RecordedCall): Promise<void> | undefined {
    const { stage, registry } = this.deps;
    if (this.deps.closed() || !call.session) {
      this.handBackUnrecorded(call);
      return undefined;
    }
    if (call.transportFailure !== undefined) {
      this.completeFault(call, stage('route', () => registry.route(call, undefined)).s);
      return undefined;
    }
    if (call.oversize) {
      const { s } = stage('route', () => registry.route(call, undefined));
      this.completeOversize(call, s);
      return undefined;
    }
    const out = call.thrown ? undefined : stage('parse', () => this.read(call));
    const env = out?.envelope;
    const { s, unsafeFrom } = stage('route', () => registry.route(call, env));
    const violations: Violation[] = out ? [...out.violations] : [];
    if (unsafeFrom !== undefined) {
      violations.push({
        path: env?.sessionId === unsafeFrom ? '/sessionId' : '/arguments/sessionId',
        message: `session id is not path-safe; recorded as ${s.id}`,
      });
    }
    const response = out ? responseShape(call.output, out) : undefined;
    const text = out && !out.synthesized ? envelopeText(call.output, out.kind) : undefined;
    const envLocations = env && (text === undefined || mayHoldImageBytes(text)) ? findImageBytes(env) : [];
    const respLocations =
      response !== undefined && !isPlainResponse(response) ? findImageBytes(response) : [];
    const hostRefs = env ? this.deps.hostFiles.find(env, call.tool) : [];
    const c: Completion = { call, s, out, env, response, violations, hostRefs };
    if (envLocations.length === 0 && respLocations.length === 0 && hostRefs.length === 0) {
      this.finish(c, undefined, undefined);
      return undefined;
    }
    return this.compactThenFinish(c, envLocations, respLocations);
  }

  private async compactThenFinish(
    c: Completion,
    envLocations: ImageBytesLocation[],
    respLocations: ImageBytesLocation[],
  ): Promise<void> {
    const { s } = c;
    const log = this.deps.registry.logOf(s);
    const store = s.artifacts;
    if (!log || !store) {
      // No session dir to hold the images: keep the metadata only (no bytes may reach a log).
      c.dropPayload = 'the session log is not open';
      this.finish(c, undefined, undefined);
      return;
    }
    if (!fs.existsSync(s.dir)) fs.mkdirSync(s.dir, { recursive: true }); // a vanished dir: artifacts need it
    const { call } = c;
    const masker = this.deps.masking?.maskerFor({ seq: call.seq, tool: call.tool, args: call.args }, c.env);
    let [envelopeCompaction, responseCompaction] = await this.deps.stage('compact', () =>
      Promise.all([
        envLocations.length > 0 ? compactImages(c.env, envLocations, store, masker) : undefined,
        // A plain MCP result's images are named by their call (they are no MCEC captures).
        respLocations.length > 0
          ? compactImages(
              c.response,
              respLocations,
              store,
              masker,
              c.out?.plain ? `image-call${c.call.seq}` : undefined,
            )
          : undefined,
      ]),
    );
    if (c.hostRefs.length > 0) {
      // The agent's value never depends on host files: it goes back before they are read and copied.
      if (c.call.waiting && c.out) {
        const images = imagesOf(envelopeCompaction, responseCompaction);
        c.call.handBack(this.valueFor(c, (envelopeCompaction?.value ?? c.env) as Envelope, images));
      }
      envelopeCompaction = await this.deps.hostFiles.addTo(
        envelopeCompaction,
        c.env,
        c.hostRefs,
        store,
        masker,
      );
    }
    // Last check: whatever compaction could not take out is not stored.
    if (
      (envelopeCompaction && findImageBytes(envelopeCompaction.value).length > 0) ||
      (responseCompaction && findImageBytes(responseCompaction.value).length > 0)
    ) {
      c.violations.push({ path: '', message: 'image bytes left after compaction: payload not stored' });
      c.dropPayload = 'image bytes left after compaction';
    }
    this.finish(c, envelopeCompaction, responseCompaction);
  }

  /** The agent's value as the queue builds it: from the session the call was routed to. */
  private valueFor(c: Completion, compactEnvelope: Envelope | undefined, images: CompactedImage[]): unknown {
    const { call } = c;
    return agentValue({
      tool: call.tool,
      output: call.output,
      thrown: call.thrown,
      read: c.out,
      compactEnvelope,
      images,
      namedSessionId: call.namedSessionId,
      session: c.s,
      fillLastObservation: this.deps.fillLastObservation,
    });
  }

  /** Hand the waiting caller its value, keep the last good observation, and write the row. */
  private finish(
    c: Completion,
    envelopeCompaction: Compaction | undefined,
    responseCompaction: Compaction | undefined,
  ): void {
    const { call, s, out } = c;
    this.deps.registry.attach(s);
    // What this call showed of the screen and where it typed, for the masks of later captures.
    this.deps.masking?.learn({ seq: call.seq, tool: call.tool, args: call.args }, c.env);
    if (envelopeCompaction) c.violations.push(...envelopeCompaction.violations);
    if (responseCompaction) c.violations.push(...responseCompaction.violations);
    const compactEnv = (envelopeCompaction ? envelopeCompaction.value : c.env) as Envelope | undefined;
    const images = imagesOf(envelopeCompaction, responseCompaction);
    // Computed before the caller is handed it: if this throws, the job's failure still hands back a value.
    if (call.waiting) call.handBack(this.valueFor(c, compactEnv, images));
    // The last good observation: only a successful observation call sets it.
    if (
      !call.thrown &&
      out &&
      compactEnv?.ok &&
      this.deps.observationTools.has(call.tool) &&
      isRecord(compactEnv.result)
    ) {
      this.deps.registry.observed(s, compactEnv.result);
    }
    const storedEnv = call.thrown
      ? thrownFailure(
          call.tool,
          call.thrown.message,
          call.namedSessionId,
          s.lastObservation ?? undefined,
          call.thrown.shape,
        ).envelope
      : compactEnv;
    this.write(c, storedEnv, responseCompaction, images);
  }

  /** What is stored: redacted, no image bytes, within the payload budget; then the row and what follows. */
  private write(
    c: Completion,
    storedEnv: Envelope | undefined,
    responseCompaction: Compaction | undefined,
    images: CompactedImage[],
  ): void {
    const { call, s, out } = c;
    const { redactor } = this.deps;
    const plain = isPlainResponse(c.response);
    // The call's own typed text is scrubbed from its output's echoes of it (error details, send_command output).
    const typing = { tool: call.tool, args: call.args };
    const stored = this.deps.stage('redact', () => ({
      env: storedEnv ? (redactor.redact(storedEnv, typing) as Envelope) : undefined,
      response: responseCompaction
        ? redactor.redact(responseCompaction.value, typing)
        : c.response === undefined || plain
          ? undefined
          : redactor.redact(c.response, typing),
    }));
    let envelopeJson = c.dropPayload ? null : jsonOrNull(stored.env);
    let responseJson = c.dropPayload
      ? null
      : plain
        ? plainResponseJson(c.response)
        : jsonOrNull(stored.response);
    let dropped = call.argsDropped;
    const payload = (envelopeJson?.length ?? 0) + (responseJson?.length ?? 0);
    if (payload > 0 && !s.admitPayload(payload)) {
      s.payloadOmitted(payload, !dropped);
      envelopeJson = null;
      responseJson = null;
      dropped = true;
    }
    if (c.dropPayload && !dropped) {
      s.payloadOmitted(0, true);
      dropped = true;
    }
    const env = stored.env;
    const row = answeredRow(call, {
      out,
      env,
      faultDetail:
        out?.kind === 'json-rpc-error' && out.fault
          ? redactor.scrubText(out.fault.message, typing)
          : undefined,
      envelopeJson,
      responseJson,
      violations: c.violations,
      payloadDropped: dropped,
    });
    s.callCompleted(call, row.status as 'ok' | 'failed' | 'fault', c.violations.length);
    const log = this.deps.registry.logOf(s);
    if (!log) {
      s.callLost();
      return;
    }
    this.deps.stage('store', () => {
      log.completeCall(row);
      const warnings = env?.warnings ?? [];
      for (const w of warnings) log.addWarning({ callSeq: call.seq, code: w.code, detail: w.detail ?? null });
      const now = images.length > 0 ? isoTime(this.deps.clock.date()) : '';
      for (const img of images) log.addArtifact(artifactRow(call.seq, img, now));
      s.callStored(warnings.length, images.length);
    });
    this.afterCall(call, s, out, env, images);
    s.markDirty();
  }

  /** Events and session changes that follow from a completed call. */
  private afterCall(
    call: RecordedCall,
    s: RecordedSession,
    out: ToolOutput | undefined,
    env: Envelope | undefined,
    images: CompactedImage[],
  ): void {
    if (env && !env.ok && env.error.code === 'emergency-stopped') {
      s.addEvent('emergency-stop', { code: env.error.code, detail: env.error.detail }, call.seq);
    }
    if (out?.kind === 'json-rpc-error' && out.fault) {
      const message = this.deps.redactor.scrubText(out.fault.message, { tool: call.tool, args: call.args });
      const fault = { code: out.fault.code, message, id: out.fault.id, method: call.method ?? 'tools/call' };
      s.addEvent('protocol-fault', fault, call.seq);
    }
    if (call.tool === 'session-end' && env?.ok && s.status === 'open') {
      this.deps.registry.end(s, { via: 'session-end' }, call.endedAt ?? this.deps.clock.date());
    }
    const storeFault = images.find((i) => isStoreFault(i.failure));
    if (storeFault) this.deps.ledger.note(s, 'artifact', storeFault.error!, 0);
    this.offerThumbnails(s, images);
    const omitted = s.newlyOmittedImages();
    if (omitted) {
      s.log?.setLatestEvent({
        at: this.deps.clock.date().toISOString(),
        kind: 'artifact-limit',
        callSeq: call.seq,
        detail: JSON.stringify({ omittedImages: omitted.images, omittedBytes: omitted.bytes }),
      });
    }
  }

  /**
   * Each newly written image to the thumbnail queue, now that its file and row exist. Off the agent's path:
   * the queue works apart from this one, and skips what it cannot take (a report makes those later).
   */
  private offerThumbnails(s: RecordedSession, images: CompactedImage[]): void {
    const thumbnails = this.deps.thumbnails;
    if (!thumbnails || !s.artifacts) return;
    for (const img of images) {
      if (!img.path || img.deduplicated || img.error) continue;
      const job = {
        sessionDir: s.dir,
        sha256: img.sha256,
        file: s.artifacts.absolutePath(img.path),
        format: img.format,
      };
      thumbnails.queue.offer(job, thumbnails.underPressure());
    }
  }

  /** A call whose exchange failed at the transport (a proxy's target down, a timeout). */
  private completeFault(call: RecordedCall, s: RecordedSession): void {
    this.deps.registry.attach(s);
    s.callCompleted(call, call.transportFailureCode === 'cancelled' ? 'failed' : 'fault');
    const detail = this.deps.redactor.scrubText(call.transportFailure ?? '', {
      tool: call.tool,
      args: call.args,
    });
    const log = this.deps.registry.logOf(s);
    if (!log) {
      s.callLost();
      return;
    }
    log.completeCall(transportFaultRow(call, detail));
    s.markDirty();
  }

  /**
   * A call whose answer a proxy passed through unrecorded (over its cap): a row without payload; an
   * `oversize-message` event names the size.
   */
  private completeOversize(call: RecordedCall, s: RecordedSession): void {
    const o = call.oversize!;
    this.deps.registry.attach(s);
    const row = oversizeRow(call, o);
    s.callCompleted(call, row.status as 'ok' | 'failed' | 'fault');
    const log = this.deps.registry.logOf(s);
    if (!log) {
      s.callLost();
      return;
    }
    log.completeCall(row);
    s.note('oversize-message', oversizeDetail('answer', o, call.transport), call.seq);
  }

  /** A `late-answer` event on the call: its client had got a proxy timeout, or had gone, before the answer. */
  /** The agent's trace context, so an exported span is a child of the agent's span (src/export). */
  private noteTraceParent(call: RecordedCall): void {
    const s = call.session;
    if (this.deps.closed() || !s) return;
    const traceparent = call.takeTraceparent();
    if (!traceparent) return;
    s.addEvent('trace-parent', { traceparent }, call.seq);
  }

  private noteClientSaw(call: RecordedCall): void {
    const s = call.session;
    const saw = call.clientSaw;
    if (this.deps.closed() || !s || !saw) return;
    const answeredAfterMs = Math.max(0, Math.round(call.durationMs ?? 0));
    s.note(
      'late-answer',
      { client: saw.client, reason: this.deps.redactor.scrubText(saw.reason), answeredAfterMs },
      call.seq,
    );
  }

  // ---------------------------------------------------------------- failures

  /** A bug (or injected fault) in a stage of this call: count it, keep what can be kept, hand back a value. */
  failed(call: RecordedCall, completing: boolean, err: unknown): void {
    const stage = stageOf(err);
    const message = thrownMessage(err);
    const s = call.session;
    if (!completing) {
      this.deps.ledger.note(s, stage, message, 0);
      return;
    }
    this.handBackUnrecorded(call);
    if (!s) {
      this.deps.ledger.note(undefined, stage, message, 1);
      return;
    }
    this.deps.ledger.note(s, stage, message, 0);
    this.writeMetadataOnly(call, s);
  }

  /** Hand a waiting caller the value it would have got without recording (the recording failed). */
  private handBackUnrecorded(call: RecordedCall): void {
    if (call.waiting) call.handBack(unrecordedValue(call.tool, call.output, call.thrown));
  }

  /** Metadata only, for a call whose processing failed part-way. */
  private writeMetadataOnly(call: RecordedCall, s: RecordedSession): void {
    const log = s.log;
    if (!log) return;
    const q = call.thrown ? { ok: false } : quickOutcome(call.output);
    try {
      log.completeCall(metadataOnlyRow(call, q.ok));
      s.callCompleted(call, q.ok === true ? 'ok' : 'failed');
      s.payloadDropped();
      s.markDirty();
    } catch {
      // nothing more can be kept
    }
  }
}

function imagesOf(env: Compaction | undefined, resp: Compaction | undefined): CompactedImage[] {
  return [...(env?.images ?? []), ...(resp?.images ?? [])];
}
