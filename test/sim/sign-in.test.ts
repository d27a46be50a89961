import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/sim/index.js';
import { call, type Loose, simulatorsInTempDir } from './helpers.js';

const tmp = simulatorsInTempDir({ seed: 3, signIn: true });
const sim = tmp.sim;

/** The window capture's pixels (RGB) and the rectangle of an element in them (window-relative). */
async function captureOf(
  s: Simulator,
  title: string,
): Promise<{ data: Buffer; width: number; window: Loose }> {
  const { env } = await call(s, 'capture', { window: title });
  const png = Buffer.from(env.result!.base64 as string, 'base64');
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, window: env.result!.window };
}

function distinctColours(
  img: { data: Buffer; width: number },
  r: { x: number; y: number; width: number; height: number },
) {
  const seen = new Set<string>();
  for (let y = r.y + 2; y < r.y + r.height - 2; y++)
    for (let x = r.x + 2; x < r.x + r.width - 2; x++) {
      const i = (y * img.width + x) * 3;
      seen.add(`${img.data[i]},${img.data[i + 1]},${img.data[i + 2]}`);
    }
  return seen.size;
}

describe('the Sign in dialog: typed text is drawn, the password box is secret', () => {
  it('draws what chars: types into the focused box, as dots in the password box, and never puts the password on the wire', async () => {
    const s = sim();
    const found = await call(s, 'find', { window: 'Sign in', by: 'automationid', value: 'PasswordBox' });
    const el = found.env.result!.element;
    const w = found.env.result!.window;
    const field = { x: el.x - w.x, y: el.y - w.y, width: el.width, height: el.height };
    const before = await captureOf(s, 'Sign in');
    expect(distinctColours(before, field)).toBe(1); // an empty box

    await call(s, 'focus', { window: 'Sign in', at: { by: 'automationid', value: 'PasswordBox' } });
    await call(s, 'send_command', { command: 'chars:hunter22' });
    const after = await captureOf(s, 'Sign in');
    expect(distinctColours(after, field)).toBeGreaterThan(1); // the dots

    const again = await call(s, 'find', { window: 'Sign in', by: 'automationid', value: 'PasswordBox' });
    expect(again.env.result!.element.value).toBeUndefined();
    expect(JSON.stringify(await call(s, 'query', { window: 'Sign in' }))).not.toContain('hunter22');
    const text = await call(s, 'get-text', { window: 'Sign in' });
    expect(text.env.result!.text).toContain('••••••••');
    expect(text.env.result!.text).not.toContain('hunter22');
  });

  it('a click on a text box focuses it; what is typed there is its value and its pixels', async () => {
    const s = sim();
    await call(s, 'click', { window: 'Sign in', at: { by: 'automationid', value: 'ApiToken' } });
    await call(s, 'send_command', { command: 'chars:ghp_token value' });
    const found = await call(s, 'find', { window: 'Sign in', by: 'automationid', value: 'ApiToken' });
    expect(found.env.result!.element.value).toBe('ghp_token value');
    // Typing with nothing focused changes nothing.
    const quiet = sim();
    await call(quiet, 'send_command', { command: 'chars:lost' });
    const user = await call(quiet, 'find', { window: 'Sign in', by: 'automationid', value: 'UserName' });
    expect(user.env.result!.element.value).toBeUndefined();
  });
});
