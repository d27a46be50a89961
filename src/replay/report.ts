/**
 * The replay report: every live call and how it was answered, the calls nothing matched (with the nearest
 * recorded call and why it did not match), the recordings never used, the first divergence, and the answers
 * that hold a redaction (replayed as recorded, never as if real). `--json` writes it as is
 * (schema/replay-report.schema.json); `formatReport` is the text printed on exit.
 */
import type { Difference } from './matcher.js';

/** How one live call was answered. */
export type CallOutcome =
  /** By the recorded call it matched. */
  | 'matched'
  /** By a recorded call already used: every recording like it was used. */
  | 'repeat'
  /** Nothing matched; answered with the nearest recorded call of the same tool (not in lockdown). */
  | 'nearest'
  /** Nothing matched; answered `replay-unmatched`. */
  | 'unmatched'
  /** `--order strict`: not the next recorded call; answered `replay-diverged` and the replay ended. */
  | 'diverged';

/** A recorded call named in the report: its seq, tool and stored (redacted) arguments. */
export interface RecordedRef {
  seq: number;
  tool: string;
  args: Record<string, unknown> | null;
}

/** One live call. */
export interface ReportCall {
  /** 1-based order of the live call in this replay. */
  n: number;
  tool: string;
  /** The live arguments as the recorder would store them (secrets and typed text taken out). */
  args: Record<string, unknown>;
  outcome: CallOutcome;
  /** The recorded call whose answer was served (or that was expected, for a divergence). */
  recordedSeq: number | null;
  /** The answer's ok, as served. */
  ok: boolean;
  /** The served failure's code, when it failed. */
  code: string | null;
  /** The fault injected instead of the recorded answer. */
  injected: { spec: string; code: string; category: string } | null;
  /** Images put back from artifacts/. */
  imagesRestored: number;
  /** Images the recording took out that could not be put back (left as capture-summaries). */
  imagesMissing: string[];
  /** JSON pointers of the served envelope that hold a redaction: replayed as recorded, not as real. */
  redacted: string[];
  /** How long the answer was held (`--speed`), in ms. */
  delayMs: number;
  notes: string[];
}

/** A live call nothing matched. */
export interface ReportUnmatched {
  n: number;
  tool: string;
  args: Record<string, unknown>;
  nearest: RecordedRef | null;
  differences: Difference[];
}

/** The whole report. */
export interface ReplayReport {
  version: 1;
  source: {
    kind: 'session-dir' | 'session-id' | 'bundle';
    input: string;
    sessionId: string;
    scenario: string | null;
  };
  options: {
    order: 'any' | 'strict';
    lockdown: boolean;
    speed: number;
    tolerance: number;
    inject: string[];
  };
  startedAt: string;
  endedAt: string | null;
  counts: {
    recorded: number;
    calls: number;
    matched: number;
    repeats: number;
    nearest: number;
    unmatched: number;
    injected: number;
    unused: number;
    redactedAnswers: number;
  };
  calls: ReportCall[];
  unmatched: ReportUnmatched[];
  /** Recorded calls no live call used, in recorded order. */
  unused: RecordedRef[];
  /** The first live call that left the recorded path (unmatched, or out of order under strict). */
  firstDivergence: ReportUnmatched | null;
  /** Recorded calls left out: still pending when the recording stopped. */
  pendingRecorded: number;
  /** What the replay served from its own knowledge because the recording lacked it (initialize, tools/list). */
  synthesized: string[];
  /** 0 done; 1 a lockdown replay met an unmatched call or a strict replay diverged. */
  exitCode: 0 | 1;
}

function shortArgs(args: Record<string, unknown> | null): string {
  if (args === null) return '(arguments not recorded)';
  const text = JSON.stringify(args);
  return text.length > 160 ? `${text.slice(0, 160)}...` : text;
}

function show(v: unknown): string {
  if (v === undefined) return '(none)';
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

/** Escape control and bidi characters so recorded text cannot move a terminal's cursor. */
function printable(text: string): string {
  let out = '';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    const bad =
      (c < 0x20 && c !== 0x0a) ||
      (c >= 0x7f && c <= 0x9f) ||
      (c >= 0x202a && c <= 0x202e) ||
      (c >= 0x2066 && c <= 0x2069);
    out += bad ? `\\u${c.toString(16).padStart(4, '0')}` : ch;
  }
  return out;
}

/** How the text names a call without an exact match, by its outcome (the counts' words). */
const UNMATCHED_LABEL: Record<CallOutcome, string> = {
  matched: 'matched',
  repeat: 'repeated',
  nearest: 'answered by the nearest',
  unmatched: 'unmatched',
  diverged: 'diverged',
};

/** The report as text for a terminal: counts, unmatched calls with their nearest recording, unused ones. */
export function formatReport(report: ReplayReport): string {
  const c = report.counts;
  const lines: string[] = [];
  lines.push(
    `mcec-replay: ${report.source.sessionId} (${report.source.kind} ${report.source.input})` +
      `${report.source.scenario ? `: ${report.source.scenario}` : ''}`,
  );
  lines.push(
    `  ${c.calls} calls: ${c.matched} matched, ${c.repeats} repeated, ${c.nearest} answered by the nearest, ` +
      `${c.unmatched} unmatched, ${c.injected} injected; ${c.unused} of ${c.recorded} recordings never used`,
  );
  if (report.firstDivergence) {
    const d = report.firstDivergence;
    lines.push(`  first divergence: call ${d.n} ${d.tool} ${shortArgs(d.args)}`);
  }
  const outcomes = new Map(report.calls.map((call) => [call.n, call.outcome]));
  for (const u of report.unmatched.slice(0, 20)) {
    // Said as the counts above say it: a call the nearest recording answered is not one of the "unmatched".
    const how = UNMATCHED_LABEL[outcomes.get(u.n) ?? 'unmatched'];
    lines.push(`  ${how}: call ${u.n} ${u.tool} ${shortArgs(u.args)}`);
    if (u.nearest) {
      lines.push(`    nearest: #${u.nearest.seq} ${u.nearest.tool} ${shortArgs(u.nearest.args)}`);
      for (const d of u.differences.slice(0, 5))
        lines.push(`      ${d.path || '/'}: ${d.why} (recorded ${show(d.recorded)}, live ${show(d.live)})`);
    } else lines.push('    nearest: none (the recording has no call left)');
  }
  if (report.unmatched.length > 20) lines.push(`  ... ${report.unmatched.length - 20} more unmatched`);
  for (const call of report.calls) {
    if (call.injected)
      lines.push(
        `  injected: call ${call.n} ${call.tool} answered ${call.injected.code} (${call.injected.category})`,
      );
    if (call.redacted.length > 0)
      lines.push(
        `  redacted: call ${call.n} ${call.tool} (#${call.recordedSeq}) was answered as recorded, with ` +
          `${call.redacted.length} redacted value${call.redacted.length === 1 ? '' : 's'} (${call.redacted.slice(0, 3).join(', ')}): not real values`,
      );
    if (call.imagesMissing.length > 0)
      lines.push(
        `  images missing: call ${call.n} ${call.tool}: ${call.imagesMissing.slice(0, 3).join('; ')}`,
      );
  }
  for (const u of report.unused.slice(0, 10))
    lines.push(`  never used: #${u.seq} ${u.tool} ${shortArgs(u.args)}`);
  if (report.unused.length > 10) lines.push(`  ... ${report.unused.length - 10} more never used`);
  for (const s of report.synthesized) lines.push(`  not recorded: ${s}`);
  lines.push(`  exit ${report.exitCode}`);
  return `${printable(lines.join('\n'))}\n`;
}
