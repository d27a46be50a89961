/** Maps what a proxy sees on the wire to recorder calls; every call is guarded so recording never breaks the wire. */

import { classifyParsed, excerpt, type WireMessage } from './jsonrpc.js';
import {
  type ProxyExchangeMeta,
  type ProxyPendingExchange,
  type ProxyRecorder,
  recordEvent,
} from './recorder-port.js';

const NOOP_PENDING: ProxyPendingExchange = { complete() {}, fail() {} };

/** Records wire traffic of one proxy into a recorder. */
export class WireRecording {
  constructor(
    private readonly recorder: ProxyRecorder,
    private readonly transport: 'http' | 'stdio',
  ) {}

  /** A request with an id went to the server: a pending exchange, completed when its response comes. */
  begin(message: Record<string, unknown>, startedAt: Date): ProxyPendingExchange {
    let pending: ProxyPendingExchange;
    try {
      pending = this.recorder.beginExchange(message, { transport: this.transport, startedAt });
    } catch {
      return NOOP_PENDING;
    }
    const transport = this.transport;
    let settled = false;
    return {
      complete(response: unknown, meta?: ProxyExchangeMeta) {
        if (settled) return;
        settled = true;
        try {
          pending.complete(response, { transport, startedAt, endedAt: new Date(), ...meta });
        } catch {
          // counted by the recorder, if at all; the wire goes on
        }
      },
      fail(reason: string) {
        if (settled) return;
        settled = true;
        try {
          pending.fail(reason);
        } catch {
          // as above
        }
      },
    };
  }

  /** A notification (no id) and whatever answer it got (none on stdio; an empty 202 on HTTP). */
  notification(message: Record<string, unknown>, startedAt: Date, response: unknown = null): void {
    this.exchange(message, response, startedAt);
  }

  /** A message that is not a JSON-RPC request or response, with the server's answer when there is one. */
  invalid(
    reason: string,
    raw: string,
    parsed: unknown,
    startedAt: Date,
    response: unknown,
    direction: 'request' | 'response',
  ): void {
    recordEvent(this.recorder, 'protocol-fault', {
      code: -32700,
      message: `${direction} ${reason}: ${excerpt(raw, 120)}`,
      id: null,
      transport: this.transport,
    });
    // Give the recorder the server's own error answer (e.g. -32700 with id null) when there is one.
    const answer = classifyParsed(response);
    if (answer.kind === 'response') this.exchange(parsed ?? null, answer.message, startedAt);
  }

  /** A response whose id matches no request in flight (or a JSON-RPC error with id null). */
  orphanResponse(message: Record<string, unknown>, at: Date): void {
    this.exchange(null, message, at);
  }

  /** A failure of the proxy itself (target down, too slow, body too large). */
  proxyError(detail: Record<string, unknown>): void {
    recordEvent(this.recorder, 'proxy-error', { transport: this.transport, ...detail });
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

export type { WireMessage };
