/**
 * The failure summary's facts as one JSON document (`schema/summary.schema.json`): what `mcec-bundle show
 * --json` prints and the MCP tool get_summary answers. Picked from the SessionSummary (already redacted),
 * with its lists and strings clipped to limits so an agent's context cannot be flooded.
 */
import type { ImageDigest, SessionSummary, StepDigest } from './types.js';

/** How much of a summary the facts keep. */
export interface FactLimits {
  /** Failures listed (newest first); the rest counted in failuresOmitted. */
  failures: number;
  /** Steps listed (newest); the rest counted in stepsOmitted. */
  steps: number;
  /** Longest string kept (details, arguments, reasons). */
  chars: number;
  /** Longest Markdown kept. */
  markdownChars: number;
}

/** The CLI's limits: the summary's own (it already caps failures at 200 and steps at 500). */
export const FULL_FACTS: FactLimits = {
  failures: 200,
  steps: 500,
  chars: 65_536,
  markdownChars: Number.MAX_SAFE_INTEGER,
};

/** A failed call as the JSON documents give it (show --json, get_summary, a bundle's session.json). */
export interface FailureFacts {
  seq: number;
  tool: string;
  status: string;
  code: string | null;
  category: string | null;
  detail: string | null;
  recovery: string | null;
}

/** `schema/summary.schema.json`. */
export interface SummaryFacts {
  sessionId: string;
  dirName: string;
  scenario: string | null;
  status: SessionSummary['status'];
  openElsewhere: SessionSummary['openElsewhere'];
  verdict: SessionSummary['verdict'];
  verdictReason: string;
  verdictReasons: string[];
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  duration: string;
  counts: Record<string, number>;
  failingCall:
    | (FailureFacts & { line: string; args: string; target: object | null; targetLine: string | null })
    | null;
  lastGoodObservation: {
    seq: number;
    tool: string;
    oneLine: string;
    window: string | null;
    ofFailingTarget: boolean | null;
    image: ImageDigest | null;
    hostPath: string | null;
  } | null;
  lastImage: ImageDigest | null;
  suspectImage: ImageDigest | null;
  failures: Array<FailureFacts & { line: string; recovered: boolean }>;
  failuresOmitted: number;
  warningsByCode: Array<{ code: string; count: number; example: string | null }>;
  steps: StepDigest[];
  stepsOmitted: number;
  lastFailedStep: StepDigest | null;
  environment: Record<string, unknown>;
  markdown: string;
  note: string | null;
}

/** `text` cut to `max` characters with a marker saying how many were cut. */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... [${text.length - max} more chars cut]`;
}

/** The facts of `summary` with its Markdown `markdown`, within `limits`. */
export function summaryFacts(summary: SessionSummary, markdown: string, limits: FactLimits): SummaryFacts {
  const cuts: string[] = [];
  const clip = (s: string) => clipText(s, limits.chars);
  const clipOrNull = (s: string | null) => (s === null ? null : clip(s));
  const fc = summary.failingCall;
  const obs = summary.lastGoodObservation;
  const failures = summary.failures.slice(0, limits.failures);
  const failuresOmitted = summary.failuresOmitted + (summary.failures.length - failures.length);
  if (failures.length < summary.failures.length) cuts.push(`failures: newest ${failures.length} listed`);
  const steps = summary.steps.slice(-limits.steps);
  const stepsOmitted = summary.stepsOmitted + (summary.steps.length - steps.length);
  if (steps.length < summary.steps.length) cuts.push(`steps: newest ${steps.length} listed`);
  const md = markdown.length > limits.markdownChars ? clipText(markdown, limits.markdownChars) : markdown;
  if (md !== markdown) cuts.push(`markdown: first ${limits.markdownChars} of ${markdown.length} chars`);
  const step = (s: StepDigest): StepDigest => ({ ...s, name: clip(s.name), detail: clipOrNull(s.detail) });
  return {
    sessionId: summary.sessionId,
    dirName: summary.dirName,
    scenario: summary.scenario,
    status: summary.status,
    openElsewhere: summary.openElsewhere,
    verdict: summary.verdict,
    verdictReason: clip(summary.verdictReason),
    verdictReasons: summary.verdictReasons.slice(0, 50).map(clip),
    startedAt: summary.startedAt,
    endedAt: summary.endedAt,
    durationMs: summary.durationMs,
    duration: summary.duration,
    counts: { ...summary.counts },
    failingCall: fc
      ? {
          seq: fc.seq,
          tool: fc.tool,
          status: fc.status,
          code: fc.code,
          category: fc.category,
          detail: clipOrNull(fc.detail),
          recovery: fc.recovery,
          line: clip(fc.line),
          args: clip(fc.args),
          target: fc.target,
          targetLine: clipOrNull(fc.targetLine),
        }
      : null,
    lastGoodObservation: obs
      ? {
          seq: obs.seq,
          tool: obs.tool,
          oneLine: clip(obs.oneLine),
          window: obs.window,
          ofFailingTarget: obs.ofFailingTarget,
          image: obs.image,
          hostPath: obs.hostPath,
        }
      : null,
    lastImage: summary.lastImage,
    suspectImage: summary.suspectImage,
    failures: failures.map((f) => ({
      seq: f.seq,
      tool: f.tool,
      status: f.status,
      code: f.code,
      category: f.category,
      detail: clipOrNull(f.detail),
      recovery: f.recovery,
      line: clip(f.line),
      recovered: f.recovered,
    })),
    failuresOmitted,
    warningsByCode: summary.warningsByCode
      .slice(0, 50)
      .map((w) => ({ code: w.code, count: w.count, example: clipOrNull(w.example) })),
    steps: steps.map(step),
    stepsOmitted,
    lastFailedStep: summary.lastFailedStep ? step(summary.lastFailedStep) : null,
    environment: summary.environment,
    markdown: md,
    note: cuts.length > 0 ? `cut to stay bounded: ${cuts.join('; ')}` : null,
  };
}
