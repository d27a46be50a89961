/**
 * A recorder in a worker thread, for a proxy: the proxy's thread only forwards bytes and posts what it saw;
 * parsing, validation, redaction and the SQLite commits run in the worker (`worker-recorder-entry.ts`), on
 * the real `createRecorder` with the same options. Every method is fire-and-forget (one ordered channel,
 * exchanges by id) but `close()`, which resolves once the worker's recorder closed. A worker that dies is
 * said once on stderr; the proxy goes on forwarding, unrecorded.
 */

import { Worker } from 'node:worker_threads';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import { MAX_SCRUBBED_SECRET, SECRET_BUDGET } from '../redact/secret-store.js';
import { Waiters } from '../util/waiters.js';
import type { ClosedSessionsModule } from './closed-sessions.js';
import { NOOP_EXCHANGE, queueFull } from './exchange.js';
import { settleWithHttpAnswer } from './http-answer.js';
import { checkRecorderOptions } from './options.js';
import { roughSize } from './outcome.js';
import { DECLARED_KINDS, gapTexts, notRecordedAs, RECORDING_GAP, RecordingGaps } from './recording-gap.js';
import type {
  CloseOptions,
  ExchangeMeta,
  OversizeAnswer,
  PendingExchange,
  Recorder,
  RecorderOptions,
} from './types.js';

/** What a worker recorder offers: what the proxies use of a recorder (`ProxyRecorder`) and where it writes. */
export interface WorkerRecorder
  extends Pick<
    Recorder,
    'sessionsDir' | 'beginExchange' | 'recordExchange' | 'event' | 'rememberHeaderSecret' | 'room' | 'close'
  > {
  /**
   * Resolves once the worker's recorder exists; rejects when the worker could not start it. Calls made
   * before wait in order; a proxy that waits starts with the recorder ready, not with a burst of them.
   */
  ready(): Promise<void>;
}

/** An exchange's times as they cross threads: epoch milliseconds (the batch is JSON). */
export interface WireMeta {
  transport?: ExchangeMeta['transport'];
  mcpSessionId?: string;
  startedAt?: number;
  endedAt?: number;
}

/**
 * The proxy's thread to the worker, in order, batched (FLUSH_MS) and sent as one JSON text:
 * what a proxy hands its recorder is JSON it parsed, and a string crosses threads as a copy of its bytes,
 * where the structured clone of the same objects costs several times its JSON.stringify. An HTTP answer
 * (`answered`) is not parsed on the proxy's thread at all: its bytes go beside the JSON (WorkerBatch).
 */
export type ToWorker =
  | { op: 'begin'; id: number; request: unknown; meta: WireMeta }
  | { op: 'complete'; id: number; response: unknown; meta: WireMeta | undefined }
  | {
      op: 'answered';
      id: number;
      status: number;
      /** Where its body is in the batch's bodies (set as the batch is sent) and how long. */
      offset?: number;
      bytes: number;
      meta: WireMeta | undefined;
    }
  | { op: 'too-large'; id: number; answer: OversizeAnswer; meta: WireMeta | undefined }
  | { op: 'fail' | 'timed-out' | 'client-left' | 'cancelled'; id: number; reason: string }
  | { op: 'note'; id: number; kind: string; detail: Record<string, unknown>; at: number | undefined }
  | { op: 'exchange'; request: unknown; response: unknown; meta: WireMeta }
  | {
      op: 'event';
      sessionId: string | undefined;
      kind: string;
      detail: Record<string, unknown>;
      mcpSessionId?: string;
    }
  | { op: 'header-secret'; secret: string }
  | { op: 'forget'; id: number }
  | { op: 'close'; exportDeadline?: number };

/**
 * A message as posted: `t` is when (epoch ms), so what the recorder stamps itself (an event's time, a failed
 * exchange's end) is the proxy's moment, not the worker's some milliseconds later.
 */
export type Posted = ToWorker & { t: number; [BODY]?: Uint8Array };

/**
 * An `answered` message's body, kept beside its JSON (a symbol key: JSON.stringify leaves it out). A batch's
 * bodies cross as one transferred ArrayBuffer, each at its message's `offset`, `bytes` long.
 */
const BODY: unique symbol = Symbol('body');

/** A batch as posted: its JSON, with the bodies of its `answered` messages when it has any. */
export type WorkerBatch = string | { text: string; bodies: ArrayBuffer };

/** The worker to the proxy's thread: the recorder's stderr lines, and its close. */
export type FromWorker =
  | { op: 'ready' }
  | { op: 'taken'; chars: number }
  | { op: 'stderr'; line: string }
  | { op: 'closed'; error?: string };

/**
 * Test seams (not exported by index.ts): the worker throws, uncaught, when it gets an event of a kind, as a
 * bug in the recorder would; or blocks on one; or the untaken JSON's cap is smaller.
 */
export interface WorkerRecorderFaults {
  crashOnEventKind?: string;
  /** The worker's thread blocks on an event of this kind until the file exists (a stalled commit). */
  holdOnEventKind?: { kind: string; untilFile: string };
  /** In place of MAX_UNTAKEN_CHARS. */
  maxUntakenChars?: number;
  /** In place of ROOM_HIGH_CHARS (room again at half of it). */
  roomHighChars?: number;
}

/**
 * What the worker starts with: the options that cross threads (no functions), the module whose handler gets
 * the closed sessions (closed-sessions.ts; loaded by the worker at close) and the faults.
 */
export interface WorkerRecorderData {
  options: Omit<RecorderOptions, 'stderr'>;
  closedSessions?: ClosedSessionsModule;
  faults?: WorkerRecorderFaults;
}

/**
 * What is posted waits this long for more: one wake-up of the worker for many calls, not several per call
 * (each is a syscall and, on a busy machine, a context switch on the proxy's thread). Measured against 2 ms:
 * less of the proxy's thread per call, no slower (the record queue commits every 4 ms anyway).
 */
const FLUSH_MS = 10;

/**
 * JSON chars (plus the bytes of unread HTTP answers) posted that the worker has not taken yet, at most (as the
 * record queue's 256 MiB): past it an answer is
 * recorded without its body (`queue-full`), as the record queue does, and a new call, exchange, note or event
 * is not posted at all, only counted (a `recording-gap` event once the worker catches up), so a stalled worker
 * never makes the proxy hold more than this and what is settling.
 */
const MAX_UNTAKEN_CHARS = 256 * 1024 * 1024;

/**
 * Past this much JSON (chars, plus unread answers' bytes) held for the worker (posted and not yet recorded, or
 * batched), `room()` makes the proxy
 * wait: the worker says it took a batch only once its recorder processed and committed it (a flush), so a
 * client faster than the recording is paced by it (as it was when both ran on one thread) instead of filling
 * the worker's queue (8,192 jobs before the queue itself calls for room: the stdio soak's proxy reached
 * 437 MB). About a thousand small calls; room again at half of it.
 */
const ROOM_HIGH_CHARS = 1024 * 1024;

const ENTRY = new URL('./worker-recorder-entry.js', import.meta.url);

class WorkerRecorderImpl implements WorkerRecorder {
  readonly sessionsDir: string;
  private readonly worker: Worker;
  private readonly stderr: (line: string) => void;
  private nextId = 1;
  private batch: Posted[] = [];
  /** Chars of JSON posted that the worker has not said it took. */
  private untaken = 0;
  /** Rough size of the answers in `batch`: not posted yet, but held all the same (counted against the cap). */
  private batchedAnswers = 0;
  private readonly maxUntaken: number;
  private readonly roomHigh: number;
  private readonly roomWaiters = new Waiters();
  /** What was not posted while the JSON held was at its cap, and when; said once the worker catches up. */
  private readonly gaps: RecordingGaps;
  /** Bearer tokens told at the cap (each once, at most as many as the redactor's pool holds): posted after. */
  private readonly keptSecrets = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  /** Why the worker stopped, when it did before close. */
  private stopped: string | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;
  private settleClose: ((error?: string) => void) | undefined;
  private readonly started: Promise<void>;
  private settleReady: ((error?: string) => void) | undefined;
  /** An exchange whose methods the proxy dropped: the worker forgets it (notes may come after it settles). */
  private readonly handles = new FinalizationRegistry<number>((id) => this.post({ op: 'forget', id }));

  constructor(
    options: RecorderOptions,
    closedSessions: ClosedSessionsModule | undefined,
    faults: WorkerRecorderFaults | undefined,
  ) {
    const { stderr, ...rest } = checkRecorderOptions(options);
    this.stderr = stderr ?? ((line) => process.stderr.write(`${line}\n`));
    this.sessionsDir = resolveSessionsDir(rest.sessionsDir);
    const data: WorkerRecorderData = { options: { ...rest, sessionsDir: this.sessionsDir } };
    if (closedSessions) data.closedSessions = closedSessions;
    if (faults) data.faults = faults;
    this.maxUntaken = faults?.maxUntakenChars ?? MAX_UNTAKEN_CHARS;
    this.roomHigh = faults?.roomHighChars ?? ROOM_HIGH_CHARS;
    const gapText = gapTexts({
      holder: "the recorder's thread",
      held: `${this.maxUntaken} chars of JSON it had not taken`,
      holds: `${this.maxUntaken} chars of JSON it has not taken`,
      calls: 'forwarded',
    });
    this.gaps = new RecordingGaps({
      held: () => this.untaken + this.batchedAnswers,
      cap: this.maxUntaken,
      reason: gapText.reason,
      now: () => Date.now(),
      // Tokens kept at the cap go first: the gap closes as the cap is left.
      record: (detail) => {
        this.postKeptSecrets();
        this.post({ op: 'event', sessionId: undefined, kind: RECORDING_GAP, detail: { ...detail } });
      },
      opened: () => this.stderr(gapText.opened),
    });
    // stdout: true keeps the worker's stdout off ours (a stdio proxy's stdout is the protocol).
    this.worker = new Worker(ENTRY, { workerData: data, stdout: true });
    this.worker.stdout.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    // Like an in-process recorder, it keeps the process alive only while it closes.
    this.worker.unref();
    this.started = new Promise<void>((resolve, reject) => {
      this.settleReady = (error) => {
        this.settleReady = undefined;
        if (error === undefined) resolve();
        else reject(new Error(error));
      };
    });
    // Whoever does not wait for it hears of a failed start through stderr (stop) and close.
    this.started.catch(() => {});
    this.worker.on('message', (message: FromWorker) => this.received(message));
    this.worker.on('error', (err) => this.stop(err.message));
    this.worker.on('messageerror', (err) => this.stop(err.message));
    this.worker.on('exit', (code) => this.stop(`it exited with code ${code}`));
  }

  beginExchange(request: unknown, meta: ExchangeMeta = {}): PendingExchange {
    if (this.closed || this.stopped !== undefined) return NOOP_EXCHANGE;
    if (this.gaps.refuses(notRecordedAs(request))) return NOOP_EXCHANGE;
    // The methods hold `exchange`, the registered object: it lives while any of them can still be called.
    const exchange = { id: this.nextId++ };
    this.handles.register(exchange, exchange.id);
    this.post({ op: 'begin', id: exchange.id, request, meta: wireMeta(meta) });
    const handle: PendingExchange = {
      complete: (response, m) => {
        const full = this.queueFull(response);
        const { id } = exchange;
        if (full) this.post({ op: 'too-large', id, answer: full, meta: m && wireMeta(m) });
        else this.post({ op: 'complete', id, response, meta: m && wireMeta(m) });
      },
      answered: (status, body, m) => {
        // At the cap the answer is read here, as `complete` takes it (recorded without its body).
        if (this.untaken + this.batchedAnswers + body.length > this.maxUntaken) {
          settleWithHttpAnswer(handle, status, body, m);
          return;
        }
        this.batchedAnswers += body.length;
        const message: ToWorker = {
          op: 'answered',
          id: exchange.id,
          status,
          bytes: body.length,
          meta: m && wireMeta(m),
        };
        this.post(message, body);
      },
      tooLarge: (answer, m) =>
        this.post({ op: 'too-large', id: exchange.id, answer, meta: m && wireMeta(m) }),
      fail: (reason) => this.post({ op: 'fail', id: exchange.id, reason: String(reason) }),
      timedOut: (reason) => this.post({ op: 'timed-out', id: exchange.id, reason: String(reason) }),
      clientLeft: (reason) => this.post({ op: 'client-left', id: exchange.id, reason: String(reason) }),
      cancelled: (reason) => this.post({ op: 'cancelled', id: exchange.id, reason: String(reason) }),
      note: (kind, detail, at) => {
        if (!this.gaps.refuses('other'))
          this.post({ op: 'note', id: exchange.id, kind, detail, at: at && msOf(at) });
      },
    };
    return handle;
  }

  ready(): Promise<void> {
    return this.started;
  }

  room(): Promise<void> | undefined {
    if (this.stopped !== undefined || this.closed) return undefined;
    if (this.untaken + this.batchedAnswers <= this.roomHigh) return undefined;
    return this.roomWaiters.wait();
  }

  /** Let the waiting proxy go on: room again (half the high mark), or the worker is gone or closing. */
  private wakeRoomWaiters(force: boolean): void {
    if (!this.roomWaiters.waiting) return;
    if (!force && this.untaken + this.batchedAnswers > this.roomHigh / 2) return;
    this.roomWaiters.wakeAll();
  }

  recordExchange(request: unknown, response: unknown, meta: ExchangeMeta = {}): void {
    if (this.gaps.refuses('other')) return;
    const full = this.queueFull(response);
    if (full) this.beginExchange(request, meta).tooLarge(full, meta);
    else this.post({ op: 'exchange', request, response, meta: wireMeta(meta) });
  }

  /** Tokens kept at the cap go as soon as it is left: before any request that is posted again. */
  private postKeptSecrets(): void {
    if (this.keptSecrets.size === 0 || this.gaps.atCap()) return;
    for (const secret of this.keptSecrets) this.post({ op: 'header-secret', secret });
    this.keptSecrets.clear();
  }

  /**
   * The answer as recorded without its body when it would take the JSON held (untaken, and batched for the next
   * flush) past its cap; else null, its size then counted as batched.
   */
  private queueFull(response: unknown): OversizeAnswer | null {
    const size = roughSize(response);
    if (this.untaken + this.batchedAnswers + size > this.maxUntaken)
      return queueFull(size, this.maxUntaken, response);
    this.batchedAnswers += size;
    return null;
  }

  event(
    sessionId: string | undefined,
    kind: string,
    detail: Record<string, unknown>,
    meta?: ExchangeMeta,
  ): void {
    // An agent's declared steps and verdicts are posted even at the cap (what its run is judged by), up to
    // GAP_DECLARED of them: past that they are counted too.
    const refused = DECLARED_KINDS.has(kind) ? this.gaps.refusesDeclared() : this.gaps.refuses('other');
    if (refused) return;
    if (meta?.mcpSessionId === undefined) this.post({ op: 'event', sessionId, kind, detail });
    else this.post({ op: 'event', sessionId, kind, detail, mcpSessionId: meta.mcpSessionId });
  }

  rememberHeaderSecret(secret: string): void {
    // At the cap a bearer token is kept (each once, at most as many as the redactor's pool holds) and posted
    // once the cap is left (postKeptSecrets): nothing from the requests it came with is recorded meanwhile.
    if (this.gaps.atCap()) {
      if (secret.length > MAX_SCRUBBED_SECRET) return; // the redactor would not keep it either
      this.gaps.start();
      const secrets = this.keptSecrets;
      secrets.delete(secret);
      secrets.add(secret);
      if (secrets.size > SECRET_BUDGET.header) secrets.delete(secrets.values().next().value as string);
      return;
    }
    this.post({ op: 'header-secret', secret });
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.closeNow(options.exportDeadline);
    return this.closing;
  }

  private closeNow(exportDeadline: number | undefined): Promise<void> {
    this.postKeptSecrets(); // a gap that only kept tokens records nothing (so does not post them)
    this.gaps.closeIfRoom(true);
    this.post(exportDeadline === undefined ? { op: 'close' } : { op: 'close', exportDeadline });
    this.closed = true;
    this.flush();
    this.wakeRoomWaiters(true);
    if (this.stopped !== undefined)
      return Promise.reject(new Error(`the recorder's worker thread stopped earlier: ${this.stopped}`));
    this.worker.ref();
    return new Promise<void>((resolve, reject) => {
      this.settleClose = (error) => {
        this.settleClose = undefined;
        this.worker.unref();
        if (error === undefined) resolve();
        else reject(new Error(error));
      };
    });
  }

  private post(message: ToWorker, body?: Uint8Array): void {
    if (this.stopped !== undefined || this.closed) return;
    (message as Posted).t = Date.now();
    if (body) (message as Posted)[BODY] = body;
    this.batch.push(message as Posted);
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_MS);
    this.flushTimer.unref();
  }

  /** Everything posted since the last flush, as one message. */
  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.batch.length === 0 || this.stopped !== undefined) return;
    const batch = this.batch;
    this.batch = [];
    this.batchedAnswers = 0; // from now on counted as untaken, by its JSON
    try {
      this.send(batch);
    } catch {
      // A value JSON cannot hold (a BigInt, a cycle in an event's detail, a text past V8's string limit): sent
      // one by one, it is dropped alone.
      for (const message of batch) {
        try {
          this.send([message]);
        } catch (one) {
          const why = (one as Error).message;
          this.stderr(`mcec-recorder: not recorded (${why}): one ${message.op} message`);
          // An answer that cannot cross still settles its call (failed, saying why): never read as unanswered.
          if (message.op === 'complete') {
            const reason = `the answer could not be passed to the recorder's thread (${why}): not recorded`;
            this.send([{ op: 'fail', id: message.id, reason, t: message.t }]);
          }
        }
      }
    }
  }

  /** Messages as one JSON text to the worker, counted as untaken until it says it took them. */
  private send(messages: Posted[]): void {
    let size = 0;
    for (const message of messages) {
      const body = message[BODY];
      if (body && message.op === 'answered') {
        message.offset = size;
        size += body.length;
      }
    }
    const text = JSON.stringify(messages);
    if (size === 0) {
      this.worker.postMessage(text);
      this.untaken += text.length;
      return;
    }
    // One copy of the answers' bytes, into memory of their own (not zeroed first, not the shared pool), handed
    // over to the worker, not copied again.
    const view = Buffer.allocUnsafeSlow(size);
    for (const message of messages) {
      const body = message[BODY];
      if (body && message.op === 'answered') view.set(body, message.offset);
    }
    const bodies = view.buffer as ArrayBuffer;
    const batch: WorkerBatch = { text, bodies };
    this.worker.postMessage(batch, [bodies]);
    this.untaken += text.length + size;
  }

  private received(message: FromWorker): void {
    if (message.op === 'stderr') this.stderr(message.line);
    else if (message.op === 'taken') {
      this.untaken -= message.chars;
      this.postKeptSecrets();
      this.gaps.closeIfRoom(false);
      this.wakeRoomWaiters(false);
    } else if (message.op === 'ready') this.settleReady?.();
    else this.settleClose?.(message.error);
  }

  /** The worker is gone: once on stderr, unless it was the end of a close. */
  private stop(reason: string): void {
    if (this.stopped !== undefined) return;
    if (this.closed && this.settleClose === undefined) return; // exited after its close, as it should
    this.stopped = reason;
    this.batch = [];
    this.wakeRoomWaiters(true);
    this.worker.unref();
    this.settleReady?.(`the recorder's worker thread stopped before it was ready: ${reason}`);
    if (this.settleClose) {
      this.settleClose(`the recorder's worker thread stopped while closing: ${reason}`);
      return;
    }
    this.stderr(
      `mcec-recorder: the recorder's worker thread stopped (${reason}): calls are still forwarded but no ` +
        'longer recorded; what it had not committed is lost',
    );
  }
}

/** Epoch milliseconds of a date; undefined for an invalid one (the recorder then stamps its own). */
function msOf(date: Date): number | undefined {
  const ms = date instanceof Date ? date.getTime() : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

function wireMeta(meta: ExchangeMeta): WireMeta {
  const wire: WireMeta = {};
  if (meta.transport !== undefined) wire.transport = meta.transport;
  if (meta.mcpSessionId !== undefined) wire.mcpSessionId = meta.mcpSessionId;
  if (meta.startedAt !== undefined) wire.startedAt = msOf(meta.startedAt);
  if (meta.endedAt !== undefined) wire.endedAt = msOf(meta.endedAt);
  return wire;
}

/**
 * A recorder in a worker thread, with `createRecorder`'s options (checked here: bad options throw at once,
 * as `createRecorder`'s do). `stderr` is called on this thread with the recorder's notices. At close the
 * worker hands the closed sessions' dirs to the handler `closedSessions` names (src/record/README.md "Closed
 * sessions").
 */
export function createWorkerRecorder(
  options: RecorderOptions = {},
  closedSessions?: ClosedSessionsModule,
): WorkerRecorder {
  return new WorkerRecorderImpl(options, closedSessions, undefined);
}

/** createWorkerRecorder with a fault injected into the worker (test seam; not part of the package's API). */
export function createWorkerRecorderWithFaults(
  options: RecorderOptions,
  faults: WorkerRecorderFaults,
): WorkerRecorder {
  return new WorkerRecorderImpl(options, undefined, faults);
}
