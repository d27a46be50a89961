/**
 * The one rule that decides a session's verdict. The summary, `mcec-bundle list`, report.html and the
 * bundle's session.json all take it from `buildSummary`, which calls `decideVerdict` here, so they agree.
 */
import type { SessionRow, WriterRow } from '../store/schema.js';
import type { FailureOutcome, SessionReader, SessionStats } from '../store/session-reader.js';
import { isPlainServerSession, readFailures } from './server-kind.js';
import { oneLine } from './text.js';
import type { Verdict } from './types.js';

/** Who declared a verdict: end(), recorder.verdict(), `mcec-bundle verdict`, or a client behind a proxy. */
export type VerdictSource = 'end' | 'recorder' | 'cli' | 'notification';

/** A verdict someone declared (the newest one wins). */
export interface DeclaredVerdict {
  passed: boolean;
  reason: string | null;
  via: VerdictSource | string;
}

/** One call named in a reason. */
export interface CallFact {
  seq: number;
  tool: string;
  /** Error code (failures, faults) or null. */
  code: string | null;
  /** What the call addressed (`window=save as`, `handle=131234`, ...), '' for none. */
  target: string;
  /** The error detail of a fault (a proxy error says what went wrong there). */
  detail?: string | null;
}

/** Everything the verdict depends on, read from a session log (see readVerdictFacts). */
export interface VerdictFacts {
  declared: DeclaredVerdict | null;
  calls: number;
  /** Failed and faulted calls. */
  failures: number;
  /** Failed calls that a later call of the same tool on the same target made good. */
  recovered: number;
  /** Failed calls (status failed) not recovered, and the newest of them. */
  unrecovered: { count: number; newest: CallFact | null };
  /** Calls answered by a protocol error or failed by the proxy (status fault), and the newest. */
  faults: { count: number; newest: CallFact | null };
  /**
   * Calls whose client got the proxy's 504 before MCEC answered (a `late-answer` event): the agent saw a
   * failure whatever the late answer says, so the run did not go as recorded-ok rows suggest.
   */
  timedOut?: { count: number; newest: CallFact | null };
  /** Calls still waiting for their answer, and the newest. */
  pending: { count: number; newest: CallFact | null };
  status: 'open' | 'ended' | 'aborted';
  writerPid: number | null;
  /**
   * An `aborted` session stored open whose writer is on another host and never closed the log
   * (`SessionReader.openElsewhere`): that writer cannot be checked from here; null otherwise.
   */
  openElsewhere?: { pid: number; host: string } | null;
  emergencyStop: boolean;
  /**
   * Another MCP server's run (isPlainServerSession): its calls name no window, so a failure is recovered by
   * a later success of the same tool and no target is spoken of. Read only when a failure needs the words.
   */
  plainServer?: boolean;
}

/** The verdict with its reasons in plain words (`reason` joins them). */
export interface VerdictDecision {
  verdict: Verdict;
  reasons: string[];
  reason: string;
  declared: DeclaredVerdict | null;
}

function callName(c: CallFact): string {
  return `call #${c.seq} ${oneLine(c.tool, 40)}`;
}

function onTarget(c: CallFact): string {
  return c.target ? ` on ${oneLine(c.target, 80)}` : '';
}

/** What recovers a failure, in words: a later success of the same tool (on the same target, MCEC's). */
function sameToolAndTarget(f: VerdictFacts): string {
  return f.plainServer ? 'the same tool' : 'the same tool on the same target';
}

/**
 * Which later calls did not succeed, for one failed call: those on its target, or for a call that names
 * none, the tool's calls that name none; for another server's, every call of the tool, whatever its arguments.
 */
function laterCallsOf(f: VerdictFacts, c: CallFact): string {
  const tool = oneLine(c.tool, 40);
  if (f.plainServer) return `no later ${tool} call`;
  return c.target ? `no later ${tool} call on that target` : `no later ${tool} call without a target`;
}

/** Why the recording alone says FAIL; empty when it says PASS. */
function failReasons(f: VerdictFacts): string[] {
  const out: string[] = [];
  const u = f.unrecovered;
  if (u.count > 0 && u.newest) {
    const c = u.newest;
    const code = c.code ? ` (${oneLine(c.code, 60)})` : '';
    out.push(
      u.count === 1
        ? `${callName(c)} failed${code}${onTarget(c)} and ${laterCallsOf(f, c)} succeeded`
        : `${u.count} failures were not recovered by a later success of ${sameToolAndTarget(f)}; the last: ${callName(c)}${code}${onTarget(c)}`,
    );
  } else if (u.count > 0) {
    out.push(`${u.count} failure${u.count === 1 ? ' was' : 's were'} not recovered`);
  }
  if (f.faults.count > 0) {
    const c = f.faults.newest;
    const more = f.faults.count > 1 ? ` (${f.faults.count} calls in all)` : '';
    if (!c) out.push(`${f.faults.count} calls got a protocol or proxy error instead of an answer`);
    else if (c.code === 'proxy-error') {
      out.push(`${callName(c)} hit a proxy error${c.detail ? `: ${oneLine(c.detail, 200)}` : ''}${more}`);
    } else {
      out.push(
        `${callName(c)} got a protocol error${c.code ? ` (${oneLine(c.code, 40)})` : ''} instead of an answer${more}`,
      );
    }
  }
  if (f.timedOut && f.timedOut.count > 0) {
    const c = f.timedOut.newest;
    const more = f.timedOut.count > 1 ? ` (${f.timedOut.count} calls in all)` : '';
    out.push(
      c
        ? `${callName(c)} timed out at the proxy: the client got 504 before MCEC answered${more}`
        : `${f.timedOut.count} calls timed out at the proxy before MCEC answered`,
    );
  }
  if (f.pending.count > 0) {
    const c = f.pending.newest;
    const more = f.pending.count > 1 ? ` (and ${f.pending.count - 1} more pending)` : '';
    out.push(
      c
        ? `${callName(c)} is still pending: it never got an answer${more}`
        : `${f.pending.count} calls never got an answer`,
    );
  }
  if (f.status === 'aborted' && f.openElsewhere) {
    const w = f.openElsewhere;
    out.push(
      `the session never ended: its log is still open on ${oneLine(w.host, 100)}, and its writer there (pid ${w.pid}) cannot be checked from here`,
    );
  } else if (f.status === 'aborted') {
    out.push(
      `the session was aborted: it never ended${f.writerPid != null ? ` and its writer process (pid ${f.writerPid}) is gone` : ''}`,
    );
  }
  if (f.emergencyStop) out.push('an emergency stop happened');
  return out;
}

function declaredReason(d: DeclaredVerdict): string {
  const word = d.passed ? 'passed' : 'failed';
  const by =
    d.via === 'cli'
      ? ' with mcec-bundle verdict'
      : d.via === 'notification'
        ? ' by the client'
        : d.via === 'end' || d.via === 'recorder'
          ? ' by the runner'
          : '';
  return `declared ${word}${by}${d.reason ? `: ${oneLine(d.reason, 500)}` : ' (no reason given)'}`;
}

/**
 * Decide PASS or FAIL. A declared verdict wins (the newest one); else FAIL when a failure was not recovered
 * (no later success of the same tool on the same target), a call got a protocol or proxy error, a call is
 * pending, the session was aborted or an emergency stop happened; else PASS. Pure.
 */
export function decideVerdict(f: VerdictFacts): VerdictDecision {
  const problems = failReasons(f);
  let verdict: Verdict;
  let reasons: string[];
  if (f.declared) {
    verdict = f.declared.passed ? 'PASS' : 'FAIL';
    reasons = [declaredReason(f.declared)];
    // What the recording shows still matters to a reader, most of all when the declaration overrides it.
    if (problems.length > 0) {
      reasons.push(f.declared.passed ? `overriding: ${problems[0]}` : problems[0]!, ...problems.slice(1));
    }
  } else if (problems.length > 0) {
    verdict = 'FAIL';
    reasons = problems;
  } else {
    verdict = 'PASS';
    reasons = [
      f.calls === 0
        ? 'no calls recorded'
        : f.failures === 0
          ? f.calls === 1
            ? 'its one call succeeded'
            : `all ${f.calls} calls succeeded`
          : `${f.recovered} of ${f.failures} failure${f.failures === 1 ? ' was' : 's were'} recovered by a later success of ${sameToolAndTarget(f)}`,
    ];
  }
  if (f.status === 'open') reasons.push('the session is still running');
  return { verdict, reasons, reason: reasons.join('; '), declared: f.declared };
}

function parseDeclared(row: { kind: string; detail: string } | undefined): DeclaredVerdict | null {
  if (!row) return null;
  try {
    const d = JSON.parse(row.detail) as { passed?: unknown; reason?: unknown; via?: unknown };
    if (typeof d.passed !== 'boolean') return null;
    return {
      passed: d.passed,
      reason: typeof d.reason === 'string' && d.reason !== '' ? d.reason : null,
      via: row.kind === 'session-end' ? 'end' : typeof d.via === 'string' ? oneLine(d.via, 40) : 'recorder',
    };
  } catch {
    return null;
  }
}

/** Calls answered only after their client got the proxy's 504 (`late-answer` events with `client: proxy-timeout`). */
function proxyTimeouts(reader: SessionReader): { count: number; newest: CallFact | null } {
  if (reader.eventCount('late-answer') === 0) return { count: 0, newest: null };
  let count = 0;
  let newest: CallFact | null = null;
  for (const e of reader.events('late-answer')) {
    let client: unknown;
    try {
      client = (JSON.parse(e.detail ?? '{}') as { client?: unknown }).client;
    } catch {
      continue;
    }
    if (client !== 'proxy-timeout') continue;
    count += 1;
    const row = e.call_seq != null ? reader.call(e.call_seq) : undefined;
    if (row && (!newest || row.seq > newest.seq)) {
      newest = { seq: row.seq, tool: row.tool, code: 'proxy-timeout', target: '' };
    }
  }
  return { count, newest };
}

/**
 * How a session still open on another host is named wherever its status is shown (`show`, `list`, index.html,
 * report.html): "open on ci-runner-7: its writer cannot be checked from here" (with the pid when given).
 */
export function openElsewhereWords(w: { host: string; pid?: number }): string {
  return `open on ${oneLine(w.host, 100)}: its writer${w.pid !== undefined ? `, pid ${w.pid},` : ''} cannot be checked from here`;
}

function writerOf(w: WriterRow | null): { pid: number; host: string } | null {
  return w ? { pid: w.pid, host: w.host } : null;
}

/** The facts of one session log, in SQL; call inside `reader.snapshot` for one consistent view. */
export function readVerdictFacts(
  reader: SessionReader,
  known: {
    session?: SessionRow;
    stats?: SessionStats;
    outcome?: FailureOutcome;
    /** `isPlainServerSession`, when the caller has decided it already (it read the failures by it). */
    plainServer?: boolean;
  } = {},
): VerdictFacts {
  const session = known.session ?? reader.session();
  const stats = known.stats ?? reader.stats();
  const failures = stats.failed + stats.fault;
  // Only failures are worded and judged by server kind: a log without any is not read for it (index reads thousands).
  const read = known.outcome === undefined ? readFailures(reader, session, stats, 0) : undefined;
  const outcome = known.outcome ?? read!.outcome;
  const plainServer =
    failures > 0 && (known.plainServer ?? read?.plainServer ?? isPlainServerSession(reader, session));
  const recovered = outcome.recovered;
  const pendingRow = stats.pending > 0 ? reader.lastCallWhere({ statuses: ['pending'] }) : undefined;
  const pending = pendingRow ? { seq: pendingRow.seq, tool: pendingRow.tool, code: null, target: '' } : null;
  let declared = parseDeclared(reader.lastDeclaredVerdict());
  // A log whose session row has end()'s verdict but no event carrying it (written by hand or truncated).
  if (!declared && session.passed != null) {
    declared = { passed: session.passed !== 0, reason: session.end_reason, via: 'end' };
  }
  return {
    declared,
    calls: stats.calls,
    failures,
    recovered,
    unrecovered: { count: Math.max(0, stats.failed - recovered), newest: outcome.newestUnrecovered },
    faults: { count: stats.fault, newest: outcome.newestFault },
    timedOut: proxyTimeouts(reader),
    pending: { count: stats.pending, newest: pending },
    status: session.status,
    writerPid: session.writer_pid,
    openElsewhere: session.status === 'aborted' ? writerOf(reader.openElsewhere()) : null,
    emergencyStop:
      reader.eventCount('emergency-stop') > 0 || reader.callCountWithCode('emergency-stopped') > 0,
    plainServer,
  };
}
