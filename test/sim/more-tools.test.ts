/** The tools the server has beyond the common ones, with their real argument names, shapes and codes. */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HANDLES, NOTEPAD_TEXT } from '../../src/sim/index.js';
import { call, type Loose, simulatorsInTempDir } from './helpers.js';

const tmp = simulatorsInTempDir({
  seed: 7,
  now: () => new Date('2026-07-01T23:30:05.123Z'),
  modalGraceMs: 20,
  pollMs: 10,
  consentDelayMs: 5,
});
const sim = tmp.sim;

describe('tools/list as the server lists it', () => {
  it('lists the 22 tools in the server order, sessionId where the server injects it', async () => {
    const s = sim();
    const resp = (await s.handle({ jsonrpc: '2.0', id: 1, method: 'tools/list' })) as {
      result: { tools: Loose[] };
    };
    const tools = resp.result.tools;
    expect(tools.map((t) => t.name)).toEqual([
      'capture',
      'get-text',
      'query',
      'displays',
      'windows',
      'window',
      'find',
      'wait-for',
      'invoke',
      'drag',
      'click',
      'focus',
      'clipboard',
      'record',
      'launch',
      'send_command',
      'session-start',
      'session-status',
      'session-end',
      'request-command-access',
      'provision-session',
      'end-session',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const t of tools) {
      expect(Object.keys(t)).toEqual(['name', 'description', 'inputSchema']);
      expect(Object.keys(t.inputSchema)).toEqual(['type', 'properties', 'required']);
      const routed = ![
        'session-start',
        'session-status',
        'session-end',
        'provision-session',
        'end-session',
      ].includes(t.name);
      if (routed) expect(t.inputSchema.properties.sessionId.type, t.name).toBe('string');
      else if (t.name !== 'session-status' && t.name !== 'session-end' && t.name !== 'end-session')
        expect(t.inputSchema.properties, t.name).not.toHaveProperty('sessionId');
    }
    const capture = byName.get('capture').inputSchema.properties;
    expect([
      capture.maxWidth.type,
      capture.scale.type,
      capture.returnImage.type,
      capture.pathOnly.type,
    ]).toEqual(['integer', 'number', 'boolean', 'boolean']);
    expect(byName.get('find').inputSchema.properties).not.toHaveProperty('timeoutMs');
    expect(byName.get('request-command-access').inputSchema).toMatchObject({
      properties: { commands: { type: 'array', items: { type: 'string' } } },
      required: ['commands', 'reason'],
    });
    expect(byName.get('end-session').inputSchema.required).toEqual(['sessionId', 'token']);
    expect(byName.get('drag').inputSchema.properties.path.items.properties.x.type).toBe('integer');
  });

  it('initialize carries the connect-time commandAccess: launch gated, no raw command enabled', async () => {
    const resp = (await sim().handle({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })) as Loose;
    expect(resp.result.commandAccess).toMatchObject({ gatedTools: ['launch'], enabledRawCommands: [] });
    expect(resp.result.commandAccess.enabledTools).toContain('capture');
    expect(resp.result.commandAccess.note).toMatch(/request-command-access/);
  });
});

describe('window', () => {
  it('moves the window and its elements, resizes, minimizes (black capture), maximizes and restores', async () => {
    const s = sim();
    const moved = await call(s, 'window', { window: 'Notepad', action: 'move', x: 300, y: 200 });
    expect(moved.env.result).toEqual({
      action: 'move',
      animate: false,
      window: expect.objectContaining({ handle: HANDLES.notepad, x: 300, y: 200, width: 800, height: 600 }),
    });
    const editor = await call(s, 'find', { window: 'Notepad', by: 'automationid', value: '15' });
    expect([editor.env.result!.element.x, editor.env.result!.element.y]).toEqual([300, 256]);
    const resized = await call(s, 'window', {
      handle: HANDLES.notepad,
      action: 'resize',
      width: 640,
      height: 480,
      animate: true,
    });
    expect(resized.env.result).toMatchObject({
      action: 'resize',
      animate: true,
      window: { width: 640, height: 480 },
    });
    const min = await call(s, 'window', { window: 'Notepad', action: 'min' });
    expect(min.env.result!.window).toMatchObject({ x: -32000, y: -32000, width: 160, height: 28 });
    expect((await call(s, 'capture', { window: 'Notepad' })).env.error).toMatchObject({
      code: 'frame-all-black',
    });
    const restored = await call(s, 'window', { window: 'Notepad', action: 'restore' });
    expect(restored.env.result!.window).toMatchObject({ x: 300, y: 200, width: 640, height: 480 });
    const max = await call(s, 'window', { window: 'Notepad', action: 'maximize' });
    expect(max.env.result!.window).toMatchObject({ x: 0, y: 0, width: 1920, height: 1032 });
  });

  it('foreground (the default) puts the window on top; bad actions are invalid-argument', async () => {
    const s = sim();
    const fg = await call(s, 'window', { window: 'Video Player' });
    expect(fg.env.result!.action).toBe('foreground');
    expect((await call(s, 'windows')).env.result!.windows[0].title).toBe('Video Player');
    expect((await call(s, 'window', { window: 'Notepad', action: 'spin' })).env.error).toMatchObject({
      code: 'invalid-argument',
      category: 'invalid-argument',
      detail: "Unsupported window action ''.",
    });
    expect((await call(s, 'window', { window: 'Notepad', action: 'move', x: 1 })).env.error!.detail).toBe(
      'move requires x and y.',
    );
    expect((await call(s, 'window', { action: 'minimize' })).env.error!.code).toBe('window-not-found');
  });
});

describe('drag', () => {
  it('checks its endpoints first (bad-arguments, no lastObservation)', async () => {
    const s = sim();
    await call(s, 'query', { window: 'Notepad' });
    const noFrom = await call(s, 'drag', { to: { x: 1, y: 2 } });
    expect(noFrom.env.error).toEqual({
      code: 'bad-arguments',
      category: 'invalid-argument',
      detail: "drag 'from' must be an object: an element { by?, value } or a pixel { x, y }.",
    });
    const half = await call(s, 'drag', { from: { x: 1 }, to: { x: 1, y: 2 } });
    expect(half.env.error!.detail).toBe(
      "drag 'from' needs an element 'value' or both 'x' and 'y' pixel coordinates.",
    );
  });

  it('pixels are absolute without a target and window-relative with one; elements drag from their centres', async () => {
    const s = sim();
    const abs = await call(s, 'drag', {
      from: { x: 10, y: 20 },
      to: { x: 30, y: 40 },
      path: [{ x: 15, y: 25 }],
    });
    expect(abs.env.result).toEqual({ dragged: true, from: [10, 20], to: [30, 40], points: 3 });
    const rel = await call(s, 'drag', {
      window: 'Notepad',
      from: { x: 10, y: 20 },
      to: { by: 'automationid', value: '15' },
    });
    expect(rel.env.result).toEqual({ dragged: true, from: [130, 100], to: [520, 396], points: 2 });
    const missing = await call(s, 'drag', { window: 'Notepad', from: { x: 1, y: 1 }, to: { value: 'Nope' } });
    expect(missing.env.error).toMatchObject({
      code: 'element-not-found',
      category: 'no-target',
      detail: "Drag end: element not found (name='Nope')",
    });
    const amb = await call(s, 'drag', { window: 'Save As', from: { value: 'Save' }, to: { x: 1, y: 1 } });
    expect(amb.env.error!.code).toBe('selector-matched-3');
    expect(amb.env.error!.detail).toMatch(/^Drag start: /);
    expect((await call(s, 'drag', { from: { value: 'Save' }, to: { x: 1, y: 1 } })).env.error!.code).toBe(
      'window-not-found',
    );
  });
});

describe('focus', () => {
  it('focuses a window, or a control in it; a control that takes no focus fails focus-not-confirmed with the window', async () => {
    const s = sim();
    const win = await call(s, 'focus', { window: 'Notepad' });
    expect(win.env.result).toEqual({
      focused: true,
      window: expect.objectContaining({ handle: HANDLES.notepad }),
      focusHandle: HANDLES.notepad,
    });
    const editor = await call(s, 'focus', { window: 'Notepad', at: { by: 'automationid', value: '15' } });
    expect(editor.env.result).toMatchObject({ element: { automationId: '15' }, at: [520, 396] });
    const text = await call(s, 'focus', { window: 'Notepad', at: { value: 'UTF-8' } });
    expect(text.env.error).toMatchObject({ code: 'focus-not-confirmed', category: 'focus' });
    expect(text.env.error!.partialResult).toMatchObject({
      handle: HANDLES.notepad,
      title: 'Untitled - Notepad',
    });
    const bad = await call(s, 'focus', { window: 'Notepad', at: { x: 5 } });
    expect(bad.env.error!.code).toBe('bad-arguments');
    expect((await call(s, 'focus', { window: 'Notepad', at: null })).env.ok).toBe(true);
  });
});

describe('clipboard', () => {
  it('set, get, and the codes for no text and an unknown action', async () => {
    const s = sim();
    expect(
      (await call(s, 'clipboard', { action: 'set', text: 'C:\\Users\\me\\notes.txt' })).env.result,
    ).toEqual({
      set: true,
      length: 21,
    });
    expect((await call(s, 'clipboard', { action: ' GET ' })).env.result).toEqual({
      text: 'C:\\Users\\me\\notes.txt',
      length: 21,
    });
    expect((await call(s, 'clipboard', { action: 'set' })).env.error).toMatchObject({
      code: 'clipboard-text-missing',
      category: 'invalid-argument',
    });
    expect((await call(s, 'clipboard', { action: 'cut' })).env.error!.code).toBe('action-unknown');
  });
});

describe('launch and request-command-access', () => {
  it('launch is gated until the operator grants it; then notepad attaches to the open window', async () => {
    const s = sim();
    await call(s, 'query', { window: 'Notepad' });
    const refused = await call(s, 'launch', { path: 'notepad.exe' });
    expect(refused.env.error).toMatchObject({ code: 'command-disabled', category: 'internal' });
    expect(refused.env.error).not.toHaveProperty('lastObservation');
    const granted = await call(s, 'request-command-access', {
      commands: ['launch'],
      reason: 'open "notepad"',
    });
    expect(granted.env.result).toEqual({ granted: ['launch'], alreadyEnabled: [], scope: 'requested' });
    const launched = await call(s, 'launch', { path: 'C:\\Windows\\System32\\notepad.exe' });
    expect(launched.env.result).toMatchObject({
      processName: 'notepad',
      handle: HANDLES.notepad,
      startedNewProcess: false,
      attachedToExisting: true,
      windowProcessId: 4120,
    });
    expect((await call(s, 'launch', { path: 'calc.exe' })).env.error).toMatchObject({
      code: 'launch-failed',
      category: 'internal',
    });
    expect((await call(s, 'launch', { path: ' ' })).env.error!.code).toBe('launch-path-missing');
    const status = (await call(s, 'session-status')).env.result!;
    expect(Object.keys(status).at(-1)).toBe('commandAccess');
    expect(status.commandAccess).toMatchObject({ gatedTools: [] });
    expect(status.commandAccess.enabledTools).toContain('launch');
    expect(status.commandAccess.enabledRawCommands).toContain('chars:');
  });

  it('refuses malformed requests with bad-arguments and unknown names with unknown-command', async () => {
    const s = sim();
    const detail = async (args: Record<string, unknown>) =>
      (await call(s, 'request-command-access', args)).env.error;
    expect((await detail({ reason: 'x' }))?.detail).toBe(
      "request-command-access requires a non-empty 'commands' array (the command names to enable).",
    );
    expect((await detail({ commands: 'launch', reason: 'x' }))?.detail).toMatch(
      /must be an array of command-name strings/,
    );
    expect((await detail({ commands: [1], reason: 'x' }))?.detail).toMatch(/entry 0 \(1\) is not a string\./);
    expect((await detail({ commands: [' '], reason: 'x' }))?.detail).toMatch(/entry 0 is empty\./);
    expect((await detail({ commands: new Array(9).fill('launch'), reason: 'x' }))?.detail).toMatch(
      /at most 8/,
    );
    expect((await detail({ commands: ['launch'], reason: ' \u202e ' }))?.code).toBe('bad-arguments');
    expect(await detail({ commands: ['teleport'], reason: 'x' })).toMatchObject({
      code: 'unknown-command',
      category: 'invalid-argument',
    });
    const already = await call(s, 'request-command-access', { commands: ['chars:hello'], reason: 'type' });
    expect(already.env.result).toEqual({ granted: [], alreadyEnabled: ['chars:'], scope: 'requested' });
  });

  it('the operator can deny (final), time out, be unavailable, or allow any', async () => {
    const s = sim({ consent: 'deny' });
    const ask = () => call(s, 'request-command-access', { commands: ['launch'], reason: 'need it' });
    expect((await ask()).env.error).toMatchObject({ code: 'consent-denied', category: 'internal' });
    await call(s, 'send_command', { command: 'sim:consent allow' });
    expect((await ask()).env.error!.detail).toMatch(/already denied: launch/);
    const t = sim({ consent: 'timeout' });
    expect(
      (await call(t, 'request-command-access', { commands: ['launch'], reason: 'r' })).env.error!.code,
    ).toBe('consent-timeout');
    await call(t, 'send_command', { command: 'sim:consent unavailable' });
    expect(
      (await call(t, 'request-command-access', { commands: ['launch'], reason: 'r' })).env.error!.code,
    ).toBe('consent-unavailable');
    const any = sim({ consent: 'allow-any' });
    const first = await call(any, 'request-command-access', { commands: ['launch'], reason: 'r' });
    expect(first.env.result).toMatchObject({ granted: ['launch'], scope: 'any', note: expect.any(String) });
  });

  it('while the prompt is open only observation tools are served; the rest get consent-pending', async () => {
    const s = sim({ consentDelayMs: 300 });
    const asking = call(s, 'request-command-access', { commands: ['launch'], reason: 'r' });
    await new Promise((r) => setTimeout(r, 50));
    const click = await call(s, 'click', { at: { x: 1, y: 1 } });
    expect(click.env.error).toMatchObject({ code: 'consent-pending', category: 'internal' });
    expect(
      (await call(s, 'request-command-access', { commands: ['launch'], reason: 'again' })).env.error!.code,
    ).toBe('consent-pending');
    expect((await call(s, 'query', { window: 'Notepad' })).env.ok).toBe(true);
    expect((await asking).env.ok).toBe(true);
    expect((await call(s, 'click', { at: { x: 1, y: 1 } })).env.ok).toBe(true);
  });
});

describe('provision-session and end-session', () => {
  it('provisioning is refused unless the operator allowed it', async () => {
    const { env } = await call(sim(), 'provision-session');
    expect(env.error).toMatchObject({ code: 'provisioning-not-authorized', category: 'internal' });
  });

  it('provisions a real directory with a token; end-session needs that token and removes it', async () => {
    const s = sim({ allowProvisioning: true });
    const p = await call(s, 'provision-session', { mcpServer: true });
    const r = p.env.result!;
    // The envelope names the default session, not the provisioned install.
    expect(p.env.sessionId).not.toBe(r.sessionId);
    expect(r.sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(fs.existsSync(r.exePath)).toBe(true);
    expect(r.mcpEndpoint).toBe(`http://127.0.0.1:${r.port}/mcp`);
    expect((await call(s, 'end-session', { sessionId: r.sessionId })).env.error!.code).toBe('bad-arguments');
    const wrong = await call(s, 'end-session', { sessionId: r.sessionId, token: 'nope' });
    expect(wrong.env.error).toMatchObject({ code: 'session-token-invalid', category: 'internal' });
    expect(fs.existsSync(r.directory)).toBe(true);
    const ended = await call(s, 'end-session', { sessionId: r.sessionId, token: r.token });
    expect(ended.env.result).toEqual({ sessionId: r.sessionId, removed: true });
    expect(fs.existsSync(r.directory)).toBe(false);
    expect(
      (await call(s, 'end-session', { sessionId: r.sessionId, token: r.token })).env.result!.removed,
    ).toBe(true);
  });
});

describe('get-text regions', () => {
  it('reads a window-relative region of a window, and refuses one outside it', async () => {
    const s = sim();
    const editor = await call(s, 'get-text', { window: 'Notepad', x: 0, y: 56, width: 800, height: 520 });
    const r = editor.env.result!;
    expect(Object.keys(r)).toEqual([
      'width',
      'height',
      'blankCheck',
      'region',
      'window',
      'text',
      'lineCount',
      'wordCount',
      'language',
    ]);
    expect(r.region).toEqual({ x: 0, y: 56, width: 800, height: 520, relativeTo: 'window' });
    expect([r.width, r.height]).toEqual([800, 520]);
    expect(r.text).toBe(NOTEPAD_TEXT);
    const out = await call(s, 'get-text', { window: 'Notepad', x: 700, y: 0, width: 200, height: 10 });
    expect(out.env.error).toMatchObject({ code: 'region-out-of-bounds', category: 'invalid-argument' });
    expect(out.env.error!.detail).toBe(
      'Region (700,0) 200x10 is outside the 800x600 window capture. Re-query for fresh bounds or shrink the region.',
    );
  });

  it('reads a screen region without a target; a flat one fails ocr-blank with the data but no text', async () => {
    const s = sim();
    const cancel = await call(s, 'get-text', { x: 700, y: 570, width: 200, height: 60 });
    expect(cancel.env.result).toMatchObject({
      region: { x: 700, y: 570, width: 200, height: 60, relativeTo: 'screen' },
      text: 'Cancel',
      lineCount: 1,
      wordCount: 1,
    });
    expect(cancel.env.result).not.toHaveProperty('window');
    const wallpaper = await call(s, 'get-text', { x: 1000, y: 950, width: 100, height: 50 });
    expect(wallpaper.env.error).toMatchObject({ code: 'frame-uniform', category: 'ocr-blank' });
    expect(wallpaper.env.error!.partialResult).toEqual({
      width: 100,
      height: 50,
      blankCheck: { blank: true, dominantFraction: 1, dominantIsDark: false },
      region: { x: 1000, y: 950, width: 100, height: 50, relativeTo: 'screen' },
    });
  });
});
