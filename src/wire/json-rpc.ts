/**
 * JSON-RPC 2.0 as the MCEC server answers it: the request checks, one table of per-method behaviour, and
 * the parse and handler-fault errors. The simulator and the replay both answer through it.
 */
import { isRecord } from '../util/json.js';

/** A JSON-RPC request id as MCEC reads it (an absent id reads as null). */
export type JsonRpcId = string | number | null;

/** A JSON-RPC 2.0 response. */
export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result?: unknown;
  error?: { code: number; message: string };
}

/** A JSON-RPC error response. */
export function rpcError(id: JsonRpcId, code: number, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** Thrown by a method to answer with this JSON-RPC error (code and message) instead of a result. */
export class JsonRpcErrorAnswer extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** One method's behaviour: its result from the request's params (`{}` when absent or not an object). */
export type JsonRpcMethod = (params: Record<string, unknown>) => unknown;

/** The methods a server answers, by name; any other method is -32601 (or no answer to a notification). */
export type JsonRpcMethods = ReadonlyMap<string, JsonRpcMethod>;

/** The id of a message that may not be a valid request: a string or finite number, else null. */
export function readableId(msg: unknown): JsonRpcId {
  if (!isRecord(msg)) return null;
  const id = msg.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/**
 * One JSON-RPC message in, its response out (null for a notification), as MCEC checks and answers it. A
 * method's JsonRpcErrorAnswer becomes that error; any other throw escapes (a handler fault).
 */
export async function dispatchJsonRpc(
  msg: unknown,
  methods: JsonRpcMethods,
): Promise<JsonRpcResponse | null> {
  if (!isRecord(msg)) return rpcError(null, -32600, 'Invalid Request');
  const id = msg.id;
  if (
    id !== undefined &&
    !(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))
  )
    return rpcError(null, -32600, 'Invalid Request: id must be a string, a number or null');
  // As the real server: an absent id and `"id": null` are the same; the known methods are still answered
  // (with id null: an id-less tools/call runs), anything else without an id is a notification.
  const rid: JsonRpcId = id === undefined ? null : (id as JsonRpcId);
  if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string')
    return rpcError(rid, -32600, 'Invalid Request: needs jsonrpc "2.0" and a method');
  const method = methods.get(msg.method);
  if (!method) return rid === null ? null : rpcError(rid, -32601, `Method not found: ${msg.method}`);
  const params = isRecord(msg.params) ? msg.params : {};
  try {
    return { jsonrpc: '2.0', id: rid, result: await method(params) };
  } catch (e) {
    if (e instanceof JsonRpcErrorAnswer) return rpcError(rid, e.code, e.message);
    throw e;
  }
}

/** Like `dispatch`, but a handler fault becomes a -32603 response (as on stdio). */
export async function answerFaults(
  msg: unknown,
  dispatch: (msg: unknown) => Promise<JsonRpcResponse | null>,
): Promise<JsonRpcResponse | null> {
  try {
    return await dispatch(msg);
  } catch (e) {
    return rpcError(readableId(msg), -32603, `Internal error: ${(e as Error).message}`);
  }
}

/** One line of JSON text in (stdio framing): a parse failure is -32700 with id null, a fault -32603. */
export async function answerJsonText(
  text: string,
  dispatch: (msg: unknown) => Promise<JsonRpcResponse | null>,
): Promise<JsonRpcResponse | null> {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    return rpcError(null, -32700, `Parse error: ${(e as Error).message}`);
  }
  return answerFaults(msg, dispatch);
}

/** The tool a `tools/call` names ('' when it names none) and its raw arguments. */
export function toolCallOf(params: Record<string, unknown>): { name: string; args: unknown } {
  return { name: typeof params.name === 'string' ? params.name : '', args: params.arguments };
}
