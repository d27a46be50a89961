/** A recording stdio proxy: runs the MCP server as a child and sits between it and the client's pipes. */

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import {
  expectArray,
  expectBoolean,
  expectMethods,
  expectNonEmptyString,
  expectNumber,
  expectObject,
  expectOptions,
  expectString,
  expectStringItem,
  optionTypeError,
} from '../util/expect.js';
import { endBySignal, isNewStop } from '../util/stop-signal.js';
import { planSpawn } from '../util/windows-command.js';
import { checkRecordLimit, DEFAULT_MAX_RECORD_BYTES, type OversizeEdges, peekAnswer } from './bounded.js';
import { DeclarationFilter } from './declarations.js';
import { classifyMessage, idKey, methodOfResult } from './jsonrpc.js';
import { isBlankLine, LineSplitter } from './lines.js';
import {
  PROXY_RECORDER_METHODS,
  type ProxyPendingExchange,
  type ProxyRecorder,
  recorderRoom,
} from './recorder-port.js';
import { DEFAULT_STOP_GRACE_MS, ServerStop } from './server-stop.js';
import { WAIT_MS } from './timeouts.js';
import { WireRecording } from './wire-recording.js';

/**
 * Server requests made on behalf of a tool call (a tool asks the client's model or its user). Others (roots/list,
 * ping) are the connection's: a server sends them on its own, e.g. roots/list after initialization, whatever
 * call happens to be running.
 */
const CALL_SCOPED_REQUESTS: ReadonlySet<string> = new Set(['sampling/createMessage', 'elicitation/create']);

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
  /**
   * Stop the server when this process receives SIGINT, SIGTERM, SIGHUP or SIGBREAK (default true): its stdin
   * is closed, then SIGTERM and SIGKILL follow if it does not exit (`stopGraceMs`; see server-stop.ts).
   */
  forwardSignals?: boolean;
  /** Stop the server as a signal would, when this is aborted. */
  signal?: AbortSignal;
  /** How long the server has to exit once a stop closed its stdin before SIGTERM (default 2 s; SIGKILL half that later). */
  stopGraceMs?: number;
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

/** A bad client line waiting for the server's error answer (id null), so the fault is recorded once. */
interface AwaitingFault {
  reason: string;
  text: string;
  parsed: unknown;
  at: Date;
  timer: NodeJS.Timeout;
}

/**
 * Pairs the two sides' lines into exchanges: requests by id (in order per id), id-less requests and bad
 * lines with the "id":null answers they get, and oversize answers with the call they answer.
 */
class StdioPairing {
  /** Requests without an id (or with id null) that MCEC still answers, with "id":null: oldest first. */
  private readonly idless: Array<{ method: string; pending: ProxyPendingExchange }> = [];
  private readonly inFlight = new Map<string, ProxyPendingExchange[]>();
  /** Bad client lines answered (in order) by an error with id null; a line never answered is recorded alone. */
  private readonly awaitingFault: AwaitingFault[] = [];
  /** The id of the client's `initialize` while its answer has not come: it names the server. */
  private initializing: string | undefined;
  /**
   * Requests the client sent before that answer (a client that does not wait for it, e.g. a script piping its
   * lines): their recording begins once the answer has named the server, so they are read as its calls.
   */
  private readonly beforeInitialized: Array<() => void> = [];

  constructor(
    private readonly wire: WireRecording,
    private readonly maxRecordBytes: number,
    private readonly faultAnswerMs: number,
  ) {}

  /** One line from the client. */
  clientLine(line: Buffer): void {
    if (isBlankLine(line)) return;
    const text = line.toString('utf8');
    const message = classifyMessage(text);
    const now = new Date();
    switch (message.kind) {
      case 'request': {
        if (this.initializing !== undefined) {
          this.beforeInitialized.push(() => this.request(message, now));
          return;
        }
        this.request(message, now);
        if (message.method === 'initialize' && message.id !== null) this.initializing = idKey(message.id);
        return;
      }
      case 'notification':
        this.wire.clientNotification(message.message);
        this.wire.notification(message.message, now);
        return;
      case 'response':
        // The client answering a request of the server (sampling, elicitation, roots): paired with it.
        this.wire.clientReply(message.message, now);
        return;
      case 'invalid':
        this.awaitFaultAnswer(message.reason, text, message.message, now);
        return;
    }
  }

  /** A request of the client goes in flight: its recording begins (started at `now`, when it was sent). */
  private request(
    message: Extract<ReturnType<typeof classifyMessage>, { kind: 'request' }>,
    now: Date,
  ): void {
    const pending = this.wire.begin(message.message, now);
    if (message.id === null) {
      this.idless.push({ method: message.method, pending });
      return;
    }
    const key = idKey(message.id);
    const queue = this.inFlight.get(key);
    if (queue) queue.push(pending);
    else this.inFlight.set(key, [pending]);
  }

  /** The requests held for the initialize answer begin, in the order they were sent. */
  private beginHeld(): void {
    this.initializing = undefined;
    for (const begin of this.beforeInitialized.splice(0)) begin();
  }

  /**
   * One line from the server: a response settles its request; a notification (progress, log) is an event of
   * the call its progress token names, or of the connection; a request waits for the client's reply.
   */
  serverLine(line: Buffer): void {
    if (isBlankLine(line)) return;
    const text = line.toString('utf8');
    const message = classifyMessage(text);
    const now = new Date();
    const answersInitialize =
      message.kind === 'response' && message.id !== null && idKey(message.id) === this.initializing;
    // Another answer first means the server went on without naming itself: held requests begin now. (Its
    // notifications may come first: server-everything says tools/list_changed before its initialize answer.)
    if (this.initializing !== undefined && message.kind === 'response' && !answersInitialize)
      this.beginHeld();
    if (message.kind === 'response') {
      if (message.id === null) {
        this.nullAnswer(message.message, now);
        return;
      }
      const pending = this.takeById(idKey(message.id));
      if (pending) pending.complete(message.message);
      else this.wire.orphanResponse(message.message, now);
      if (answersInitialize) this.beginHeld();
    } else if (message.kind === 'invalid') {
      this.wire.fault('response', message.reason, text);
    } else if (message.kind === 'request')
      this.wire.fromServer(
        message,
        now,
        CALL_SCOPED_REQUESTS.has(message.method) ? this.soleCall() : undefined,
      );
    else this.wire.fromServer(message, now);
  }

  /** A server line over the cap: the call it answers (by the id at its start) gets an oversize row. */
  oversizeServerLine(edges: OversizeEdges): void {
    if (this.initializing !== undefined) this.beginHeld();
    const peek = peekAnswer(edges);
    const id = peek.id;
    const key = typeof id === 'string' || typeof id === 'number' ? idKey(id) : undefined;
    // "id":null answers the oldest id-less request (its method cannot be read from the edges)
    const pending =
      id === null ? this.idless.shift()?.pending : key === undefined ? undefined : this.takeById(key);
    const answer = {
      bytes: edges.bytes,
      limit: this.maxRecordBytes,
      ...(peek.isError !== undefined ? { isError: peek.isError } : {}),
      ...(peek.rpcError ? { rpcError: true } : {}),
    };
    if (pending) pending.tooLarge(answer);
    else
      this.wire.oversize('answer', edges.bytes, this.maxRecordBytes, {
        isError: peek.isError,
        rpcError: peek.rpcError,
      });
  }

  /** The server is gone (`reason`: how): what is still in flight fails, bad lines are recorded alone. */
  serverExited(reason: string): void {
    if (this.initializing !== undefined) this.beginHeld();
    for (const queue of this.inFlight.values()) for (const pending of queue) pending.fail(reason);
    for (const request of this.idless.splice(0)) request.pending.fail(reason);
    for (const bad of this.awaitingFault.splice(0)) {
      clearTimeout(bad.timer);
      this.wire.fault('request', bad.reason, bad.text);
    }
    this.inFlight.clear();
  }

  /**
   * The one request in flight, if only one is: stdio does not say which call a request of the server comes
   * from, so a call-scoped one is filed with a call only when no other could own it. (Notifications go by
   * their progress token alone: a server also logs on its own, between calls.)
   */
  private soleCall(): ProxyPendingExchange | undefined {
    if (this.idless.length + this.inFlight.size !== 1) return undefined;
    if (this.idless.length === 1) return this.idless[0]!.pending;
    const [queue] = this.inFlight.values();
    return queue!.length === 1 ? queue![0] : undefined;
  }

  /** The oldest request in flight with this id, taken off its queue. */
  private takeById(key: string): ProxyPendingExchange | undefined {
    const queue = this.inFlight.get(key);
    const pending = queue?.shift();
    if (queue && queue.length === 0) this.inFlight.delete(key);
    return pending;
  }

  private awaitFaultAnswer(reason: string, text: string, parsed: unknown, at: Date): void {
    const entry: AwaitingFault = {
      reason,
      text,
      parsed,
      at,
      timer: setTimeout(() => {
        const i = this.awaitingFault.indexOf(entry);
        if (i >= 0) this.awaitingFault.splice(i, 1);
        this.wire.fault('request', reason, text);
      }, this.faultAnswerMs),
    };
    entry.timer.unref();
    this.awaitingFault.push(entry);
  }

  /**
   * An answer with "id":null: to an unparsable line (-32700, or -32600 while one waits) or to an id-less
   * request, in order. A result goes to the oldest id-less request of the method its shape answers.
   */
  private nullAnswer(message: Record<string, unknown>, now: Date): void {
    const error = message.error as { code?: unknown } | undefined;
    const code = error && typeof error === 'object' ? error.code : undefined;
    const toBadLine = code === -32700 || (code === -32600 && this.awaitingFault.length > 0);
    if ((toBadLine || this.idless.length === 0) && this.awaitingFault.length > 0) {
      const bad = this.awaitingFault.shift()!;
      clearTimeout(bad.timer);
      this.wire.invalid(bad.reason, bad.text, bad.parsed, bad.at, message);
      return;
    }
    if (this.idless.length === 0 || code === -32700) {
      this.wire.orphanResponse(message, now);
      return;
    }
    let i = 0;
    if ('result' in message) {
      const method = methodOfResult(message.result);
      i = Math.max(
        0,
        this.idless.findIndex((r) => r.method === method),
      );
    }
    const [request] = this.idless.splice(i, 1);
    request!.pending.complete(message);
  }
}

/** What `pipeBothWays` hands back: detach the client's stdin; close the server's (a stop's first step). */
interface Pipes {
  detachClient(): void;
  closeServerStdin(): void;
}

/**
 * Pipe the client's bytes to the child and the child's back, unchanged, with back-pressure both ways; the
 * recording reads lines on the side. Notifications for the recorder itself (declared steps and verdicts)
 * are kept from the server. The client's stdin is also paused while the recorder has no room (at most
 * ROOM_WAIT_MS each time). The client's end of input closes the server's stdin (`onClientEnd` is told).
 */
function pipeBothWays(
  child: ChildProcessWithoutNullStreams,
  io: { stdin: Readable; stdout: Writable; stderr: Writable },
  recorder: ProxyRecorder,
  fromClient: LineSplitter,
  fromServer: LineSplitter,
  onClientEnd: () => void,
): Pipes {
  const { stdin, stdout, stderr } = io;
  const declarations = new DeclarationFilter();
  const toChild = (parts: Buffer[]) => {
    if (parts.length === 0) return true;
    return child.stdin.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  };
  // Two reasons to stop reading the client (the child's stdin is full, the recorder has no room): read again
  // once neither holds.
  // Once detached, a late release (room after the child's exit) must not read on: the bytes would be lost to
  // stdin's next owner, and a flowing process.stdin keeps the event loop alive.
  let holds = 0;
  let detached = false;
  const hold = () => {
    if (holds++ === 0) stdin.pause();
  };
  const release = () => {
    if (--holds === 0 && !detached) stdin.resume();
  };
  const onStdinData = (chunk: Buffer) => {
    if (!child.stdin.writable) return;
    if (!toChild(declarations.push(chunk))) {
      hold();
      child.stdin.once('drain', release);
    }
    fromClient.push(chunk);
    const room = recorderRoom(recorder);
    if (room) {
      hold();
      room.then(release);
    }
  };
  // What the filter still holds goes to the server first (a line without its newline).
  const closeServerStdin = () => {
    if (child.stdin.writable) {
      toChild(declarations.end());
      child.stdin.end();
    }
  };
  const onStdinEnd = () => {
    fromClient.end();
    if (child.stdin.writable) onClientEnd();
    closeServerStdin();
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
  return {
    detachClient: () => {
      detached = true;
      stdin.off('data', onStdinData);
      stdin.off('end', onStdinEnd);
      stdin.pause();
    },
    closeServerStdin,
  };
}

/**
 * The signals that ask the proxy to stop: SIGINT (Ctrl+C), SIGTERM (an MCP client's second step), SIGHUP
 * (the terminal went, or the console window closed on Windows), SIGBREAK (Ctrl+Break on Windows).
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Stop the server when this process receives a stop signal; returns what removes the handlers. Once the
 * server has exited (the sessions are being written), the first signal is ignored with one line (an MCP
 * client's SIGTERM, 2 s after it closed stdin, must not cut the sessions short) and the handlers are removed:
 * the next one takes its default course (the process ends by it), so a close that hangs can still be stopped.
 */
function stopOnSignals(stop: ServerStop, say: (line: string) => void): () => void {
  const handlers = new Map<NodeJS.Signals, () => void>();
  const remove = () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
  let ignoredAt: number | null = null;
  for (const signal of STOP_SIGNALS) {
    const handler = () => {
      if (!stop.serverExited) {
        stop.request(`${signal} received`, signal === 'SIGTERM');
        return;
      }
      if (ignoredAt === null) {
        ignoredAt = Date.now();
        say(
          `${signal} received while the sessions are being written: ignored; send it again to stop now (the sessions may be incomplete)`,
        );
      } else if (isNewStop(ignoredAt)) endBySignal(signal, remove);
    };
    handlers.set(signal, handler);
    process.on(signal, handler);
  }
  return remove;
}

/** Stop the server when `signal` is aborted; returns what removes the listener. */
function stopOnAbort(stop: ServerStop, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => {};
  const onAbort = () => stop.request('stop asked for');
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** 128 + the signal's number for a child killed by a signal, else its status. */
function exitStatus(status: number | null, signal: NodeJS.Signals | null): number {
  return status !== null ? status : 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

/** How the child ended: the proxy's exit code, and its own status and signal (null when it never started). */
interface ChildEnd {
  code: number;
  status: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * How the child ended: EXIT_CANNOT_START when it cannot be started; else once it exited and its stdout
 * closed, or `drainGraceMs` after its exit (a grandchild may hold stdout open: no waiting for 'close' forever).
 */
function childExit(
  child: ChildProcessWithoutNullStreams,
  command: string,
  stderr: Writable,
  drainGraceMs: number,
): Promise<ChildEnd> {
  return new Promise<ChildEnd>((resolve) => {
    let exited: ChildEnd | null = null;
    let done = false;
    const finish = (end: ChildEnd) => {
      if (done) return;
      done = true;
      resolve(end);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) {
        if (stderr.writable)
          stderr.write(`mcec-record: cannot start ${command}: ${err.code ?? err.message}\n`);
        finish({ code: EXIT_CANNOT_START, status: null, signal: null });
      }
    });
    child.once('exit', (status, signal) => {
      const end = { code: exitStatus(status, signal), status, signal };
      exited = end;
      setTimeout(() => finish(end), drainGraceMs).unref();
    });
    child.once('close', (status, signal) =>
      finish(exited ?? { code: exitStatus(status, signal), status, signal }),
    );
  });
}

/** runStdioProxy's options, checked before anything starts: a TypeError/RangeError naming the first bad one. */
function checkStdioOptions(options: unknown): void {
  expectObject(options, 'options');
  expectNonEmptyString(options.command, 'options.command');
  expectArray(options.args, 'options.args', expectStringItem);
  expectMethods(options.recorder, 'options.recorder', PROXY_RECORDER_METHODS);
  // Every method pipeBothWays calls on them.
  if (options.stdin !== undefined)
    expectMethods(options.stdin, 'options.stdin', ['on', 'off', 'pause', 'resume']);
  if (options.stdout !== undefined) expectMethods(options.stdout, 'options.stdout', ['on', 'once', 'write']);
  if (options.stderr !== undefined) expectMethods(options.stderr, 'options.stderr', ['write']);
  expectOptions(options.env, 'options.env');
  expectString(options.cwd, 'options.cwd', { nonEmpty: true });
  expectBoolean(options.forwardSignals, 'options.forwardSignals');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal))
    throw optionTypeError('Expected options.signal to be an AbortSignal');
  expectNumber(options.stopGraceMs, 'options.stopGraceMs', WAIT_MS);
  expectNumber(options.faultAnswerMs, 'options.faultAnswerMs', WAIT_MS);
  expectNumber(options.drainGraceMs, 'options.drainGraceMs', WAIT_MS);
  if (options.maxRecordBytes !== undefined)
    checkRecordLimit(options.maxRecordBytes, 'options.maxRecordBytes');
}

/**
 * Run `command` as a child, pass the client's lines to it and its lines back byte for byte, record each
 * exchange, and resolve with the child's exit code (128 + signal number when it was killed).
 * When the child is gone, exchanges still in flight fail ('server exited', saying how the proxy stopped it
 * when it did) and the recorder is closed.
 */
export async function runStdioProxy(options: StdioProxyOptions): Promise<number> {
  checkStdioOptions(options);
  const io = {
    stdin: options.stdin ?? process.stdin,
    stdout: options.stdout ?? process.stdout,
    stderr: options.stderr ?? process.stderr,
  };
  const recorder = options.recorder;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const wire = new WireRecording(recorder, 'stdio');
  const pairing = new StdioPairing(wire, maxRecordBytes, options.faultAnswerMs ?? 5000);

  const child = startChild(options, io.stderr);
  if (child === null) {
    await closeRecorder(recorder, io.stderr);
    return EXIT_CANNOT_START;
  }
  const fromClient = new LineSplitter((line) => pairing.clientLine(line), {
    maxLineBytes: maxRecordBytes,
    // Its id cannot be read cheaply enough to pair it: its answer will be recorded as an orphan.
    onOversizeLine: (edges) => wire.oversize('request', edges.bytes, maxRecordBytes),
  });
  const fromServer = new LineSplitter((line) => pairing.serverLine(line), {
    maxLineBytes: maxRecordBytes,
    onOversizeLine: (edges) => pairing.oversizeServerLine(edges),
  });
  // The stop closes the server's stdin through the pipes, which tell it when the client closed it first.
  let pipes: Pipes | null = null;
  const say = (line: string) => {
    if (io.stderr.writable) io.stderr.write(`mcec-record: ${line}\n`);
  };
  const stop = new ServerStop(
    child,
    () => pipes?.closeServerStdin(),
    options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
    say,
  );
  pipes = pipeBothWays(child, io, recorder, fromClient, fromServer, () => stop.stdinClosedByClient());
  child.once('exit', () => stop.exited());
  const stopListening = (options.forwardSignals ?? true) ? stopOnSignals(stop, say) : () => {};
  const stopWatchingAbort = stopOnAbort(stop, options.signal);

  const end = await childExit(child, options.command, io.stderr, options.drainGraceMs ?? 2000);

  stop.exited();
  pipes.detachClient();
  pairing.serverExited(stop.exitReason(end.status, end.signal));
  // The handlers stay until the sessions are written: an MCP client's SIGTERM, 2 s after it closed stdin, must
  // not end the close mid-write or change the exit code (a second signal does: stopOnSignals).
  await closeRecorder(recorder, io.stderr, stop.exportDeadline());
  stopListening();
  stopWatchingAbort();
  return end.code;
}

/**
 * The child, or null when it cannot be started at once (said on stderr as childExit says a failed start).
 * On Windows a `.cmd`/`.bat` file (npx, npm's shims) runs through cmd.exe (`planSpawn`); elsewhere, and for
 * an `.exe`, the command is spawned as given. Node throws some refusals instead of emitting 'error' (EINVAL
 * for a batch file spawned without a shell, an argument holding a NUL byte).
 */
function startChild(options: StdioProxyOptions, stderr: Writable): ChildProcessWithoutNullStreams | null {
  const env = options.env ?? process.env;
  try {
    const plan = planSpawn(options.command, options.args ?? [], {
      env,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    });
    return spawn(plan.file, plan.args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
      cwd: options.cwd,
      windowsHide: true,
      ...(plan.windowsVerbatimArguments ? { windowsVerbatimArguments: true } : {}),
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (stderr.writable)
      stderr.write(`mcec-record: cannot start ${options.command}: ${startFailure(options.command, e)}\n`);
    return null;
  }
}

/** A start refusal in a line: its code, and what it means when the code alone does not say. */
function startFailure(command: string, err: NodeJS.ErrnoException): string {
  // Node refuses a batch file spawned without a shell; planSpawn runs one it finds through cmd.exe, so this
  // one was found only by libuv (which looks in the working directory first).
  if (err.code === 'EINVAL' && /\.(?:cmd|bat)$/i.test(command))
    return `EINVAL (a .cmd or .bat file runs through cmd.exe once found on PATH or by its path; give ${command}'s full path)`;
  if (err.code === undefined || err.code === 'ECMDLINE') return err.message;
  return `${err.code} (${err.message})`;
}

/** Close the recorder; its export's wait ends by `exportDeadline` when given (an MCP client's SIGKILL is due). */
async function closeRecorder(
  recorder: ProxyRecorder,
  stderr: Writable,
  exportDeadline?: number,
): Promise<void> {
  try {
    await recorder.close(exportDeadline === undefined ? undefined : { exportDeadline });
  } catch (err) {
    if (stderr.writable)
      stderr.write(`mcec-record: closing the recorder failed: ${(err as Error).message}\n`);
  }
}
