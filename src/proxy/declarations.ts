/**
 * Notifications a client sends to the recorder itself, through a proxy, to declare steps and a verdict.
 * The proxies record them as `step` / `verdict` events and never forward them to MCEC.
 *
 * Why `notifications/mcec-recorder/...`: the `notifications/` prefix is how MCP names notifications (no id,
 * no answer), so MCP client libraries send it as one; `mcec-recorder` is this package's name, which neither
 * MCP nor MCEC uses. Were the proxy left out, MCEC drops any notification it does not know without an
 * answer (JsonRpcDispatcher: only notifications/initialized and notifications/cancelled are handled).
 */
import { classifyMessage } from './jsonrpc.js';

/** `{sessionId?, name, status, detail?}`: a step of the run (recorded like `recorder.step`). */
export const STEP_NOTIFICATION = 'notifications/mcec-recorder/step';
/** `{sessionId?, passed, reason?}`: the run's verdict (the newest declared verdict wins). */
export const VERDICT_NOTIFICATION = 'notifications/mcec-recorder/verdict';
const PREFIX = 'notifications/mcec-recorder/';
/** A declaration is small; a longer line is never held back to look for one (it streams through). */
export const MAX_DECLARATION_BYTES = 64 * 1024;

const MAX_NAME = 500;
const MAX_STATUS = 100;
const MAX_TEXT = 4000;

/** True when `method` is in the recorder's namespace. */
export function isRecorderMethod(method: unknown): boolean {
  return typeof method === 'string' && method.startsWith(PREFIX);
}

/** True when `raw` (a body or a line) is a JSON-RPC notification addressed to the recorder. */
export function isRecorderNotification(raw: Buffer | string): boolean {
  // Cheap for every other message: a byte search before any parse.
  if (raw.length > MAX_DECLARATION_BYTES || raw.indexOf('mcec-recorder') < 0) return false;
  const message = classifyMessage(typeof raw === 'string' ? raw : raw.toString('utf8'));
  return message.kind === 'notification' && isRecorderMethod(message.method);
}

/** What a declaration notification records: an event (in the session it names, if any), or why not. */
export type Declaration =
  | { kind: 'step' | 'verdict'; detail: Record<string, unknown>; sessionId?: string }
  | { kind: 'protocol-fault'; detail: Record<string, unknown>; sessionId?: string };

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/** The event a recorder notification becomes; a malformed one becomes a protocol-fault (-32602). Pure. */
export function declarationOf(message: Record<string, unknown>): Declaration {
  const method = String(message.method);
  const params =
    message.params !== null && typeof message.params === 'object' && !Array.isArray(message.params)
      ? (message.params as Record<string, unknown>)
      : {};
  const sessionId =
    typeof params.sessionId === 'string' && params.sessionId !== '' ? params.sessionId : undefined;
  const where = sessionId === undefined ? {} : { sessionId };
  const fault = (problem: string): Declaration => ({
    kind: 'protocol-fault',
    detail: {
      code: -32602,
      message: `${clip(method, 100)}: ${problem}`,
      id: null,
      method: clip(method, 100),
    },
    ...where,
  });
  const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
  if (method === STEP_NOTIFICATION) {
    if (typeof params.name !== 'string' || params.name.trim() === '')
      return fault('name must be a non-empty string');
    if (typeof params.status !== 'string' || params.status.trim() === '')
      return fault('status must be a non-empty string (e.g. passed, failed)');
    const detail: Record<string, unknown> = {
      name: clip(params.name, MAX_NAME),
      status: clip(params.status, MAX_STATUS),
    };
    if (params.detail != null) detail.detail = clip(text(params.detail), MAX_TEXT);
    return { kind: 'step', detail, ...where };
  }
  if (method === VERDICT_NOTIFICATION) {
    if (typeof params.passed !== 'boolean') return fault('passed must be true or false');
    const detail: Record<string, unknown> = { passed: params.passed, via: 'notification' };
    if (params.reason != null && text(params.reason).trim() !== '')
      detail.reason = clip(text(params.reason).trim(), MAX_TEXT);
    return { kind: 'verdict', detail, ...where };
  }
  return fault(
    `unknown recorder notification (the recorder knows ${STEP_NOTIFICATION} and ${VERDICT_NOTIFICATION})`,
  );
}

/**
 * Passes a client's byte stream through while keeping back the lines that are recorder notifications.
 * A line is held until its newline (JSON-RPC over stdio is read line by line anyway); one that grows past
 * MAX_DECLARATION_BYTES cannot be a declaration and streams through from then on, never held whole.
 */
export class DeclarationFilter {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private streaming = false;

  /** The bytes of `chunk` to forward now (in order); recorder notification lines are left out. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl + 1;
      const piece = chunk.subarray(start, end);
      if (this.streaming) {
        out.push(piece);
      } else {
        this.held.push(piece);
        this.heldBytes += piece.length;
        if (nl >= 0) this.release(out, true);
        else if (this.heldBytes > MAX_DECLARATION_BYTES) {
          out.push(...this.held);
          this.reset();
          this.streaming = true;
        }
      }
      if (nl >= 0) this.streaming = false;
      start = end;
    }
    return out;
  }

  /** The stream ended: a held last line without a newline, unless it is a declaration. */
  end(): Buffer[] {
    const out: Buffer[] = [];
    if (this.held.length > 0) this.release(out, false);
    return out;
  }

  private release(out: Buffer[], terminated: boolean): void {
    const line = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held, this.heldBytes);
    const body = terminated ? line.subarray(0, line.length - 1) : line;
    if (!isRecorderNotification(body)) out.push(line);
    this.reset();
  }

  private reset(): void {
    this.held = [];
    this.heldBytes = 0;
  }
}
