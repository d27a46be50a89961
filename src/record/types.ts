/** The recorder's public types (the agreed API shared with report, bundle, proxy, sim and demo). */
import type { OtlpExportOptions } from '../export/live-options.js';
import type { MaskOptions } from '../mask/types.js';
import type { CallCounts } from '../store/schema.js';

/** Options of `Recorder.close`. */
export interface CloseOptions {
  /** `Date.now()` time by which the live export's wait at close ends, whatever its `shutdownTimeoutMs`. */
  exportDeadline?: number;
}

/** An agent's tool dispatch: what `wrap` takes and gives back. */
export type Dispatch = (tool: string, args: Record<string, unknown>) => Promise<unknown>;

/** The `otlp` option's object form: owned by the export (export/live-options.ts), named here for the API. */
export type { OtlpExportOptions };

/** How a call reached the recorder. */
export type Transport = 'wrap' | 'http' | 'stdio';

/** Stages of recording, as named in `record-failure` events and in the fault-injection seam. */
export type RecordStage =
  | 'open'
  | 'begin'
  | 'parse'
  | 'route'
  | 'compact'
  | 'redact'
  | 'store'
  | 'commit'
  | 'artifact'
  | 'event';

export interface RecorderOptions {
  /** Root of the session dirs; default `$MCEC_SESSIONS_DIR` when set and not empty, else `./sessions`. */
  sessionsDir?: string;
  /** Stored in each session row. */
  scenario?: string;
  /**
   * Added to the default secret keys; patterns are scrubbed from every stored string; `secrets` are known
   * values (configuration) scrubbed with their encoded forms from everything stored.
   */
  redact?: {
    keys?: Array<string | RegExp>;
    patterns?: RegExp[];
    secrets?: string[];
    keepTypedText?: boolean;
  };
  /**
   * Per session: stored payload (default 8 MiB) and artifact bytes (default 512 MiB); per host file copied
   * (default 64 MiB).
   */
  limits?: { maxLogBytes?: number; maxArtifactBytes?: number; maxHostFileBytes?: number };
  /**
   * Copy the evidence files envelopes name on the MCEC host (path-only captures, capture `file`, `record`
   * GIFs, the server's capture-summary `artifact`) into the session when readable from here (default true).
   */
  copyHostFiles?: boolean;
  /**
   * Where the MCEC host's folders are readable from this machine, e.g.
   * `[{ from: 'C:\\mcec\\sessions', to: '/mnt/mcec' }]`; the longest matching `from` wins. Without an entry a
   * path is read as is only when it is a native absolute path here (a Windows path on a Windows recorder).
   */
  hostPathMap?: Array<{ from: string; to: string }>;
  /**
   * Make thumbnails of the captures as they are written (default true), kept in `thumbnails/` for
   * report.html and bundles, which then need no image decoder. Made one at a time apart from the recorder's
   * queue; skipped under back-pressure or past 64 waiting (a report makes those when it needs them).
   */
  thumbnails?: boolean;
  /**
   * Secrets out of the pixels (src/mask/README.md): regions of captures that may show a secret are painted
   * over before the image is written. On by default for text typed, set or pasted into an element (unless
   * `redact.keepTypedText`), and for Edit elements named like a secret key; `rules` add the user's (by window,
   * element or window-relative rectangle); `mode: 'on-export'` keeps originals in the session dir and masks
   * bundles only; `enabled: false` turns masking off.
   */
  mask?: MaskOptions;
  /** Attach the last good observation to command-level failures that lack one (default true). */
  fillLastObservation?: boolean;
  /**
   * Tools whose success updates the last good observation (default the catalog's `OBSERVATION_TOOLS`); saved
   * in each session's environment, where the report reads it.
   */
  observationTools?: string[];
  /**
   * Send spans live to an OpenTelemetry collector over OTLP/HTTP: `{ url, headers }`, or `true`/`{}` for the
   * `OTEL_EXPORTER_OTLP_*` variables; without it, on when `OTEL_TRACES_EXPORTER` lists `otlp`. Never on the
   * agent's call; what could not be delivered is counted in the session (src/export/README.md).
   */
  otlp?: boolean | OtlpExportOptions;
  /** Transport recorded for `wrap` calls and for exchanges without one in their meta (default 'wrap'). */
  transport?: Transport;
  /** Where the one-time failure notices go (default process.stderr). */
  stderr?: (line: string) => void;
  /**
   * Shape of the failure returned for a dispatch that throws before it ever returned a value (afterwards the
   * shape it has been returning is used). Default 'call-tool-result'.
   */
  thrownShape?: 'call-tool-result' | 'envelope';
  /** Group-commit interval: at most one transaction per session per this many ms under load (default 4). */
  commitIntervalMs?: number;
  /**
   * Session logs kept open at once (default 64, or half the process's file limit over three when that is
   * less: 42 under `ulimit -n 256`, said on stderr; each holds three file descriptors). Past it the least
   * recently used log is closed and reopened on its next write; an ended session's log closes at once.
   */
  maxOpenLogs?: number;
}

/**
 * Test seam for fault injection, not part of the package's options (`createRecorderOnClock` takes it):
 * `beforeStage` runs before each recording stage and may throw to simulate a bug there; `sqlitePragmas` run
 * on every log opened (e.g. `max_page_count = 8` makes the disk "full" for SQLite).
 */
export interface RecorderFaults {
  beforeStage?: (stage: RecordStage) => void;
  sqlitePragmas?: string[];
  /** In place of the record queue's byte cap (`maxQueuedBytes`, 256 MiB). */
  maxQueuedBytes?: number;
  /** The queue stops at an event of this kind until `until` resolves (a stalled commit, a hung disk). */
  holdOnEventKind?: { kind: string; until: Promise<void> };
  /** Told the queue's bytes after each job queued (what it holds at its peak). */
  queued?: (bytes: number) => void;
}

/** A session's live counts: the shared ones plus failures (failed and faulted calls). */
export interface SessionCounts extends CallCounts {
  failures: number;
}

export interface SessionInfo {
  id: string;
  dir: string;
  status: 'open' | 'ended' | 'aborted';
  counts: SessionCounts;
  /** The last good observation, compact; capture summaries carry absolute artifact paths here. */
  lastObservation: Record<string, unknown> | null;
}

export interface ExchangeMeta {
  transport?: Transport;
  startedAt?: Date;
  endedAt?: Date;
  /** The request's `Mcp-Session-Id` (Streamable HTTP): a server that is not MCEC gets a session per id. */
  mcpSessionId?: string;
}

/** An answer a proxy passed to its client unchanged but did not record, because it was over its cap. */
export interface OversizeAnswer {
  /** Size of the answer in bytes. */
  bytes: number;
  /** The proxy's recording cap it passed. */
  limit: number;
  /** The CallToolResult's `isError`, when the proxy could read it cheaply from the answer's end. */
  isError?: boolean;
  /** The answer was a JSON-RPC error object (read from its start). */
  rpcError?: boolean;
  /**
   * Set by the recorder, never by a proxy: the answer fit the proxy's limit but came while the record queue
   * held its byte cap (`limit` is that cap, `bytes` the answer's rough size); its body was not recorded.
   */
  reason?: 'queue-full';
}

/**
 * A JSON-RPC exchange seen by a proxy: recorded as pending now, settled later by one of `complete`, `fail`
 * or `tooLarge`. `timedOut` and `clientLeft` may come first: they say what the client saw meanwhile.
 */
export interface PendingExchange {
  complete(response: unknown, meta?: ExchangeMeta): void;
  fail(reason: string): void;
  /**
   * The proxy answered the client with an error (a 504 past its timeout) while the server may still answer:
   * a tools/call row is a `proxy-error` fault from now on; a later `complete` or `tooLarge` replaces it with
   * the real outcome and adds a `late-answer` event; a later `fail` keeps the fault.
   */
  timedOut(reason: string): void;
  /** The client disconnected before the answer: the row stays pending; the answer adds a `late-answer` event. */
  clientLeft(reason: string): void;
  /**
   * Optional (a library user's own recorder may lack it): the client cancelled the request (MCP's
   * `notifications/cancelled`), so the server owes no answer. A tools/call row is `failed` / `cancelled` from
   * now on (`reason` its detail); a later `complete` or `tooLarge` (an answer already on its way) replaces it
   * with the real outcome and adds a `late-answer` event; a later `fail` keeps it. Any other exchange is
   * written failed with `reason`.
   */
  cancelled?(reason: string): void;
  /** The answer reached the client but was too large to record: a row without payload and an `oversize-message` event. */
  tooLarge(answer: OversizeAnswer, meta?: ExchangeMeta): void;
  /**
   * Something that happened during the exchange (a streamed progress or log notification, a request of the
   * server and the client's reply): an event of its call (a tools/call) or of the connection; any time
   * before or after it settles.
   */
  note(kind: string, detail: Record<string, unknown>, at?: Date): void;
  /**
   * Optional (the worker recorder's): settle with an HTTP answer's status and whole body, unread, as
   * `settleWithHttpAnswer` (http-answer.ts) would on the caller's thread, but read where the recording runs.
   * The body's bytes must not change afterwards (they are copied later, at the next flush).
   */
  answered?(status: number, body: Uint8Array, meta?: ExchangeMeta): void;
}

export interface Recorder {
  readonly sessionsDir: string;
  /** A fresh 12-hex id for calls no session is known for yet; its session is written only if a call stays there. */
  readonly defaultSessionId: string;
  /** The dispatch, recorded: same signature, same results (see the README for the three exceptions). */
  wrap<D extends Dispatch>(dispatch: D): D;
  /** Record a JSON-RPC request now (a pending row for tools/call) and its response later. */
  beginExchange(request: unknown, meta?: ExchangeMeta): PendingExchange;
  /** Record one JSON-RPC request/response pair. */
  recordExchange(request: unknown, response: unknown, meta?: ExchangeMeta): void;
  /** A step declared by a runner (`step` event). */
  step(sessionId: string | undefined, name: string, status: string, detail?: string): void;
  /**
   * A free-form event in a session; without one, in the connection's current session (kept for the first
   * session a call lands in while there is none), or with `meta.mcpSessionId` (a proxy's event of one MCP
   * session: a server's stream, a client's declared step or verdict) in that MCP session of a server that is
   * not MCEC (a `proxy-error`, `protocol-fault` or `oversize-message`, whose MCP session is only the client's
   * word, only once a call started there). Its detail is redacted.
   */
  event(
    sessionId: string | undefined,
    kind: string,
    detail: Record<string, unknown>,
    meta?: Pick<ExchangeMeta, 'mcpSessionId'>,
  ): void;
  /** Scrub this value from everything stored from now on (kept like `redact.secrets`: never evicted by the wire). */
  rememberSecret(secret: string): void;
  /**
   * Scrub a credential a transport carried (an Authorization header a proxy saw) from everything stored from
   * now on; kept apart from configured secrets (512, the least recently seen forgotten first), so thousands of tokens never evict those.
   */
  rememberHeaderSecret(secret: string): void;
  /** Declare a session's verdict (a `verdict` event; the newest declared verdict wins); resolves when on disk. */
  verdict(sessionId: string, verdict: { passed: boolean; reason?: string }): Promise<void>;
  /** End a session with an optional verdict; resolves when that is on disk. */
  end(sessionId: string, verdict?: { passed?: boolean; reason?: string }): Promise<void>;
  /** What the recorder knows about a session, or undefined when it never saw the id. */
  session(sessionId: string): SessionInfo | undefined;
  /** Resolves when everything recorded so far is committed. */
  flush(): Promise<void>;
  /**
   * Undefined while the recorder keeps up; past its queue's high-water mark, a promise that resolves once it
   * has room again. `wrap` waits for it itself; a proxy waits before it forwards the next request.
   */
  room(): Promise<void> | undefined;
  /**
   * Flush, mark open sessions ended, close the logs. Calls made afterwards are passed through unrecorded.
   * `options.exportDeadline` (a `Date.now()` time) ends the live export's wait then if that is sooner than its
   * `shutdownTimeoutMs`: a stdio proxy knows when its MCP client's SIGKILL is due.
   */
  close(options?: CloseOptions): Promise<void>;
}
