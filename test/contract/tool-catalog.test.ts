import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  categoryOfCode,
  codesOfCategory,
  GATED_BY_DEFAULT,
  INSTALL_TOOLS,
  LIFECYCLE_TOOLS,
  MCEC_ERROR_CODES,
  MCEC_TOOL_CATALOG,
  MCEC_TOOL_NAMES,
  META_TOOLS,
  OBSERVATION_TOOLS,
  REFUSAL_CODES,
  SERVED_DURING_CONSENT,
  TYPING_TOOLS,
} from '../../src/contract/tool-catalog.js';
import { ERROR_CATEGORIES } from '../../src/contract/types.js';
import { createRecorder } from '../../src/record/index.js';
import { typedTextReplacements } from '../../src/redact/typed-text.js';
import { buildSummary } from '../../src/report/index.js';
import { summarizeCall } from '../../src/report/summarize-call.js';
import { createSimulator } from '../../src/sim/index.js';
import { TOOLS } from '../../src/sim/tools.js';
import type { CallRow } from '../../src/store/schema.js';
import { resolveSession, SessionReader } from '../../src/store/session-reader.js';
import { makeSessionsDir, removeDir } from '../support/fixture-session.js';

describe('the MCEC tool catalog', () => {
  it('is what the simulator serves: the same tools, in tools/list order, with the same kinds', () => {
    expect(TOOLS.map((t) => t.name)).toEqual(MCEC_TOOL_NAMES);
    for (const t of TOOLS)
      expect(t.kind).toBe(MCEC_TOOL_CATALOG[t.name as keyof typeof MCEC_TOOL_CATALOG].kind);
  });

  it('derives the sets the recorder uses (mcec-wire §1)', () => {
    expect([...OBSERVATION_TOOLS].sort()).toEqual(['capture', 'find', 'get-text', 'query', 'wait-for']);
    expect([...META_TOOLS].sort()).toEqual([
      'end-session',
      'provision-session',
      'request-command-access',
      'send_command',
      'session-end',
      'session-start',
      'session-status',
    ]);
    expect([...LIFECYCLE_TOOLS].sort()).toEqual(['session-end', 'session-start', 'session-status']);
    expect([...INSTALL_TOOLS].sort()).toEqual(['end-session', 'provision-session']);
    expect(TYPING_TOOLS.has('clipboard') && TYPING_TOOLS.has('send_command')).toBe(true);
    for (const t of OBSERVATION_TOOLS) expect(TYPING_TOOLS.has(t)).toBe(false);
  });

  it('decides which arguments the redactor treats as typed text, per tool', () => {
    const args = {
      text: 'hunter22',
      keys: 'abcd',
      value: 'v',
      content: 'c',
      data: 'd',
      command: 'chars:pw12',
    };
    for (const name of MCEC_TOOL_NAMES) {
      const spec = (MCEC_TOOL_CATALOG[name] as { typedText?: { keys: readonly string[]; rule?: string } })
        .typedText;
      const replaced = [...typedTextReplacements(name, args).keys()].sort();
      if (!spec) expect(replaced, name).toEqual([]);
      else if (spec.rule === 'command-line')
        expect(replaced, name).toEqual(['command']); // `text` holds no typing command
      else expect(replaced, name).toEqual(spec.keys.filter((k) => k in args).sort());
    }
  });

  it('gives every tool with a summarizer its own success line (not the generic one)', () => {
    for (const name of MCEC_TOOL_NAMES) {
      const row = {
        seq: 1,
        tool: name,
        status: 'ok',
        args: JSON.stringify({ zz: 1 }),
        envelope: JSON.stringify({ ok: true, result: { x: 1 } }),
        payload_dropped: 0,
      } as unknown as CallRow;
      const generic = `${name} zz=1: ok`;
      if ((MCEC_TOOL_CATALOG[name] as { summarizer?: string }).summarizer)
        expect(summarizeCall(row), name).not.toBe(generic);
      else expect(summarizeCall(row), name).toBe(generic);
    }
  });
});

/** mcec-wire §3's table: the codes MCEC produces, by category (selector-matched-N as selector-matched-2). */
const WIRE_CODES: Record<string, string[]> = {
  timeout: ['wait-condition-timeout'],
  'ambiguous-selector': ['selector-matched-2'],
  'stale-element': ['window-closed', 'element-stale'],
  'no-target': ['window-not-found', 'element-not-found'],
  'invalid-argument': [
    'region-too-large',
    'region-out-of-bounds',
    'ocr-image-too-large',
    'pattern-unsupported',
    'action-unknown',
    'clipboard-text-missing',
    'launch-path-missing',
    'record-action-unknown',
    'recording-in-progress',
    'no-recording',
    'windows-unknown-condition',
    'windows-no-criteria',
    'bad-arguments',
    'unknown-session',
    'invalid-argument',
  ],
  'capture-blank': ['frame-all-black', 'frame-uniform'],
  'ocr-no-text': ['ocr-no-text'],
  focus: ['focus-not-confirmed', 'focus-not-set'],
  elevation: ['target-elevated'],
  foreground: ['foreground-not-set'],
  internal: [
    'uia-faulted',
    'invoke-faulted',
    'capture-exception',
    'get-text-exception',
    'ocr-unavailable',
    'launch-failed',
    'record-no-frames',
    'record-write-failed',
    'record-exception',
    'unhandled',
    'agent-commands-disabled',
    'emergency-stopped',
    'bootstrap-only',
    'consent-pending',
    'consent-denied',
    'consent-timeout',
    'consent-unavailable',
    'command-disabled',
    'unknown-tool',
    'unknown-command',
    'no-output',
    'engine-unavailable',
    'command-dropped',
    'send-command-timeout',
    'provisioning-not-authorized',
    'provisioning-failed',
    'session-token-invalid',
  ],
};

describe("MCEC's error table", () => {
  it("holds exactly mcec-wire §3's codes, each with its category (and the per-tool exceptions)", () => {
    const table = MCEC_ERROR_CODES as Record<string, { category: string }>;
    expect(Object.keys(table).sort()).toEqual(Object.values(WIRE_CODES).flat().sort());
    for (const [category, codes] of Object.entries(WIRE_CODES))
      for (const code of codes) expect(table[code]!.category, code).toBe(category);
    expect(categoryOfCode('frame-uniform', 'get-text')).toBe('ocr-blank');
    expect(categoryOfCode('unknown-command', 'request-command-access')).toBe('invalid-argument');
    expect(categoryOfCode('unknown-command', 'send_command')).toBe('internal');
    expect(categoryOfCode('selector-matched-17', 'find')).toBe('ambiguous-selector');
    expect(categoryOfCode('unhandled-exception', null)).toBeNull();
    for (const category of ERROR_CATEGORIES)
      expect(codesOfCategory(category).length, category).toBeGreaterThan(0);
    expect(codesOfCategory('internal')[0]).toBe('unhandled');
  });

  it('marks as refusals exactly the codes MCEC decides before a tool runs (mcec-wire §9)', () => {
    expect([...REFUSAL_CODES].sort()).toEqual(
      [
        'bad-arguments',
        'unknown-session',
        'agent-commands-disabled',
        'emergency-stopped',
        'bootstrap-only',
        'consent-pending',
        'consent-denied',
        'consent-timeout',
        'consent-unavailable',
        'command-disabled',
        'unknown-tool',
        'unknown-command',
        'engine-unavailable',
        'provisioning-not-authorized',
        'session-token-invalid',
      ].sort(),
    );
    for (const code of ['action-unknown', 'region-too-large', 'recording-in-progress', 'invalid-argument'])
      expect(REFUSAL_CODES.has(code), code).toBe(false);
  });

  it('holds the gate facts the simulator serves: served during consent, gated by default', () => {
    expect([...SERVED_DURING_CONSENT]).toEqual([
      'capture',
      'get-text',
      'query',
      'displays',
      'windows',
      'find',
      'wait-for',
      'record',
    ]);
    expect(GATED_BY_DEFAULT).toEqual(['launch']);
  });

  it("is what the simulator follows: a command's invalid-argument failure carries the last observation, a refusal none", async () => {
    const sim = createSimulator({ seed: 3, sessionsRoot: makeSessionsDir() });
    const env = async (tool: string, args: Record<string, unknown>) => {
      const out = await sim.callTool(tool, args);
      return JSON.parse((out.content.at(-1) as { text: string }).text);
    };
    expect((await env('find', { window: 'Save As', by: 'automationid', value: '1' })).ok).toBe(true);
    const unknownAction = await env('clipboard', { action: 'paste' });
    expect(unknownAction.error).toMatchObject({ code: 'action-unknown', category: 'invalid-argument' });
    expect(unknownAction.error.lastObservation).toBeTruthy();
    const badArgs = await env('capture', { window: 'Notepad', maxWidth: -1 });
    expect(badArgs.error).toMatchObject({ code: 'bad-arguments', category: 'invalid-argument' });
    expect(badArgs.error.lastObservation).toBeUndefined();
    expect((await sim.callTool('session-start', {})).isError).toBe(false);
    const commandAccess = (await env('session-status', {})).result.commandAccess;
    expect(commandAccess.gatedTools).toEqual(GATED_BY_DEFAULT);
  });
});

describe("the recorder's observation set", () => {
  let root: string;
  beforeEach(() => {
    root = makeSessionsDir();
  });
  afterEach(() => removeDir(root));

  /** Records windows, capture, then a failing wait-for; returns the summary and the stored environment. */
  async function record(name: string, observationTools?: string[]) {
    const sessionsDir = path.join(root, name);
    const sim = createSimulator({ seed: 7, sessionsRoot: path.join(root, 'sim'), pollMs: 10 });
    const recorder = createRecorder({ sessionsDir, stderr: () => {}, observationTools });
    const dispatch = recorder.wrap((tool, args) => sim.callTool(tool, args));
    const start = (await dispatch('session-start', {})) as { content: Array<{ text?: string }> };
    const sessionId = JSON.parse(start.content.at(-1)!.text!).result.sessionId as string;
    await dispatch('windows', { sessionId });
    await dispatch('capture', { sessionId, window: 'Notepad' });
    await dispatch('wait-for', { sessionId, window: 'Notepad', value: 'Saved', timeout: 50 });
    await recorder.close();
    const found = resolveSession(sessionsDir, sessionId);
    if (!found.ok) throw new Error(found.message);
    const reader = SessionReader.open(found.session.dir);
    try {
      const stored = JSON.parse(reader.session().environment ?? '{}') as Record<string, unknown>;
      return { summary: await buildSummary(reader), stored };
    } finally {
      reader.close();
    }
  }

  it('is saved in the session environment (the catalog by default) and picks the last good observation', async () => {
    const byDefault = await record('default');
    expect(byDefault.stored.observationTools).toEqual([...OBSERVATION_TOOLS]);
    expect(byDefault.summary.lastGoodObservation?.tool).toBe('capture');
    expect(byDefault.summary.environment).not.toHaveProperty('observationTools');

    const configured = await record('configured', ['windows']);
    expect(configured.stored.observationTools).toEqual(['windows']);
    expect(configured.summary.lastGoodObservation?.tool).toBe('windows');
  });
});
