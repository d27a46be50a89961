/** An embedded MCEC-like server for the demo, tests and benchmarks: library API of the simulator. */
import type { Readable, Writable } from 'node:stream';
import type { Envelope } from '../contract/types.js';
import {
  expectBoolean,
  expectFunction,
  expectNumber,
  expectObject,
  expectOneOf,
  expectOptions,
  expectString,
  optionTypeError,
} from '../util/expect.js';
import { type HttpListener, type HttpOptions, listenHttp } from '../wire/http.js';
import type { JsonRpcResponse } from '../wire/json-rpc.js';
import { serveStdio } from '../wire/stdio.js';
import type { Desktop } from './desktop.js';
import { CONSENT_ANSWERS } from './meta-tools.js';
import type { RecordLimits } from './record.js';
import { type CallToolResult, SimulatorCore, type SimulatorOptions } from './server.js';

export type { HttpListener, HttpOptions } from '../wire/http.js';
export { MAX_BODY_BYTES, MAX_HTTP_IN_FLIGHT } from '../wire/http.js';
export type { JsonRpcResponse } from '../wire/json-rpc.js';
export { escapeJsonText, serializeWire } from '../wire/json-text.js';
export { MAX_IN_FLIGHT } from '../wire/stdio.js';
export type { UiaElement, WindowTarget } from './desktop.js';
export { DISPLAYS, HANDLES, NOTEPAD_TEXT, VIRTUAL_BOUNDS } from './desktop.js';
export type { ConsentAnswer } from './meta-tools.js';
export type { RecordLimits } from './record.js';
export { DEFAULT_RECORD_LIMITS } from './record.js';
export type { CallToolResult, ContentBlock, SimulatorOptions } from './server.js';
export { PROTOCOL_VERSION, SIM_RAW_COMMANDS, SIM_VERSION, SimulatorFault } from './server.js';
export { TOOLS } from './tools.js';

/** Operator controls of a simulator. */
export interface SimulatorControl {
  /** Latch (true) or release (false) the emergency stop; recorded in the default session's status. */
  emergencyStop(on: boolean, source?: string): void;
  /** True while the emergency stop is latched. */
  readonly emergencyStopped: boolean;
  /** Open (true) or answer (false) an operator consent prompt: only observation tools are served meanwhile. */
  consentPending(on: boolean): void;
  /** Serve only the provisioning bootstrap (provision-session, end-session); others fail `bootstrap-only`. */
  bootstrapOnly(on: boolean): void;
  /** The AgentCommandsEnabled opt-in (default on); off refuses the tools with `agent-commands-disabled`. */
  agentCommands(on: boolean): void;
  /** Windows refuse PrintWindow: window captures and OCR fall back to a blit and warn `capture-fallback` / `ocr-fallback`. */
  printWindowRefused(on: boolean): void;
}

/** A simulated MCEC server. */
export interface Simulator {
  /** Root of the session artifact directories. */
  readonly sessionsRoot: string;
  /** The fake desktop (read it in tests; tools change it). */
  readonly desktop: Desktop;
  /** One JSON-RPC message in; its response, or null for a notification. Handler faults become -32603. */
  handle(message: unknown): Promise<JsonRpcResponse | null>;
  /** One line of JSON text in (parse errors become -32700). */
  handleText(text: string): Promise<JsonRpcResponse | null>;
  /** Call a tool directly; the CallToolResult is what tools/call would return. */
  callTool(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  control: SimulatorControl;
  /** Serve `POST /mcp` (port 0 = ephemeral). The token defaults to the simulator's. */
  listenHttp(options?: HttpOptions): Promise<HttpListener>;
  /** Serve newline-delimited JSON-RPC; resolves when input ends and every response is written. */
  serveStdio(input: Readable, output: Writable): Promise<void>;
}

const RECORD_LIMIT_KEYS = [
  'maxFps',
  'maxDurationMs',
  'maxFrames',
  'maxWidth',
] as const satisfies ReadonlyArray<keyof RecordLimits>;

/** createSimulator's options, checked at the boundary: a TypeError or RangeError naming the first bad one. */
function checkSimulatorOptions(value: unknown): void {
  const o = expectOptions(value);
  expectString(o.token, 'options.token');
  expectNumber(o.seed, 'options.seed', { integer: true });
  expectFunction(o.now, 'options.now');
  expectFunction(o.subMillisecondTicks, 'options.subMillisecondTicks');
  expectString(o.sessionsRoot, 'options.sessionsRoot', { nonEmpty: true });
  expectString(o.tempDir, 'options.tempDir', { nonEmpty: true });
  expectNumber(o.modalGraceMs, 'options.modalGraceMs', { min: 0 });
  expectNumber(o.pollMs, 'options.pollMs', { min: 1 });
  expectNumber(o.consentDelayMs, 'options.consentDelayMs', { min: 0 });
  if (o.recordLimits !== undefined) {
    expectObject(o.recordLimits, 'options.recordLimits');
    for (const key of RECORD_LIMIT_KEYS)
      expectNumber(o.recordLimits[key], `options.recordLimits.${key}`, { min: 1, integer: true });
  }
  expectOneOf(o.consent, 'options.consent', CONSENT_ANSWERS);
  expectBoolean(o.allowProvisioning, 'options.allowProvisioning');
  expectBoolean(o.signIn, 'options.signIn');
}

/** Create a simulated MCEC server with its own fake desktop and sessions. */
export function createSimulator(options: SimulatorOptions = {}): Simulator {
  checkSimulatorOptions(options);
  const core = new SimulatorCore(options);
  return {
    sessionsRoot: core.sessionsRoot,
    desktop: core.desktop,
    handle: (message) => core.handle(message),
    handleText: (text) => core.handleText(text),
    callTool: (name, args) => core.callTool(name, args ?? {}),
    control: {
      emergencyStop: (on, source) => core.emergencyStop(on, source),
      get emergencyStopped() {
        return core.emergencyStopped;
      },
      consentPending: (on) => core.setGate('consentPending', on),
      bootstrapOnly: (on) => core.setGate('bootstrapOnly', on),
      agentCommands: (on) => core.setGate('agentCommands', on),
      printWindowRefused: (on) => core.setGate('printWindowRefused', on),
    },
    listenHttp: (httpOptions = {}) =>
      listenHttp(core, { ...httpOptions, token: httpOptions.token ?? core.token }),
    serveStdio: (input, output) => serveStdio(core, input, output),
  };
}

/** The envelope of a CallToolResult: the JSON of its last text block. */
export function envelopeOf(result: CallToolResult): Envelope {
  expectObject(result, 'result');
  if (!Array.isArray(result.content)) throw optionTypeError('Expected result.content to be an array');
  const last = result.content[result.content.length - 1];
  if (last?.type !== 'text') throw new Error('CallToolResult has no envelope text block last');
  return JSON.parse(last.text) as Envelope;
}
