/**
 * The value handed back to the agent for a call (pure): one function, used on the critical path when a
 * failure's value cannot depend on queued work, and by the queue otherwise. See the README, "What the agent
 * gets back".
 */
import type { CompactedImage } from '../artifacts/compact.js';
import { findImageBytes } from '../contract/image-bytes.js';
import type { Envelope, ToolOutput, ToolOutputKind } from '../contract/types.js';
import { isRecord } from '../util/json.js';
import type { ThrownCall } from './call.js';
import {
  envelopeText,
  isCommandLevelFailure,
  mayHoldImageBytes,
  quickOutcome,
  thrownFailure,
  withAbsoluteArtifacts,
  withLastObservation,
} from './outcome.js';

/** The output kinds whose failures can carry a rewritten `lastObservation`. */
const REWRITABLE_KINDS: readonly ToolOutputKind[] = ['envelope', 'call-tool-result', 'json-rpc-result'];

/** What the value needs to know of the session the call is filed in. */
export interface SessionView {
  dir: string;
  /** The last good observation, compact, artifact paths relative to `dir`. */
  lastObservation: Record<string, unknown> | null;
}

export interface AgentValueInput {
  tool: string;
  /** What the dispatch returned (unused for a throw). */
  output: unknown;
  thrown?: ThrownCall;
  /** The output as read (readToolOutput); without it the output goes back as it came. */
  read?: ToolOutput;
  /** The envelope after compaction (image bytes replaced by capture-summaries); default the read one. */
  compactEnvelope?: Envelope;
  /** Images compacted out of the envelope and response. */
  images: readonly CompactedImage[];
  /** The session the call named by its argument: a thrown failure's envelope names it. */
  namedSessionId?: string;
  /** The session whose last good observation may be attached; none: nothing is attached. */
  session?: SessionView;
  /** Attach the last good observation to command-level failures that lack one (`fillLastObservation`). */
  fillLastObservation: boolean;
}

/**
 * The agent's value: the output itself (the same object), except a throw (an `unhandled` failure
 * in the dispatch's shape, with the session's last good observation), a failure whose `lastObservation` had
 * image bytes (the capture-summary, absolute artifact path), and a command-level failure without a
 * `lastObservation` (the session's, when filling is on).
 */
export function agentValue(input: AgentValueInput): unknown {
  const { output, session } = input;
  if (input.thrown) {
    const lo = session?.lastObservation;
    const abs = session && lo ? withAbsoluteArtifacts(lo, session.dir) : undefined;
    return thrownFailure(input.tool, input.thrown.message, input.namedSessionId, abs, input.thrown.shape)
      .output;
  }
  const out = input.read;
  const env = out?.envelope;
  if (!out || !env || env.ok || out.synthesized || !session) return output;
  if (!REWRITABLE_KINDS.includes(out.kind)) return output;
  // Image bytes in lastObservation: the agent gets the summary with an absolute artifact path.
  const compact = input.compactEnvelope ?? env;
  const leaked = input.images.some((i) => i.jsonPath.startsWith('/error/lastObservation'));
  if (leaked && !compact.ok && isRecord(compact.error.lastObservation)) {
    const abs = withAbsoluteArtifacts(compact.error.lastObservation, session.dir);
    return withLastObservation(output, out.kind, abs) ?? output;
  }
  // A command-level failure without one gets the session's last good observation.
  const lo = env.error.lastObservation;
  if (
    input.fillLastObservation &&
    (lo === undefined || lo === null) &&
    session.lastObservation &&
    isCommandLevelFailure(input.tool, env.error)
  ) {
    return (
      withLastObservation(output, out.kind, withAbsoluteArtifacts(session.lastObservation, session.dir)) ??
      output
    );
  }
  return output;
}

/** The value when nothing of the recording can be used (it failed): the output, or the bare thrown failure. */
export function unrecordedValue(tool: string, output: unknown, thrown: ThrownCall | undefined): unknown {
  return agentValue({ tool, output, thrown, images: [], fillLastObservation: false });
}

/** The `ok` of an envelope's JSON text, or undefined when it is not JSON or has no boolean ok. */
function parsedOk(text: string): boolean | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isRecord(v) && typeof v.ok === 'boolean' ? v.ok : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a returned failure's value can be decided without the queue: undefined when it may depend on
 * compaction (image bytes in its envelope text, a shape whose reading may disagree with quickOutcome's);
 * else whether its envelope is certainly a failure (so it cannot set a last observation).
 */
export function decidableFailure(output: unknown): { knownFailure: boolean } | undefined {
  if (!isRecord(output)) return undefined;
  const q = quickOutcome(output);
  if (q.ok !== false) return undefined;
  // Only the shapes whose reading (readToolOutput) agrees with quickOutcome's.
  if (q.shape === 'call-tool-result' || q.shape === 'json-rpc') {
    if (q.shape === 'call-tool-result' && ('ok' in output || 'jsonrpc' in output || 'id' in output))
      return undefined;
    const text = envelopeText(output, q.shape === 'json-rpc' ? 'json-rpc-result' : 'call-tool-result');
    if (text === undefined || mayHoldImageBytes(text)) return undefined;
    // The envelope read from this text keeps its boolean ok (valid, coerced or synthesized: never true).
    return { knownFailure: parsedOk(text) === false };
  }
  if (q.shape === 'envelope') {
    if ('jsonrpc' in output || findImageBytes(output).length > 0) return undefined;
    return { knownFailure: true };
  }
  return undefined;
}
