/** The stdio proxy in front of a child MCP server (the stdio simulator by default), on in-memory pipes. */
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runStdioProxy, type StdioProxyOptions } from '../../src/proxy/stdio.js';

/** The simulator as a stdio MCP server (`node sim-stdio.mjs <artifact root>`). */
export const SIM_STDIO_CHILD = fileURLToPath(new URL('../proxy/fixtures/sim-stdio.mjs', import.meta.url));

/** A running proxy: write requests to `stdin`, read answers from `stdout`; `exit` is its exit code. */
export interface PipedStdioProxy {
  stdin: PassThrough;
  stdout: PassThrough;
  /** What the proxy tells its user (unread, it waits there). */
  stderr: PassThrough;
  exit: Promise<number>;
}

/**
 * `runStdioProxy` spawning `node <args>` with `recorder`, signals not forwarded. What the proxy writes waits in
 * `stdout` and `stderr` until it is read.
 */
export function stdioProxy(
  recorder: StdioProxyOptions['recorder'],
  args: string[],
  options: Pick<StdioProxyOptions, 'maxRecordBytes' | 'faultAnswerMs'> = {},
): PipedStdioProxy {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const exit = runStdioProxy({
    command: process.execPath,
    args,
    recorder,
    stdin,
    stdout,
    stderr,
    forwardSignals: false,
    ...options,
  });
  return { stdin, stdout, stderr, exit };
}
