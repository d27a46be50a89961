/**
 * The worker thread of `createWorkerRecorder` (worker-recorder.ts): the real recorder, fed in order from the
 * proxy's thread. Its stderr lines go back as messages; `close` answers with `closed` (and its error, if any).
 */

import fs from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { Clock } from './clock.js';
import { handlerInModule } from './closed-sessions.js';
import { settleWithHttpAnswer } from './http-answer.js';
import { createRecorderOnClock } from './recorder.js';
import type { ExchangeMeta, PendingExchange } from './types.js';
import type { FromWorker, Posted, WireMeta, WorkerBatch, WorkerRecorderData } from './worker-recorder.js';

const port = parentPort;
if (!port) throw new Error('worker-recorder-entry runs only as a worker thread (createWorkerRecorder)');
const { options, closedSessions, faults } = workerData as WorkerRecorderData;
const send = (message: FromWorker) => port.postMessage(message);
/** When the message being handled was posted: the recorder's wall clock while it is handled. */
let postedAt: number | undefined;
const clock: Clock = { now: () => performance.now(), date: () => new Date(postedAt ?? Date.now()) };
const recorder = createRecorderOnClock(
  { ...options, stderr: (line) => send({ op: 'stderr', line }) },
  clock,
  undefined,
  closedSessions && handlerInModule(closedSessions),
);
/**
 * Exchanges by the id the proxy's thread gave them, until it drops its handle (`forget`) or SETTLED_KEEP_MS
 * after they settled, whichever is first.
 */
const exchanges = new Map<number, PendingExchange>();
/**
 * How long a settled exchange stays for a note that comes after its answer. `forget` alone waits for the
 * proxy's thread to collect the handle, which a busy proxy does only at a full GC: 10,000-25,000 settled
 * calls, their answers with them, were held meanwhile (a 60 MB swing in this thread's heap under the stdio
 * soak's load). A quarter of a second is ample for an answer's last notes, which come in order.
 */
const SETTLED_KEEP_MS = 250;
/** The settled exchanges' ids and when they settled (posted time), oldest first. */
const settled = new Map<number, number>();

function markSettled(id: number, at: number): void {
  if (exchanges.has(id) && !settled.has(id)) settled.set(id, at);
}

/** Let go of the exchanges settled SETTLED_KEEP_MS or more before `now` (a posted time). */
function dropSettled(now: number): void {
  for (const [id, at] of settled) {
    if (now - at < SETTLED_KEEP_MS) return;
    settled.delete(id);
    exchanges.delete(id);
  }
}
send({ op: 'ready' });

/** An exchange's times back as dates. */
function metaOf(wire: WireMeta | undefined): ExchangeMeta | undefined {
  if (!wire) return undefined;
  const meta: ExchangeMeta = {};
  if (wire.transport !== undefined) meta.transport = wire.transport;
  if (wire.mcpSessionId !== undefined) meta.mcpSessionId = wire.mcpSessionId;
  if (typeof wire.startedAt === 'number') meta.startedAt = new Date(wire.startedAt);
  if (typeof wire.endedAt === 'number') meta.endedAt = new Date(wire.endedAt);
  return meta;
}

function handle(message: Posted): void {
  switch (message.op) {
    case 'begin':
      exchanges.set(message.id, recorder.beginExchange(message.request, metaOf(message.meta)));
      return;
    case 'complete':
      exchanges.get(message.id)?.complete(message.response, metaOf(message.meta));
      markSettled(message.id, message.t);
      return;
    case 'answered': {
      const exchange = exchanges.get(message.id);
      if (exchange) settleWithHttpAnswer(exchange, message.status, bodyOf(message), metaOf(message.meta));
      markSettled(message.id, message.t);
      return;
    }
    case 'too-large':
      exchanges.get(message.id)?.tooLarge(message.answer, metaOf(message.meta));
      markSettled(message.id, message.t);
      return;
    case 'fail':
      exchanges.get(message.id)?.fail(message.reason);
      markSettled(message.id, message.t);
      return;
    case 'timed-out':
      exchanges.get(message.id)?.timedOut(message.reason);
      return;
    case 'client-left':
      exchanges.get(message.id)?.clientLeft(message.reason);
      return;
    case 'cancelled':
      exchanges.get(message.id)?.cancelled?.(message.reason);
      return;
    case 'note': {
      const at = typeof message.at === 'number' ? new Date(message.at) : undefined;
      const exchange = exchanges.get(message.id);
      // Past SETTLED_KEEP_MS after its answer: an event of the session, no longer tied to the call.
      if (exchange) exchange.note(message.kind, message.detail, at);
      else recorder.event(undefined, message.kind, message.detail);
      return;
    }
    case 'exchange':
      recorder.recordExchange(message.request, message.response, metaOf(message.meta));
      return;
    case 'event':
      recorder.event(
        message.sessionId,
        message.kind,
        message.detail,
        message.mcpSessionId === undefined ? undefined : { mcpSessionId: message.mcpSessionId },
      );
      return;
    case 'header-secret':
      recorder.rememberHeaderSecret(message.secret);
      return;
    case 'forget':
      exchanges.delete(message.id);
      settled.delete(message.id);
      return;
    case 'close':
      exchanges.clear();
      settled.clear();
      recorder.close({ exportDeadline: message.exportDeadline }).then(
        () => closed(),
        (err: unknown) => closed(err instanceof Error ? err.message : String(err)),
      );
      return;
  }
}

/** Answer the close and let the thread end: nothing else will come. */
function closed(error?: string): void {
  send(error === undefined ? { op: 'closed' } : { op: 'closed', error });
  port?.close();
}

/** The test seam's hold: this thread blocked (as by a stalled commit) until the file exists. */
function holdUntil(file: string): void {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (!fs.existsSync(file)) Atomics.wait(nap, 0, 0, 10);
}

/** The answers' bodies of the batch being handled. */
let bodies = new Uint8Array(0);

/** An `answered` message's body, in its batch's bodies. */
function bodyOf(message: { offset?: number; bytes: number }): Uint8Array {
  const at = message.offset ?? 0;
  return bodies.subarray(at, at + message.bytes);
}

port.on('message', (batch: WorkerBatch) => {
  const text = typeof batch === 'string' ? batch : batch.text;
  bodies = typeof batch === 'string' ? new Uint8Array(0) : new Uint8Array(batch.bodies);
  const messages = JSON.parse(text) as Posted[];
  for (const message of messages) {
    // The test seams: a throw outside the guard, as a bug in this loop would be; a blocked thread.
    if (message.op === 'event' && message.kind === faults?.crashOnEventKind)
      throw new Error(`injected crash on a ${message.kind} event`);
    if (message.op === 'event' && message.kind === faults?.holdOnEventKind?.kind)
      holdUntil(faults.holdOnEventKind.untilFile);
    postedAt = message.t;
    try {
      handle(message);
    } catch {
      // The recorder counts its own failures; one bad message never stops the ones after it.
    } finally {
      postedAt = undefined;
    }
  }
  // By the proxy's clock (when posted), so a worker running behind never drops an exchange a note follows.
  const last = messages[messages.length - 1];
  if (last) dropSettled(last.t);
  // Taken once recorded (processed and committed): until then the proxy's thread counts it as held (room()).
  const size = text.length + bodies.length;
  bodies = new Uint8Array(0);
  const taken = () => send({ op: 'taken', chars: size });
  recorder.flush().then(taken, taken);
});
