// failure-summary.md is read rendered (GitHub, an editor's preview): render it with a real CommonMark renderer
// and check what a triager sees in one read, for the demo's session and for one recorded through the proxy.
process.env.TZ = 'America/Los_Angeles';

import fs from 'node:fs';
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderFailureSummary } from '../../src/report/render.js';
import { readSessions } from '../proxy/sim-script.js';
import { useDemoSession } from '../support/demo-session.js';
import { summaryOfSession } from '../support/fixture-session.js';
import { scriptRecordedThroughHttpProxy } from '../support/sim-http-proxy.js';
import { tempDir } from '../support/temp.js';

/** The sections of a failed run's summary, in order; the two optional ones appear when there is such an image or file. */
const SECTIONS = [
  'Failing call',
  'Last good observation',
  'Last image before the failure',
  'Image from the failing call',
  'Evidence on the MCEC host',
  'Failures',
  'Warnings',
  'Recording',
  'Steps',
  'Timeline',
  'Environment',
];

const md = new MarkdownIt({ html: false });
const demoSession = useDemoSession();
let tmp: string;
beforeAll(() => {
  tmp = tempDir('mcec-summd-');
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function summaryOf(dir: string): Promise<string> {
  return renderFailureSummary(await summaryOfSession(dir));
}

/** The tokens of one `##` section (from its heading to the next heading). */
function section(tokens: Token[], title: string): Token[] {
  const at = tokens.findIndex(
    (t, i) => t.type === 'inline' && t.content === title && tokens[i - 1]?.tag === 'h2',
  );
  expect(at, `section ${title}`).toBeGreaterThan(0);
  const end = tokens.findIndex((t, i) => i > at && t.type === 'heading_open');
  return tokens.slice(at + 2, end < 0 ? tokens.length : end);
}

/** The inline text of each item of the bullet list right after the paragraph starting with `lead`. */
function listAfter(tokens: Token[], lead: string): string[] {
  const p = tokens.findIndex((t) => t.type === 'inline' && t.content.startsWith(lead));
  expect(p, `paragraph ${lead}`).toBeGreaterThanOrEqual(0);
  expect(tokens[p + 2]?.type).toBe('bullet_list_open');
  const close = tokens.findIndex((t, i) => i > p + 2 && t.type === 'bullet_list_close');
  return tokens
    .slice(p + 2, close)
    .filter((t) => t.type === 'inline')
    .map((t) => t.content);
}

/** Every image of the document: its alt text (markdown-it keeps it as the token's children text) and src. */
function images(tokens: Token[]): Array<{ alt: string; src: string }> {
  return tokens
    .flatMap((t) => t.children ?? [])
    .filter((t) => t.type === 'image')
    .map((t) => ({ alt: t.content, src: t.attrGet('src') ?? '' }));
}

/** Structure every failure summary of a failed run must have; returns the tokens. */
function checkStructure(text: string, detail: string, optional: string[]): Token[] {
  const tokens = md.parse(text, {});
  expect(tokens[0]?.tag).toBe('h1');
  const h2 = tokens.map((t, i) =>
    t.tag === 'h2' && t.type === 'heading_open' ? tokens[i + 1]!.content : null,
  );
  expect(h2.filter((h) => h !== null)).toEqual(SECTIONS.filter((h) => !optional.includes(h)));
  expect(tokens.filter((t) => t.type === 'html_block' || t.type === 'html_inline')).toEqual([]);
  // The error detail is said once, in the failing call's section (as a quote).
  expect(text.split(detail).length - 1).toBe(1);
  const failing = section(tokens, 'Failing call');
  const quote = failing.findIndex((t) => t.type === 'blockquote_open');
  expect(failing[quote + 2]?.content).toContain(detail);
  // No implementation words a triager would have to look up.
  for (const jargon of ['explicit verdict', 'end():', 'Suspect image', '- Summary:', '- Code:']) {
    expect(text).not.toContain(jargon);
  }
  // Every image says which window it shows and which call made it.
  for (const image of images(tokens)) expect(image.alt).toMatch(/^.+, call #\d+ \S+$/);
  return tokens;
}

describe('failure-summary.md rendered by markdown-it', () => {
  it("the demo's: the failing call with its arguments and its window's facts, the detail once, titled images", async () => {
    const text = await summaryOf(demoSession().sessionDir);
    const tokens = checkStructure(text, 'Captured frame is blank', ['Evidence on the MCEC host']);

    const failing = section(tokens, 'Failing call');
    expect(failing[1]?.content).toMatch(
      /^Call #11 `capture` at \S+ \(\d+ ms\) failed with `frame-all-black`/,
    );
    const fences = failing.filter((t) => t.type === 'fence');
    expect(fences.map((t) => [t.info, t.content])).toEqual([['json', '{"window":"Video Player"}\n']]);
    expect(JSON.parse(fences[0]!.content)).toEqual({ window: 'Video Player' });
    expect(listAfter(failing, 'Its target window')).toEqual([
      "Title: 'Video Player'",
      'Class: ApplicationFrameWindow',
      'Process: Video.UI (pid 9044)',
      expect.stringMatching(/^Handle: \d+$/),
      'Rect: x=2000 y=160, 800x450',
      'Display: DISPLAY2 at 120 dpi (scale 1.25); 1280x1024 at x=1920 y=0',
      'Elevated: not known',
    ]);

    // No observation of the Video Player succeeded before the failure: the summary says the one shown is not.
    const good = section(tokens, 'Last good observation');
    expect(
      good.find((t) => t.type === 'inline' && t.content.startsWith('It is of another window'))?.content,
    ).toBe(
      "It is of another window ('Save As'): no observation of the failing call's window succeeded before it.",
    );
    expect(images(tokens)).toEqual([
      { alt: 'Untitled - Notepad, call #4 capture', src: expect.stringMatching(/^artifacts\/capture-/) },
      { alt: 'Video Player, call #11 capture', src: expect.stringMatching(/^artifacts\/capture-/) },
    ]);
    // Two windows: the page must not pass them off as a before and after.
    const shot = section(tokens, 'Image from the failing call');
    expect(shot[1]?.content).toBe(
      'What call #11 returned with its error: not the same window as the last image before the failure.',
    );

    // The failing call is marked in the failures list instead of repeating its detail.
    const failures = section(tokens, 'Failures')
      .filter((t) => t.type === 'inline')
      .map((t) => t.content);
    expect(failures.at(-1)).toBe(
      '#11 `capture` `frame-all-black` (capture-blank), **not recovered** (the failing call, above)',
    );
  }, 60_000);

  it("a proxied session's: the same structure, arguments without the routing id", async () => {
    const { sessionsDir, sessionId: sid } = await scriptRecordedThroughHttpProxy(tmp);
    const session = readSessions(sessionsDir).find((s) => s.calls.some((c) => c.tool === 'capture'))!;
    const detail = (await summaryOfSession(session.dir)).failingCall?.detail;
    expect(detail).toBeTruthy();
    const text = await summaryOf(session.dir);
    const tokens = checkStructure(text, detail!.slice(0, 60), ['Image from the failing call']);
    const fence = section(tokens, 'Failing call').find((t) => t.type === 'fence');
    expect(fence?.info).toBe('json');
    expect(fence?.content).not.toContain(sid);
    expect(() => JSON.parse(fence!.content)).not.toThrow();
  }, 60_000);
});
