/**
 * What an agent typed is on screen afterwards: get-text reads it, find and query show it as the field's
 * `value`. A session against the simulator (typing into Notepad's editor and the Sign in dialog's API token
 * box, then reading both back), every file of its session dir searched byte for byte.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { calls, sessionDirs, tempDir } from '../record/helpers.js';
import { leakedForm } from '../support/secret-forms.js';

/** Typed into Notepad's editor with MCEC's `chars:`. */
const TYPED = 'Hunter2!Typed#Pw';
/** Typed into the API token box with invoke setvalue. */
const SET_VALUE = 'ApiTokVal_99zz88';
/** Ordinary words typed after them: evidence, read back unchanged. */
const WORDS = ' Dear team';

describe('typed secrets read back from the screen', () => {
  let root: string;
  let dir: string;
  let agentSaw: string;

  beforeAll(async () => {
    root = tempDir();
    const sim = createSimulator({ seed: 5, signIn: true, sessionsRoot: tempDir() });
    const recorder = createRecorder({
      sessionsDir: root,
      scenario: 'type, then read back',
      stderr: () => {},
    });
    const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const sessionId = envelopeOf((await dispatch('session-start', {})) as never).sessionId!;
    const s = { sessionId };
    await dispatch('focus', { ...s, window: 'Notepad', at: { by: 'automationid', value: '15' } });
    await dispatch('send_command', { ...s, command: `chars:${TYPED}` });
    await dispatch('send_command', { ...s, command: `chars:${WORDS}` });
    const text = envelopeOf((await dispatch('get-text', { ...s, window: 'Notepad' })) as never);
    agentSaw = (text.result as { text: string }).text;
    await dispatch('find', { ...s, window: 'Notepad', by: 'automationid', value: '15' });
    await dispatch('invoke', {
      ...s,
      window: 'Sign in',
      by: 'automationid',
      value: 'ApiToken',
      action: 'setvalue',
      text: SET_VALUE,
    });
    await dispatch('query', { ...s, window: 'Sign in' });
    await dispatch('get-text', { ...s, window: 'Sign in' });
    await recorder.end(sessionId);
    await recorder.close();
    dir = path.join(root, sessionDirs(root).find((d) => d.endsWith(sessionId))!);
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('the agent itself reads the typed text back (the simulator shows it)', () => {
    expect(agentSaw).toContain(`${TYPED}${WORDS}`);
  });

  it('a typed password read back by get-text, find or query is in no file of the session dir', () => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile()) continue;
      const file = path.join(entry.parentPath, entry.name);
      const text = fs.readFileSync(file).toString('latin1');
      for (const secret of [TYPED, SET_VALUE])
        expect(leakedForm(text, secret), `${secret} in ${file}`).toBeUndefined();
    }
  });

  it('typed words that do not look like a credential are read back as they are', () => {
    const readBack = calls(dir).find((c) => c.tool === 'get-text')!;
    const stored = JSON.parse(readBack.envelope!).result.text as string;
    expect(stored).toContain(`[redacted]${WORDS}`);
    expect(stored).toContain('Untitled - Notepad');
  });
});
