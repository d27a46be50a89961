/** The window or screen region an image shows: from the object that held it, or the call that made it. */
import type { Envelope } from '../contract/types.js';
import { isRecord } from '../util/json.js';
import { windowOf } from './knowledge.js';
import type { ImageFrame } from './plan.js';

/** One call as masking sees it. */
export interface MaskedCall {
  seq: number;
  tool: string;
  args: unknown;
}

const TARGET_KEYS = ['window', 'handle', 'process', 'className', 'foreground'];

/**
 * A window capture's window (the container's `window`, else the call's result or partialResult), or a
 * capture call's region (`x, y, width, height` without a target). `ownFrameOnly`: an earlier observation
 * echoed in a failure; only its own `window` counts.
 */
export function frameOf(
  container: Record<string, unknown> | undefined,
  call: MaskedCall,
  envelope: Envelope | undefined,
  ownFrameOnly: boolean,
): ImageFrame | undefined {
  const own = container ? windowOf(container.window) : undefined;
  if (own) return windowFrame(own);
  if (ownFrameOnly) return undefined; // an earlier observation: the call's own frame is not its frame
  const result = envelope?.ok
    ? envelope.result
    : envelope && !envelope.ok
      ? envelope.error.partialResult
      : undefined;
  const fromResult = isRecord(result) ? windowOf(result.window) : undefined;
  if (fromResult) return windowFrame(fromResult);
  const args = isRecord(call.args) ? call.args : {};
  if (
    call.tool === 'capture' &&
    !TARGET_KEYS.some((k) => args[k] !== undefined && args[k] !== '' && args[k] !== false)
  ) {
    const n = (k: string) =>
      typeof args[k] === 'number' && Number.isFinite(args[k]) ? (args[k] as number) : NaN;
    const r = { x: n('x'), y: n('y'), width: n('width'), height: n('height') };
    if (Object.values(r).every(Number.isFinite) && r.width > 0 && r.height > 0) return { screen: r };
  }
  return undefined;
}

function windowFrame(w: NonNullable<ReturnType<typeof windowOf>>): ImageFrame {
  return {
    screen: w.rect,
    window: { handle: w.handle, title: w.title, className: w.className, processName: w.processName },
  };
}
