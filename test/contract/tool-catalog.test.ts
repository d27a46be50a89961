import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  INSTALL_TOOLS,
  LIFECYCLE_TOOLS,
  MCEC_TOOL_CATALOG,
  MCEC_TOOL_NAMES,
  META_TOOLS,
  OBSERVATION_TOOLS,
  TYPING_TOOLS,
} from '../../src/contract/tool-catalog.js';
import { createRecorder } from '../../src/record/index.js';
import { typedTextReplacements } from '../../src/redact/typed-text.js';
import { buildSummary } from '../../src/report/index.js';
import { summarizeCall } from '../../src/report/summarize-call.js';
import { createSimulator } from '../../src/sim/index.js';
import { TOOLS } from '../../src/sim/tools.js';
import type { CallRow } from '../../src/store/schema.js';
import { resolveSession, SessionReader } from '../../src/store/session-reader.js';
import { makeSessionsDir, removeDir } from '../helpers/fixture-session.js';

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
