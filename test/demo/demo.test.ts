// Session and artifact names are UTC: run this suite (and the demos it spawns) in a zone far from it.
process.env.TZ = 'Asia/Kolkata';

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBundle } from '../../src/bundle/verify.js';
import { DEMO_STEPS, runScriptedAgent } from '../../src/demo/scripted-agent.js';
import { createSimulator } from '../../src/sim/index.js';
import { ENTRY_SIDECAR_FILE } from '../../src/store/entry-sidecar.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { type ChildRun, collectOutput, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const TSX = path.join(root, 'node_modules/tsx/dist/cli.mjs');
const DEMO_SRC = path.join(root, 'src/cli/demo.ts');
const DEMO_DIST = path.join(root, 'dist/cli/demo.js');
const BUNDLE_CLI = path.join(root, 'dist/cli/mcec-bundle.js');

/** Run a program to its end in this suite's zone (or kill it after `timeoutMs`, default 60 s). */
function run(
  args: string[],
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ChildRun> {
  return runNode(args, { timeoutMs: 60_000, ...options, env: { TZ: 'Asia/Kolkata', ...options.env } });
}

/** The demo's output with what may change between runs (times, ids, durations, the temp dir) replaced. */
function normalize(text: string, sessionsDir: string): string {
  return text
    .split(sessionsDir)
    .join('<sessions>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>')
    .replace(/\b\d{8}-\d{6}(?:\d{3})?\b/g, '<stamp>')
    .replace(/\b[0-9a-f]{12}\b/g, '<id>')
    .replace(/ \((?:<1|\d+(?:\.\d+)?) (?:ms|s)\)/g, '')
    .replace(/; (?:<1|\d+(?:\.\d+)?) (?:ms|s)$/gm, '');
}

interface DemoJson {
  sessionId: string;
  sessionDir: string;
  failureSummary: string;
  reportHtml: string;
  bundle: string;
  bundleFiles: number;
  verdict: string;
  verified: boolean;
  problems: string[];
  steps: Array<{ name: string; status: string; detail: string }>;
}

const tmp = tempDir('mcec-demo-test-');
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('npm run demo, end to end', () => {
  const jsonDir = path.join(tmp, 'json');
  const textDir = path.join(tmp, 'text');
  let jsonRun: ChildRun;
  let textRuns: ChildRun[];
  let out: DemoJson;

  beforeAll(async () => {
    // The JSON run goes through tsx on the source, as `npm run demo` does; the two human runs use the build
    // and find their sessions dir in MCEC_SESSIONS_DIR.
    [jsonRun, ...textRuns] = await Promise.all([
      run([TSX, DEMO_SRC, '--sessions', jsonDir, '--json']),
      run([DEMO_DIST], { env: { MCEC_SESSIONS_DIR: textDir } }),
      run([DEMO_DIST], { env: { MCEC_SESSIONS_DIR: textDir } }),
    ]);
    expect(jsonRun.stderr).toBe('');
    expect(jsonRun.code).toBe(0);
    out = JSON.parse(jsonRun.stdout) as DemoJson;
  }, 120_000);

  it('prints the four paths, and they exist where they should', () => {
    expect(jsonRun.stdout.trim().split('\n')).toHaveLength(1);
    // Its --json has a schema, as every --json output does.
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    const schema = JSON.parse(fs.readFileSync(path.join(root, 'schema', 'demo-result.schema.json'), 'utf8'));
    const validate = ajv.compile(schema);
    expect(validate(out) ? [] : validate.errors).toEqual([]);
    expect(out.sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(path.dirname(out.sessionDir)).toBe(jsonDir);
    expect(path.basename(out.sessionDir)).toMatch(new RegExp(`^\\d{8}-\\d{6}-${out.sessionId}$`));
    expect(fs.existsSync(path.join(out.sessionDir, 'session.sqlite'))).toBe(true);
    // Its catalog sidecar, written by the recorder's closed-sessions handler (src/demo/run-demo.ts).
    expect(fs.statSync(path.join(out.sessionDir, ENTRY_SIDECAR_FILE)).isFile()).toBe(true);
    expect(out.failureSummary).toBe(path.join(out.sessionDir, 'failure-summary.md'));
    expect(fs.statSync(out.failureSummary).isFile()).toBe(true);
    expect(out.reportHtml).toBe(path.join(out.sessionDir, 'report.html'));
    expect(fs.readFileSync(out.reportHtml, 'utf8')).toMatch(/^<!doctype html>/);
    expect(out.bundle).toBe(`${out.sessionDir}.zip`);
    expect(fs.statSync(out.bundle).size).toBeGreaterThan(0);
    expect(out.verdict).toBe('FAIL');
    expect(out.verified).toBe(true);
    expect(out.problems).toEqual([]);
    expect(out.steps.map((s) => [s.name, s.status])).toEqual([
      ['look around', 'passed'],
      ['open notepad', 'passed'],
      ['save the file', 'passed'],
      ['check the player', 'failed'],
    ]);
  });

  it('writes a bundle that verifies, in the library and with mcec-bundle verify', async () => {
    const result = await verifyBundle(out.bundle);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    const cli = await run([BUNDLE_CLI, 'verify', out.bundle]);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
  });

  it('records the session through the recorder: the calls, steps, images and the explicit verdict', () => {
    const reader = SessionReader.open(out.sessionDir);
    try {
      const session = reader.session();
      expect(session.session_id).toBe(out.sessionId);
      expect(session.status).toBe('ended');
      expect(session.passed).toBe(0);
      expect(session.end_reason).toContain('frame-all-black');
      expect(JSON.parse(session.environment ?? '{}').server?.name).toBe('MCEC');

      const calls = [...reader.calls()];
      expect(calls.map((c) => `${c.tool}:${c.status}${c.error_code ? `:${c.error_code}` : ''}`)).toEqual([
        'session-start:ok',
        'windows:ok',
        'displays:ok',
        'capture:ok',
        'query:ok',
        'find:ok',
        'query:ok',
        'find:failed:selector-matched-3',
        'find:ok',
        'invoke:ok',
        'capture:failed:frame-all-black',
        'session-end:ok',
      ]);
      // What was recorded is the MCP CallToolResult shape: the response keeps its image block's summary.
      const shot = calls[3]!;
      expect(JSON.parse(shot.response ?? '{}').content[0]).toMatchObject({
        type: 'image',
        mimeType: 'image/png',
      });

      const images = reader.artifacts();
      const bySeq = (seq: number) => images.filter((a) => a.call_seq === seq).map((a) => a.role);
      expect(bySeq(4)).toContain('image-block');
      expect(bySeq(11)).toEqual(['partialResult']);
      for (const a of images) {
        if (a.path) expect(fs.existsSync(path.join(out.sessionDir, a.path))).toBe(true);
      }
      expect(reader.warnings().map((w) => w.code)).toEqual(['tree-truncated']);
      const steps = reader.events('step').map((e) => JSON.parse(e.detail ?? '{}').name);
      expect(steps).toEqual([...DEMO_STEPS]);
      const ends = reader.events('session-end').map((e) => JSON.parse(e.detail ?? '{}'));
      expect(ends.map((e) => e.via)).toEqual(['session-end', 'end']);
      expect(ends[1]).toMatchObject({ passed: false });
    } finally {
      reader.close();
    }
  });

  it('writes a summary that names the failing call, its recovery, and the recovered selector', () => {
    const text = fs.readFileSync(out.failureSummary, 'utf8');
    expect(text.split('\n')[0]).toMatch(/; FAIL$/);
    expect(text).toContain('- Failing step: **check the player**\n');
    expect(text).toMatch(
      /\nCall #11 `capture` at .* failed with `frame-all-black` \(capture-blank\):\n\n> Captured frame is blank/,
    );
    expect(text).toContain(
      'Next step: restore or foreground the window and capture again; the suspect image is in partialResult.',
    );
    expect(text).toContain('```json\n{"window":"Video Player"}\n```');
    expect(text).toContain(
      [
        "Its target window, as call #11's partialResult showed it:",
        '',
        "- Title: 'Video Player'",
        '- Class: ApplicationFrameWindow',
        '- Process: Video.UI (pid 9044)',
      ].join('\n'),
    );
    expect(text).toContain('- Display: DISPLAY2 at 120 dpi (scale 1.25); 1280x1024 at x=1920 y=0');
    // The detail sentence is said once, in the failing call's section.
    expect(text.split('Captured frame is blank').length - 1).toBe(1);
    expect(text).toMatch(/- #8 `find` `selector-matched-3` \(ambiguous-selector\), recovered: /);
    expect(text).toMatch(/- #11 `capture` `frame-all-black` \(capture-blank\), \*\*not recovered\*\*/);
    expect(text).toContain('- Calls: 12; failures: 2 (1 recovered); warnings: 1; violations: 0');
    expect(text).toContain('## Image from the failing call');
    expect(text).toContain('- `tree-truncated` x1');
    // The suspect image the summary links is a real file in the session dir.
    const suspect = /!\[Video Player, call #11 capture\]\(([^)]+)\)/.exec(text)?.[1];
    expect(suspect).toMatch(/^artifacts\/capture-\d{8}-\d{9}-\d+\.png$/);
    expect(fs.existsSync(path.join(out.sessionDir, suspect!))).toBe(true);
  });

  it('prints the paths and the head of the summary for people', () => {
    const [first] = textRuns;
    expect(first!.stderr).toBe('');
    expect(first!.code).toBe(0);
    const text = first!.stdout;
    expect(text).toMatch(new RegExp(`^Session dir: +${textDir}/\\d{8}-\\d{6}-[0-9a-f]{12}$`, 'm'));
    expect(text).toMatch(/^Failure summary: +\S+failure-summary\.md$/m);
    expect(text).toMatch(/^Bug bundle: +\S+\.zip$/m);
    expect(text).toMatch(/^Report page: +\S+\/report\.html$/m);
    const bundle = /^Bug bundle: +(\S+)$/m.exec(text)![1]!;
    expect(fs.existsSync(bundle)).toBe(true);
    expect(text).toContain('First lines of failure-summary.md:');
    expect(text).toMatch(/^ {2}# demo: .*; FAIL$/m);
    expect(text).toMatch(/^ {2}Call #11 `capture` at .* failed with `frame-all-black`/m);
    expect(text).toContain('  Next step: restore or foreground the window and capture again');
    expect(text).toContain('  - Display: DISPLAY2 at 120 dpi');
    expect(text).toMatch(/#8 +find +FAILED +selector-matched-3 \(ambiguous-selector\)/);
    expect(text).toMatch(/#9 +find +ok +found Save \(automationId 1\)/);
  });

  it('gives the same output on every run apart from times and ids', () => {
    const [a, b] = textRuns.map((r) => normalize(r.stdout, textDir));
    expect(a).toContain('<sessions>/<stamp>-<id>.zip');
    expect(a).not.toMatch(/\d{2}:\d{2}:\d{2}/);
    expect(b).toBe(a);
    // Two runs, two sessions, two bundles side by side.
    expect(fs.readdirSync(textDir).filter((n) => n.endsWith('.zip'))).toHaveLength(2);
  });
});

describe('the demo CLI', () => {
  it('explains its options with --help', async () => {
    const r = await run([DEMO_DIST, '--help']);
    expect(r.code).toBe(0);
    for (const option of ['--sessions', '--keep-running', '--serve', '--listen', '--quiet', '--json']) {
      expect(r.stdout).toContain(option);
    }
    expect(r.stdout).toContain('MCEC_SESSIONS_DIR');
  });

  it('exits 2 on bad usage', async () => {
    const results = await Promise.all([
      run([DEMO_DIST, '--no-such-option']),
      run([DEMO_DIST, '--quiet', '--json']),
      run([DEMO_DIST, '--serve', '--listen', 'not-an-address']),
      run([DEMO_DIST, 'stray-argument']),
    ]);
    for (const r of results) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('--help');
    }
  });

  it('exits 1 in one line naming the sessions dir when it is a file, before the demo runs', async () => {
    const file = path.join(tmp, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    const r = await run([DEMO_DIST, '--sessions', file, '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `demo: the sessions dir ${file} (--sessions) is a file, not a directory: give --sessions a directory (it is created when missing) or set MCEC_SESSIONS_DIR`,
    );
  });

  it('prints only the four paths with --quiet, then serves a simulator over HTTP with --serve until SIGINT', async () => {
    const dir = path.join(tmp, 'serve');
    const child = spawn(
      process.execPath,
      [DEMO_DIST, '--sessions', dir, '--quiet', '--serve', '--listen', '127.0.0.1:0'],
      {
        cwd: root,
      },
    );
    const output = collectOutput(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      let url: string | undefined;
      // Wait for the whole serving notice, not just its first line: stderr arrives in chunks.
      const ready = () => url !== undefined && output.stderr.includes(`--target ${url}`);
      while (!ready() && Date.now() < deadline) {
        url = /Simulator listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(output.stderr)?.[1];
        if (!ready()) await new Promise((r) => setTimeout(r, 100));
      }
      expect(url, output.stderr).toBeDefined();
      // --quiet: stdout holds the four paths only; the serving instructions went to stderr.
      const lines = output.stdout.trim().split('\n');
      expect(lines).toHaveLength(4);
      expect(path.dirname(lines[0]!)).toBe(dir);
      expect(lines[1]).toBe(path.join(lines[0]!, 'failure-summary.md'));
      expect(lines[2]).toBe(`${lines[0]}.zip`);
      expect(lines[3]).toBe(path.join(lines[0]!, 'report.html'));
      for (const p of lines) expect(fs.existsSync(p)).toBe(true);
      expect(output.stderr).toContain(`--target ${url}`);
      const response = await fetch(url!, {
        method: 'POST',
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'find', arguments: { window: 'Save As', value: 'Save' } },
        }),
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        result: { content: Array<{ text: string }>; isError: boolean };
      };
      expect(body.result.isError).toBe(true);
      expect(JSON.parse(body.result.content.at(-1)!.text).error.code).toBe('selector-matched-3');
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });
});

describe('the scripted agent as a library', () => {
  it('drives any dispatch: recovers from the ambiguous selector, then fails on the black capture', async () => {
    const simDir = tempDir('sim-', tmp);
    const sim = createSimulator({ seed: 7, sessionsRoot: simDir });
    const declared: Array<[string | undefined, string, string]> = [];
    const result = await runScriptedAgent((tool, args) => sim.callTool(tool, args), {
      step: (sessionId, name, status) => declared.push([sessionId, name, status]),
    });
    expect(result.sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(result.passed).toBe(false);
    expect(result.reason).toBe(
      "check the player: capture of 'Video Player' failed: frame-all-black (capture-blank)",
    );
    expect(declared.map(([id]) => id)).toEqual(DEMO_STEPS.map(() => result.sessionId));
    const finds = result.calls.filter((c) => c.tool === 'find' && c.args.window === 'Save As');
    expect(finds.map((c) => c.code)).toEqual(['selector-matched-3', null]);
    expect(finds[1]!.args).toMatchObject({ by: 'automationid', value: '1' });
    expect(result.calls.every((c, i) => i === 0 || c.args.sessionId === result.sessionId)).toBe(true);
    expect(result.calls.at(-1)).toMatchObject({ tool: 'session-end', ok: true });
    // The simulator agrees that the session is over and the dialog was saved (closed).
    expect(sim.desktop.windows().some((w) => w.title === 'Save As')).toBe(false);
  });
});
