/**
 * The recording index: one session log read once into what a replay needs (calls with their stored args,
 * envelope, response shape and artifact rows; the recorded handshake; the session ids and the values that
 * earlier answers handed out).
 */
import fs from 'node:fs';
import path from 'node:path';
import { isMcecName } from '../contract/server-name.js';
import type { ArtifactRow, CallRow } from '../store/schema.js';
import { SessionReader } from '../store/session-reader.js';
import { isRecord } from '../util/json.js';

/** One recorded tool call, parsed. */
export interface RecordedCall {
  seq: number;
  tool: string;
  /** The stored (redacted) arguments; `{}` when they were not an object, null when dropped. */
  args: Record<string, unknown> | null;
  status: CallRow['status'];
  /** The compacted, redacted envelope; null when the recording holds none (a fault, a dropped payload). */
  envelope: Record<string, unknown> | null;
  /** The output's stored shape (`[envelope]` for the text block, image blocks with a `summary`); null when bare. */
  response: unknown;
  outputKind: string | null;
  errorCode: string | null;
  errorDetail: string | null;
  durationMs: number;
  /** Artifact rows of this call (images taken out of the answer, host files it named). */
  artifacts: ArtifactRow[];
}

/** Where a value an answer handed out sits: the recorded call and the JSON pointer in its envelope. */
export interface ValueOrigin {
  seq: number;
  pointer: string;
}

/** A session log read for replay. */
export interface Recording {
  /** The session dir the log and `artifacts/` are read from. */
  dir: string;
  sessionId: string;
  scenario: string | null;
  /** Calls in recorded order (pending calls are left out: they have no answer). */
  calls: RecordedCall[];
  /** The recorded initialize result, when the handshake was recorded. */
  initialize: Record<string, unknown> | null;
  /** The recorded tools/list result, when it was recorded. */
  toolsList: Record<string, unknown> | null;
  /** The session's environment (`server: {name, version, protocolVersion, commandAccess}` among it). */
  environment: Record<string, unknown>;
  /** Session ids the recording's envelopes carry. */
  sessionIds: Set<string>;
  /** The id MCEC stamped on calls that named no session (its default session), when the recording shows it. */
  defaultSessionId: string | null;
  /** Pending calls left out of `calls` (the session was cut while they ran). */
  pendingCalls: number;
  /** The recorded server is not MCEC (its serverInfo names another): its calls are plain MCP results. */
  plainServer: boolean;
  /**
   * The client's other requests and the server's answers (resources/list, prompts/get, completion/complete,
   * logging/setLevel, ...), in recorded order: every exchange but initialize, tools/list and tools/call.
   */
  exchanges: RecordedExchange[];
}

/** A request other than a tool call, and the server's answer as recorded. */
export interface RecordedExchange {
  method: string;
  /** Its params as recorded (redacted), without `_meta` (progress tokens and the like differ per run). */
  params: Record<string, unknown>;
  /** The recorded answer: its result, or its JSON-RPC error. */
  answer: { result: unknown } | { error: { code: number; message: string } };
}

/** Methods the replay answers on its own terms, never from `exchanges`. */
const OWN_METHODS = new Set(['initialize', 'tools/list', 'tools/call', 'ping']);

/** A request's params without `_meta`: what two runs of the same request have in common. */
export function paramsOf(params: unknown): Record<string, unknown> {
  if (!isRecord(params)) return {};
  const { _meta, ...rest } = params;
  return rest;
}

/** Every recorded exchange that answered a request of the client (other than OWN_METHODS). */
function recordedExchanges(reader: SessionReader): RecordedExchange[] {
  const out: RecordedExchange[] = [];
  for (const event of reader.events('exchange')) {
    const detail = parseJson(event.detail);
    if (!isRecord(detail) || !isRecord(detail.request) || !isRecord(detail.response)) continue;
    const { request, response } = detail;
    if (typeof request.method !== 'string' || OWN_METHODS.has(request.method)) continue;
    if (request.id === undefined || request.id === null) continue;
    let answer: RecordedExchange['answer'];
    if ('result' in response) answer = { result: response.result };
    else if (isRecord(response.error) && typeof response.error.code === 'number') {
      const message = typeof response.error.message === 'string' ? response.error.message : '';
      answer = { error: { code: response.error.code, message } };
    } else continue;
    out.push({ method: request.method, params: paramsOf(request.params), answer });
  }
  return out;
}

/** True when the recorded handshake (else the environment) names a server other than MCEC. */
function isPlainServer(
  initialize: Record<string, unknown> | null,
  environment: Record<string, unknown>,
): boolean {
  const info = isRecord(initialize?.serverInfo)
    ? initialize.serverInfo
    : isRecord(environment.server)
      ? environment.server
      : {};
  return typeof info.name === 'string' && !isMcecName(info.name);
}

function parseJson(text: string | null): unknown {
  if (text == null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The `result` of the newest recorded exchange of `method`, or null. */
function exchangeResult(reader: SessionReader, method: string): Record<string, unknown> | null {
  const event = reader.lastExchange(method);
  const detail = parseJson(event?.detail ?? null);
  if (!isRecord(detail) || !isRecord(detail.response)) return null;
  const result = detail.response.result;
  return isRecord(result) ? result : null;
}

/** Read the session log in `dir` into a Recording (one read transaction; the log is not kept open). */
export function loadRecording(dir: string): Recording {
  if (!fs.existsSync(path.join(dir, 'session.sqlite')))
    throw new Error(`${dir}: no session.sqlite in this directory`);
  const reader = SessionReader.open(dir);
  try {
    return reader.snapshot(() => {
      const session = reader.session();
      const byCall = new Map<number, ArtifactRow[]>();
      for (const a of reader.artifacts()) {
        if (a.call_seq == null) continue;
        const list = byCall.get(a.call_seq) ?? [];
        list.push(a);
        byCall.set(a.call_seq, list);
      }
      const calls: RecordedCall[] = [];
      const sessionIds = new Set<string>();
      let defaultSessionId: string | null = null;
      let pendingCalls = 0;
      for (const row of reader.calls()) {
        if (row.status === 'pending') {
          pendingCalls++;
          continue;
        }
        const args = row.args == null ? null : parseJson(row.args);
        const envelope = parseJson(row.envelope);
        const call: RecordedCall = {
          seq: row.seq,
          tool: row.tool,
          args: row.args == null ? null : isRecord(args) ? args : {},
          status: row.status,
          envelope: isRecord(envelope) ? envelope : null,
          response: parseJson(row.response),
          outputKind: row.output_kind,
          errorCode: row.error_code,
          errorDetail: row.error_detail,
          durationMs: typeof row.duration_ms === 'number' && row.duration_ms > 0 ? row.duration_ms : 0,
          artifacts: byCall.get(row.seq) ?? [],
        };
        calls.push(call);
        const stamped = call.envelope?.sessionId;
        if (typeof stamped === 'string' && stamped !== '') {
          sessionIds.add(stamped);
          // MCEC stamps its default session on a call that named none (session-start/-end name their own).
          const named = typeof call.args?.sessionId === 'string' && call.args.sessionId.trim() !== '';
          if (!named && !call.tool.startsWith('session-') && defaultSessionId === null)
            defaultSessionId = stamped;
        }
      }
      const environment = parseJson(session.environment);
      const initialize = exchangeResult(reader, 'initialize');
      const env = isRecord(environment) ? environment : {};
      return {
        dir,
        sessionId: session.session_id,
        scenario: session.scenario,
        calls,
        initialize,
        toolsList: exchangeResult(reader, 'tools/list'),
        environment: env,
        sessionIds,
        defaultSessionId,
        pendingCalls,
        plainServer: isPlainServer(initialize, env),
        exchanges: recordedExchanges(reader),
      };
    });
  } finally {
    reader.close();
  }
}

/** Keys whose values are handles or ids an answer hands out and a later call passes back. */
export function isReferenceKey(key: string): boolean {
  if (key === 'sessionId') return false;
  const k = key.toLowerCase();
  return (
    k === 'hwnd' ||
    k === 'pid' ||
    k === 'id' ||
    k.endsWith('handle') ||
    k.endsWith('processid') ||
    k.endsWith('elementid') ||
    k.endsWith('runtimeid')
  );
}

/**
 * Every scalar a recorded answer holds under a reference key, by value: `handle` 131330 handed out by #2
 * `windows` at /result/windows/0/handle. Walks at most `maxNodes` nodes per envelope (UIA trees are large).
 */
export function referenceValues(
  envelope: Record<string, unknown>,
  seq: number,
  into: Map<string, ValueOrigin[]>,
  maxNodes = 20_000,
): void {
  const stack: Array<[unknown, string]> = [[envelope, '']];
  let visited = 0;
  while (stack.length > 0 && visited < maxNodes) {
    const [value, pointer] = stack.pop()!;
    visited++;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${pointer}/${i}`]);
      continue;
    }
    if (!isRecord(value)) continue;
    for (const [key, child] of Object.entries(value)) {
      const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      if ((typeof child === 'number' || typeof child === 'string') && isReferenceKey(key)) {
        const k = valueKey(child);
        const list = into.get(k) ?? [];
        if (list.length < 64) list.push({ seq, pointer: at });
        into.set(k, list);
      } else if (typeof child === 'object' && child !== null) stack.push([child, at]);
    }
  }
}

/** A map key for a scalar that keeps 1 and "1" apart. */
export function valueKey(v: number | string): string {
  return `${typeof v}:${String(v)}`;
}
