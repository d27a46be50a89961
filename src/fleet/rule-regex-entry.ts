/**
 * The worker thread of `RegexThread` (rule-regex.ts): tests one user regex (case-insensitive) against each
 * batch of values posted to it, writes one byte per value into the batch's shared buffer and then its flag,
 * which the caller waits on. Says it is ready through the flag it was started with.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BATCH_BAD_PATTERN, BATCH_DONE, type RegexBatch, type RegexWorkerData } from './rule-regex.js';

const port = parentPort;
if (!port) throw new Error('rule-regex-entry runs only as the worker thread of RegexThread (rule-regex.ts)');
const ready = new Int32Array((workerData as RegexWorkerData).ready);

port.on('message', ({ pattern, values, shared }: RegexBatch) => {
  const flag = new Int32Array(shared, 0, 1);
  const out = new Uint8Array(shared, 4);
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'i');
  } catch {
    Atomics.store(flag, 0, BATCH_BAD_PATTERN);
    Atomics.notify(flag, 0);
    return;
  }
  for (let i = 0; i < values.length; i++) out[i] = re.test(values[i]!) ? 1 : 0;
  Atomics.store(flag, 0, BATCH_DONE);
  Atomics.notify(flag, 0);
});

Atomics.store(ready, 0, 1);
Atomics.notify(ready, 0);
