/** Newline-delimited JSON-RPC over a pair of streams, up to 16 requests in flight (mcec-wire §4). */
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { JsonRpcResponse } from './json-rpc.js';
import { serializeWire } from './json-text.js';

/** What the stdio transport needs from the server: one line of JSON text in, a response (or null) out. */
export interface LineHandler {
  handleText(line: string): Promise<JsonRpcResponse | null>;
}

/** The real server's cap on concurrent requests. */
export const MAX_IN_FLIGHT = 16;

/**
 * Serve requests read from `input`, writing each response as one line to `output` as soon as it is ready
 * (so responses overlap and come out of order). Resolves once input has ended and every response is written.
 */
export function serveStdio(
  handler: LineHandler,
  input: Readable,
  output: Writable,
  maxInFlight = MAX_IN_FLIGHT,
): Promise<void> {
  return new Promise((resolve) => {
    const decoder = new StringDecoder('utf8');
    const queue: string[] = [];
    let buffered = '';
    let inFlight = 0;
    let ended = false;
    let paused = false;

    const write = (resp: JsonRpcResponse | null) => {
      if (resp && output.writable) output.write(`${serializeWire(resp)}\n`);
    };
    const finishIfDone = () => {
      if (ended && inFlight === 0 && queue.length === 0) resolve();
    };
    const pump = () => {
      while (inFlight < maxInFlight && queue.length > 0) {
        const line = queue.shift()!;
        inFlight++;
        handler
          .handleText(line)
          .then(write, (e: unknown) =>
            write({
              jsonrpc: '2.0',
              id: null,
              error: { code: -32603, message: `Internal error: ${String(e)}` },
            }),
          )
          .finally(() => {
            inFlight--;
            pump();
            finishIfDone();
          });
      }
      // Back-pressure: stop reading while a backlog waits for a free slot.
      if (!paused && queue.length > maxInFlight * 4) {
        paused = true;
        input.pause();
      } else if (paused && queue.length <= maxInFlight) {
        paused = false;
        input.resume();
      }
    };
    const take = (text: string) => {
      buffered += text;
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        const line = buffered.slice(0, nl).replace(/\r$/, '');
        buffered = buffered.slice(nl + 1);
        if (line.trim().length > 0) queue.push(line);
        nl = buffered.indexOf('\n');
      }
      pump();
    };

    input.on('data', (chunk: Buffer | string) =>
      take(typeof chunk === 'string' ? chunk : decoder.write(chunk)),
    );
    const end = () => {
      if (ended) return;
      take(`${decoder.end()}\n`);
      ended = true;
      finishIfDone();
    };
    input.on('end', end);
    input.on('close', end);
    input.on('error', end);
  });
}
