/** Recording stages: a throw inside one is tagged with its name, for the `record-failure` event. */
import type { RecordStage } from './types.js';

/** An error tagged with the stage it was thrown in. */
export type StageError = Error & { recordStage?: RecordStage };

/** The stage a throw came from (`store` when untagged: the queue machinery itself). */
export function stageOf(err: unknown): RecordStage {
  return (err as { recordStage?: RecordStage } | null)?.recordStage ?? 'store';
}

function tagged(err: unknown, name: RecordStage): unknown {
  if (err !== null && typeof err === 'object') {
    (err as { recordStage?: RecordStage }).recordStage ??= name;
    return err;
  }
  return Object.assign(new Error(String(err)), { recordStage: name });
}

/**
 * Run one stage, sync or async: `beforeStage` (the fault-injection seam) first, then `fn`; a throw or a
 * rejection is tagged with the stage's name (the first stage to tag an error names it).
 */
export function inStage<T>(
  name: RecordStage,
  beforeStage: ((stage: RecordStage) => void) | undefined,
  fn: () => T,
): T {
  try {
    beforeStage?.(name);
    const value = fn();
    if (value instanceof Promise) {
      return value.catch((err: unknown) => {
        throw tagged(err, name);
      }) as T;
    }
    return value;
  } catch (err) {
    throw tagged(err, name);
  }
}
