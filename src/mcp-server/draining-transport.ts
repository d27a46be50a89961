/**
 * A transport that knows which requests it has read and not yet answered, so that the server can close once
 * they are answered: a client may write its requests, close its end (stdin's EOF) and still wait for every
 * answer, as `printf ... | mcec-bundle mcp` does.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';

export class DrainingTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;
  /** Requests read and not yet answered, by id (a client may reuse an id: counted). */
  private readonly unanswered = new Map<RequestId, number>();
  private wakeIdle: (() => void) | null = null;

  constructor(private readonly inner: Transport) {}

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  async start(): Promise<void> {
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
    this.inner.onmessage = (message, extra) => {
      if ('method' in message) {
        if ('id' in message) this.unanswered.set(message.id, (this.unanswered.get(message.id) ?? 0) + 1);
        // A cancelled request gets no answer (the specification): stop waiting for it.
        else if (message.method === 'notifications/cancelled') {
          const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
          if (id !== undefined) this.answered(id);
        }
      }
      this.onmessage?.(message, extra);
    };
    await this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const answers = !('method' in message) && 'id' in message ? message.id : undefined;
    try {
      await this.inner.send(message, options);
    } finally {
      // Answered, or it cannot be: either way nothing more will come for it.
      if (answers !== undefined && answers !== null) this.answered(answers);
    }
  }

  async close(): Promise<void> {
    await this.inner.close();
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  /** Resolves once every request read so far has been answered (or cancelled). */
  async idle(): Promise<void> {
    while (this.unanswered.size > 0) await new Promise<void>((resolve) => (this.wakeIdle = resolve));
  }

  private answered(id: RequestId): void {
    const left = (this.unanswered.get(id) ?? 0) - 1;
    if (left > 0) this.unanswered.set(id, left);
    else this.unanswered.delete(id);
    if (this.unanswered.size === 0) this.wakeIdle?.();
  }
}
