/**
 * A fingerprint rules file is input from another machine too: `fingerprint-rules.json` comes with the
 * sessions dir (a CI artifact, a colleague's copy) and `triage` and the MCP server read it unasked. A regex
 * that backtracks without end, a FIFO under the file's name, a file of megabytes or 100,000 rules must each
 * be a clear error, never a triage (or an MCP server) that hangs. A generated fleet, the built CLI, the SDK
 * client over stdio.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFleet } from '../../bench/lib/fleet.js';
import { stdioClient } from '../mcp-server/helpers.js';
import { runNodeSync } from '../support/programs.js';
import { CLI, cli, scratchRoot } from './helpers.js';

// The built module: its thread's code is dist/fleet/rule-regex-entry.js (the TypeScript sources have no .js).
type RegexModule = typeof import('../../src/fleet/rule-regex.js');
const { RegexThread, RegexTimeoutError } = (await import(
  path.resolve(import.meta.dirname, '../../dist/fleet/rule-regex.js')
)) as RegexModule;

/** Exponential on any text without an X: run on the main thread, it never returns. */
const CATASTROPHIC = '^(.*.*)*X$';
const DAY_MS = 86_400_000;

function rulesFile(rules: unknown[]): string {
  return JSON.stringify({ version: 1, rules });
}

/** A sane regex that matches every generated failure: triage groups them all under `named`. */
const SANE_RULES = rulesFile([
  { name: 'any', match: { detail: { regex: 'pixels|elements? (match|\\S+ went away)' } }, set: 'named' },
]);

describe('a hostile fingerprint rules file', () => {
  const root = scratchRoot();
  const sessionsDir = path.join(root, 'sessions');
  beforeAll(() => {
    generateFleet(sessionsDir, {
      sessions: 20,
      seed: 5,
      start: new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS - 2 * DAY_MS),
    });
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  const own = () => path.join(sessionsDir, 'fingerprint-rules.json');

  // Before, each of these hung for ever: the child is killed after a minute and the run fails.
  it('a regex that backtracks without end: triage exits 1 naming the rule, a sane regex still groups', () => {
    fs.writeFileSync(
      own(),
      rulesFile([{ name: 'slow', match: { detail: { regex: CATASTROPHIC } }, set: 'slow' }]),
    );
    const res = runNodeSync([CLI, 'triage', '--sessions', sessionsDir], { timeoutMs: 60_000 });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(
      /fingerprint rule 1 \("slow"\): its "detail" regex ran over 5 s on \d+ values?: /,
    );
    fs.writeFileSync(own(), SANE_RULES);
    const ok = cli(['triage', '--json', '--sessions', sessionsDir]);
    expect(ok.code, ok.stderr).toBe(0);
    const groups = (JSON.parse(ok.stdout) as { groups: Array<{ fingerprint: string }> }).groups;
    expect(groups.map((g) => g.fingerprint)).toEqual(['named']);
    fs.rmSync(own());
  });

  it('the MCP server answers the triage tool with an error naming the rule, serving other tools meanwhile', async () => {
    fs.writeFileSync(
      own(),
      rulesFile([
        { match: { tool: 'capture' }, set: 'x' },
        { match: { detail: { regex: CATASTROPHIC } }, set: 'slow' },
      ]),
    );
    const { client, close } = await stdioClient(sessionsDir);
    try {
      type Answer = { isError?: boolean; content: Array<{ text: string }> };
      const answered: string[] = [];
      const triaged = (
        client.callTool({ name: 'triage', arguments: {} }, undefined, { timeout: 60_000 }) as Promise<Answer>
      ).finally(() => answered.push('triage'));
      // Asked after triage: its regex never ends, so triage answers at its 5 s budget; the server's event
      // loop is free meanwhile (the regex's thread is awaited), so the listing comes back first.
      const listed = (
        client.callTool({ name: 'list_sessions', arguments: { limit: 1 } }) as Promise<Answer>
      ).finally(() => answered.push('list_sessions'));
      const [res, list] = await Promise.all([triaged, listed]);
      expect(res.isError).toBe(true);
      expect(res.content[0]!.text).toMatch(/fingerprint rule 2: its "detail" regex ran over 5 s/);
      expect(list.isError).toBeFalsy();
      expect(answered).toEqual(['list_sessions', 'triage']);
      // A sane regex groups through the same (awaited) path.
      fs.writeFileSync(own(), SANE_RULES);
      const ok = (await client.callTool({ name: 'triage', arguments: {} })) as Answer & {
        structuredContent?: { report: { groups: Array<{ fingerprint: string }> } };
      };
      expect(ok.isError, ok.content[0]?.text).toBeFalsy();
      expect(ok.structuredContent!.report.groups.map((g) => g.fingerprint)).toEqual(['named']);
    } finally {
      await close();
      fs.rmSync(own());
    }
  }, 120_000);

  it.skipIf(process.platform === 'win32')("a FIFO under the file's name is an error, not a wait", () => {
    execFileSync('mkfifo', [own()]);
    try {
      const res = runNodeSync([CLI, 'triage', '--sessions', sessionsDir], { timeoutMs: 60_000 });
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toContain('fingerprint-rules.json: not a regular file');
    } finally {
      fs.rmSync(own());
    }
  });

  it('a symlink in the sessions dir is not followed; --rules FILE of 2 MiB or 1,001 rules is bad usage', () => {
    const elsewhere = path.join(root, 'elsewhere.json');
    fs.writeFileSync(elsewhere, rulesFile([]));
    fs.symlinkSync(elsewhere, own());
    const linked = cli(['triage', '--sessions', sessionsDir]);
    expect(linked.code).toBe(1);
    expect(linked.stderr).toContain('fingerprint-rules.json: not a regular file');
    fs.rmSync(own());
    const big = path.join(root, 'big.json');
    fs.writeFileSync(big, `${rulesFile([])}${' '.repeat(2 * 1024 * 1024)}`);
    const tooBig = cli(['triage', '--rules', big, '--sessions', sessionsDir]);
    expect(tooBig.code).toBe(2);
    expect(tooBig.stderr).toMatch(/--rules .*big\.json: over 1048576 bytes/);
    const many = path.join(root, 'many.json');
    fs.writeFileSync(
      many,
      rulesFile(Array.from({ length: 1001 }, (_, i) => ({ match: { code: `c${i}` }, set: `s${i}` }))),
    );
    const tooMany = cli(['triage', '--rules', many, '--sessions', sessionsDir]);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toContain('at most 1000 rules (1001 given)');
  });

  it('RegexThread: a regex that never ends is stopped at the budget; the next batch runs on a new thread', () => {
    const thread = new RegexThread(300, 60_000);
    try {
      expect(thread.testAll('went away', ['The element went away', 'no'])).toEqual([true, false]);
      expect(() => thread.testAll(CATASTROPHIC, ['a'.repeat(100)])).toThrow(RegexTimeoutError);
      expect(thread.testAll('^A+$', ['aaa', 'ab'])).toEqual([true, false]);
    } finally {
      thread.close();
    }
  });

  it('RegexThread: batches that each stay under the budget stop once they take the total budget together', () => {
    // Each batch takes well under a second here, against 10 s per batch and 3 s in all: without the total,
    // this loop never ends (the test's timeout is the check).
    const slow = '^(a|a)*$';
    const value = `${'a'.repeat(23)}b`;
    const thread = new RegexThread(10_000, 3_000);
    try {
      expect(() => {
        for (;;) thread.testAll(slow, [value]);
      }).toThrow(/ran past the 3 s all user regexes may take together/);
    } finally {
      thread.close();
    }
  });
});
