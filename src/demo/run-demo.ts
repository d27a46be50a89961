/**
 * `npm run demo` as a library: the scripted agent drives a simulated MCEC through the recorder, then the
 * session is summarized, bundled and the bundle verified. The CLI (src/cli/demo.ts) only prints the result.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildBundle } from '../bundle/build.js';
import { type VerifyResult, verifyBundle } from '../bundle/verify.js';
import { writeCatalogSidecars } from '../fleet/catalog-sidecars.js';
import { makeDirectory } from '../paths/disk-errors.js';
import { resolveSessionsDir } from '../paths/sessions-dir.js';
import { checkRecorderOptions } from '../record/options.js';
import { createRecorder } from '../record/recorder.js';
import type { RecorderOptions, SessionCounts } from '../record/types.js';
import type { Verdict } from '../report/types.js';
import { writeFailureSummary } from '../sessions/summarize.js';
import { createSimulator, type Simulator } from '../sim/index.js';
import { expectMethods, expectOptions, expectString } from '../util/expect.js';
import { makeTempDir, removeBestEffort } from '../util/temp-files.js';
import { runScriptedAgent, type ScriptedRun } from './scripted-agent.js';

/** The scenario name stored with the demo's session (the summary's title). */
export const DEMO_SCENARIO = 'demo: save a file in Notepad, then check the video player';

/** Options of runDemo. */
export interface DemoOptions {
  /** Root of the recorded session dirs (default `$MCEC_SESSIONS_DIR`, else `./sessions`). */
  sessionsDir?: string;
  /** The server to drive (default: a fresh simulator whose own artifacts go to a temp dir, removed after). */
  simulator?: Simulator;
  /** Where the recorder's one-time failure notices go (default process.stderr). */
  stderr?: (line: string) => void;
  /** Send the session live to an OpenTelemetry collector (the recorder's `otlp` option). */
  otlp?: RecorderOptions['otlp'];
}

/** What the demo produced. */
export interface DemoResult {
  sessionId: string;
  /** Absolute path of the recorded session dir (session.sqlite, artifacts/, failure-summary.md). */
  sessionDir: string;
  /** Absolute path of failure-summary.md inside the session dir. */
  failureSummary: string;
  /** Its Markdown text. */
  summaryText: string;
  /** Absolute path of the bug bundle (a zip beside the session dir). */
  bundle: string;
  /** Absolute path of report.html in the session dir (the zip holds the same page). */
  reportHtml: string;
  bundleBytes: number;
  bundleFiles: number;
  /** The recorded session's verdict: FAIL by design. */
  verdict: Verdict;
  verify: VerifyResult;
  /** What the recorder counted for the session. */
  counts: SessionCounts;
  /** What the scripted agent did. */
  run: ScriptedRun;
}

/** The default sessions root, as the recorder and mcec-bundle resolve it. */
export function defaultSessionsDir(): string {
  return resolveSessionsDir();
}

/**
 * runDemo's options, checked before anything is made: a TypeError or RangeError naming the first bad one.
 * What goes on to the recorder (`sessionsDir`, `stderr`, `otlp` and its fields) is checked by the recorder's
 * own check, under the same names, before the sessions dir is made.
 */
function checkDemoOptions(value: unknown): void {
  const o = expectOptions(value);
  expectString(o.sessionsDir, 'options.sessionsDir', { nonEmpty: true });
  if (o.simulator !== undefined) expectMethods(o.simulator, 'options.simulator', ['handle', 'callTool']);
  checkRecorderOptions({ sessionsDir: o.sessionsDir, stderr: o.stderr, otlp: o.otlp });
}

/** Run the scripted session through the recorder, write failure-summary.md and report.html, build and verify the bundle. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  checkDemoOptions(options);
  const sessionsDir = path.resolve(options.sessionsDir ?? defaultSessionsDir());
  makeDirectory(sessionsDir); // its error names the cause (read-only, permission, a file in the way)
  const ownSimDir = options.simulator ? null : makeTempDir('mcec-demo-sim');
  try {
    const sim = options.simulator ?? createSimulator({ sessionsRoot: ownSimDir! });
    // Its session gets its catalog sidecar at close (src/record/README.md "Closed sessions").
    const recorder = createRecorder(
      {
        sessionsDir,
        scenario: DEMO_SCENARIO,
        ...(options.stderr ? { stderr: options.stderr } : {}),
        ...(options.otlp !== undefined ? { otlp: options.otlp } : {}),
      },
      writeCatalogSidecars,
    );
    let run: ScriptedRun;
    let sessionDir: string;
    let counts: SessionCounts;
    try {
      // An MCP client's handshake first: the recorder learns the server's name and version from it.
      const initialize = {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'mcec-recorder-demo', version: '1' },
        },
      };
      recorder.recordExchange(initialize, await sim.handle(initialize));

      const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) =>
        sim.callTool(tool, args),
      );
      run = await runScriptedAgent(dispatch, recorder);
      if (!run.sessionId) throw new Error('the scripted agent could not open an MCEC session');
      await recorder.end(run.sessionId, { passed: run.passed, reason: run.reason });
      await recorder.flush();
      const info = recorder.session(run.sessionId);
      if (!info) throw new Error(`the recorder has no session ${run.sessionId}`);
      sessionDir = info.dir;
      counts = info.counts;
    } finally {
      await recorder.close();
    }

    const failureSummary = await writeFailureSummary(sessionDir);
    const bundle = await buildBundle(sessionDir, { reportHtmlInSessionDir: true });
    if (!bundle.reportHtml) throw new Error(`report.html was not written: ${bundle.warnings.join('; ')}`);
    const verify = await verifyBundle(bundle.bundle);
    return {
      sessionId: run.sessionId,
      sessionDir: path.resolve(sessionDir),
      failureSummary,
      summaryText: fs.readFileSync(failureSummary, 'utf8'),
      bundle: bundle.bundle,
      reportHtml: bundle.reportHtml,
      bundleBytes: bundle.bytes,
      bundleFiles: bundle.files,
      verdict: bundle.verdict,
      verify,
      counts,
      run,
    };
  } finally {
    if (ownSimDir) removeBestEffort(ownSimDir);
  }
}
