/**
 * The demo's scripted agent: a fixed walk over the simulator's desktop that looks around, recovers from an
 * ambiguous selector, then fails on a black capture. It only sees a dispatch, so the same script can drive a
 * recorded simulator, a real MCEC, or a benchmark.
 */
import { readToolOutput } from '../contract/read-tool-output.js';
import type { Envelope } from '../contract/types.js';
import type { Dispatch } from '../record/types.js';
import { expectFunction, expectMethods } from '../util/expect.js';

/** Where the agent declares its runner steps (a recorder, or anything with the same two methods). */
export interface StepSink {
  step(sessionId: string | undefined, name: string, status: string, detail?: string): void;
}

/** One tool call the agent made and what it learned from it. */
export interface AgentCall {
  tool: string;
  args: Record<string, unknown>;
  ok: boolean;
  /** Error code of a failure, else null. */
  code: string | null;
  /** Warning codes of the envelope, in order. */
  warnings: string[];
  /** One line for people: what the call showed. */
  line: string;
}

/** A runner step as the agent declared it. */
export interface AgentStep {
  name: string;
  status: 'passed' | 'failed';
  detail: string;
}

/** What the scripted run did. */
export interface ScriptedRun {
  /** The MCEC session the agent opened (12 hex). */
  sessionId: string;
  calls: AgentCall[];
  steps: AgentStep[];
  /** The agent's own verdict: false, since the last step fails by design. */
  passed: boolean;
  /** Why it failed (or 'all steps passed'). */
  reason: string;
}

/** Where the demo window titles live (the simulator's desktop, see src/sim/README.md). */
export const DEMO_WINDOWS = {
  notepad: 'Untitled - Notepad',
  saveAs: 'Save As',
  player: 'Video Player',
} as const;

/** The demo's step names, in order (kept stable: tests and the README quote them). */
export const DEMO_STEPS = ['look around', 'open notepad', 'save the file', 'check the player'] as const;

/** A small tree budget, as agents use to keep the UIA dump within their context. */
const QUERY_MAX_NODES = 12;

/** The envelope of whatever a dispatch returned; a synthesized failure when none could be read. */
function envelopeFrom(output: unknown): Envelope {
  const read = readToolOutput(output);
  return (
    read.envelope ?? {
      ok: false,
      error: { code: 'no-envelope', category: 'internal', detail: `no envelope in a ${read.kind} output` },
    }
  );
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** Drive the scripted session through `dispatch`, declaring steps on `steps`; never throws for a tool failure. */
export async function runScriptedAgent(dispatch: Dispatch, steps: StepSink): Promise<ScriptedRun> {
  expectFunction(dispatch, 'dispatch', { required: true });
  expectMethods(steps, 'steps', ['step']);
  const calls: AgentCall[] = [];
  const declared: AgentStep[] = [];
  let sessionId = '';

  const call = async (
    tool: string,
    args: Record<string, unknown>,
    describe: (r: Record<string, unknown>) => string,
  ) => {
    const fullArgs = sessionId ? { ...args, sessionId } : args;
    const env = envelopeFrom(await dispatch(tool, fullArgs));
    const result = env.ok ? record(env.result) : {};
    const line = env.ok ? describe(result) : `${env.error.code} (${env.error.category}): ${env.error.detail}`;
    calls.push({
      tool,
      args: fullArgs,
      ok: env.ok,
      code: env.ok ? null : env.error.code,
      warnings: (env.warnings ?? []).map((w) => w.code),
      line,
    });
    return env;
  };
  const step = (name: string, status: AgentStep['status'], detail: string) => {
    declared.push({ name, status, detail });
    steps.step(sessionId || undefined, name, status, detail);
  };
  const outcome = await walk(call, step, (id) => {
    sessionId = id;
  });
  // End the MCEC session whatever happened: the server keeps it (and its artifacts) until then.
  if (sessionId) await call('session-end', {}, (r) => (r.ended ? 'ended' : 'already ended'));
  return { sessionId, calls, steps: declared, ...outcome };
}

type Call = (
  tool: string,
  args: Record<string, unknown>,
  describe: (r: Record<string, unknown>) => string,
) => Promise<Envelope>;
type Step = (name: string, status: AgentStep['status'], detail: string) => void;
type Outcome = { passed: boolean; reason: string };

/** One step's result: passed or failed, and the detail the step reports. */
type StepResult = { passed: boolean; detail: string };
const passed = (detail: string): StepResult => ({ passed: true, detail });
const failed = (detail: string): StepResult => ({ passed: false, detail });

/** The script proper: four steps, stopping at the first that fails. */
async function walk(call: Call, step: Step, opened: (sessionId: string) => void): Promise<Outcome> {
  // Open an MCEC session: every later call names it, so the recorder files them all in one session log.
  const started = await call('session-start', {}, (r) => `session ${String(r.sessionId)}`);
  if (!started.ok || typeof started.sessionId !== 'string' || !started.sessionId) {
    return { passed: false, reason: 'session-start failed' };
  }
  opened(started.sessionId);
  const steps: ReadonlyArray<(call: Call) => Promise<StepResult>> = [
    lookAround,
    openNotepad,
    saveTheFile,
    checkThePlayer,
  ];
  for (const [i, run] of steps.entries()) {
    const name = DEMO_STEPS[i]!;
    const result = await run(call);
    step(name, result.passed ? 'passed' : 'failed', result.detail);
    if (!result.passed) return { passed: false, reason: `${name}: ${result.detail}` };
  }
  return { passed: true, reason: 'all steps passed' };
}

/** 1. Look around: which windows, which monitors. */
async function lookAround(call: Call): Promise<StepResult> {
  const windows = await call('windows', {}, (r) => `${String(r.count)} windows`);
  const displays = await call('displays', {}, (r) => `${String(r.count)} displays`);
  if (!windows.ok || !displays.ok) return failed('could not list windows or displays');
  const windowCount = Number(record(windows.result).count);
  const displayCount = Number(record(displays.result).count);
  return passed(`${windowCount} windows on ${displayCount} displays`);
}

/** 2. Open Notepad: see it (an inline PNG), read its tree, find the editor. */
async function openNotepad(call: Call): Promise<StepResult> {
  const shot = await call(
    'capture',
    { window: DEMO_WINDOWS.notepad },
    (r) => `${String(r.width)}x${String(r.height)} png`,
  );
  const tree = await call('query', { window: DEMO_WINDOWS.notepad }, (r) => `${String(r.nodeCount)} nodes`);
  const editor = await call('find', { window: DEMO_WINDOWS.notepad, by: 'automationid', value: '15' }, (r) =>
    r.found ? `found ${String(record(r.element).name)}` : 'not found',
  );
  if (!shot.ok || !tree.ok || !editor.ok || !record(editor.result).found) {
    return failed('Notepad or its editor is not there');
  }
  const size = record(shot.result);
  return passed(
    `captured it (${String(size.width)}x${String(size.height)}), found the editor (automationId 15)`,
  );
}

/** 3. Save the file: the dialog has three buttons named Save; the first try is ambiguous, then narrowed. */
async function saveTheFile(call: Call): Promise<StepResult> {
  await call(
    'query',
    { window: DEMO_WINDOWS.saveAs, maxNodes: QUERY_MAX_NODES },
    (r) => `${String(r.nodeCount)} nodes${r.truncated ? ' (truncated)' : ''}`,
  );
  const byName = await call('find', { window: DEMO_WINDOWS.saveAs, value: 'Save' }, (r) =>
    r.found ? 'found' : 'not found',
  );
  let narrowed = byName;
  if (!byName.ok && byName.error.category === 'ambiguous-selector') {
    narrowed = await call('find', { window: DEMO_WINDOWS.saveAs, by: 'automationid', value: '1' }, (r) =>
      r.found ? `found ${String(record(r.element).name)} (automationId 1)` : 'not found',
    );
  }
  const saveButton = narrowed.ok && record(narrowed.result).found === true;
  const invoked = saveButton
    ? await call(
        'invoke',
        // An explicit action: without one the recorder treats `value` as text typed in and keeps its length only.
        { window: DEMO_WINDOWS.saveAs, by: 'automationid', value: '1', action: 'invoke' },
        (r) => (r.invoked ? 'invoked' : 'not invoked'),
      )
    : null;
  if (!invoked?.ok) return failed('could not find or invoke the Save button');
  return passed(
    byName.ok
      ? 'invoked Save'
      : `name 'Save' matched several buttons (${byName.error.code}); narrowed to automationId '1' and invoked it`,
  );
}

/** 4. Check the player: its capture comes back all black, and the agent gives up there. */
async function checkThePlayer(call: Call): Promise<StepResult> {
  const player = await call(
    'capture',
    { window: DEMO_WINDOWS.player },
    (r) => `${String(r.width)}x${String(r.height)} png`,
  );
  if (player.ok) return passed('the player shows a picture');
  return failed(
    `capture of '${DEMO_WINDOWS.player}' failed: ${player.error.code} (${player.error.category})`,
  );
}
