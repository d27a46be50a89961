/**
 * The worker thread of `createWorkerRecorder` (worker-recorder.ts): the real recorder, fed in order from the
 * proxy's thread. Its stderr lines go back as messages; `close` answers with `closed` (and its error, if any).
 */

import { parentPort, workerData } from 'node:worker_threads';
import { createRecorder } from './recorder.js';
import type { PendingExchange } from './types.js';
import type { FromWorker, ToWorker, WorkerRecorderData } from './worker-recorder.js';

const port = parentPort;
if (!port) throw new Error('worker-recorder-entry runs only as a worker thread (createWorkerRecorder)');
const { options, faults } = workerData as WorkerRecorderData;
const send = (message: FromWorker) => port.postMessage(message);
const recorder = createRecorder({ ...options, stderr: (line) => send({ op: 'stderr', line }) });
/** Exchanges by the id the proxy's thread gave them, until it drops its handle (`forget`). */
const exchanges = new Map<number, PendingExchange>();

function handle(message: ToWorker): void {
  switch (message.op) {
    case 'begin':
      exchanges.set(message.id, recorder.beginExchange(message.request, message.meta));
      return;
    case 'settle': {
      const pending = exchanges.get(message.id);
      if (pending) (pending[message.method] as (...args: unknown[]) => void)(...message.args);
      return;
    }
    case 'exchange':
      recorder.recordExchange(message.request, message.response, message.meta);
      return;
    case 'event':
      recorder.event(message.sessionId, message.kind, message.detail);
      return;
    case 'header-secret':
      recorder.rememberHeaderSecret(message.secret);
      return;
    case 'forget':
      exchanges.delete(message.id);
      return;
    case 'close':
      exchanges.clear();
      recorder.close().then(
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

port.on('message', (batch: ToWorker[]) => {
  for (const message of batch) {
    // The test seam: a throw outside the guard, as a bug in this loop would be.
    if (message.op === 'event' && message.kind === faults?.crashOnEventKind)
      throw new Error(`injected crash on a ${message.kind} event`);
    try {
      handle(message);
    } catch {
      // The recorder counts its own failures; one bad message never stops the ones after it.
    }
  }
});
