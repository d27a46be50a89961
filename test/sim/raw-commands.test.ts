/** The simulator's raw send_command table is MCEC's (SendInputCommand.cs), and its fallback warnings are reachable. */
import { describe, expect, it } from 'vitest';
import { SIM_RAW_COMMANDS } from '../../src/sim/index.js';
import { call, simulatorsInTempDir } from './helpers.js';

const tmp = simulatorsInTempDir({ seed: 3, signIn: true });
const sim = tmp.sim;

describe("the raw command table, as MCEC's", () => {
  it('runs the prefixes, the ctrl chords and VK names; key:, keydown: and keyup: are unknown', async () => {
    const s = sim();
    for (const command of [
      'chars:hello',
      'CHARS:x',
      'mouse:lbc',
      'pause:20',
      'mcec:exit',
      'shiftdown:ctrl',
      'shiftup:ctrl',
      'ctrl-a',
      'ctrl-c',
      'ctrl-v',
      'ctrl-x',
      'ctrl-z',
      'ctrl-s',
      'VK_RETURN',
      'vk_f5',
    ]) {
      const { env } = await call(s, 'send_command', { command });
      expect(env, command).toMatchObject({ ok: true, result: { output: 'ok' } });
    }
    for (const command of ['key:a', 'keydown:ctrl', 'keyup:ctrl', 'ctrl-q']) {
      const { env } = await call(s, 'send_command', { command });
      expect(env.error, command).toMatchObject({ code: 'unknown-command', category: 'internal' });
    }
  });

  it('lists them in commandAccess.enabledRawCommands, without key:/keydown:/keyup:', async () => {
    const { env } = await call(sim(), 'session-start');
    const raw = env.result!.commandAccess.enabledRawCommands as string[];
    expect([...raw].sort()).toEqual([...SIM_RAW_COMMANDS].sort());
    for (const name of ['pause:', 'mcec:', 'ctrl-v', 'ctrl-s']) expect(raw).toContain(name);
    for (const name of ['key:', 'keydown:', 'keyup:']) expect(raw).not.toContain(name);
  });

  it('ctrl-v pastes the clipboard into the focused text box', async () => {
    const s = sim();
    await call(s, 'clipboard', { action: 'set', text: 'pasted-value' });
    await call(s, 'click', { window: 'Sign in', at: { by: 'automationid', value: 'ApiToken' } });
    await call(s, 'send_command', { command: 'ctrl-v' });
    const { env } = await call(s, 'find', { window: 'Sign in', by: 'automationid', value: 'ApiToken' });
    expect(env.result!.element.value).toBe('pasted-value');
  });
});

describe('the fallback warnings', () => {
  it('capture-fallback and ocr-fallback when PrintWindow is refused (sim:print-window-refused on)', async () => {
    const s = sim();
    const before = await call(s, 'capture', { window: 'Notepad' });
    expect(before.env.warnings ?? []).toEqual([]);
    const control = await call(s, 'send_command', { command: 'sim:print-window-refused on' });
    expect(control.env.ok).toBe(true);
    const shot = await call(s, 'capture', { window: 'Notepad' });
    expect(shot.env.ok).toBe(true);
    expect(shot.env.warnings!.map((w) => w.code)).toEqual(['capture-fallback']);
    const black = await call(s, 'capture', { window: 'Video Player' });
    expect(black.env.error).toMatchObject({ code: 'frame-all-black', category: 'capture-blank' });
    expect(black.env.error!.detail).toMatch(/on-screen-blit fallback/);
    expect(black.env.warnings!.map((w) => w.code)).toEqual(['capture-fallback']);
    const text = await call(s, 'get-text', { window: 'Notepad' });
    expect(text.env.ok).toBe(true);
    expect(text.env.warnings!.map((w) => w.code)).toEqual(['ocr-fallback']);
    // A region capture never used PrintWindow.
    const region = await call(s, 'capture', { x: 0, y: 0, width: 64, height: 64 });
    expect((region.env.warnings ?? []).map((w) => w.code)).not.toContain('capture-fallback');
    s.control.printWindowRefused(false);
    expect((await call(s, 'get-text', { window: 'Notepad' })).env.warnings ?? []).toEqual([]);
  });
});
