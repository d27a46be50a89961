/** Reads a session log into span plans: its calls in seq order, then its root span. */
import { decideVerdict, readVerdictFacts } from '../report/verdict.js';
import type { ArtifactRow, CallRow, EventRow, WarningRow } from '../store/schema.js';
import type { SessionReader } from '../store/session-reader.js';
import {
  type CallFacts,
  type PlanOptions,
  planCallSpan,
  planSessionSpan,
  type SessionFacts,
  type SpanPlan,
} from './span-plan.js';

/** Event kind the recorder writes for a call that carried a W3C `traceparent` in `params._meta`. */
export const TRACE_PARENT_EVENT = 'trace-parent';

function protocolVersionOf(environment: string): string | null {
  try {
    const env = JSON.parse(environment) as { server?: { protocolVersion?: unknown } };
    return typeof env.server?.protocolVersion === 'string' ? env.server.protocolVersion : null;
  } catch {
    return null;
  }
}

/** The hash of the server's own `Mcp-Session-Id`, when the recorder saw one (its `mcp-session` event). */
function mcpSessionIdOf(events: EventRow[]): string | null {
  for (const e of events) {
    try {
      const id = (JSON.parse(e.detail ?? '') as { mcpSessionHash?: unknown }).mcpSessionHash;
      if (typeof id === 'string' && id !== '') return id;
    } catch {
      // an unreadable event names no session
    }
  }
  return null;
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
    mcpSessionId: mcpSessionIdOf(reader.events('mcp-session')),
  };
}

function traceparentOf(event: EventRow | undefined): string | null {
  if (!event?.detail) return null;
  try {
    const tp = (JSON.parse(event.detail) as { traceparent?: unknown }).traceparent;
    return typeof tp === 'string' ? tp : null;
  } catch {
    return null; // an unreadable event: the call stays under the session's root
  }
}

/** What the log holds about one call: by query per call (live), or from one read of the whole log (backfill). */
export interface CallLookup {
  facts(row: CallRow): CallFacts;
}

/** Per-call queries: cheap for the few calls a live export sends after each commit. */
export function callLookupByQuery(reader: SessionReader): CallLookup {
  return {
    facts: (row) => ({
      row,
      warnings: reader.warningsOfCall(row.seq),
      artifacts: reader.artifactsOfCall(row.seq),
      traceparent: traceparentOf(reader.eventOfCall(TRACE_PARENT_EVENT, row.seq)),
    }),
  };
}

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

/** One read of each table: for a whole session at once. */
export function callLookupInBulk(reader: SessionReader): CallLookup {
  const warnings = groupBySeq<WarningRow>(reader.warnings());
  const artifacts = groupBySeq<ArtifactRow>(reader.artifacts());
  const parents = new Map<number, string>();
  for (const e of reader.events(TRACE_PARENT_EVENT)) {
    const tp = traceparentOf(e);
    if (e.call_seq !== null && tp) parents.set(e.call_seq, tp);
  }
  return {
    facts: (row) => ({
      row,
      warnings: warnings.get(row.seq) ?? [],
      artifacts: artifacts.get(row.seq) ?? [],
      traceparent: parents.get(row.seq) ?? null,
    }),
  };
}

/** The root span of a session as its log stands now. */
export function planRoot(reader: SessionReader): SpanPlan {
  return planSessionSpan(sessionFacts(reader), reader.events('step'));
}

/** Every span of a session, read in one snapshot of its log (safe while a recorder still writes it). */
export function planSession(reader: SessionReader, options: PlanOptions = {}): SpanPlan[] {
  return reader.snapshot(() => {
    const facts = sessionFacts(reader);
    const lookup = callLookupInBulk(reader);
    const plans: SpanPlan[] = [];
    for (const row of reader.calls()) plans.push(planCallSpan(facts, lookup.facts(row), options));
    plans.push(planSessionSpan(facts, reader.events('step')));
    return plans;
  });
}
