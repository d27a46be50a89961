/** Maps what a proxy sees on the wire to recorder calls; every call is guarded so recording never breaks the wire. */

import { routingArgument } from '../record/routing.js';
import { declarationOf, isRecorderMethod } from './declarations.js';
import { classifyParsed, excerpt, type WireMessage } from './jsonrpc.js';
import {
  type ProxyExchangeMeta,
  type ProxyOversizeAnswer,
  type ProxyPendingExchange,
  type ProxyRecorder,
  recordEvent,
} from './recorder-port.js';

const NOOP_PENDING: ProxyPendingExchange = {
  complete() {},
  fail() {},
  timedOut() {},
  clientLeft() {},
  tooLarge() {},
};

/** Records wire traffic of one proxy into a recorder. */
export class WireRecording {
  constructor(
    private readonly recorder: ProxyRecorder,
    private readonly transport: 'http' | 'stdio',
  ) {}

  /** A request with an id went to the server: a pending exchange, settled when its response comes. */
  begin(message: Record<string, unknown>, startedAt: Date): ProxyPendingExchange {
    let pending: ProxyPendingExchange;
    try {
      pending = this.recorder.beginExchange(message, { transport: this.transport, startedAt });
    } catch {
      return NOOP_PENDING;
    }
    const transport = this.transport;
    let settled = false;
    // Every call is guarded: a recorder that throws is counted by itself, if at all; the wire goes on.
    const guard = (fn: () => void) => {
      try {
        fn();
      } catch {
        // recording never breaks the wire
      }
    };
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      guard(fn);
    };
    return {
      complete(response: unknown, meta?: ProxyExchangeMeta) {
        settle(() => pending.complete(response, { transport, startedAt, endedAt: new Date(), ...meta }));
      },
      fail(reason: string) {
        settle(() => pending.fail(reason));
      },
      tooLarge(answer: ProxyOversizeAnswer, meta?: ProxyExchangeMeta) {
        settle(() => pending.tooLarge(answer, { transport, startedAt, endedAt: new Date(), ...meta }));
      },
      // Not settling: the answer may still come.
      timedOut(reason: string) {
        if (!settled) guard(() => pending.timedOut(reason));
      },
      clientLeft(reason: string) {
        if (!settled) guard(() => pending.clientLeft(reason));
      },
    };
  }

  /**
   * A notification (no id) and whatever answer it got (none on stdio; an empty 202 on HTTP). One addressed
   * to the recorder (a declared step or verdict, see declarations.ts) becomes that event, not an exchange.
   */
  notification(message: Record<string, unknown>, startedAt: Date, response: unknown = null): void {
    if (isRecorderMethod(message.method)) {
      const d = declarationOf(message);
      const detail = d.kind === 'protocol-fault' ? { ...d.detail, transport: this.transport } : d.detail;
      recordEvent(this.recorder, d.kind, detail, d.sessionId);
      return;
    }
    this.exchange(message, response, startedAt);
  }

  /**
   * A message that is not a JSON-RPC request, paired with the server's answer when it gave one (usually
   * -32700 or -32600 with id null: the recorder turns that into the protocol-fault event). Without an
   * answer, the proxy records the fault itself.
   */
  invalid(reason: string, raw: string, parsed: unknown, startedAt: Date, answer: unknown): void {
    const response = classifyParsed(answer);
    if (response.kind === 'response') {
      this.exchange(parsed ?? { unparsed: excerpt(raw, 120) }, response.message, startedAt);
    } else {
      this.fault('request', reason, raw);
    }
  }

  /** A line or body that is not JSON-RPC and got no JSON-RPC answer: a protocol-fault event of our own. */
  fault(direction: 'request' | 'response', reason: string, raw: string): void {
    recordEvent(this.recorder, 'protocol-fault', {
      code: -32700,
      message: `${direction} ${reason}: ${excerpt(raw, 120)}`,
      id: null,
      method: null,
      transport: this.transport,
    });
  }

  /** A response whose id matches no request in flight. */
  orphanResponse(message: Record<string, unknown>, at: Date): void {
    this.exchange(null, message, at);
  }

  /** A message over the recording limit that could not be tied to a call: passed through, noted here. */
  oversize(
    direction: 'request' | 'answer',
    bytes: number,
    limit: number,
    read: { isError?: boolean | undefined; rpcError?: boolean | undefined } = {},
  ): void {
    const detail: Record<string, unknown> = { direction, bytes, limit, transport: this.transport };
    if (read.isError !== undefined) detail.isError = read.isError;
    if (read.rpcError) detail.rpcError = true;
    recordEvent(this.recorder, 'oversize-message', detail);
  }

  /** A failure of the proxy itself (target down, too slow, body too large), in the call's session if known. */
  proxyError(detail: Record<string, unknown>, sessionId?: string): void {
    recordEvent(this.recorder, 'proxy-error', { transport: this.transport, ...detail }, sessionId);
  }

  private exchange(request: unknown, response: unknown, startedAt: Date): void {
    try {
      this.recorder.recordExchange(request, response, {
        transport: this.transport,
        startedAt,
        endedAt: new Date(),
      });
    } catch {
      // recording never breaks the wire
    }
  }
}

/** The session a tools/call request names, as MCEC reads it (src/record/routing.ts), when it names one. */
export function sessionIdOf(message: Record<string, unknown>): string | undefined {
  const params = message.params;
  if (params === null || typeof params !== 'object') return undefined;
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  return routingArgument(typeof name === 'string' ? name : '', args);
}

export type { WireMessage };
