/**
 * `index`'s per-dir work on two threads: `sidecarStep` (the sidecar read and parsed, the log's hash: most of
 * an index of sessions closed by the recorder) runs on this thread and on one worker thread
 * (sidecar-worker-entry.ts) at once, over chunks of dirs each takes in turn; everything that touches the
 * catalog stays on this thread. Without a spare core, a built entry (run from the TypeScript sources) or a
 * worker that starts, the steps all run here; a chunk whose worker stopped is stepped here again (a step
 * writes nothing, so repeating one is harmless).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MessagePort, Worker } from 'node:worker_threads';
import type { LogCheck } from '../store/catalog.js';
import { type SidecarStep, sidecarStep } from './sidecar-entry.js';

/** Below this many dirs a worker's start (tens of ms) is not worth it. */
const WORKER_FROM = 512;
/** Chunks posted to the worker and not answered yet: one it works on, one waiting, so it never idles. */
const WORKER_CHUNKS = 2;
/**
 * The built entry, found from dist/fleet/ (this module unbundled) and dist/cli/ (bundled into a chunk of
 * mcec-bundle) alike; under the TypeScript sources there is no .js, so no worker.
 */
const ENTRY = new URL('../fleet/sidecar-worker-entry.js', import.meta.url);

/** What the worker is started with. */
export interface StepWorkerData {
  root: string;
  entryVersion: string;
}
/** A chunk posted to the worker: dir names under `root`, and the catalog's check of each (or null). */
export interface StepChunk {
  index: number;
  names: string[];
  checks: Array<LogCheck | null>;
}
/** The worker's answer: a step per name, in order. */
export interface ChunkSteps {
  index: number;
  steps: SidecarStep[];
}

/**
 * Step every chunk of session dirs under `root`, each once (on either thread), and give each chunk with its
 * steps to `finish`, on this thread, one at a time, in the order they are done. `prepare` runs on this thread
 * before a chunk's steps start (what must be read before the dir is). `worker`: true uses one whenever it can
 * (tests), false never; by default from WORKER_FROM dirs when a core is spare. Returns how many dirs the
 * worker stepped.
 */
export async function stepSessionDirs<T extends { name: string; check?: LogCheck | null }>(
  root: string,
  chunks: T[][],
  entryVersion: string,
  hooks: {
    prepare: (chunk: T[]) => void;
    finish: (chunk: T[], steps: SidecarStep[]) => void | Promise<void>;
  },
  worker?: boolean,
): Promise<number> {
  const stepHere = (chunk: T[]) =>
    chunk.map((item) => sidecarStep(path.join(root, item.name), entryVersion, item.check ?? null));
  const dirs = chunks.reduce((n, c) => n + c.length, 0);
  const helper =
    worker === false || (worker === undefined && (dirs < WORKER_FROM || !spareCore()))
      ? null
      : await startWorker({ root, entryVersion });
  const posted = new Map<number, T[]>();
  const answered: ChunkSteps[] = [];
  let wake: (() => void) | undefined;
  let stopped = helper === null;
  helper?.port.on('message', (answer: ChunkSteps) => {
    answered.push(answer);
    wake?.();
  });
  const stop = () => {
    stopped = true;
    wake?.();
  };
  helper?.worker.once('error', stop).once('exit', stop);
  let next = 0;
  let workerSteps = 0;
  const take = () => {
    const chunk = chunks[next++]!;
    hooks.prepare(chunk);
    return chunk;
  };
  const finishAnswered = async () => {
    for (let answer = answered.shift(); answer; answer = answered.shift()) {
      const chunk = posted.get(answer.index);
      if (!chunk) continue;
      posted.delete(answer.index);
      workerSteps += chunk.length;
      await hooks.finish(chunk, answer.steps);
    }
  };
  try {
    for (;;) {
      while (helper && !stopped && posted.size < WORKER_CHUNKS && next < chunks.length) {
        const index = next;
        const chunk = take();
        posted.set(index, chunk);
        const names = chunk.map((item) => item.name);
        const checks = chunk.map((item) => item.check ?? null);
        helper.port.postMessage({ index, names, checks } satisfies StepChunk);
      }
      if (next < chunks.length) {
        const chunk = take();
        await hooks.finish(chunk, stepHere(chunk));
        // The worker's answers come in as events: let them.
        if (helper) await new Promise<void>((resolve) => setImmediate(resolve));
      }
      await finishAnswered();
      if (next < chunks.length) continue;
      if (posted.size === 0) break;
      if (stopped) {
        // The worker stopped with chunks unanswered: step them here.
        for (const [index, chunk] of posted) {
          posted.delete(index);
          await hooks.finish(chunk, stepHere(chunk));
        }
        break;
      }
      // Every chunk is taken and some are the worker's still: wait for its answers (or its end).
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
    return workerSteps;
  } finally {
    if (helper) {
      helper.port.close();
      await helper.worker.terminate();
    }
  }
}

/**
 * Whether a second thread can be expected to run beside this one: two cores or more, and the last minute's
 * load average leaves one free (Windows reports none: 0). On a machine busy with other work the worker only
 * time-slices with this thread: measured on two busy cores, stepping 10,000 dirs on two threads took 1.1 to
 * 1.4 times as long as on one.
 */
function spareCore(): boolean {
  const cores = os.availableParallelism();
  return cores >= 2 && os.loadavg()[0]! <= cores - 1;
}

/**
 * The worker, or null when there is no built entry or it cannot start. worker_threads loads only here: a
 * sweep that reads a few new dirs (the first `list` after they came) does not pay for it.
 */
async function startWorker(data: StepWorkerData): Promise<{ worker: Worker; port: MessagePort } | null> {
  try {
    if (!fs.existsSync(fileURLToPath(ENTRY))) return null;
    const { MessageChannel, Worker } = await import('node:worker_threads');
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(ENTRY, { workerData: { ...data, port: port2 }, transferList: [port2] });
    return { worker, port: port1 };
  } catch {
    return null;
  }
}
