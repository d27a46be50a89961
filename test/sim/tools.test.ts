import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { validateCaptureSummary } from '../../src/contract/index.js';
import { createSimulator, HANDLES, NOTEPAD_TEXT, TOOLS } from '../../src/sim/index.js';
import { INLINE_CAPTURE_KEYS } from '../support/mcec.js';
import { call, type Loose, simulatorsInTempDir } from './helpers.js';

// Artifact and session names are UTC: run in a zone where local time differs.
process.env.TZ = 'America/New_York';

const fixedNow = () => new Date('2026-07-01T23:30:05.123Z');
const tmp = simulatorsInTempDir({ seed: 7, now: fixedNow, modalGraceMs: 20, pollMs: 10 });
const sim = tmp.sim;

describe('tools/list', () => {
  it('lists every tool with a name, a description and an object inputSchema that allows sessionId when routed', async () => {
    const s = sim();
    const resp = (await s.handle({ jsonrpc: '2.0', id: 1, method: 'tools/list' })) as {
      result: { tools: Loose[] };
    };
    const names = resp.result.tools.map((t) => t.name);
    for (const name of [
      'capture',
      'query',
      'find',
      'wait-for',
      'invoke',
      'click',
      'windows',
      'displays',
      'send_command',
      'session-start',
      'session-status',
      'session-end',
    ])
      expect(names).toContain(name);
    for (const t of resp.result.tools) {
      expect(t.description.length).toBeGreaterThan(10);
      expect(t.inputSchema.type).toBe('object');
      expect(Array.isArray(t.inputSchema.required)).toBe(true);
    }
    for (const def of TOOLS.filter((t) => t.routed))
      expect(resp.result.tools.find((t) => t.name === def.name).inputSchema.properties.sessionId.type).toBe(
        'string',
      );
  });
});

describe('capture', () => {
  it('puts the image block first and the envelope last, with the same base64, and the PNG decodes', async () => {
    const s = sim();
    const { out, env } = await call(s, 'capture', { window: 'notepad' });
    expect(out.content.map((b) => b.type)).toEqual(['image', 'text']);
    const image = out.content[0] as { data: string; mimeType: string };
    expect(image.mimeType).toBe('image/png');
    expect(env.ok).toBe(true);
    expect(env.sessionId).toMatch(/^[0-9a-f]{12}$/); // the default session's real id
    const r = env.result!;
    expect(Object.keys(r)).toEqual(INLINE_CAPTURE_KEYS);
    expect(image.data).toBe(r.base64);
    const png = Buffer.from(r.base64, 'base64');
    expect(png.length).toBe(r.bytes);
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 800, 600]);
    expect([r.width, r.height, r.encoding, r.handle]).toEqual([800, 600, 'png', HANDLES.notepad]);
    expect(r.window).toMatchObject({
      title: 'Untitled - Notepad',
      processName: 'notepad',
      handle: HANDLES.notepad,
    });
    expect(r.blankCheck.blank).toBe(false);
    const stats = await sharp(png).stats();
    expect(stats.isOpaque).toBe(true);
    expect(Math.max(...stats.channels.map((c) => c.max))).toBeGreaterThan(200);
  });

  it('fails frame-all-black on the Video Player with the suspect PNG in partialResult and no image block', async () => {
    const s = sim();
    const { out, env } = await call(s, 'capture', { window: 'Video Player' });
    expect(out.content).toHaveLength(1);
    expect(env.ok).toBe(false);
    expect(env.result).toBeUndefined();
    expect(env.error).toMatchObject({ code: 'frame-all-black', category: 'capture-blank' });
    const partial = env.error!.partialResult!;
    expect(partial.blankCheck).toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
    const png = Buffer.from(partial.base64, 'base64');
    expect(png.length).toBe(partial.bytes);
    const stats = await sharp(png).stats();
    expect(stats.channels.slice(0, 3).map((c) => c.max)).toEqual([0, 0, 0]);
    expect((await sharp(png).metadata()).width).toBe(800);
  });

  it('get-text reads the window; on the black Video Player it fails ocr-blank with the OCR data kept', async () => {
    const s = sim();
    const ok = await call(s, 'get-text', { window: 'Notepad' });
    expect(ok.env.result).toMatchObject({ width: 800, height: 600, language: 'en-US' });
    expect(ok.env.result!.text).toContain(NOTEPAD_TEXT);
    const blank = await call(s, 'get-text', { window: 'Video Player' });
    expect(blank.env.error).toMatchObject({ code: 'frame-all-black', category: 'ocr-blank' });
    // As GetTextCommand: a blank frame is not read, so the data has no text.
    expect(blank.env.error!.partialResult).toMatchObject({
      width: 800,
      height: 450,
      window: { title: 'Video Player' },
    });
    expect(blank.env.error!.partialResult).not.toHaveProperty('text');
  });

  it('a blank region still succeeds, with a capture-blank warning', async () => {
    const s = sim();
    const ok = await call(s, 'capture', { x: 2100, y: 300, width: 200, height: 100 });
    expect(ok.env.ok).toBe(true);
    expect(ok.env.warnings?.map((w) => w.code)).toEqual(['capture-blank']);
    expect(ok.env.result).not.toHaveProperty('window');
    expect(ok.out.content[0]!.type).toBe('image');
    const big = await call(s, 'capture', { x: 0, y: 0, width: 20_000, height: 10 });
    expect(big.env.error?.code).toBe('region-too-large');
  });

  it('pathOnly writes the PNG into the session artifact dir and returns its path, without base64 or image block', async () => {
    const s = sim();
    const { out, env } = await call(s, 'capture', { window: 'Save As', pathOnly: true });
    expect(out.content).toHaveLength(1);
    expect(env.result).not.toHaveProperty('base64');
    const artifact = env.result!.artifact as string;
    expect(path.basename(artifact)).toBe('capture-20260701-233005123-1.png');
    expect(path.dirname(path.dirname(artifact))).toBe(s.sessionsRoot);
    expect((await sharp(artifact).metadata()).width).toBe(640);
    expect(fs.statSync(artifact).size).toBe(env.result!.bytes);
  });

  it('a capture with no target fails window-not-found, as CaptureCommand does', async () => {
    const { env } = await call(sim(), 'capture', {});
    expect(env.error).toMatchObject({
      code: 'window-not-found',
      category: 'no-target',
      detail: 'No matching window',
    });
  });
});

describe('query, find, wait-for', () => {
  it('query returns the tree and warns tree-truncated over maxNodes', async () => {
    const s = sim();
    const full = await call(s, 'query', { window: 'Notepad' });
    expect(full.env.result).toMatchObject({ truncated: false });
    expect(full.env.warnings).toBeUndefined();
    const tree = full.env.result!.tree;
    expect(Object.keys(tree)).toEqual([
      'controlType',
      'x',
      'y',
      'width',
      'height',
      'isEnabled',
      'isOffscreen',
      'name',
      'className',
      'children',
    ]);
    const editor = tree.children.find((c: Loose) => c.automationId === '15');
    expect(editor.value).toBe(NOTEPAD_TEXT);
    const clipped = await call(s, 'query', { window: 'Notepad', maxNodes: 5 });
    expect(clipped.env.result).toMatchObject({ nodeCount: 5, truncated: true });
    expect(clipped.env.warnings?.map((w) => w.code)).toEqual(['tree-truncated']);
    expect(full.env.result!.nodeCount).toBeGreaterThan(5);
  });

  it("find name='Save' in Save As is ambiguous (selector-matched-3); automationid narrows it to one", async () => {
    const s = sim();
    const amb = await call(s, 'find', { window: 'Save As', value: 'Save' });
    expect(amb.env.error).toMatchObject({ code: 'selector-matched-3', category: 'ambiguous-selector' });
    const one = await call(s, 'find', { window: 'Save As', by: 'automationid', value: '1' });
    expect(one.env.result).toMatchObject({
      found: true,
      element: { name: 'Save', automationId: '1', controlType: 'Button' },
    });
    expect(one.env.result!.window.handle).toBe(HANDLES.saveAs);
  });

  it('a find miss is ok:true found:false with element written out as null', async () => {
    const { env, text } = await call(sim(), 'find', { window: 'Notepad', value: 'No Such Thing' });
    expect(env).toMatchObject({ ok: true, result: { found: false, element: null } });
    expect(text).toContain('"element":null');
    expect(text).toMatch(/"sessionId":"[0-9a-f]{12}"/);
  });

  it('wait-for really waits its timeout, then fails wait-condition-timeout; a hit comes back at once', async () => {
    const s = sim();
    const t0 = Date.now();
    const miss = await call(s, 'wait-for', { window: 'Notepad', value: 'Never', timeout: 300 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(miss.env.error).toMatchObject({ code: 'wait-condition-timeout', category: 'timeout' });
    // A timeout longer than the test's own: the hit can only pass by coming back at once.
    const hit = await call(s, 'wait-for', { window: 'Notepad', value: 'Text Editor', timeout: 600_000 });
    expect(hit.env.result).toMatchObject({ found: true, element: { automationId: '15' } });
  });

  it('wait-for sees a window that appears while it waits', async () => {
    const s = sim();
    await call(s, 'invoke', { window: 'Save As', by: 'automationid', value: '2' }); // Cancel closes the dialog
    const waiting = call(s, 'wait-for', { window: 'Save As', by: 'automationid', value: '1', timeout: 2000 });
    await new Promise((r) => setTimeout(r, 50));
    const opened = await call(s, 'invoke', { window: 'Notepad', value: 'Save As...' });
    expect(opened.env.result).toMatchObject({ invoked: true, modalPending: true });
    const { env } = await waiting;
    expect(env.result).toMatchObject({ found: true });
    expect(env.result!.window.handle).not.toBe(HANDLES.saveAs);
  });
});

describe('actions and their failures', () => {
  it('invoke returns {invoked, action, by, value}; closing the dialog makes its handle window-closed', async () => {
    const s = sim();
    const closed = await call(s, 'invoke', { window: 'Save As', value: 'Close' });
    expect(closed.env.result).toEqual({ invoked: true, action: 'invoke', by: 'name', value: 'Close' });
    const stale = await call(s, 'invoke', { handle: HANDLES.saveAs, by: 'automationid', value: '1' });
    expect(stale.env.error).toMatchObject({ code: 'window-closed', category: 'stale-element' });
    const gone = await call(s, 'capture', { window: 'Save As' });
    expect(gone.env.error).toMatchObject({ code: 'window-not-found', category: 'no-target' });
    const list = await call(s, 'windows', {});
    expect(list.env.result!.count).toBe(3);
  });

  it('invoke and click on the elevated Command Prompt fail target-elevated', async () => {
    const s = sim();
    const inv = await call(s, 'invoke', { window: 'Administrator', value: 'Close' });
    expect(inv.env.error).toMatchObject({ code: 'target-elevated', category: 'elevation' });
    const clk = await call(s, 'click', { at: { x: 1200, y: 700 } });
    expect(clk.env.error).toMatchObject({ code: 'target-elevated', category: 'elevation' });
    // but it can be looked at
    expect((await call(s, 'capture', { window: 'Administrator' })).env.ok).toBe(true);
  });

  it('click on an element reports its centre; bad endpoints are refused', async () => {
    const s = sim();
    const ok = await call(s, 'click', { window: 'Notepad', at: { by: 'automationid', value: '15' } });
    expect(ok.env.result).toEqual({ clicked: true, at: [520, 396], button: 'left', count: 1 });
    const bad = await call(s, 'click', { window: 'Notepad', at: { x: 5 } });
    expect(bad.env.error?.code).toBe('bad-arguments');
  });

  it('invoke reports element-not-found, pattern-unsupported and action-unknown with their categories', async () => {
    const s = sim();
    expect((await call(s, 'invoke', { window: 'Notepad', value: 'Nope' })).env.error).toMatchObject({
      code: 'element-not-found',
      category: 'no-target',
    });
    expect(
      (await call(s, 'invoke', { window: 'Notepad', by: 'automationid', value: '15', action: 'toggle' })).env
        .error,
    ).toMatchObject({ code: 'pattern-unsupported', category: 'invalid-argument' });
    expect(
      (await call(s, 'invoke', { window: 'Notepad', value: 'File', action: 'fly' })).env.error,
    ).toMatchObject({
      code: 'action-unknown',
      category: 'invalid-argument',
    });
    const set = await call(s, 'invoke', {
      window: 'Notepad',
      by: 'automationid',
      value: '15',
      action: 'setvalue',
      text: 'x+y',
    });
    expect(set.env.ok).toBe(true);
    const after = await call(s, 'find', { window: 'Notepad', by: 'automationid', value: '15' });
    expect(after.env.result!.element.value).toBe('x+y');
  });

  it("a title matching several windows is ambiguous; process 'notepad' matches two", async () => {
    const { env } = await call(sim(), 'query', { process: 'notepad' });
    expect(env.error).toMatchObject({ code: 'selector-matched-2', category: 'ambiguous-selector' });
  });
});

describe('windows, displays, send_command', () => {
  it('windows lists WindowInfo and waits for a condition', async () => {
    const s = sim();
    const { env } = await call(s, 'windows', { window: 'video', condition: 'appears' });
    expect(env.result).toMatchObject({ condition: 'appears', count: 1, satisfied: true });
    expect(Object.keys(env.result!.windows[0])).toEqual([
      'handle',
      'title',
      'className',
      'processName',
      'processId',
      'x',
      'y',
      'width',
      'height',
    ]);
    const never = await call(s, 'windows', { window: 'Calculator', timeout: 100 });
    expect(never.env.result).toMatchObject({ count: 0, satisfied: false, waitedFor: 100 });
    expect((await call(s, 'windows', { condition: 'sideways' })).env.error?.code).toBe(
      'windows-unknown-condition',
    );
    expect((await call(s, 'windows', { condition: 'disappears' })).env.error?.code).toBe(
      'windows-no-criteria',
    );
  });

  it('displays reports two monitors and their union', async () => {
    const { env } = await call(sim(), 'displays');
    expect(env.result).toMatchObject({ count: 2, virtualBounds: { x: 0, y: 0, width: 3200, height: 1080 } });
    expect(Object.keys(env.result!.displays[0])).toEqual([
      'index',
      'primary',
      'deviceName',
      'bounds',
      'workingArea',
      'dpi',
      'scale',
    ]);
  });

  it('send_command capture returns {output} holding a legacy CommandResult JSON string with base64', async () => {
    const s = sim();
    const { env, text } = await call(s, 'send_command', { command: 'capture Notepad' });
    expect(env.ok).toBe(true);
    const output = env.result!.output;
    expect(typeof output).toBe('string');
    expect(output).toContain('\\u002B'); // the inner JSON uses the server escaping as well
    expect(text).not.toContain('+');
    const inner = JSON.parse(output);
    expect(inner).toMatchObject({ success: true, command: 'capture', data: { encoding: 'png' } });
    expect((await sharp(Buffer.from(inner.data.base64, 'base64')).metadata()).format).toBe('png');
    const miss = JSON.parse(
      (await call(s, 'send_command', { command: 'capture Calculator' })).env.result!.output,
    );
    expect(miss).toMatchObject({ success: false, errorCode: 'window-not-found', errorCategory: 'no-target' });
    expect((await call(s, 'send_command', { command: 'chars:hello' })).env.result).toEqual({ output: 'ok' });
  });

  it('unknown tools and bad arguments are envelopes, not protocol errors', async () => {
    const s = sim();
    const resp = (await s.handle({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'teleport', arguments: {} },
    })) as { result: Loose };
    expect(resp.result.isError).toBe(true);
    const env = JSON.parse(resp.result.content[0].text);
    expect(env.error).toMatchObject({ code: 'unknown-tool', category: 'internal' });
    expect((await call(s, 'capture', { window: 'Notepad', maxWidth: 'wide' })).env.error).toMatchObject({
      code: 'bad-arguments',
      category: 'invalid-argument',
    });
    expect((await call(s, 'click', { window: 'Notepad', at: 'here' })).env.error?.code).toBe('bad-arguments');
    // Like the server's Str/Int readers, a selector of the wrong type reads as absent: no target at all.
    expect((await call(s, 'query', { window: 42 })).env.error?.code).toBe('window-not-found');
    // An unknown `by` matches by name (UiaService.BuildCondition).
    expect((await call(s, 'find', { window: 'Notepad', value: 'File', by: 'xpath' })).env.result?.found).toBe(
      true,
    );
    // Arguments that are not an object read as none: a capture with no target.
    expect(envelopeText(await s.callTool('capture', 'nope' as never))).toMatchObject({
      error: { code: 'window-not-found' },
    });
  });
});

function envelopeText(out: { content: Array<{ type: string; text?: string }> }) {
  return JSON.parse(out.content[out.content.length - 1]!.text!);
}

describe('sessions', () => {
  it('session-start gives a 12-hex id, an ISO UTC startedAt and a UTC-named artifact dir; ending twice is ended:false', async () => {
    const s = sim();
    const started = await call(s, 'session-start');
    const r = started.env.result!;
    expect(r.sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(started.env.sessionId).toBe(r.sessionId);
    expect(r.startedAt).toBe('2026-07-01T23:30:05.1230000Z');
    expect(r.artifactDir).toBe(path.join(s.sessionsRoot, `20260701-233005-${r.sessionId}`));
    expect(fs.statSync(r.artifactDir).isDirectory()).toBe(true);
    const end1 = await call(s, 'session-end', { sessionId: r.sessionId });
    expect(end1.env.result).toEqual({ sessionId: r.sessionId, ended: true });
    const end2 = await call(s, 'session-end', { sessionId: r.sessionId });
    expect(end2.env.result).toMatchObject({ sessionId: r.sessionId, ended: false });
    expect(fs.existsSync(r.artifactDir)).toBe(true);
    const after = await call(s, 'find', { window: 'Notepad', value: 'x', sessionId: r.sessionId });
    expect(after.env.error).toMatchObject({ code: 'unknown-session', category: 'invalid-argument' });
    expect(after.env.sessionId).toBe(r.sessionId);
  });

  it('the same seed gives the same ids; routed calls carry their sessionId', async () => {
    const a = await call(sim({ seed: 99 }), 'session-start');
    const b = await call(sim({ seed: 99 }), 'session-start');
    const c = await call(sim({ seed: 100 }), 'session-start');
    expect(a.env.result!.sessionId).toBe(b.env.result!.sessionId);
    expect(c.env.result!.sessionId).not.toBe(a.env.result!.sessionId);
    const s = sim();
    const id = (await call(s, 'session-start')).env.result!.sessionId;
    expect((await call(s, 'displays', { sessionId: id })).env.sessionId).toBe(id);
    expect((await call(s, 'displays', { sessionId: 'ffffffffffff' })).env.error?.code).toBe(
      'unknown-session',
    );
  });

  it('keeps the last good capture as a capture-summary with the PNG on disk, and attaches it to command-level failures', async () => {
    const s = sim();
    const id = (await call(s, 'session-start')).env.result!.sessionId;
    const first = await call(s, 'find', { window: 'Save As', value: 'Save', sessionId: id });
    expect(first.env.error).not.toHaveProperty('lastObservation'); // nothing observed yet
    const cap = await call(s, 'capture', { window: 'Notepad', sessionId: id });
    const fail = await call(s, 'find', { window: 'Save As', value: 'Save', sessionId: id });
    const lo = fail.env.error!.lastObservation!;
    expect(lo).toMatchObject({
      kind: 'capture-summary',
      handle: HANDLES.notepad,
      width: 800,
      height: 600,
      encoding: 'png',
    });
    expect(lo).not.toHaveProperty('base64');
    expect(JSON.stringify(lo)).not.toContain(cap.env.result!.base64.slice(0, 40));
    expect(validateCaptureSummary(lo).violations).toEqual([]);
    expect(fs.readFileSync(lo.artifact).equals(Buffer.from(cap.env.result!.base64, 'base64'))).toBe(true);
    expect(path.dirname(lo.artifact)).toMatch(new RegExp(`20260701-233005-${id}$`));
    // the black capture and the timeout carry it too (command-level failures)
    for (const [name, args] of [
      ['capture', { window: 'Video Player' }],
      ['wait-for', { window: 'Notepad', value: 'Never', timeout: 20 }],
      ['invoke', { window: 'Administrator', value: 'Close' }],
    ] as const)
      expect((await call(s, name, { ...args, sessionId: id })).env.error!.lastObservation).toEqual(lo);
    // the default session has seen nothing
    expect((await call(s, 'find', { window: 'Save As', value: 'Save' })).env.error).not.toHaveProperty(
      'lastObservation',
    );
    const status = (await call(s, 'session-status', { sessionId: id })).env.result!;
    expect(status.lastObservation).toEqual(lo);
    expect(status.lastAction).toBe('invoke');
    expect(status.activeTarget.handle).toBe(HANDLES.notepad);
    expect(status.lastError.code).toBe('target-elevated');
  });

  it('refusals and send_command failures carry no lastObservation', async () => {
    const s = sim();
    expect((await call(s, 'query', { window: 'Notepad' })).env.ok).toBe(true);
    const refusals = [
      await call(s, 'capture', { window: 'Notepad', scale: 2 }), // bad-arguments
      await call(s, 'teleport', {}), // unknown-tool
      await call(s, 'find', { window: 'Notepad', value: 'x', sessionId: '000000000000' }), // unknown-session
      await call(s, 'send_command', { command: 'frobnicate' }), // send_command failure
    ];
    expect(refusals.map((r) => r.env.error!.code)).toEqual([
      'bad-arguments',
      'unknown-tool',
      'unknown-session',
      'unknown-command',
    ]);
    for (const r of refusals) expect(r.env.error).not.toHaveProperty('lastObservation');
    // while a command-level failure does carry the query
    const lo = (await call(s, 'invoke', { window: 'Notepad', value: 'Nope' })).env.error!.lastObservation!;
    expect(lo).toMatchObject({ nodeCount: expect.any(Number), truncated: false });
  });

  it('the emergency stop refuses every call, through the library control and through send_command', async () => {
    const s = sim();
    await call(s, 'query', { window: 'Notepad' });
    s.control.emergencyStop(true);
    expect(s.control.emergencyStopped).toBe(true);
    for (const name of ['displays', 'capture', 'session-status', 'teleport']) {
      const { env } = await call(s, name, { window: 'Notepad' });
      expect(env.error).toMatchObject({ code: 'emergency-stopped', category: 'internal' });
      expect(env.error).not.toHaveProperty('lastObservation');
    }
    s.control.emergencyStop(false);
    const status = (await call(s, 'session-status')).env.result!;
    expect(status.emergencyStop).toEqual({ at: '2026-07-01T23:30:05.1230000Z', source: 'operator' });
    expect((await call(s, 'send_command', { command: 'sim:emergency-stop on' })).env.ok).toBe(true);
    expect((await call(s, 'displays')).env.error?.code).toBe('emergency-stopped');
    expect((await call(s, 'send_command', { command: 'sim:emergency-stop off' })).env.ok).toBe(true);
    expect((await call(s, 'session-status')).env.result!.emergencyStop.source).toBe('sim-control');
    expect((await call(s, 'displays')).env.ok).toBe(true);
  });
});

describe('determinism', () => {
  it('the same calls on two seeded simulators give the same bytes', async () => {
    const root = path.join(tmp.dir, 'same-root');
    const run = async () => {
      const s = createSimulator({ seed: 3, now: fixedNow, sessionsRoot: root, modalGraceMs: 5, pollMs: 5 });
      const lines: string[] = [];
      const script: Array<[string, Record<string, unknown>]> = [
        ['session-start', {}],
        ['windows', {}],
        ['capture', { window: 'Notepad' }],
        ['find', { window: 'Save As', value: 'Save' }],
        ['capture', { window: 'Video Player' }],
        ['capture', { x: 100, y: 50, width: 900, height: 700 }],
        ['query', { window: 'Save As' }],
        ['session-status', {}],
      ];
      for (const [name, args] of script) lines.push(JSON.stringify(await s.callTool(name, args)));
      return lines;
    };
    const a = await run();
    const b = await run();
    expect(b).toEqual(a);
  });
});
