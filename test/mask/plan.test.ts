import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/contract/types.js';
import { ScreenKnowledge } from '../../src/mask/knowledge.js';
import { type ImageFrame, planMasks } from '../../src/mask/plan.js';

const WINDOW = {
  handle: 7,
  title: 'Settings',
  className: 'W',
  processName: 'app',
  processId: 1,
  x: 100,
  y: 50,
  width: 400,
  height: 300,
};
const ok = (result: Record<string, unknown>): Envelope => ({ ok: true, sessionId: 's', result }) as Envelope;
const frame: ImageFrame = { screen: { x: 100, y: 50, width: 400, height: 300 }, window: WINDOW };
const edit = (x: number, y: number, width: number, height: number) => ({
  controlType: 'Edit',
  name: 'Token',
  automationId: 'Tok',
  x,
  y,
  width,
  height,
  isEnabled: true,
  isOffscreen: false,
  children: [],
});

function knowing(element: ReturnType<typeof edit>): ScreenKnowledge {
  const k = new ScreenKnowledge();
  k.learn({ seq: 1, tool: 'find', args: {}, envelope: ok({ found: true, element, window: WINDOW }) });
  return k;
}

describe('planMasks fails closed', () => {
  it('places a secret field exactly in a window capture at scale 1', () => {
    const masks = planMasks(frame, { width: 400, height: 300 }, knowing(edit(120, 90, 200, 20)), []);
    expect(masks).toEqual([
      {
        rect: { x: 20, y: 40, width: 200, height: 20 },
        reason: 'secret field',
        rule: 'secret-field',
        target: "Edit 'Token' (automationid Tok) in 'Settings'",
      },
    ]);
  });

  it('an element partly outside its window: the whole window', () => {
    const [m] = planMasks(frame, { width: 400, height: 300 }, knowing(edit(450, 90, 200, 20)), []);
    expect(m!.rect).toEqual({ x: 0, y: 0, width: 400, height: 300 });
    expect(m!.widened).toMatch(/partly outside/);
  });

  it('an image that does not have its frame shape: the whole image', () => {
    const [m] = planMasks(frame, { width: 400, height: 200 }, knowing(edit(120, 90, 200, 20)), []);
    expect(m!.rect).toEqual({ x: 0, y: 0, width: 400, height: 200 });
    expect(m!.widened).toMatch(/does not have the frame's shape/);
  });

  it('an image whose place is unknown: whole when anything is secret, nothing when nothing is', () => {
    expect(planMasks(undefined, { width: 50, height: 40 }, new ScreenKnowledge(), [])).toEqual([]);
    const [m] = planMasks(undefined, { width: 50, height: 40 }, knowing(edit(120, 90, 200, 20)), []);
    expect(m).toMatchObject({ rect: { x: 0, y: 0, width: 50, height: 40 }, rule: 'unplaced-image' });
  });

  it('text typed with no known focus and no window acted on: every later capture is masked whole', () => {
    const k = new ScreenKnowledge();
    k.learn({
      seq: 1,
      tool: 'send_command',
      args: { command: 'chars:hunter2' },
      envelope: ok({ output: 'ok' }),
    });
    const [m] = planMasks(frame, { width: 400, height: 300 }, k, []);
    expect(m).toMatchObject({ rect: { x: 0, y: 0, width: 400, height: 300 }, reason: 'typed secret' });
    expect(m!.widened).toMatch(/no known control had focus/);
  });

  it('a key press into a focused field whose window is another: not in this window', () => {
    const k = knowing(edit(120, 90, 200, 20));
    k.learn({
      seq: 2,
      tool: 'focus',
      args: { window: 'Settings' },
      envelope: ok({ focused: true, window: WINDOW, element: edit(120, 90, 200, 20) }),
    });
    k.learn({ seq: 3, tool: 'send_command', args: { command: 'chars:x' }, envelope: ok({ output: 'ok' }) });
    const other = {
      screen: { x: 0, y: 0, width: 50, height: 50 },
      window: { ...WINDOW, handle: 9, title: 'Other' },
    };
    expect(planMasks(other, { width: 50, height: 50 }, k, [])).toEqual([]);
    expect(planMasks(frame, { width: 400, height: 300 }, k, []).map((m) => m.reason)).toEqual([
      'typed secret',
    ]);
  });
});
