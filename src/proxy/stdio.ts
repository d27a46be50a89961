/** A recording stdio proxy: runs the MCP server as a child and sits between it and the client's pipes. */

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { checkRecordLimit, DEFAULT_MAX_RECORD_BYTES, type OversizeEdges, peekAnswer } from './bounded.js';
import { DeclarationFilter } from './declarations.js';
import { classifyMessage, idKey, methodOfResult } from './jsonrpc.js';
import { isBlankLine, LineSplitter } from './lines.js';
import type { ProxyPendingExchange, ProxyRecorder } from './recorder-port.js';
import { WireRecording } from './wire-recording.js';

/** Options of {@link runStdioProxy}. */
export interface StdioProxyOptions {
  /** The real server's program and arguments. */
  command: string;
  args?: string[];
  recorder: ProxyRecorder;
  /** The client's side; default the process's own stdin / stdout / stderr. */
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Forward SIGINT/SIGTERM received by this process to the child (default true). */
  forwardSignals?: boolean;
  /** How long a non-JSON client line waits for the server's error answer before it is recorded alone (5 s). */
  faultAnswerMs?: number;
  /** After the child exits, how long to wait for its stdout to drain before giving up (default 2 s). */
  drainGraceMs?: number;
  /**
   * Longest line recorded (default 256 MiB). A longer line is passed through unchanged, never held whole,
   * and recorded as oversize: the call it answers gets a row without payload and an `oversize-message` event.
   */
  maxRecordBytes?: number;
}

/** Exit code when the server cannot be started (like a shell's "command not found"). */
export const EXIT_CANNOT_START = 127;

/**
 * Run `command` as a child, pass the client's lines to it and its lines back byte for byte, record each
 * exchange, and resolve with the child's exit code (128 + signal number when it was killed).
 * When the child is gone, exchanges still in flight fail ('server exited') and the recorder is closed.
 */
export async function runStdioProxy(options: StdioProxyOptions): Promise<number> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const recorder = options.recorder;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  checkRecordLimit(maxRecordBytes);
  const wire = new WireRecording(recorder, 'stdio');
  // Requests without an id (or with id null) that MCEC still answers, with "id":null: oldest first.
  const idless: Array<{ method: string; pending: Required<ProxyPendingExchange> }> = [];
  const inFlight = new Map<string, Required<ProxyPendingExchange>[]>();

  const child = spawn(options.command, options.args ?? [], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: options.env ?? process.env,
    cwd: options.cwd,
    windowsHide: true,
  });

  // A bad client line is answered (in order) by an error with id null; pair them so the fault is recorded
  // once, with the server's answer. A line the server never answers is recorded on its own.
  const awaitingFault: Array<{
    reason: string;
    text: string;
    parsed: unknown;
    at: Date;
    timer: NodeJS.Timeout;
  }> = [];
  const faultAnswerMs = options.faultAnswerMs ?? 5000;
  function awaitFaultAnswer(reason: string, text: string, parsed: unknown, at: Date): void {
    const entry = {
      reason,
      text,
      parsed,
      at,
      timer: setTimeout(() => {
        const i = awaitingFault.indexOf(entry);
        if (i >= 0) awaitingFault.splice(i, 1);
        wire.fault('request', reason, text);
      }, faultAnswerMs),
    };
    entry.timer.unref();
    awaitingFault.push(entry);
  }

  const fromClient = new LineSplitter((line) => onClientLine(line), {
    maxLineBytes: maxRecordBytes,
    // Its id cannot be read cheaply enough to pair it: its answer will be recorded as an orphan.
    onOversizeLine: (edges) => wire.oversize('request', edges.bytes, maxRecordBytes),
  });
  const fromServer = new LineSplitter((line) => onServerLine(line), {
    maxLineBytes: maxRecordBytes,
    onOversizeLine: (edges) => onOversizeServerLine(edges),
  });

  function onClientLine(line: Buffer): void {
    if (isBlankLine(line)) return;
    const text = line.toString('utf8');
    const message = classifyMessage(text);
    const now = new Date();
    switch (message.kind) {
      case 'request': {
        const pending = wire.begin(message.message, now);
        if (message.id === null) {
          idless.push({ method: message.method, pending });
          return;
        }
        const key = idKey(message.id);
        const queue = inFlight.get(key);
        if (queue) queue.push(pending);
        else inFlight.set(key, [pending]);
        return;
      }
      case 'notification':
        wire.notification(message.message, now);
        return;
      case 'response':
        return; // the client answering a request of the server: passed through, not a tool exchange
      case 'invalid':
        awaitFaultAnswer(message.reason, text, message.message, now);
        return;
    }
  }

  function onServerLine(line: Buffer): void {
    if (isBlankLine(line)) return;
    const text = line.toString('utf8');
    const message = classifyMessage(text);
    const now = new Date();
    if (message.kind === 'response') {
      if (message.id === null) {
        nullAnswer(message.message, now);
        return;
      }
      const key = idKey(message.id);
      const queue = inFlight.get(key);
      const pending = queue?.shift();
      if (queue && queue.length === 0) inFlight.delete(key);
      if (pending) pending.complete(message.message);
      else wire.orphanResponse(message.message, now);
    } else if (message.kind === 'invalid') {
      wire.fault('response', message.reason, text);
    }
    // Requests and notifications from the server go to the client untouched and are not tool exchanges.
  }

  /**
   * An answer with "id":null: to an unparsable line (-32700, or -32600 while one waits) or to an id-less
   * request, in order. A result goes to the oldest id-less request of the method its shape answers.
   */
  function nullAnswer(message: Record<string, unknown>, now: Date): void {
    const error = message.error as { code?: unknown } | undefined;
    const code = error && typeof error === 'object' ? error.code : undefined;
    const toBadLine = code === -32700 || (code === -32600 && awaitingFault.length > 0);
    if ((toBadLine || idless.length === 0) && awaitingFault.length > 0) {
      const bad = awaitingFault.shift()!;
      clearTimeout(bad.timer);
      wire.invalid(bad.reason, bad.text, bad.parsed, bad.at, message);
      return;
    }
    if (idless.length === 0 || code === -32700) {
      wire.orphanResponse(message, now);
      return;
    }
    let i = 0;
    if ('result' in message) {
      const method = methodOfResult(message.result);
      i = Math.max(
        0,
        idless.findIndex((r) => r.method === method),
      );
    }
    const [request] = idless.splice(i, 1);
    request!.pending.complete(message);
  }

  /** A server line over the cap: the call it answers (by the id at its start) gets an oversize row. */
  function onOversizeServerLine(edges: OversizeEdges): void {
    const peek = peekAnswer(edges);
    const id = peek.id;
    const key = typeof id === 'string' || typeof id === 'number' ? idKey(id) : undefined;
    const queue = key === undefined ? undefined : inFlight.get(key);
    // "id":null answers the oldest id-less request (its method cannot be read from the edges)
    const pending = id === null ? idless.shift()?.pending : queue?.shift();
    if (queue && queue.length === 0 && key !== undefined) inFlight.delete(key);
    const answer = {
      bytes: edges.bytes,
      limit: maxRecordBytes,
      ...(peek.isError !== undefined ? { isError: peek.isError } : {}),
      ...(peek.rpcError ? { rpcError: true } : {}),
    };
    if (pending) pending.tooLarge(answer);
    else
      wire.oversize('answer', edges.bytes, maxRecordBytes, {
        isError: peek.isError,
        rpcError: peek.rpcError,
      });
  }

  // Client -> child: the same bytes, chunk by chunk; recording reads lines on the side.
  // Notifications for the recorder itself (declared steps and verdicts) are kept from the server.
  const declarations = new DeclarationFilter();
  const toChild = (parts: Buffer[]) => {
    if (parts.length === 0) return true;
    return child.stdin.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  };
  const onStdinData = (chunk: Buffer) => {
    if (!child.stdin.writable) return;
    if (!toChild(declarations.push(chunk))) {
      stdin.pause();
      child.stdin.once('drain', () => stdin.resume());
    }
    fromClient.push(chunk);
  };
  const onStdinEnd = () => {
    fromClient.end();
    if (child.stdin.writable) {
      toChild(declarations.end());
      child.stdin.end();
    }
  };
  stdin.on('data', onStdinData);
  stdin.on('end', onStdinEnd);
  child.stdin.on('error', () => {}); // EPIPE when the child is gone; its exit is reported below

  // Child -> client, same bytes first, then recording.
  child.stdout.on('data', (chunk: Buffer) => {
    if (stdout.writable && !stdout.write(chunk)) {
      child.stdout.pause();
      stdout.once('drain', () => child.stdout.resume());
    }
    fromServer.push(chunk);
  });
  child.stdout.on('end', () => fromServer.end());
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.writable) stderr.write(chunk);
  });
  stdout.on('error', () => {}); // the client went away; the child's exit still ends the run

  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const handlers = new Map<NodeJS.Signals, () => void>();
  if (options.forwardSignals ?? true) {
    for (const signal of signals) {
      const handler = () => forward(signal);
      handlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  const code = await new Promise<number>((resolve) => {
    let exitCode: number | null = null;
    let done = false;
    const finish = (value: number) => {
      if (done) return;
      done = true;
      resolve(value);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) {
        if (stderr.writable) {
          stderr.write(`mcec-record: cannot start ${options.command}: ${err.code ?? err.message}\n`);
        }
        finish(EXIT_CANNOT_START);
      }
    });
    child.once('exit', (status, signal) => {
      exitCode = status !== null ? status : 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
      // A grandchild may hold stdout open: do not wait for 'close' forever.
      setTimeout(() => finish(exitCode ?? 1), options.drainGraceMs ?? 2000).unref();
    });
    child.once('close', (status, signal) => {
      finish(exitCode ?? (status !== null ? status : 128 + (signal ? (constants.signals[signal] ?? 0) : 0)));
    });
  });

  for (const [signal, handler] of handlers) process.off(signal, handler);
  stdin.off('data', onStdinData);
  stdin.off('end', onStdinEnd);
  stdin.pause();
  for (const queue of inFlight.values()) for (const pending of queue) pending.fail('server exited');
  for (const request of idless.splice(0)) request.pending.fail('server exited');
  for (const bad of awaitingFault.splice(0)) {
    clearTimeout(bad.timer);
    wire.fault('request', bad.reason, bad.text);
  }
  inFlight.clear();
  try {
    await recorder.close();
  } catch (err) {
    if (stderr.writable)
      stderr.write(`mcec-record: closing the recorder failed: ${(err as Error).message}\n`);
  }
  return code;
}
