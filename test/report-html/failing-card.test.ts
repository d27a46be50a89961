/**
 * report.html's failing-call card says what failure-summary.md says (issue 29 #8), through the built CLI: the
 * target window's facts (display, dpi), for a call the proxy failed the target URL and a next step, and of two
 * identical failures the first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

let work: string;
let sessions: string;

beforeAll(() => {
  work = tempDir('mcec-failing-card-');
  sessions = path.join(work, 'sessions');
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The failing card of a written report.html, its tags stripped (entities as written). */
async function card(sessionId: string): Promise<string> {
  const r = await runNode([BUNDLE_CLI, 'report', sessionId, '-s', sessions]);
  expect(r.code, r.stderr).toBe(0);
  const html = fs.readFileSync(r.stdout.trim(), 'utf8');
  const m = /<article class="card failing-card" id="failing">([\s\S]*?)<\/article>/.exec(html);
  expect(m, 'a failing card').not.toBeNull();
  return m![1]!.replace(/<br>/g, '\n').replace(/<[^>]+>/g, '');
}

async function summaryOf(sessionId: string): Promise<string> {
  const r = await runNode([BUNDLE_CLI, 'show', sessionId, '-s', sessions]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe("report.html's failing-call card", () => {
  it('names the first of two identical failures, with the window facts the summary gives', async () => {
    const s = FixtureSession.create(sessions, { sessionId: 'ca4d00000001' });
    s.call(calls.displays());
    s.call(calls.findSave());
    const miss = {
      tool: 'find',
      args: { window: 'Save As', name: 'Sav', controlType: 'Button' },
      error: { code: 'element-not-found', category: 'no-target', detail: 'no element matched name=Sav' },
    };
    s.call(miss); // #3
    s.call(miss); // #4: the agent retried it unchanged
    s.end();
    s.close();
    const text = await card('ca4d00000001');
    expect(text).toMatch(/Failing call #3 find/);
    const summary = await summaryOf('ca4d00000001');
    expect(summary).toMatch(/## Failing call\n\nCall #3 `find`/);
    // Every window fact the summary lists is on the card, display and dpi included.
    const facts = [...summary.matchAll(/^- (Title|Class|Process|Handle|Rect|Display|Elevated): (.+)$/gm)];
    expect(facts.map((f) => f[1])).toContain('Display');
    expect(summary).toMatch(/- Display: .* at \d+ dpi/);
    const decoded = (t: string) =>
      t
        .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
        .replaceAll('&amp;', '&');
    for (const [, label, value] of facts) expect(decoded(text)).toContain(`${label}: ${value}`);
  });

  it('for a call the proxy could not deliver: the target URL and what to do', async () => {
    const s = FixtureSession.create(sessions, { sessionId: 'ca4d00000002' });
    s.call(calls.displays());
    s.call({
      tool: 'windows',
      status: 'fault',
      transport: 'http',
      error: {
        code: 'proxy-error',
        category: 'internal',
        detail: 'proxy-error 502: target http://127.0.0.1:5151/mcp unreachable: ECONNREFUSED',
      },
    });
    s.end();
    s.close();
    const text = await card('ca4d00000002');
    expect(text).toContain('http://127.0.0.1:5151/mcp unreachable: ECONNREFUSED');
    expect(text).toMatch(
      /Next step: the proxy could not reach its target .*check that MCEC \(or the server\) is running and listening at the target URL/,
    );
    expect(await summaryOf('ca4d00000002')).toMatch(/Next step: the proxy could not reach its target/);
  });
});
