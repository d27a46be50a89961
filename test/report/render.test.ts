import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderBugReport, renderFailureSummary } from '../../src/report/render.js';
import { MAX_DOCUMENT_CHARS } from '../../src/report/types.js';
import { calls, deadPid, FixtureSession, summaryOfSession } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { tempDir } from '../support/temp.js';

const temp = tempDirPerTest();

/** The notepad scenario: a capture, a recovered ambiguous find, a query, an invoke, then a blank capture. */
async function notepadSession(): Promise<{ f: FixtureSession; shot: string; suspect: string }> {
  const f = FixtureSession.create(temp.dir, { sessionId: '5f19c9c01a3f' });
  f.call(calls.displays());
  f.step('open Notepad', 'passed');
  const shot = await f.capture();
  f.call(calls.ambiguousFind());
  f.call(calls.findSave());
  f.call(calls.query(14, true));
  f.call(calls.invokeSave());
  f.step('save the file', 'failed', 'the window went black');
  const blank = await f.blankCapture(shot.summary as unknown as Record<string, unknown>);
  f.end();
  return { f, shot: shot.image.artifact, suspect: blank.image.artifact };
}

/** `![alt](target)` links in a Markdown text. */
function imageLinks(text: string): Array<{ alt: string; target: string }> {
  return [...text.matchAll(/!\[([^\]]*)\]\(([^)]+)\)/g)].map((m) => ({ alt: m[1]!, target: m[2]! }));
}

describe('failure-summary.md', () => {
  it('follows the existing bundle: heading, bullets, failing call with recovery, images, steps', async () => {
    const { f, shot, suspect } = await notepadSession();
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    const lines = text.split('\n');
    expect(lines[0]).toBe('# save a file in Notepad; FAIL');
    expect(text).toContain('- Session: `5f19c9c01a3f` (20261202-101500-5f19c9c01a3f)');
    expect(text).toContain('- Scenario: save a file in Notepad');
    // The newest observation of the failing capture's own window, not the later query of another window.
    expect(text).toMatch(
      /- Last good observation: capture 800x600 png \d+ KB of 'Untitled - Notepad' \(call #2\)/,
    );
    expect(text).toContain('- Failing step: **save the file**\n');
    expect(text).toMatch(
      /\nCall #7 `capture` at \S+ \(\d+ ms\) failed with `frame-all-black` \(capture-blank\):\n\n> The captured frame is all black/,
    );
    expect(text).toContain(
      'Next step: restore or foreground the window and capture again; the suspect image is in partialResult.',
    );
    expect(text).toContain(
      'Its arguments (secrets redacted):\n\n```json\n{"title":"Untitled - Notepad"}\n```',
    );
    // The detail sentence once: in the failing call's section, not again in the failures list or the step line.
    expect(text.split('The captured frame is all black').length - 1).toBe(1);
    expect(text).toMatch(
      /## Steps\n\n- \[passed\] open Notepad\n- \[failed\] save the file: the window went black\n/,
    );
    expect(text).toContain('- #3 `find` `selector-matched-3` (ambiguous-selector), recovered: Selector');
    expect(text).toContain(
      '- #7 `capture` `frame-all-black` (capture-blank), **not recovered** (the failing call, above)',
    );
    expect(text).toContain('- `tree-truncated` x1: UIA tree clipped at 14 nodes');
    expect(text).toContain('- server: MCEC 3.0.4 (protocol 2025-06-18)');
    expect(text).toContain('- display: 1920x1080');
    expect(text).toContain('- dpi: 144');
    // Relative image links that resolve inside the session dir (and so inside the bundle's top folder).
    const links = imageLinks(text);
    // Each image titled with its window and the call that made it.
    expect(links).toEqual([
      { alt: 'Untitled - Notepad, call #2 capture', target: shot },
      { alt: 'Untitled - Notepad, call #7 capture', target: suspect },
    ]);
    expect(text).toContain(
      'What call #7 returned with its error: the same window as the last image before the failure, so the two are a before and after.',
    );
    for (const link of links) {
      expect(path.isAbsolute(link.target)).toBe(false);
      expect(fs.existsSync(path.join(f.dir, link.target))).toBe(true);
    }
    expect(text.length).toBeLessThanOrEqual(MAX_DOCUMENT_CHARS);
  });

  it('shows the last good observation image when it was a capture', async () => {
    const f = FixtureSession.create(temp.dir, { scenario: null });
    const shot = await f.capture();
    f.call(calls.waitForTimeout());
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text.split('\n')[0]).toBe(`# ${f.sessionId}; FAIL`);
    expect(text).toContain('- Scenario: (none)');
    // One image, linked once: the observation's image is the last image seen.
    expect(imageLinks(text)).toEqual([
      { alt: 'Untitled - Notepad, call #1 capture', target: shot.image.artifact },
    ]);
    expect(text).toContain('Its image is the last image before the failure, below.');
    expect(text).not.toContain('## Image from the failing call');
  });

  it('writes an explicit omitted line when the timeline is longer than N', async () => {
    const f = FixtureSession.create(temp.dir);
    f.manyCalls(35, () => calls.findSave());
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text).toContain(
      '## Timeline\n\n- 15 earlier calls omitted\n- 2026-12-02T10:15:02.260Z #16 ok (100 ms): find',
    );
    expect(text.match(/^- \d{4}-\d\d-\d\dT[^ ]+Z #\d+ /gm)).toHaveLength(20);
  });

  it('renders a still-open session and a crashed one', async () => {
    const open = FixtureSession.create(temp.dir);
    open.call(calls.findSave());
    open.call({ tool: 'wait-for', args: { name: 'Saved', timeoutMs: 5000 }, status: 'pending' });
    const openText = await renderFailureSummary(await summaryOfSession(open.dir));
    expect(openText).toContain('; FAIL\n');
    expect(openText).toContain('- Status: open; started 2026-12-02T10:15:00.000Z');
    expect(openText).toContain('- Failing step: none (no step declared)\n');
    expect(openText).toMatch(/\nCall #2 `wait-for` at \S+ never returned\.\n/);
    expect(openText).toContain('pending (no response recorded)');

    const crashed = FixtureSession.create(temp.dir, { writerPid: deadPid() });
    crashed.call(calls.findSave());
    crashed.call({ tool: 'invoke', args: { name: 'Save' }, status: 'pending' });
    crashed.close();
    const summary = await summaryOfSession(crashed.dir);
    const crashedText = await renderFailureSummary(summary);
    expect(crashedText).toContain('- Status: aborted;');
    expect(crashedText).toMatch(
      /- Verdict: \*\*FAIL\*\*: call #2 invoke is still pending: it never got an answer; the session was aborted/,
    );
    const report = await renderBugReport(summary);
    expect(report).toContain('call #2 `invoke` never returned.');
  });

  it('renders a passing session without any failure', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    f.end();
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text.split('\n')[0]).toBe('# save a file in Notepad; PASS');
    expect(text).toContain('- Verdict: **PASS**: its one call succeeded');
    expect(text).toContain('- Failing step: none (no step declared)');
    expect(text).not.toContain('## Failing call');
    expect(text).toContain('## Failures\n\nNone.');
  });

  it('says a failed call came from no failed step when steps were declared and all passed', async () => {
    const f = FixtureSession.create(temp.dir);
    f.step('open Notepad', 'passed');
    f.call({ tool: 'wait-for', args: { name: 'Saved', timeoutMs: 5000 }, status: 'pending' });
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text).toContain('; FAIL\n');
    expect(text).toContain('- Failing step: none (no declared step failed)\n');
    expect(text).toMatch(/\nCall #1 `wait-for` at \S+ never returned\.\n/);
    expect(text).toContain('## Failures\n\nNone.');
  });

  it('shows recording losses: violations, dropped payloads, record failures, limits, emergency stop', async () => {
    const f = FixtureSession.create(temp.dir);
    f.call({ ...calls.findSave(), violations: [{ path: '/result/found', message: 'must be boolean' }] });
    f.call({ tool: 'capture', payloadDropped: true });
    f.event('record-failure', { stage: 'commit', message: 'SQLITE_FULL', lost: 2 });
    f.event('truncation', { omittedCalls: 1, omittedBytes: 9 * 1024 * 1024 });
    f.event('artifact-limit', { omittedImages: 4, omittedBytes: 600 * 1024 * 1024 });
    f.event('emergency-stop', { code: 'emergency-stopped', detail: 'hotkey' });
    f.end();
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text).toContain(
      [
        '## Recording',
        '',
        '- Contract violations: 1',
        '- Payloads dropped past the log limit: 1 (1 calls, 9 MB)',
        '- Recording failures: 1 (2 calls lost)',
        '- Images not kept past the artifact limit: 4 (600 MB)',
        "- An operator's emergency stop was latched during this session.",
      ].join('\n'),
    );
    expect(text.split('\n')[0]).toBe('# save a file in Notepad; FAIL');
  });

  it('keeps Markdown and HTML characters as they are (no HTML escaping)', async () => {
    const f = FixtureSession.create(temp.dir, { scenario: `<Save> & "quit" 'now'` });
    f.call(calls.findSave());
    const text = await renderFailureSummary(await summaryOfSession(f.dir));
    expect(text.split('\n')[0]).toBe(`# <Save> & "quit" 'now'; PASS`);
    expect(text).not.toContain('&amp;');
    expect(text).not.toContain('&lt;');
  });
});

describe('bug-report.md', () => {
  it('fills the MCEC bug-report headings in order and ends with the zip to attach', async () => {
    const { f, shot } = await notepadSession();
    const summary = await summaryOfSession(f.dir);
    const text = await renderBugReport(summary);
    const headings = text.match(/^### .+$/gm);
    expect(headings).toEqual([
      '### Describe the bug',
      '### To Reproduce',
      '### Expected behavior',
      '### Screenshots',
      '### Version Information',
      '### Snippets from the log',
      '### Desktop',
      '### Agent evidence (if this is agent / MCP behavior)',
      '### Additional context',
    ]);
    expect(text).toContain('call #7 `capture` failed with `frame-all-black` (capture-blank).');
    expect(text).toContain('- OS: Windows 11 Pro 10.0.26100 (x64)');
    expect(text).toContain('- Display DISPLAY1 (primary): 1920x1080 at x=0 y=0, 144 dpi');
    expect(text).toContain('- Display DISPLAY2: 2560x1440 at x=1920 y=0, 96 dpi');
    expect(text).toContain(`800x600: \`${shot}\``);
    // Untold, every file a bundle can hold is named (src/contract/bundle-files.ts is their list); [] none.
    expect(text).toContain('The attached bundle holds `failure-summary.md` (');
    expect(await renderBugReport(summary, { bundleFiles: [] })).not.toContain('The attached bundle holds');
    const files = [
      { name: 'tool-calls.jsonl', holds: 'the messages' },
      { name: 'session.json', holds: 'the facts' },
      { name: 'failure-summary.md', holds: 'what failed' },
    ];
    expect(await renderBugReport(summary, { bundleFiles: files })).toContain(
      'The attached bundle holds `tool-calls.jsonl` (the messages), `session.json` (the facts) and `failure-summary.md` (what failed).',
    );
    expect(text.trimEnd().endsWith('Attach: **20261202-101500-5f19c9c01a3f.zip**')).toBe(true);
    const named = await renderBugReport(summary, { bundleName: 'evidence.zip' });
    expect(named.trimEnd().endsWith('Attach: **evidence.zip**')).toBe(true);
  });
});

describe('the 65,536-character cap', () => {
  it('shortens timeline and details of a huge session and says so', async () => {
    const f = FixtureSession.create(temp.dir, { scenario: `scenario ${'s'.repeat(200_000)}` });
    const longDetail = `detail ${'d'.repeat(20_000)}`;
    // 10,000 calls, a third of them failures with 2,000-character details (every 100th one 20,000).
    f.manyCalls(10_000, (i) =>
      i % 3 === 0
        ? {
            tool: `tool-${i % 50}`,
            args: { text: 'x'.repeat(500) },
            error: {
              code: `code-${i}`,
              category: 'internal',
              detail: i % 100 === 0 ? longDetail : longDetail.slice(0, 2000),
            },
          }
        : calls.findSave(),
    );
    for (let i = 0; i < 600; i++)
      f.step(`step ${i} ${'n'.repeat(300)}`, i % 2 ? 'passed' : 'failed', longDetail.slice(0, 3000));
    f.manyCalls(300, (i) => ({
      tool: 'query',
      result: { nodeCount: 1 },
      warnings: [{ code: `warn-${i}`, detail: longDetail }],
    }));
    f.call({
      tool: 'capture',
      error: { code: 'frame-all-black', category: 'capture-blank', detail: longDetail },
    });
    const summary = await summaryOfSession(f.dir, { timelineLength: 10_000, maxFailures: 5000 });
    for (const render of [renderFailureSummary, renderBugReport]) {
      const text = await render(summary);
      expect(text.length).toBeLessThanOrEqual(MAX_DOCUMENT_CHARS);
      expect(text).toMatch(/timeline shortened to \d+ calls to fit 65,536 characters/);
      expect(text).toContain('frame-all-black');
      expect(text).not.toContain('d'.repeat(3000));
    }
    const summaryText = await renderFailureSummary(summary);
    expect(summaryText.split('\n')[0]).toMatch(/^# scenario s+…; FAIL$/);
    expect(summaryText).toMatch(/- (\d+) earlier calls omitted/);
    expect(summaryText).toContain('Next step: restore or foreground the window');
  });

  it('hard-clips a document that cannot be shortened, with a note', async () => {
    const dir = tempDir('tpl-', temp.dir);
    fs.writeFileSync(
      path.join(dir, 'failure-summary.md.hbs'),
      `# {{title}}\n${'static text '.repeat(10_000)}`,
    );
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    const text = await renderFailureSummary(await summaryOfSession(f.dir), { templatesDir: dir });
    expect(text.length).toBeLessThanOrEqual(MAX_DOCUMENT_CHARS);
    expect(
      text
        .trimEnd()
        .endsWith(
          '> Note: this document was cut at 65,536 characters; the full record is in the session log.',
        ),
    ).toBe(true);
  });
});

describe('templates', () => {
  it('lets a templates dir override one template by file name, the other falling back', async () => {
    const dir = tempDir('tpl-', temp.dir);
    fs.writeFileSync(
      path.join(dir, 'failure-summary.md.hbs'),
      'CUSTOM {{verdict}} {{sessionId}} {{codeSpan failingCall.code}}\n',
    );
    const f = FixtureSession.create(temp.dir, { sessionId: 'custom000001' });
    f.call(calls.waitForTimeout());
    const summary = await summaryOfSession(f.dir);
    expect(await renderFailureSummary(summary, { templatesDir: dir })).toBe(
      'CUSTOM FAIL custom000001 `wait-condition-timeout`\n',
    );
    expect(await renderBugReport(summary, { templatesDir: dir })).toContain('### Describe the bug');
    // Editing the override is picked up (the compiled cache is keyed by the file's mtime and size).
    fs.writeFileSync(path.join(dir, 'failure-summary.md.hbs'), 'EDITED {{verdict}} and more\n');
    expect(await renderFailureSummary(summary, { templatesDir: dir })).toBe('EDITED FAIL and more\n');
  });

  it('fails clearly when a template names a field the summary lacks', async () => {
    const dir = tempDir('tpl-', temp.dir);
    fs.writeFileSync(path.join(dir, 'bug-report.md.hbs'), 'Bug in {{sessionId}}: {{noSuchField}}\n');
    const f = FixtureSession.create(temp.dir);
    f.call(calls.findSave());
    const summary = await summaryOfSession(f.dir);
    await expect(renderBugReport(summary, { templatesDir: dir })).rejects.toThrow(
      /template .*bug-report\.md\.hbs: "noSuchField" not defined/,
    );
    fs.writeFileSync(path.join(dir, 'bug-report.md.hbs'), '{{failingCall.nope}}\n');
    // A missing field inside a null object is still missing (strict), not silently empty.
    await expect(renderBugReport(summary, { templatesDir: dir })).rejects.toThrow(/bug-report\.md\.hbs/);
  });

  it('rejects a templates dir that does not exist', async () => {
    const f = FixtureSession.create(temp.dir);
    const summary = await summaryOfSession(f.dir);
    await expect(
      renderFailureSummary(summary, { templatesDir: path.join(temp.dir, 'nope') }),
    ).rejects.toThrow(/templates dir .*nope does not exist/);
  });

  it('renders the same text whatever the local time zone', async () => {
    const { f } = await notepadSession();
    const saved = process.env.TZ;
    try {
      process.env.TZ = 'UTC';
      const utc = await renderFailureSummary(await summaryOfSession(f.dir));
      process.env.TZ = 'America/New_York';
      const ny = await renderFailureSummary(await summaryOfSession(f.dir));
      expect(ny).toBe(utc);
      expect(ny).toContain('started 2026-12-02T10:15:00.000Z');
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});
