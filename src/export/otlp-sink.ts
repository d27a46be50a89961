/**
 * Sends planned spans over OTLP/HTTP (protobuf) with the official OpenTelemetry SDK: a BasicTracerProvider,
 * one BatchSpanProcessor (the bounded queue) and the OTLP proto exporter, which also reads the standard
 * `OTEL_EXPORTER_OTLP_*` and `OTEL_BSP_*` variables. Ours are the ids (planned, see trace-ids.ts) and the
 * counts: every span handed over is exported, failed, or dropped, and the sink says how many of each.
 */

import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { withoutUrlCredentials } from '../redact/inline-secrets.js';
import { type OtlpExportOptions, resolveTracesUrl } from './live-options.js';
import type { SpanPlan } from './span-plan.js';

/** Where and how to send: the recorder's `otlp` option without its shutdown wait (the live export's). */
export type OtlpOptions = Omit<OtlpExportOptions, 'shutdownTimeoutMs'>;

/** What became of the spans handed to a sink. */
export interface ExportCounts {
  /** Spans handed to the sink. */
  spans: number;
  /** Spans the collector accepted. */
  exported: number;
  /** Spans lost: the collector refused or was unreachable after retries, or the queue was full. */
  dropped: number;
  /** Spans neither exported nor known lost yet (still queued or in flight). */
  queued: number;
  /** The last export error, in words. */
  lastError: string | null;
}

/** A span sink over OTLP; `shutdown()` is idempotent and flushes first. */
export interface OtlpSink {
  /** The traces endpoint as shown and stored: its credentials replaced (`withoutUrlCredentials`). */
  readonly url: string;
  emit(plan: SpanPlan): void;
  /** Send what is queued; resolves when sent or given up (never rejects). */
  flush(): Promise<void>;
  /** In all, or for one session (by `mcec.session.id`). */
  counts(sessionId?: string): ExportCounts;
  shutdown(): Promise<void>;
  /** Close every connection to the collector now (a shutdown that did not end in time): nothing holds the exit. */
  abandon(): void;
  /** `listener` hears the sessions (by `mcec.session.id`) of each batch the collector answered or failed. */
  onSettled(listener: (sessionIds: ReadonlySet<string>) => void): void;
}

/**
 * The SDK's HTTP transport times a request out only when its socket is idle (`req.setTimeout`): a collector
 * that answers 200 and then drips one byte a second holds the export, and the process, for ever. This agent
 * gives every connection a wall-clock deadline (one connection per request: no keep-alive) after which the
 * socket is destroyed, so the request fails as a timeout; and `destroyAll` ends what is left at shutdown.
 */
type DeadlineAgent = http.Agent & {
  destroyAll(): void;
  /** The last connection error (`connect ECONNREFUSED 127.0.0.1:4318`): the SDK retries it out of sight. */
  lastSocketError: string | null;
  /** The collector's last HTTP status: the SDK's error for a retried 429 or 503 does not name it. */
  lastStatus: number | null;
};

function deadlineAgent(protocol: string, deadlineMs: number): DeadlineAgent {
  const Base = protocol === 'https:' ? https.Agent : http.Agent;
  const sockets = new Set<net.Socket>();
  const agent = new Base({ keepAlive: false }) as DeadlineAgent;
  agent.lastSocketError = null;
  agent.lastStatus = null;
  // createConnection is Agent's documented hook; its typings do not declare it.
  const base = agent as unknown as { createConnection(options: object, cb: unknown): net.Socket };
  const create = base.createConnection.bind(agent);
  base.createConnection = (options: object, cb: unknown) => {
    const socket = create(options, cb);
    sockets.add(socket);
    const timer = setTimeout(
      () => socket.destroy(new Error(`the collector did not answer within ${deadlineMs} ms`)),
      deadlineMs,
    );
    timer.unref();
    socket.once('error', (err) => {
      agent.lastSocketError = withoutUrlCredentials(err.message);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      sockets.delete(socket);
    });
    return socket;
  };
  // addRequest is where every request meets the agent (undocumented, but what proxy agents build on).
  const withRequests = agent as unknown as { addRequest(req: http.ClientRequest, options: object): void };
  const addRequest = withRequests.addRequest.bind(agent);
  withRequests.addRequest = (req, options) => {
    req.once('response', (res: http.IncomingMessage) => {
      agent.lastStatus = res.statusCode ?? null;
    });
    addRequest(req, options);
  };
  agent.destroyAll = () => {
    for (const s of sockets) s.destroy();
    agent.destroy();
  };
  return agent;
}

/** Ids the planner chose, handed to the SDK for the next span it starts. */
class PlannedIds implements IdGenerator {
  private traceId = '';
  private spanId = '';
  /** The ids of the next span the SDK starts. */
  plan(traceId: string, spanId: string): void {
    this.traceId = traceId;
    this.spanId = spanId;
  }
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

/** One session's share of the counts. */
interface Tally {
  exported: number;
  failed: number;
}

const SESSION_ATTR = 'mcec.session.id';

/** Counts each batch's fate, in all and per session; the SDK's own exporter does the sending and retrying. */
class CountingExporter implements SpanExporter {
  exported = 0;
  failed = 0;
  readonly bySession = new Map<string, Tally>();
  /** Spans handed to the OTLP exporter and not yet answered (a batch the processor gave up on included). */
  inFlight = 0;
  lastError: string | null = null;
  /** Hears the sessions of each batch once its fate is counted. */
  settled: ((sessionIds: ReadonlySet<string>) => void) | null = null;
  constructor(
    private readonly inner: SpanExporter,
    private readonly agent: DeadlineAgent,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    let counted = false;
    this.inFlight += spans.length;
    this.inner.export(spans, (result) => {
      // A batch that timed out may still hear back later: its fate is what was said first.
      if (counted) return;
      counted = true;
      this.inFlight -= spans.length;
      const ok = result.code === ExportResultCode.SUCCESS;
      if (ok) this.exported += spans.length;
      else {
        this.failed += spans.length;
        this.lastError = exportErrorText(result.error, this.agent.lastStatus);
      }
      const sessions = new Set<string>();
      for (const span of spans) {
        const id = span.attributes[SESSION_ATTR];
        if (typeof id !== 'string') continue;
        const tally = this.bySession.get(id) ?? { exported: 0, failed: 0 };
        if (ok) tally.exported += 1;
        else tally.failed += 1;
        this.bySession.set(id, tally);
        sessions.add(id);
      }
      done(result);
      // After done: a listener's throw must not keep the processor from its next batch.
      try {
        this.settled?.(sessions);
      } catch {
        // the listener's own problem
      }
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * An export's error in words, its URLs without credentials. The SDK's error for a status it gave up retrying
 * (429, 502, 503, 504) is `Export failed with retryable status`, and for another one the status text alone
 * (`Internal Server Error`): the collector's HTTP status is added.
 */
function exportErrorText(error: Error | undefined, lastStatus: number | null): string {
  const message = error?.message || 'export failed';
  const fromSdk = error?.name === 'OTLPExporterError';
  const code = (error as { code?: unknown } | undefined)?.code;
  const status = typeof code === 'number' ? code : fromSdk ? lastStatus : null;
  const text = status !== null && !message.includes(String(status)) ? `${message} (HTTP ${status})` : message;
  return withoutUrlCredentials(text);
}

const KIND = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT } as const;

/** Open a sink. Nothing is sent until spans are emitted; nothing it does throws into the caller. */
export function createOtlpSink(options: OtlpOptions = {}): OtlpSink {
  return new CountingOtlpSink(options);
}

/** The SDK's provider with the planned-id generator and one batch processor feeding `exporter`. */
function tracerProvider(
  options: OtlpOptions,
  ids: PlannedIds,
  exporter: CountingExporter,
): BasicTracerProvider {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName ?? 'mcec-recorder' }))
    .merge(detectResources({ detectors: [envDetector] }));
  return new BasicTracerProvider({
    resource,
    idGenerator: ids,
    sampler: new AlwaysOnSampler(),
    spanLimits: { attributeCountLimit: 128, eventCountLimit: 256, attributeValueLengthLimit: 8192 },
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        maxQueueSize: options.maxQueueSize ?? 2048,
        maxExportBatchSize: Math.min(512, options.maxQueueSize ?? 2048),
        scheduledDelayMillis: options.scheduledDelayMillis ?? 1000,
        exportTimeoutMillis: options.exportTimeoutMillis ?? 10_000,
      }),
    ],
  });
}

/** Start and end one planned span with its planned ids, parent, links, events and status. */
function startPlannedSpan(tracer: Tracer, ids: PlannedIds, plan: SpanPlan): void {
  ids.plan(plan.traceId, plan.spanId);
  const parent: Context = plan.parentSpanId
    ? trace.setSpanContext(ROOT_CONTEXT, {
        traceId: plan.traceId,
        spanId: plan.parentSpanId,
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      })
    : ROOT_CONTEXT;
  const span: Span = tracer.startSpan(
    plan.name,
    {
      kind: KIND[plan.kind],
      startTime: plan.start,
      attributes: plan.attributes,
      links: plan.links.map((l) => ({
        context: { traceId: l.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED },
      })),
    },
    parent,
  );
  for (const e of plan.events) span.addEvent(e.name, e.attributes, e.time);
  if (plan.status.code === 'error')
    span.setStatus({ code: SpanStatusCode.ERROR, message: plan.status.message });
  span.end(plan.end);
}

/** A sink that sends through the SDK and counts every span handed to it, in all and per session. */
class CountingOtlpSink implements OtlpSink {
  readonly url: string;
  private readonly ids = new PlannedIds();
  private readonly exporter: CountingExporter;
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private spans = 0;
  /** Spans the SDK would not take. */
  private refused = 0;
  private readonly handedBySession = new Map<string, { spans: number; refused: number }>();
  /** Known after a flush: spans handed over before it that the exporter never saw. */
  private queueLost = 0;
  private stopping: Promise<void> | null = null;
  private stopped = false;
  /** Given up on (a shutdown past its wait): every span not exported by now is lost. */
  private abandoned = false;
  private readonly agent: DeadlineAgent;

  constructor(options: OtlpOptions) {
    // The real endpoint goes to the exporter only: what is shown, stored and counted by is `url`.
    const endpoint = resolveTracesUrl(options.url);
    this.url = withoutUrlCredentials(endpoint);
    const timeoutMillis = options.exportTimeoutMillis ?? 10_000;
    this.agent = deadlineAgent(new URL(endpoint).protocol, timeoutMillis);
    this.exporter = new CountingExporter(
      new OTLPTraceExporter({
        url: endpoint,
        ...(options.headers ? { headers: options.headers } : {}),
        timeoutMillis,
        httpAgentOptions: () => this.agent,
      }),
      this.agent,
    );
    this.provider = tracerProvider(options, this.ids, this.exporter);
    this.tracer = this.provider.getTracer('mcec-recorder');
  }

  emit(plan: SpanPlan): void {
    if (this.stopping) return;
    const id = plan.attributes[SESSION_ATTR];
    const mine = typeof id === 'string' ? (this.handedBySession.get(id) ?? { spans: 0, refused: 0 }) : null;
    if (mine && typeof id === 'string') this.handedBySession.set(id, mine);
    if (mine) mine.spans += 1;
    try {
      startPlannedSpan(this.tracer, this.ids, plan);
      this.spans += 1;
    } catch {
      // A span the SDK refused is a dropped span, never the caller's problem.
      this.spans += 1;
      this.refused += 1;
      if (mine) mine.refused += 1;
    }
  }

  flush(): Promise<void> {
    return this.settle(() => this.provider.forceFlush());
  }

  counts(sessionId?: string): ExportCounts {
    if (sessionId !== undefined) return this.sessionCounts(sessionId);
    const exporter = this.exporter;
    // Once shut down, a batch still unanswered will not be waited for: it is lost.
    const dropped = this.abandoned
      ? this.spans - exporter.exported
      : exporter.failed + this.refused + this.queueLost + (this.stopped ? exporter.inFlight : 0);
    return {
      spans: this.spans,
      exported: exporter.exported,
      dropped,
      queued: Math.max(0, this.spans - exporter.exported - dropped),
      lastError: exporter.lastError ?? (dropped > 0 ? this.abandonedError() : null),
    };
  }

  shutdown(): Promise<void> {
    this.stopping ??= this.settle(() => this.provider.shutdown()).then(() => {
      this.stopped = true;
      this.agent.destroyAll();
    });
    return this.stopping;
  }

  abandon(): void {
    this.abandoned = true;
    this.agent.destroyAll();
  }

  onSettled(listener: (sessionIds: ReadonlySet<string>) => void): void {
    this.exporter.settled = listener;
  }

  /** Why spans were lost when no export said so: the collector never answered before the shutdown's wait ended. */
  private abandonedError(): string | null {
    if (!this.abandoned) return null;
    const seen = this.agent.lastSocketError;
    return `no answer from the collector before shutdown${seen ? ` (last connection error: ${seen})` : ''}`;
  }

  private sessionCounts(sessionId: string): ExportCounts {
    const handed = this.handedBySession.get(sessionId) ?? { spans: 0, refused: 0 };
    const tally = this.exporter.bySession.get(sessionId) ?? { exported: 0, failed: 0 };
    const settled = tally.exported + tally.failed + handed.refused;
    // Per session, what the queue dropped is known only once the sink is shut down (or given up on).
    const over = this.stopped || this.abandoned;
    const dropped = tally.failed + handed.refused + (over ? handed.spans - settled : 0);
    const lastError = tally.failed > 0 ? this.exporter.lastError : dropped > 0 ? this.abandonedError() : null;
    return {
      spans: handed.spans,
      exported: tally.exported,
      dropped,
      queued: Math.max(0, handed.spans - tally.exported - dropped),
      lastError,
    };
  }

  private async settle(work: () => Promise<void>): Promise<void> {
    const handed = this.spans;
    try {
      await work();
    } catch {
      // the exporter counted what failed
    }
    // A flush sends everything queued before it; what the exporter still has not seen was dropped by a full queue.
    const exporter = this.exporter;
    this.queueLost = Math.max(
      this.queueLost,
      handed - this.refused - exporter.exported - exporter.failed - exporter.inFlight,
    );
  }
}
