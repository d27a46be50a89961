import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeBlankCheck } from '../../src/artifacts/blank-check.js';
import { validateEnvelope } from '../../src/contract/validate.js';
import { runScriptedAgent } from '../../src/demo/scripted-agent.js';
import { createRecorder } from '../../src/record/recorder.js';
import { CATEGORIES, parseInjection, replaySession } from '../../src/replay/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { INLINE_CAPTURE_KEYS } from '../support/mcec.js';
import { env, reportValidator, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();

/** Which demo call each category is injected on (a tool where MCEC can produce it), and the code expected. */
const PLAN: Record<string, { at: string; tool: string; code: string; observation: boolean }> = {
  timeout: { at: 'find#1', tool: 'find', code: 'wait-condition-timeout', observation: true },
  'ambiguous-selector': { at: 'find#1', tool: 'find', code: 'selector-matched-2', observation: true },
  'stale-element': { at: 'invoke#1', tool: 'invoke', code: 'element-stale', observation: true },
  'no-target': { at: 'query#1', tool: 'query', code: 'element-not-found', observation: true },
  'invalid-argument': { at: 'capture#1', tool: 'capture', code: 'bad-arguments', observation: false },
  'capture-blank': { at: 'capture#1', tool: 'capture', code: 'frame-all-black', observation: true },
  focus: { at: 'invoke#1', tool: 'invoke', code: 'focus-not-confirmed', observation: true },
  elevation: { at: 'invoke#1', tool: 'invoke', code: 'target-elevated', observation: true },
  foreground: { at: 'invoke#1', tool: 'invoke', code: 'foreground-not-set', observation: true },
  internal: { at: 'query#2', tool: 'query', code: 'unhandled', observation: true },
  'ocr-blank': { at: 'find#2', tool: 'find', code: 'frame-all-black', observation: true },
  'ocr-no-text': { at: 'find#2', tool: 'find', code: 'ocr-no-text', observation: true },
};

/** Replay the demo through the scripted agent with `rules`; the agent's answers and the report. */
async function agentWith(rules: string[]) {
  const replay = await replaySession(fixture.demo.sessionDir, { http: false, inject: rules });
  const answers: Array<{ tool: string; envelope: ReturnType<typeof env> }> = [];
  const run = await runScriptedAgent(
    async (tool, args) => {
      const out = await replay.callTool(tool, args);
      answers.push({ tool, envelope: env(out) });
      return out;
    },
    { step: () => {} },
  );
  return { run, answers, report: await replay.close() };
}

describe('fault injection', () => {
  it('covers all 12 categories', () => {
    expect(Object.keys(PLAN).sort()).toEqual([...CATEGORIES].sort());
  });

  it.each(Object.entries(PLAN))(
    '%s: the chosen call gets a real MCEC failure of that category',
    async (category, plan) => {
      const { answers, report } = await agentWith([`${plan.at}=${category}`]);
      const hit = report.calls.find((c) => c.injected);
      expect(hit).toMatchObject({
        tool: plan.tool,
        injected: { code: plan.code, category },
        ok: false,
        code: plan.code,
      });
      const { envelope } = answers[hit!.n - 1]!;
      expect(validateEnvelope(envelope).valid).toBe(true);
      expect(envelope).toMatchObject({
        ok: false,
        sessionId: fixture.demo.sessionId,
        error: { code: plan.code, category },
      });
      expect(typeof envelope.error.detail).toBe('string');
      // Command failures carry the replayed session's last good observation; refusals carry none.
      if (plan.observation && hit!.n > 4) expect(envelope.error.lastObservation).toBeTruthy();
      if (!plan.observation) expect(envelope.error.lastObservation).toBeUndefined();
      expect(reportValidator()(report)).toEqual([]);
    },
  );

  it('capture-blank carries a real blank PNG the size of the window in partialResult, as MCEC does', async () => {
    const { run, answers } = await agentWith(['capture#1=frame-all-black']);
    const shot = answers.find((a) => a.tool === 'capture')!.envelope;
    const partial = shot.error.partialResult;
    expect(Object.keys(partial)).toEqual(INLINE_CAPTURE_KEYS);
    const png = Buffer.from(partial.base64, 'base64');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBe(partial.bytes);
    expect([partial.width, partial.height]).toEqual([800, 600]);
    expect(await computeBlankCheck(png)).toEqual(partial.blankCheck);
    expect(partial.blankCheck).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
    // The agent took its error branch: step 2 failed.
    expect(run.reason).toBe('open notepad: Notepad or its editor is not there');
  });

  it("a command's invalid-argument failure carries the last observation; bad-arguments does not (MCEC's table)", async () => {
    const injected = async (rule: string) => {
      const { answers, report } = await agentWith([rule]);
      const hit = report.calls.find((c) => c.injected)!;
      return answers[hit.n - 1]!.envelope.error;
    };
    const command = await injected('invoke#1=action-unknown');
    const refusal = await injected('invoke#1=bad-arguments');
    expect(command).toMatchObject({ code: 'action-unknown', category: 'invalid-argument' });
    expect(command.lastObservation).toBeTruthy();
    expect(refusal).toMatchObject({ code: 'bad-arguments', category: 'invalid-argument' });
    expect(refusal.lastObservation).toBeUndefined();
  });

  it("'*@5=emergency-stopped' and 'find=selector-matched-3' pick by replay order and by tool", async () => {
    const { answers, report } = await agentWith(['*@5=emergency-stopped', 'find=selector-matched-3']);
    expect(answers[4]!.envelope.error).toMatchObject({ code: 'emergency-stopped', category: 'internal' });
    expect(answers[4]!.envelope.error.lastObservation).toBeUndefined();
    expect(report.calls.filter((c) => c.injected).map((c) => [c.n, c.tool, c.code])).toEqual([
      [5, 'query', 'emergency-stopped'],
      [6, 'find', 'selector-matched-3'],
    ]);
  });

  it('an injected fault shows up in the agent’s own recorded session as the injected failure', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, {
      http: false,
      inject: ['capture#2=target-elevated'],
    });
    const recorder = createRecorder({
      sessionsDir: path.join(fixture.work, 'agent-sessions'),
      stderr: () => {},
    });
    const run = await runScriptedAgent(
      recorder.wrap((tool: string, args: Record<string, unknown>) => replay.callTool(tool, args)),
      recorder,
    );
    await recorder.flush();
    const dir = recorder.session(run.sessionId)!.dir;
    await recorder.close();
    await replay.close();
    const reader = SessionReader.open(dir);
    const row = [...reader.calls()].find((c) => c.tool === 'capture' && c.seq > 4)!;
    reader.close();
    expect([row.status, row.error_code, row.error_category]).toEqual([
      'failed',
      'target-elevated',
      'elevation',
    ]);
    expect(run.reason).toBe(
      "check the player: capture of 'Video Player' failed: target-elevated (elevation)",
    );
  });

  it('refuses rules it cannot honour, saying why', () => {
    expect(() => parseInjection('capture')).toThrow(/SELECTOR=FAULT/);
    expect(() => parseInjection('capture#0=timeout')).toThrow(/count from 1/);
    expect(() => parseInjection('capture=made-up-code')).toThrow(/not a code MCEC produces/);
    expect(() => parseInjection('capture=made-up-code:nonsense')).toThrow(/not an MCEC category/);
    expect(parseInjection('get-text=frame-all-black').category).toBeNull();
    expect(parseInjection('capture=made-up-code:internal')).toMatchObject({
      code: 'made-up-code',
      category: 'internal',
    });
    expect(parseInjection('*@5=emergency-stopped')).toMatchObject({ tool: null, nth: 5, scope: 'replay' });
    expect(parseInjection('capture#3=frame-all-black')).toMatchObject({
      tool: 'capture',
      nth: 3,
      scope: 'tool',
    });
  });
});
