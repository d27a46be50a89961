/**
 * A recorder in a worker thread, for a proxy: the proxy's thread only forwards bytes and posts what it saw;
 * parsing, validation, redaction and the SQLite commits run in the worker (`worker-recorder-entry.ts`), on
 * the real `createRecorder` with the same options. Every method is fire-and-forget (one ordered channel,
 * exchanges by id) but `close()`, which resolves once the worker's recorder closed. A worker that dies is
 * said once on stderr; the proxy goes on forwarding, unrecorded.
 */

import { Worker } from 'node:worker_threads';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import { NOOP_EXCHANGE } from './exchange.js';
import { checkRecorderOptions } from './options.js';
import type { ExchangeMeta, PendingExchange, Recorder, RecorderOptions } from './types.js';

/** What a worker recorder offers: what the proxies use of a recorder (`ProxyRecorder`) and where it writes. */
export type WorkerRecorder = Pick<
  Recorder,
  'sessionsDir' | 'beginExchange' | 'recordExchange' | 'event' | 'rememberHeaderSecret' | 'close'
>;

/** The pending exchange's methods, as posted (`settle`). */
type PendingMethod = keyof PendingExchange;

/** The proxy's thread to the worker, in order, batched per turn of the event loop. */
export type ToWorker =
  | { op: 'begin'; id: number; request: unknown; meta: ExchangeMeta }
  | { op: 'settle'; id: number; method: PendingMethod; args: unknown[] }
  | { op: 'exchange'; request: unknown; response: unknown; meta: ExchangeMeta }
  | { op: 'event'; sessionId: string | undefined; kind: string; detail: Record<string, unknown> }
  | { op: 'header-secret'; secret: string }
  | { op: 'forget'; id: number }
  | { op: 'close' };

/** The worker to the proxy's thread: the recorder's stderr lines, and its close. */
export type FromWorker = { op: 'stderr'; line: string } | { op: 'closed'; error?: string };

/**
 * Test seam (not exported by index.ts): the worker throws, uncaught, when it gets an event of this kind, as a
 * bug in the recorder would.
 */
export interface WorkerRecorderFaults {
  crashOnEventKind?: string;
}

/** What the worker starts with: the options that cross threads (no functions) and the faults. */
export interface WorkerRecorderData {
  options: Omit<RecorderOptions, 'stderr'>;
  faults?: WorkerRecorderFaults;
}

const ENTRY = new URL('./worker-recorder-entry.js', import.meta.url);

class WorkerRecorderImpl implements WorkerRecorder {
  readonly sessionsDir: string;
  private readonly worker: Worker;
  private readonly stderr: (line: string) => void;
  private nextId = 1;
  private batch: ToWorker[] = [];
  private flushQueued = false;
  /** Why the worker stopped, when it did before close. */
  private stopped: string | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;
  private settleClose: ((error?: string) => void) | undefined;
  /** A handle the proxy dropped: the worker forgets its exchange (notes may come after it settles). */
  private readonly handles = new FinalizationRegistry<number>((id) => this.post({ op: 'forget', id }));

  constructor(options: RecorderOptions, faults: WorkerRecorderFaults | undefined) {
    const { stderr, ...rest } = checkRecorderOptions(options);
    this.stderr = stderr ?? ((line) => process.stderr.write(`${line}\n`));
    this.sessionsDir = resolveSessionsDir(rest.sessionsDir);
    const data: WorkerRecorderData = { options: { ...rest, sessionsDir: this.sessionsDir } };
    if (faults) data.faults = faults;
    // stdout: true keeps the worker's stdout off ours (a stdio proxy's stdout is the protocol).
    this.worker = new Worker(ENTRY, { workerData: data, stdout: true });
    this.worker.stdout.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    // Like an in-process recorder, it keeps the process alive only while it closes.
    this.worker.unref();
    this.worker.on('message', (message: FromWorker) => this.received(message));
    this.worker.on('error', (err) => this.stop(err.message));
    this.worker.on('messageerror', (err) => this.stop(err.message));
    this.worker.on('exit', (code) => this.stop(`it exited with code ${code}`));
  }

  beginExchange(request: unknown, meta: ExchangeMeta = {}): PendingExchange {
    if (this.closed || this.stopped !== undefined) return NOOP_EXCHANGE;
    const id = this.nextId++;
    this.post({ op: 'begin', id, request, meta });
    const settle =
      (method: PendingMethod) =>
      (...args: unknown[]): void =>
        this.post({ op: 'settle', id, method, args });
    const handle: PendingExchange = {
      complete: settle('complete'),
      fail: settle('fail'),
      timedOut: settle('timedOut'),
      clientLeft: settle('clientLeft'),
      tooLarge: settle('tooLarge'),
      note: settle('note'),
    };
    this.handles.register(handle, id);
    return handle;
  }

  recordExchange(request: unknown, response: unknown, meta: ExchangeMeta = {}): void {
    this.post({ op: 'exchange', request, response, meta });
  }

  event(sessionId: string | undefined, kind: string, detail: Record<string, unknown>): void {
    this.post({ op: 'event', sessionId, kind, detail });
  }

  rememberHeaderSecret(secret: string): void {
    this.post({ op: 'header-secret', secret });
  }

  close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  private closeNow(): Promise<void> {
    this.post({ op: 'close' });
    this.closed = true;
    this.flush();
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

  private post(message: ToWorker): void {
    if (this.stopped !== undefined || this.closed) return;
    this.batch.push(message);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => this.flush());
  }

  /** Everything posted in this turn goes in one message: one wake-up of the worker, not one per call. */
  private flush(): void {
    this.flushQueued = false;
    if (this.batch.length === 0 || this.stopped !== undefined) return;
    const batch = this.batch;
    this.batch = [];
    try {
      this.worker.postMessage(batch);
    } catch (err) {
      // A value that cannot cross threads (a function in an event's detail): posted one by one, it is dropped alone.
      for (const message of batch) {
        try {
          this.worker.postMessage([message]);
        } catch {
          this.stderr(`mcec-recorder: not recorded (${(err as Error).message}): a ${message.op} message`);
        }
      }
    }
  }

  private received(message: FromWorker): void {
    if (message.op === 'stderr') this.stderr(message.line);
    else this.settleClose?.(message.error);
  }

  /** The worker is gone: once on stderr, unless it was the end of a close. */
  private stop(reason: string): void {
    if (this.stopped !== undefined) return;
    if (this.closed && this.settleClose === undefined) return; // exited after its close, as it should
    this.stopped = reason;
    this.batch = [];
    this.worker.unref();
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

/**
 * A recorder in a worker thread, with `createRecorder`'s options (checked here: bad options throw at once,
 * as `createRecorder`'s do). `stderr` is called on this thread with the recorder's notices.
 */
export function createWorkerRecorder(options: RecorderOptions = {}): WorkerRecorder {
  return new WorkerRecorderImpl(options, undefined);
}

/** createWorkerRecorder with a fault injected into the worker (test seam; not part of the package's API). */
export function createWorkerRecorderWithFaults(
  options: RecorderOptions,
  faults: WorkerRecorderFaults,
): WorkerRecorder {
  return new WorkerRecorderImpl(options, faults);
}
