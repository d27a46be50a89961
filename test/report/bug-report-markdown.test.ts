// The bug report is read as CommonMark (a GitHub issue body): render it with a real renderer and check the
// structure a triager sees, for the demo's session and for a session recorded through the HTTP proxy.
process.env.TZ = 'America/Los_Angeles';

import fs from 'node:fs';
import path from 'node:path';
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderBugReport } from '../../src/report/render.js';
import { readSessions } from '../proxy/sim-script.js';
import { useDemoSession } from '../support/demo-session.js';
import { calls, FixtureSession, summaryOfSession } from '../support/fixture-session.js';
import { scriptRecordedThroughHttpProxy } from '../support/sim-http-proxy.js';
import { tempDir } from '../support/temp.js';

const HEADINGS = [
  'Describe the bug',
  'To Reproduce',
  'Expected behavior',
  'Screenshots',
  'Version Information',
  'Snippets from the log',
  'Desktop',
  'Agent evidence (if this is agent / MCP behavior)',
  'Additional context',
];

const md = new MarkdownIt({ html: false });
const demoSession = useDemoSession();
let tmp: string;
beforeAll(() => {
  tmp = tempDir('mcec-bugmd-');
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function bugReportOf(dir: string): Promise<string> {
  return renderBugReport(await summaryOfSession(dir));
}

/** The tokens of one heading's section (from its heading_close to the next heading_open). */
function section(tokens: Token[], title: string): Token[] {
  const at = tokens.findIndex(
    (t, i) => t.type === 'inline' && t.content === title && tokens[i - 1]?.type === 'heading_open',
  );
  expect(at, `section ${title}`).toBeGreaterThan(0);
  const end = tokens.findIndex((t, i) => i > at && t.type === 'heading_open');
  return tokens.slice(at + 2, end < 0 ? tokens.length : end);
}

/** The text of each top-level list item of the first list of `type` in the tokens after the paragraph `lead` starts. */
function listAfter(tokens: Token[], lead: string, type: 'bullet_list_open' | 'ordered_list_open'): string[] {
  const p = tokens.findIndex((t) => t.type === 'inline' && t.content.startsWith(lead));
  expect(p, `paragraph ${lead}`).toBeGreaterThanOrEqual(0);
  // The list must be the very next block: a paragraph, then its list (not swallowed into an earlier one).
  expect(tokens[p + 1]?.type).toBe('paragraph_close');
  expect(tokens[p + 2]?.type).toBe(type);
  const items: string[] = [];
  let depth = 0;
  for (let i = p + 2; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.type === type) depth++;
    else if (t.type === type.replace('_open', '_close')) {
      depth--;
      if (depth === 0) break;
    } else if (t.type === 'inline' && depth === 1) items.push(t.content);
  }
  return items;
}

/** The inline text of each item of the section's first bullet list (a section that opens with a list). */
function firstBullets(tokens: Token[]): string[] {
  expect(tokens[0]?.type).toBe('bullet_list_open');
  const close = tokens.findIndex((t) => t.type === 'bullet_list_close');
  return tokens
    .slice(0, close)
    .filter((t) => t.type === 'inline')
    .map((t) => t.content);
}

/** Structure every bug report must have. */
function checkStructure(text: string): Token[] {
  const tokens = md.parse(text, {});
  const headings = tokens
    .map((t, i) => (t.type === 'heading_open' ? tokens[i + 1]!.content : null))
    .filter((h): h is string => h !== null);
  expect(headings).toEqual(HEADINGS);
  expect(tokens.filter((t) => t.type === 'html_block' || t.type === 'html_inline')).toEqual([]);
  expect(text).not.toMatch(/<[a-z]/i);
  // Every fence is closed: markdown-it would run an unclosed one to the end, swallowing later headings.
  for (const fence of tokens.filter((t) => t.type === 'fence')) expect(fence.content).not.toContain('### ');
  // The timeline is said once: no call line appears in a second place.
  const snippets = section(tokens, 'Snippets from the log');
  expect(snippets.some((t) => t.type === 'fence')).toBe(false);
  return tokens;
}

describe('bug-report.md rendered by markdown-it', () => {
  it("the demo's: headings once and in order, calls with arguments up to the failure, separate lists", async () => {
    const text = await bugReportOf(demoSession().sessionDir);
    const tokens = checkStructure(text);

    const reproduce = section(tokens, 'To Reproduce');
    const calls = listAfter(reproduce, 'Call #11 and the calls before it', 'ordered_list_open');
    expect(calls[0]).toBe('`session-start` `{}`');
    expect(calls.at(-1)).toBe('`capture` `{"window":"Video Player"}`: **frame-all-black**');
    expect(calls).toContain('`find` `{"window":"Untitled - Notepad","by":"automationid","value":"15"}`');
    expect(calls).toHaveLength(11); // #12 session-end came after the failure
    expect(reproduce.find((t) => t.type === 'ordered_list_open')?.attrGet('start')).toBeNull(); // starts at 1

    const describeBug = section(tokens, 'Describe the bug');
    const target = describeBug.find((t) => t.type === 'inline' && t.content.startsWith('Target window:'));
    expect(target?.content).toContain("'Video Player' (ApplicationFrameWindow, Video.UI pid 9044)");
    expect(target?.content).toContain('at x=2000 y=160, 800x450 on DISPLAY2 at 120 dpi');

    const snippets = section(tokens, 'Snippets from the log');
    expect(listAfter(snippets, 'Failures (2, 1 recovered)', 'bullet_list_open')).toEqual([
      '#8 `find` `selector-matched-3` (ambiguous-selector); recovered',
      '#11 `capture` `frame-all-black` (capture-blank); not recovered',
    ]);
    expect(listAfter(snippets, 'Warnings:', 'bullet_list_open')).toHaveLength(1);

    const screenshots = firstBullets(section(tokens, 'Screenshots'));
    expect(screenshots[0]).toMatch(
      /^Last image before the failure: 'Untitled - Notepad', call #4 `capture`, 800x600:/,
    );
    expect(screenshots[1]).toMatch(
      /^The failing call's own image \(its partialResult\): 'Video Player', call #11 `capture`/,
    );

    // OS and displays only under Desktop; the detail sentence once in the whole report.
    expect(text.split('linux').length - 1 + text.split('win32').length - 1).toBeLessThanOrEqual(1);
    expect(
      section(tokens, 'Version Information')
        .map((t) => t.content)
        .join('\n'),
    ).not.toMatch(/os:|dpi/);
    expect(text.split('Captured frame is blank').length - 1).toBe(1);
    const desktop = firstBullets(section(tokens, 'Desktop'));
    expect(desktop).toEqual(expect.arrayContaining(['Display DISPLAY2: 1280x1024 at x=1920 y=0, 120 dpi']));
  }, 60_000);

  it("a proxied session's: the same structure, arguments without the routing id", async () => {
    const { sessionsDir, sessionId: sid } = await scriptRecordedThroughHttpProxy(tmp);
    const session = readSessions(sessionsDir).find((s) => s.calls.some((c) => c.tool === 'capture'))!;
    const text = await bugReportOf(session.dir);
    const tokens = checkStructure(text);
    const calls = listAfter(section(tokens, 'To Reproduce'), 'Call #', 'ordered_list_open');
    expect(calls).toContain('`capture` `{"window":"Video Player"}`: **frame-all-black**');
    expect(calls.join('\n')).not.toContain(sid);
    const snippets = section(tokens, 'Snippets from the log');
    expect(listAfter(snippets, 'Failures (', 'bullet_list_open').length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('a call that named another session keeps that id: without it, unknown-session cannot be reproduced', async () => {
    const f = FixtureSession.create(path.join(tmp, 'named-other'), { sessionId: 'a0a000000001' });
    f.call({ ...calls.displays(), args: { sessionId: 'a0a000000001' } });
    f.call({
      tool: 'windows',
      args: { sessionId: 'deadbeef0000' },
      status: 'failed',
      result: null,
      error: {
        code: 'unknown-session',
        category: 'invalid-argument',
        detail: "Unknown sessionId 'deadbeef0000'.",
      },
    });
    f.end();
    f.close();
    const text = await bugReportOf(f.dir);
    const reproduce = listAfter(section(checkStructure(text), 'To Reproduce'), 'Call #', 'ordered_list_open');
    expect(reproduce).toEqual([
      '`displays` `{}`',
      '`windows` `{"sessionId":"deadbeef0000"}`: **unknown-session**',
    ]);
  });
});
