/**
 * What a recorded session looks like as OpenTelemetry spans, decided from its log alone (pure): one trace per
 * session with a root span named for the scenario, one client span per tool call in the MCP and GenAI
 * semantic conventions, warnings, artifacts and steps as span events. The live exporter and the backfill
 * both plan spans here, so a session sent twice is the same spans with the same ids.
 */
import { ATTR_ERROR_TYPE, ATTR_NETWORK_TRANSPORT } from '@opentelemetry/semantic-conventions';
import type { ArtifactRow, CallRow, EventRow, WarningRow } from '../store/schema.js';
import { callSpanId, parseTraceParent, sessionSpanId, sessionTraceId } from './trace-ids.js';

/**
 * Attribute names. Stable ones are the semantic conventions' own strings; the MCP and GenAI ones are still
 * incubating, and the conventions' README asks instrumentations to copy those rather than import them.
 */
export const ATTR = {
  errorType: ATTR_ERROR_TYPE,
  networkTransport: ATTR_NETWORK_TRANSPORT,
  mcpMethodName: 'mcp.method.name',
  mcpSessionId: 'mcp.session.id',
  mcpProtocolVersion: 'mcp.protocol.version',
  jsonrpcRequestId: 'jsonrpc.request.id',
  rpcResponseStatusCode: 'rpc.response.status_code',
  genAiOperationName: 'gen_ai.operation.name',
  genAiToolName: 'gen_ai.tool.name',
  genAiToolCallArguments: 'gen_ai.tool.call.arguments',
  // Ours, namespaced.
  /** The recording's session (MCEC's session id, or the one named after an MCP server's session). */
  sessionId: 'mcec.session.id',
  /** MCEC's own error code (the envelope's `error.code`, or the recorder's for a transport failure). */
  errorCode: 'mcec.error.code',
  errorCategory: 'mcec.error.category',
  errorDetail: 'mcec.error.detail',
  callSeq: 'mcec.call.seq',
  callStatus: 'mcec.call.status',
  outputKind: 'mcec.output.kind',
  scenario: 'mcec.scenario',
  sessionStatus: 'mcec.session.status',
  verdict: 'mcec.verdict',
  verdictReason: 'mcec.verdict.reason',
  calls: 'mcec.calls',
  failures: 'mcec.failures',
  recorderVersion: 'mcec.recorder.version',
} as const;

export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

/** One span event. */
export interface SpanEventPlan {
  name: string;
  time: Date;
  attributes: Attributes;
}

/** One span to emit, ids and times included. */
export interface SpanPlan {
  name: string;
  kind: 'internal' | 'client';
  traceId: string;
  spanId: string;
  /** Parent in the same trace (the session's root span, or the agent's span named by `traceparent`). */
  parentSpanId?: string;
  /** A call made under the agent's own trace links back to its session's root span. */
  links: Array<{ traceId: string; spanId: string }>;
  start: Date;
  end: Date;
  attributes: Attributes;
  events: SpanEventPlan[];
  status: { code: 'unset' | 'error'; message?: string };
}

/** The session-level facts the root span carries. */
export interface SessionFacts {
  sessionId: string;
  startedAt: string;
  /** The end of the session, or of its last activity when it never ended. */
  endedAt: string;
  scenario: string | null;
  status: 'open' | 'ended' | 'aborted';
  verdict: 'PASS' | 'FAIL';
  verdictReason: string;
  calls: number;
  failures: number;
  recorderVersion: string;
  protocolVersion?: string | null;
  /** The server's own MCP session id (`Mcp-Session-Id`), when the session had one. */
  mcpSessionId?: string | null;
}

/** What one call's span is made of: its row and what the log holds about it. */
export interface CallFacts {
  row: CallRow;
  warnings: WarningRow[];
  artifacts: ArtifactRow[];
  /** The `traceparent` the agent sent in the call's `params._meta`, if any. */
  traceparent?: string | null;
}

export interface PlanOptions {
  /** Put the call's (already redacted) arguments on its span (`gen_ai.tool.call.arguments`); default false. */
  includeArguments?: boolean;
}

const MAX_TEXT = 1024;

function clip(text: string, max = MAX_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A span cannot end before it starts (clocks of two writers can disagree). */
function notBefore(end: Date, start: Date): Date {
  return new Date(Math.max(end.getTime(), start.getTime()));
}

function date(iso: string | null | undefined, fallback: Date): Date {
  const d = iso ? new Date(iso) : fallback;
  return Number.isNaN(d.getTime()) ? fallback : d;
}

/** The session's root span (emit it last: it ends when the session does). */
export function planSessionSpan(s: SessionFacts, steps: EventRow[] = []): SpanPlan {
  const start = date(s.startedAt, new Date(0));
  const end = date(s.endedAt, start);
  const attributes: Attributes = {
    [ATTR.sessionId]: s.sessionId,
    [ATTR.sessionStatus]: s.status,
    [ATTR.verdict]: s.verdict,
    [ATTR.verdictReason]: clip(s.verdictReason),
    [ATTR.calls]: s.calls,
    [ATTR.failures]: s.failures,
    [ATTR.recorderVersion]: s.recorderVersion,
  };
  if (s.scenario) attributes[ATTR.scenario] = s.scenario;
  if (s.protocolVersion) attributes[ATTR.mcpProtocolVersion] = s.protocolVersion;
  if (s.mcpSessionId) attributes[ATTR.mcpSessionId] = s.mcpSessionId;
  return {
    name: s.scenario ? clip(s.scenario, 200) : `mcec session ${s.sessionId}`,
    kind: 'internal',
    traceId: sessionTraceId(s.sessionId, s.startedAt),
    spanId: sessionSpanId(s.sessionId, s.startedAt),
    links: [],
    start,
    end: notBefore(end, start),
    attributes,
    events: steps.map((e) => stepEvent(e, start)),
    status: s.verdict === 'FAIL' ? { code: 'error', message: clip(s.verdictReason) } : { code: 'unset' },
  };
}

function stepEvent(e: EventRow, fallback: Date): SpanEventPlan {
  const detail = parseObject(e.detail);
  const attributes: Attributes = {};
  for (const key of ['name', 'status', 'detail'] as const) {
    if (typeof detail[key] === 'string') attributes[`mcec.step.${key}`] = clip(detail[key] as string);
  }
  return { name: 'mcec.step', time: date(e.at, fallback), attributes };
}

function parseObject(text: string | null): Record<string, unknown> {
  if (!text) return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const TRANSPORT: Record<string, string> = { stdio: 'pipe', http: 'tcp' };

/** One tool call's span, child of the agent's span when the call carried a `traceparent`, else of the root. */
export function planCallSpan(
  s: Pick<SessionFacts, 'sessionId' | 'startedAt' | 'endedAt' | 'protocolVersion' | 'mcpSessionId'>,
  c: CallFacts,
  options: PlanOptions = {},
): SpanPlan {
  const { row } = c;
  const sessionTrace = sessionTraceId(s.sessionId, s.startedAt);
  const root = sessionSpanId(s.sessionId, s.startedAt);
  const agent = parseTraceParent(c.traceparent);
  const start = date(row.started_at, date(s.startedAt, new Date(0)));
  // A pending call never ended: its span closes with the session.
  const end = row.ended_at ? date(row.ended_at, start) : date(s.endedAt, start);
  const attributes: Attributes = {
    [ATTR.mcpMethodName]: 'tools/call',
    [ATTR.genAiOperationName]: 'execute_tool',
    [ATTR.genAiToolName]: row.tool,
    [ATTR.sessionId]: s.sessionId,
    [ATTR.callSeq]: row.seq,
    [ATTR.callStatus]: row.status,
  };
  // mcp.session.id is the server's Mcp-Session-Id only (MCEC's own session id is mcec.session.id).
  if (s.mcpSessionId) attributes[ATTR.mcpSessionId] = s.mcpSessionId;
  if (s.protocolVersion) attributes[ATTR.mcpProtocolVersion] = s.protocolVersion;
  const rpcId = requestId(row.rpc_id);
  if (rpcId !== null) attributes[ATTR.jsonrpcRequestId] = rpcId;
  const transport = TRANSPORT[row.transport];
  if (transport) attributes[ATTR.networkTransport] = transport;
  if (row.output_kind) attributes[ATTR.outputKind] = row.output_kind;
  if (options.includeArguments && row.args !== null)
    attributes[ATTR.genAiToolCallArguments] = clip(row.args, 8192);
  let status: SpanPlan['status'] = { code: 'unset' };
  if (row.status !== 'ok') {
    const type = errorType(row);
    attributes[ATTR.errorType] = type;
    if (row.output_kind === 'json-rpc-error' && row.error_code) {
      attributes[ATTR.rpcResponseStatusCode] = row.error_code;
    } else if (row.error_code) attributes[ATTR.errorCode] = row.error_code;
    if (row.error_category) attributes[ATTR.errorCategory] = row.error_category;
    if (row.error_detail) attributes[ATTR.errorDetail] = clip(row.error_detail);
    status = {
      code: 'error',
      message: clip(row.error_detail ?? (row.status === 'pending' ? 'no answer recorded' : type)),
    };
  }
  const events: SpanEventPlan[] = [
    ...c.warnings.map((w) => ({
      name: 'mcec.warning',
      time: end,
      attributes: {
        'mcec.warning.code': w.code,
        ...(w.detail ? { 'mcec.warning.detail': clip(w.detail) } : {}),
      },
    })),
    // Images travel as references: their hash and where they sit in the session dir, never their bytes.
    ...c.artifacts.map((a) => ({
      name: 'mcec.artifact',
      time: date(a.created_at, end),
      attributes: artifactAttributes(a),
    })),
  ];
  return {
    name: `tools/call ${row.tool}`,
    kind: 'client',
    traceId: agent ? agent.traceId : sessionTrace,
    spanId: callSpanId(s.sessionId, s.startedAt, row.seq),
    parentSpanId: agent ? agent.spanId : root,
    links: agent ? [{ traceId: sessionTrace, spanId: root }] : [],
    start,
    end: notBefore(end, start),
    attributes,
    events,
    status,
  };
}

/**
 * `error.type` as the MCP conventions say: `tool_error` for a tool result that failed (`isError`, an MCEC
 * envelope with ok false), the JSON-RPC error code as a string for a protocol error, else the recorder's
 * code for a failure at the transport (`proxy-error`), `pending` for a call never answered.
 */
function errorType(row: CallRow): string {
  if (row.status === 'failed') return 'tool_error';
  if (row.output_kind === 'json-rpc-error' && row.error_code) return row.error_code;
  return row.error_code ?? (row.status === 'pending' ? 'pending' : row.status);
}

/** The JSON-RPC id as the log stores it (JSON text): a string or number for the attribute; null when none. */
function requestId(stored: string | null): string | null {
  if (stored === null || stored === 'null') return null;
  try {
    const id = JSON.parse(stored) as unknown;
    return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : null;
  } catch {
    return stored;
  }
}

function artifactAttributes(a: ArtifactRow): Attributes {
  const out: Attributes = { 'mcec.artifact.role': a.role };
  if (a.sha256) out['mcec.artifact.sha256'] = a.sha256;
  if (a.path) out['mcec.artifact.path'] = a.path;
  if (a.bytes !== null) out['mcec.artifact.bytes'] = a.bytes;
  if (a.width !== null) out['mcec.artifact.width'] = a.width;
  if (a.height !== null) out['mcec.artifact.height'] = a.height;
  if (a.format) out['mcec.artifact.format'] = a.format;
  if (a.error) out['mcec.artifact.error'] = clip(a.error);
  return out;
}
