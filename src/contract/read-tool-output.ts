/**
 * Classifies anything a dispatch can return (bare envelope, MCP CallToolResult, legacy CommandResult, JSON-RPC
 * response, junk) into one normalized ToolOutput with a usable envelope and the contract violations found.
 * Pure and total: it never throws.
 */

import { isRecord } from '../util/json.js';
import type {
  Envelope,
  ErrorCategory,
  ImageBlockRef,
  ProtocolFault,
  ToolError,
  ToolOutput,
  Violation,
  Warning,
} from './types.js';
import { ERROR_CATEGORIES } from './types.js';
import { validateEnvelope } from './validate.js';

const CATEGORY_SET: ReadonlySet<string> = new Set(ERROR_CATEGORIES);

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string (${v.length} chars)`;
  return `a ${typeof v}`;
}

function prefixed(prefix: string, violations: Violation[]): Violation[] {
  return prefix === '' ? violations : violations.map((v) => ({ path: prefix + v.path, message: v.message }));
}

/** A failure envelope standing in for an output that held none, so nothing downstream breaks. */
export function synthesizedFailure(code: string, detail: string): Envelope {
  return { ok: false, error: { code, category: 'internal', detail } };
}

/** True when a category is one of the contract's closed set. */
export function isErrorCategory(v: unknown): v is ErrorCategory {
  return typeof v === 'string' && CATEGORY_SET.has(v);
}

function coerceWarnings(v: unknown): Warning[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: Warning[] = [];
  for (const w of v) {
    if (isRecord(w) && typeof w.code === 'string') {
      out.push({ code: w.code, detail: typeof w.detail === 'string' ? w.detail : '' });
    } else if (typeof w === 'string') {
      out.push({ code: 'unstructured-warning', detail: w });
    }
  }
  return out;
}

function coerceError(v: unknown): ToolError {
  if (!isRecord(v)) {
    return {
      code: 'envelope-invalid',
      category: 'internal',
      detail: typeof v === 'string' ? v : 'failure envelope without an error object',
    };
  }
  const error: ToolError = {
    code: typeof v.code === 'string' && v.code.length > 0 ? v.code : 'unhandled',
    category: isErrorCategory(v.category) ? v.category : 'internal',
    detail: typeof v.detail === 'string' ? v.detail : '',
  };
  if (isRecord(v.lastObservation) || v.lastObservation === null) error.lastObservation = v.lastObservation;
  if (isRecord(v.partialResult) || v.partialResult === null) error.partialResult = v.partialResult;
  return error;
}

/**
 * A structurally safe envelope from a value that did not validate: known fields kept when their shape is
 * right, defaults otherwise. Returns undefined when the value has no boolean `ok` to go by.
 */
function coerceEnvelope(v: Record<string, unknown>): Envelope | undefined {
  if (typeof v.ok !== 'boolean') return undefined;
  const base: { sessionId?: string | null; warnings?: Warning[] } = {};
  if (typeof v.sessionId === 'string' || v.sessionId === null) base.sessionId = v.sessionId;
  const warnings = coerceWarnings(v.warnings);
  if (warnings) base.warnings = warnings;
  if (v.ok) {
    const env: Envelope = { ...base, ok: true };
    if (isRecord(v.result) || v.result === null) env.result = v.result;
    return env;
  }
  return { ...base, ok: false, error: coerceError(v.error) };
}

interface EnvelopeRead {
  envelope: Envelope;
  violations: Violation[];
  synthesized?: boolean;
}

/** Validates a parsed envelope candidate; keeps it as is when valid, coerces or synthesizes otherwise. */
function readEnvelope(value: unknown, prefix: string): EnvelopeRead {
  const { valid, violations } = validateEnvelope(value);
  const out = prefixed(prefix, violations);
  if (valid) return { envelope: value as Envelope, violations: out };
  const coerced = isRecord(value) ? coerceEnvelope(value) : undefined;
  if (coerced) return { envelope: coerced, violations: out };
  return {
    envelope: synthesizedFailure(
      'envelope-invalid',
      `the tool output held ${describe(value)}, not an envelope`,
    ),
    violations: out,
    synthesized: true,
  };
}

function isImageBlock(b: unknown): b is Record<string, unknown> {
  return isRecord(b) && b.type === 'image';
}

/** Reads an MCP CallToolResult: the envelope is JSON text in the LAST text block. */
function readCallToolResult(v: Record<string, unknown>, prefix: string): Omit<ToolOutput, 'kind'> {
  const violations: Violation[] = [];
  const { content, images, textIndex } = readContentBlocks(v, prefix, violations);
  const isError = readIsError(v, prefix, violations);
  const failed = (code: string, detail: string): Omit<ToolOutput, 'kind'> => ({
    envelope: synthesizedFailure(code, detail),
    isError,
    images,
    violations,
    synthesized: true,
  });
  if (textIndex === -1) {
    violations.push({ path: `${prefix}/content`, message: 'no text block: the envelope is missing' });
    return failed('envelope-missing', 'the CallToolResult had no text block holding an envelope');
  }
  const textPath = `${prefix}/content/${textIndex}/text`;
  const parsed = parseEnvelopeText(
    (content[textIndex] as Record<string, unknown>).text,
    textPath,
    violations,
  );
  if (!parsed) return failed('envelope-unparseable', 'the last text block of the CallToolResult is not JSON');
  const read = readEnvelope(parsed.value, `${textPath}/#json`);
  violations.push(...read.violations);
  if (!read.synthesized && isError !== !read.envelope.ok) {
    violations.push({
      path: `${prefix}/isError`,
      message: `isError must mirror !ok: isError is ${isError}, ok is ${read.envelope.ok}`,
    });
  }
  const out: Omit<ToolOutput, 'kind'> = { envelope: read.envelope, isError, images, violations };
  if (read.synthesized) out.synthesized = true;
  else out.envelopePath = `${textPath}/#json`;
  return out;
}

/** The content blocks: the image blocks, and the index of the last text block (-1 when there is none). */
function readContentBlocks(
  v: Record<string, unknown>,
  prefix: string,
  violations: Violation[],
): { content: unknown[]; images: ImageBlockRef[]; textIndex: number } {
  const images: ImageBlockRef[] = [];
  const content = Array.isArray(v.content) ? v.content : [];
  if (!Array.isArray(v.content)) {
    violations.push({
      path: `${prefix}/content`,
      message: `content must be an array, got ${describe(v.content)}`,
    });
  }
  let textIndex = -1;
  content.forEach((block, index) => {
    if (isImageBlock(block)) {
      if (typeof block.data === 'string' && typeof block.mimeType === 'string') {
        images.push({ index, data: block.data, mimeType: block.mimeType });
      } else {
        violations.push({
          path: `${prefix}/content/${index}`,
          message: 'image block needs string data and mimeType',
        });
      }
    } else if (isRecord(block) && block.type === 'text') {
      textIndex = index;
    } else if (!isRecord(block) || typeof block.type !== 'string') {
      violations.push({ path: `${prefix}/content/${index}`, message: 'content block without a type' });
    }
  });
  return { content, images, textIndex };
}

/** `isError` as a boolean (absent: false); any other type is a violation and reads as false. */
function readIsError(v: Record<string, unknown>, prefix: string, violations: Violation[]): boolean {
  if (v.isError !== undefined && typeof v.isError !== 'boolean') {
    violations.push({
      path: `${prefix}/isError`,
      message: `isError must be a boolean, got ${describe(v.isError)}`,
    });
    return false;
  }
  return v.isError === true;
}

/** The envelope text parsed, or null (with a violation) when it is not a string of JSON. */
function parseEnvelopeText(
  text: unknown,
  textPath: string,
  violations: Violation[],
): { value: unknown } | null {
  if (typeof text === 'string') {
    try {
      return { value: JSON.parse(text) };
    } catch {
      // reported below
    }
  }
  // Never quote the text: it can be megabytes, and it can hold image bytes.
  violations.push({
    path: textPath,
    message:
      typeof text === 'string'
        ? `the last text block is not JSON (${text.length} chars)`
        : `the last text block's text is ${describe(text)}, not a string`,
  });
  return null;
}

/** The code of a failed plain tool result (`isError: true` from a server that is not MCEC). */
export const PLAIN_TOOL_ERROR = 'tool-error';

/**
 * A stored failure's category as its server gave it: none for a plain tool result's failure, whose log rows
 * recorded before 8f606dd hold the reader's stand-in 'internal'.
 */
export function serverCategory(code: string | null, category: string | null): string | null {
  return code === PLAIN_TOOL_ERROR ? null : category;
}
/** How much of a failed plain result's text its error detail keeps. */
const PLAIN_DETAIL_CHARS = 2000;

/**
 * A tool result of an MCP server that is not MCEC, read as what it is: a CallToolResult (bare, or the result
 * of a JSON-RPC response) without an envelope is ok unless `isError`; a failure's detail is its text. No
 * contract applies, so there are no violations. Undefined when `read` (readToolOutput's reading) found a valid
 * envelope (MCEC's, which is read as MCEC's: one read with no violation) or the output is not a CallToolResult.
 */
export function readPlainToolResult(value: unknown, read: ToolOutput): ToolOutput | undefined {
  // Only an envelope the contract takes as it is stays one: text that reads as an envelope only with violations
  // is the server's own JSON (a web API's `{"ok": false, "error": "..."}`), kept and judged by `isError`.
  if (!read.synthesized && read.violations.length === 0) return undefined;
  // A task-augmented call (MCP tasks) is answered with a CreateTaskResult: the task was made, its outcome
  // comes later (tasks/result); a valid answer, not a broken CallToolResult.
  if (read.kind === 'invalid' && isRecord(value) && isCreateTaskResult(value.result)) {
    return {
      kind: 'json-rpc-result',
      envelope: { ok: true },
      isError: false,
      images: [],
      violations: [],
      plain: true,
    };
  }
  // A JSON-RPC result without `content` (a tool with an outputSchema answering `structuredContent` only): MCP's
  // SDK client takes it as a CallToolResult whose content is empty, so it is one.
  const contentless =
    read.kind === 'invalid' &&
    isRecord(value) &&
    typeof value.jsonrpc === 'string' &&
    isRecord(value.result) &&
    value.result.content === undefined;
  const result =
    read.kind === 'call-tool-result'
      ? value
      : (read.kind === 'json-rpc-result' || contentless) && isRecord(value)
        ? value.result
        : undefined;
  if (!isRecord(result) || !(contentless || Array.isArray(result.content))) return undefined;
  const content: unknown[] = Array.isArray(result.content) ? result.content : [];
  const isError = result.isError === true;
  let envelope: Envelope = { ok: true };
  if (isError) {
    const texts: string[] = [];
    let chars = 0;
    for (const block of content) {
      if (chars >= PLAIN_DETAIL_CHARS) break;
      if (isRecord(block) && block.type === 'text' && typeof block.text === 'string') {
        const text = block.text.slice(0, PLAIN_DETAIL_CHARS - chars);
        texts.push(text);
        chars += text.length;
      }
    }
    // Without text, the structured content says what failed.
    if (texts.length === 0 && isRecord(result.structuredContent))
      texts.push((JSON.stringify(result.structuredContent) ?? '').slice(0, PLAIN_DETAIL_CHARS));
    envelope = {
      ok: false,
      error: { code: PLAIN_TOOL_ERROR, category: 'internal', detail: texts.join('\n') },
    };
  }
  const kind = contentless ? 'json-rpc-result' : read.kind;
  return { kind, envelope, isError, images: read.images, violations: [], plain: true };
}

/** MCP's CreateTaskResult: `{task: {taskId, status, ...}}`. */
function isCreateTaskResult(v: unknown): boolean {
  return (
    isRecord(v) && isRecord(v.task) && typeof v.task.taskId === 'string' && typeof v.task.status === 'string'
  );
}

/** Maps a legacy CommandResult onto an envelope by the contract's table. */
function readLegacy(v: Record<string, unknown>): ToolOutput {
  const violations: Violation[] = [];
  if (typeof v.success !== 'boolean') {
    violations.push({ path: '/success', message: `success must be a boolean, got ${describe(v.success)}` });
  }
  const ok = v.success === true;
  const base: { sessionId?: string | null; warnings?: Warning[] } = {};
  if (typeof v.sessionId === 'string' || v.sessionId === null) base.sessionId = v.sessionId;
  const warnings = coerceWarnings(v.warnings);
  if (warnings) base.warnings = warnings;
  if (v.warnings !== undefined && v.warnings !== null && !Array.isArray(v.warnings)) {
    violations.push({ path: '/warnings', message: `warnings must be an array, got ${describe(v.warnings)}` });
  }

  let envelope: Envelope;
  if (ok) {
    const data = v.data;
    const result = isRecord(data) ? data : data === undefined || data === null ? null : { value: data };
    envelope = { ...base, ok: true, result };
  } else {
    const code = typeof v.errorCode === 'string' && v.errorCode.length > 0 ? v.errorCode : 'unhandled';
    if (v.errorCategory !== undefined && v.errorCategory !== null && !isErrorCategory(v.errorCategory)) {
      violations.push({
        path: '/errorCategory',
        message: 'errorCategory is not one of the contract categories',
      });
    }
    const category = isErrorCategory(v.errorCategory) ? v.errorCategory : 'internal';
    const detail =
      typeof v.error === 'string'
        ? v.error
        : isRecord(v.error) && typeof v.error.message === 'string'
          ? v.error.message
          : '';
    envelope = { ...base, ok: false, error: { code, category, detail } };
  }
  // The mapped envelope's own breaches (kebab-case codes and the like), pointed back at the legacy fields.
  const legacyPath: Record<string, string> = {
    '/error/code': '/errorCode',
    '/error/category': '/errorCategory',
    '/error/detail': '/error',
    '/result': '/data',
  };
  for (const viol of validateEnvelope(envelope).violations) {
    violations.push({ path: legacyPath[viol.path] ?? viol.path, message: viol.message });
  }
  return { kind: 'legacy-command-result', envelope, images: [], violations, legacy: true };
}

/** Reads a JSON-RPC 2.0 response: a CallToolResult in `result`, or a protocol fault in `error`. */
function readJsonRpc(v: Record<string, unknown>): ToolOutput {
  const violations: Violation[] = [];
  if (v.jsonrpc !== '2.0') violations.push({ path: '/jsonrpc', message: 'jsonrpc must be "2.0"' });
  const idOk = typeof v.id === 'string' || typeof v.id === 'number' || v.id === null;
  if (!idOk)
    violations.push({ path: '/id', message: `id must be a string, number or null, got ${describe(v.id)}` });
  const id = idOk ? (v.id as string | number | null) : null;
  const hasError = v.error !== undefined;
  const hasResult = v.result !== undefined;
  if (hasError && hasResult) {
    violations.push({ path: '', message: 'a JSON-RPC response carries result or error, not both' });
  }
  if (hasError) {
    const e = v.error;
    if (!isRecord(e)) {
      violations.push({ path: '/error', message: `JSON-RPC error must be an object, got ${describe(e)}` });
    }
    const err = isRecord(e) ? e : {};
    if (!Number.isInteger(err.code))
      violations.push({ path: '/error/code', message: 'error code must be an integer' });
    if (typeof err.message !== 'string') {
      violations.push({ path: '/error/message', message: 'error message must be a string' });
    }
    const fault: ProtocolFault = {
      code: Number.isInteger(err.code) ? (err.code as number) : 0,
      message: typeof err.message === 'string' ? err.message : '',
      id,
    };
    if (err.data !== undefined) fault.data = err.data;
    return { kind: 'json-rpc-error', fault, images: [], violations };
  }
  if (hasResult) {
    const r = v.result;
    if (isRecord(r) && 'content' in r) {
      const read = readCallToolResult(r, '/result');
      // Not `{ ...read, kind, violations }`: in Node 20 that makes a new hidden class per call.
      return Object.assign(read, {
        kind: 'json-rpc-result' as const,
        violations: [...violations, ...read.violations],
      });
    }
    violations.push({
      path: '/result',
      message: 'a tools/call result must be a CallToolResult with content',
    });
    if (isRecord(r) && 'ok' in r) {
      const read = readEnvelope(r, '/result');
      const out: ToolOutput = {
        kind: 'json-rpc-result',
        envelope: read.envelope,
        images: [],
        violations: [...violations, ...read.violations],
      };
      if (read.synthesized) out.synthesized = true;
      else out.envelopePath = '/result';
      return out;
    }
    return invalid(violations, `the JSON-RPC result held ${describe(r)}, not a CallToolResult`);
  }
  violations.push({ path: '', message: 'a JSON-RPC response needs result or error' });
  return invalid(violations, 'the JSON-RPC response had neither result nor error');
}

function invalid(violations: Violation[], detail: string): ToolOutput {
  return {
    kind: 'invalid',
    envelope: synthesizedFailure('envelope-invalid', detail),
    images: [],
    violations,
    synthesized: true,
  };
}

function classify(value: unknown): ToolOutput {
  if (!isRecord(value)) {
    const what = describe(value);
    return invalid(
      [
        {
          path: '',
          message: `expected an envelope, CallToolResult, CommandResult or JSON-RPC response, got ${what}`,
        },
      ],
      `the tool output was ${what}`,
    );
  }
  if ('jsonrpc' in value || ('id' in value && ('result' in value || 'error' in value) && !('ok' in value))) {
    return readJsonRpc(value);
  }
  if ('ok' in value) {
    const read = readEnvelope(value, '');
    const out: ToolOutput = {
      kind: 'envelope',
      envelope: read.envelope,
      images: [],
      violations: read.violations,
    };
    if (read.synthesized) out.synthesized = true;
    else out.envelopePath = '';
    return out;
  }
  if ('content' in value) return { kind: 'call-tool-result', ...readCallToolResult(value, '') };
  if ('success' in value) return readLegacy(value);
  return invalid(
    [
      {
        path: '',
        message:
          'object is not an envelope (ok), CallToolResult (content), CommandResult (success) or JSON-RPC response',
      },
    ],
    'the tool output had no recognisable shape',
  );
}

/** Classifies and normalizes anything a dispatch can return. Never throws. */
export function readToolOutput(value: unknown): ToolOutput {
  try {
    return classify(value);
  } catch (e) {
    const name = e instanceof Error ? e.name : typeof e;
    return invalid(
      [{ path: '', message: `the tool output could not be read (${name})` }],
      'reading the tool output failed',
    );
  }
}
