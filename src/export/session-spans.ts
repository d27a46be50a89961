/** Reads one session log into span plans: its calls in seq order, then its root span. */
import { decideVerdict, readVerdictFacts } from '../report/verdict.js';
import type { ArtifactRow, WarningRow } from '../store/schema.js';
import type { SessionReader } from '../store/session-reader.js';
import {
  type PlanOptions,
  planCallSpan,
  planSessionSpan,
  type SessionFacts,
  type SpanPlan,
} from './span-plan.js';

/** Event kind the recorder writes for a call that carried a W3C `traceparent` in `params._meta`. */
export const TRACE_PARENT_EVENT = 'trace-parent';

function groupBySeq<T extends { call_seq: number | null }>(rows: T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const row of rows) {
    if (row.call_seq === null) continue;
    const list = out.get(row.call_seq);
    if (list) list.push(row);
    else out.set(row.call_seq, [row]);
  }
  return out;
}

function protocolVersionOf(environment: string): string | null {
  try {
    const env = JSON.parse(environment) as { server?: { protocolVersion?: unknown } };
    return typeof env.server?.protocolVersion === 'string' ? env.server.protocolVersion : null;
  } catch {
    return null;
  }
}

/** The root span's facts: the verdict by the one rule (decideVerdict), the end or the last activity. */
export function sessionFacts(reader: SessionReader): SessionFacts {
  const session = reader.session();
  const stats = reader.stats();
  const decision = decideVerdict(readVerdictFacts(reader, { session, stats }));
  return {
    sessionId: session.session_id,
    startedAt: session.started_at,
    endedAt: session.ended_at ?? stats.lastActivityAt ?? session.started_at,
    scenario: session.scenario,
    status: session.status,
    verdict: decision.verdict,
    verdictReason: decision.reason,
    calls: stats.calls,
    failures: stats.failed + stats.fault,
    recorderVersion: session.recorder_version,
    protocolVersion: protocolVersionOf(session.environment),
  };
}

/** Every span of a session, read in one snapshot of its log (safe while a recorder still writes it). */
export function planSession(reader: SessionReader, options: PlanOptions = {}): SpanPlan[] {
  return reader.snapshot(() => {
    const facts = sessionFacts(reader);
    const warnings = groupBySeq<WarningRow>(reader.warnings());
    const artifacts = groupBySeq<ArtifactRow>(reader.artifacts());
    const parents = new Map<number, string>();
    for (const e of reader.events(TRACE_PARENT_EVENT)) {
      if (e.call_seq === null || !e.detail) continue;
      try {
        const tp = (JSON.parse(e.detail) as { traceparent?: unknown }).traceparent;
        if (typeof tp === 'string') parents.set(e.call_seq, tp);
      } catch {
        // an unreadable event: the call stays under the session's root
      }
    }
    const plans: SpanPlan[] = [];
    for (const row of reader.calls()) {
      plans.push(
        planCallSpan(
          facts,
          {
            row,
            warnings: warnings.get(row.seq) ?? [],
            artifacts: artifacts.get(row.seq) ?? [],
            traceparent: parents.get(row.seq) ?? null,
          },
          options,
        ),
      );
    }
    plans.push(planSessionSpan(facts, reader.events('step')));
    return plans;
  });
}
