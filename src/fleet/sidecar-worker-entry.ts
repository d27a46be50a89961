/**
 * The worker thread of `stepSessionDirs` (sidecar-worker.ts): runs `sidecarStep` over each chunk of session
 * dirs posted on its port and posts the steps back. Loads the sidecar code only (no catalog, no SQLite).
 */
import path from 'node:path';
import { type MessagePort, workerData } from 'node:worker_threads';
import { type SidecarStep, sidecarStep } from './sidecar-entry.js';
import type { ChunkSteps, StepChunk, StepWorkerData } from './sidecar-worker.js';

const { port, root, entryVersion } = workerData as StepWorkerData & { port: MessagePort };
port.on('message', (chunk: StepChunk) => {
  const steps: SidecarStep[] = chunk.names.map((name, k) =>
    sidecarStep(path.join(root, name), entryVersion, chunk.checks[k] ?? null),
  );
  port.postMessage({ index: chunk.index, steps } satisfies ChunkSteps);
});
