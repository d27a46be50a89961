/**
 * The package's entry points check what they are given, as better-sqlite3 does: a wrong type is a TypeError,
 * a value out of range a RangeError, each naming the option; nothing is created before the check.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as api from '../../src/index.js';
import { MAX_RECORD_BYTES_LIMIT } from '../../src/proxy/bounded.js';
import * as sim from '../../src/sim.js';
import { isOptionError } from '../../src/util/expect.js';
import { collectingRecorder } from '../proxy/helpers.js';
import { FixtureSession } from '../support/fixture-session.js';
import { tempDir } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Calls `fn` with a deliberately wrong argument (the type system would refuse it). */
const loose = <T>(fn: T) => fn as unknown as (...args: unknown[]) => unknown;

describe('createRecorder', () => {
  const create = loose(api.createRecorder);

  it.each([
    [
      'a sessionsDir that is no string',
      { sessionsDir: 42 },
      TypeError,
      'Expected options.sessionsDir to be a string',
    ],
    [
      'a sessionsDir that is an array',
      { sessionsDir: ['a'] },
      TypeError,
      'Expected options.sessionsDir to be a string',
    ],
    ['options that are no object', 'sessions', TypeError, 'Expected options to be an object'],
    [
      'a transport it does not know',
      { transport: 'tcp' },
      RangeError,
      'Expected options.transport to be one of "wrap", "http", "stdio"',
    ],
    [
      'a negative log budget',
      { limits: { maxLogBytes: -1 } },
      RangeError,
      'Expected options.limits.maxLogBytes to be an integer at least 0',
    ],
    [
      'a budget as text',
      { limits: { maxArtifactBytes: '5MB' } },
      TypeError,
      'Expected options.limits.maxArtifactBytes to be a number',
    ],
    [
      'a NaN commit interval',
      { commitIntervalMs: Number.NaN },
      TypeError,
      'Expected options.commitIntervalMs to be a number',
    ],
    [
      'an infinite commit interval',
      { commitIntervalMs: Number.POSITIVE_INFINITY },
      RangeError,
      'Expected options.commitIntervalMs to be a finite number',
    ],
    [
      'no room for a single log',
      { maxOpenLogs: 0 },
      RangeError,
      'Expected options.maxOpenLogs to be an integer at least 1',
    ],
    [
      'a redaction key that is a number',
      { redact: { keys: ['token', 7] } },
      TypeError,
      'Expected options.redact.keys[1] to be a string or a RegExp',
    ],
    [
      'a pattern given as text',
      { redact: { patterns: ['sk-.*'] } },
      TypeError,
      'Expected options.redact.patterns[0] to be a RegExp',
    ],
    [
      'a host path map entry without `to`',
      { hostPathMap: [{ from: 'C:\\mcec' }] },
      TypeError,
      'Expected options.hostPathMap[0].to to be a string',
    ],
    [
      'a stderr that is no function',
      { stderr: 'stderr' },
      TypeError,
      'Expected options.stderr to be a function',
    ],
    [
      'an unknown mask mode',
      { mask: { mode: 'later' } },
      RangeError,
      'Expected options.mask.mode to be one of "before-write", "on-export"',
    ],
    [
      'an OTLP export that is a string',
      { otlp: 'http://collector' },
      TypeError,
      'Expected options.otlp to be an object',
    ],
  ])('refuses %s', (_what, options, type, message) => {
    const sessionsDir = tempDir();
    dirs.push(sessionsDir);
    const withDir =
      typeof options === 'object' && !('sessionsDir' in options) ? { sessionsDir, ...options } : options;
    let thrown: unknown;
    try {
      create(withDir);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(type);
    expect((thrown as Error).message).toBe(message);
    // Nothing was opened or written before the check.
    expect(fs.readdirSync(sessionsDir)).toEqual([]);
  });

  it('takes good options, and undefined for any of them, as before', async () => {
    const sessionsDir = tempDir();
    dirs.push(sessionsDir);
    const recorder = api.createRecorder({
      sessionsDir,
      scenario: undefined,
      limits: { maxLogBytes: 0 },
      transport: 'http',
      redact: { keys: ['pin', /^x-/], patterns: [/sk-\w+/], secrets: ['hunter2'] },
      hostPathMap: [{ from: 'C:\\mcec', to: sessionsDir }],
      otlp: false,
      commitIntervalMs: 0,
    });
    await recorder.close();
  });

  it('has no test seam among its options: faults go through an internal entry point only', async () => {
    expect(Object.keys(api)).not.toContain('createRecorderOnClock');
    const sessionsDir = tempDir();
    dirs.push(sessionsDir);
    // A `faults` key is not an option: it is ignored, so a stage that would throw never runs it.
    let ran = false;
    const recorder = create({
      sessionsDir,
      faults: {
        beforeStage: () => {
          ran = true;
        },
      },
    }) as api.Recorder;
    const dispatch: api.Dispatch = async () => ({ sessionId: 'abcdef012345', ok: true, result: {} });
    await recorder.wrap(dispatch)('find', {});
    await recorder.close();
    expect(ran).toBe(false);
  });
});

describe('the other entry points', () => {
  it('replaySession names its bad argument and opens nothing', async () => {
    const replay = loose(api.replaySession);
    await expect(replay(42)).rejects.toThrow(new TypeError('Expected source to be a string'));
    await expect(replay('')).rejects.toThrow(new RangeError('Expected source to be a non-empty string'));
    await expect(replay('5f19', { order: 'random' })).rejects.toThrow(
      new RangeError('Expected options.order to be one of "any", "strict"'),
    );
    await expect(replay('5f19', { speed: -1 })).rejects.toThrow(
      new RangeError('Expected options.speed to be a finite number at least 0'),
    );
    await expect(replay('5f19', { http: { port: 70000 } })).rejects.toThrow(
      new RangeError('Expected options.http.port to be an integer between 0 and 65535'),
    );
    await expect(replay('5f19', { http: 'localhost' })).rejects.toThrow(
      new TypeError('Expected options.http to be an object'),
    );
  });

  it('the sessions functions, bundles and reports name a path that is no string', async () => {
    await expect(loose(api.summarizeSession)(undefined)).rejects.toThrow(
      new TypeError('Expected dir to be a string'),
    );
    await expect(loose(api.writeFailureSummary)('/tmp/x', { templatesDir: 3 })).rejects.toThrow(
      new TypeError('Expected options.templatesDir to be a string'),
    );
    await expect(loose(api.buildBundle)(null)).rejects.toThrow(
      new TypeError('Expected sessionDir to be a string'),
    );
    await expect(loose(api.buildBundle)('/tmp/x', { maxBytes: 0 })).rejects.toThrow(
      new RangeError('Expected options.maxBytes to be an integer at least 1'),
    );
    await expect(loose(api.verifyBundle)({})).rejects.toThrow(
      new TypeError('Expected zipPath to be a string'),
    );
    await expect(loose(api.writeReportHtml)(7)).rejects.toThrow(new TypeError('Expected dir to be a string'));
    await expect(loose(api.listSessionSummaries)('')).rejects.toThrow(
      new RangeError('Expected sessionsDir to be a non-empty string'),
    );
  });

  it('pruneSessions requires its age, and deletes nothing without it', async () => {
    const sessionsDir = tempDir();
    dirs.push(sessionsDir);
    fs.mkdirSync(path.join(sessionsDir, '20200101-000000-abcdef012345'));
    await expect(loose(api.pruneSessions)(sessionsDir, {})).rejects.toThrow(
      new TypeError('Expected options.olderThanMs to be a number'),
    );
    await expect(loose(api.pruneSessions)(sessionsDir, { olderThanMs: -5 })).rejects.toThrow(
      new RangeError('Expected options.olderThanMs to be a finite number at least 0'),
    );
    expect(fs.readdirSync(sessionsDir)).toEqual(['20200101-000000-abcdef012345']);
  });

  it('createRedactor checks its rules', () => {
    const create = loose(api.createRedactor);
    expect(() => create({ secrets: ['a', 1] })).toThrow(
      new TypeError('Expected options.secrets[1] to be a string'),
    );
    expect(() => create({ maxDepth: 0 })).toThrow(
      new RangeError('Expected options.maxDepth to be an integer at least 1'),
    );
    expect(() => create({ keys: 'password' })).toThrow(new TypeError('Expected options.keys to be an array'));
  });
});

/** An error class a check throws. */
type ErrorClass = new (...args: never[]) => Error;
/** One refusal: the entry point, what is wrong, the call, the class and the exact message it throws. */
type Refusal = [entry: string, bad: string, call: () => unknown, type: ErrorClass, message: string];

const httpProxy = loose(api.startHttpProxy);
const stdioProxy = loose(api.runStdioProxy);
/** Options a proxy takes, with `extra` over them (the recorder is never written: every case fails first). */
const httpOptions = (extra: Record<string, unknown>) => ({
  listen: { port: 0 },
  target: 'http://127.0.0.1:1/mcp',
  recorder: collectingRecorder(),
  ...extra,
});
const stdioOptions = (extra: Record<string, unknown>) => ({
  command: process.execPath,
  args: ['-e', ''],
  recorder: collectingRecorder(),
  ...extra,
});
const TIMER_RANGE = 'an integer between 1 and 86400000';

const refusals: Refusal[] = [
  ['startHttpProxy', 'no options', () => httpProxy(), TypeError, 'Expected options to be an object'],
  [
    'startHttpProxy',
    'a target that is a port',
    () => httpProxy(httpOptions({ target: 5151 })),
    TypeError,
    'Expected options.target to be a string',
  ],
  [
    'startHttpProxy',
    'a recorder without its methods',
    () => httpProxy(httpOptions({ recorder: {} })),
    TypeError,
    'Expected options.recorder.beginExchange to be a function',
  ],
  [
    'startHttpProxy',
    'no recorder',
    () => httpProxy(httpOptions({ recorder: undefined })),
    TypeError,
    'Expected options.recorder to be an object',
  ],
  [
    'startHttpProxy',
    'a listen host that is a number',
    () => httpProxy(httpOptions({ listen: { host: 127 } })),
    TypeError,
    'Expected options.listen.host to be a string',
  ],
  [
    'startHttpProxy',
    'a listen port above 65535',
    () => httpProxy(httpOptions({ listen: { port: 70000 } })),
    RangeError,
    'Expected options.listen.port to be an integer between 0 and 65535',
  ],
  [
    'startHttpProxy',
    'a server kind it does not know',
    () => httpProxy(httpOptions({ server: 'sse' })),
    RangeError,
    'Expected options.server to be one of "auto", "mcec", "mcp"',
  ],
  [
    'startHttpProxy',
    "a tool's timeout as text",
    () => httpProxy(httpOptions({ toolTimeoutsMs: { 'wait-for': '10m' } })),
    TypeError,
    'Expected options.toolTimeoutsMs["wait-for"] to be a number',
  ],
  [
    'startHttpProxy',
    "a tool's timeout past 24 h",
    () => httpProxy(httpOptions({ toolTimeoutsMs: { record: 25 * 3_600_000 } })),
    RangeError,
    `Expected options.toolTimeoutsMs.record to be ${TIMER_RANGE}`,
  ],
  [
    'startHttpProxy',
    'a timeout that is not a whole number of ms',
    () => httpProxy(httpOptions({ timeoutMs: 1.5 })),
    RangeError,
    'Expected options.timeoutMs to be an integer',
  ],
  [
    'startHttpProxy',
    'a body timeout of 0 ms',
    () => httpProxy(httpOptions({ bodyTimeoutMs: 0 })),
    RangeError,
    `Expected options.bodyTimeoutMs to be ${TIMER_RANGE}`,
  ],
  [
    'startHttpProxy',
    'a write timeout that is not a number',
    () => httpProxy(httpOptions({ writeTimeoutMs: Number.NaN })),
    TypeError,
    'Expected options.writeTimeoutMs to be a number',
  ],
  [
    'startHttpProxy',
    'a negative late-answer wait',
    () => httpProxy(httpOptions({ lateAnswerMs: -1 })),
    RangeError,
    'Expected options.lateAnswerMs to be an integer between 0 and 86400000',
  ],
  [
    'startHttpProxy',
    'allowNonLoopback as text',
    () => httpProxy(httpOptions({ allowNonLoopback: 'yes' })),
    TypeError,
    'Expected options.allowNonLoopback to be a boolean',
  ],
  [
    'startHttpProxy',
    'an onNotice that is no function',
    () => httpProxy(httpOptions({ onNotice: 'stderr' })),
    TypeError,
    'Expected options.onNotice to be a function',
  ],
  [
    'startHttpProxy',
    'a recording limit as text',
    () => httpProxy(httpOptions({ maxRecordBytes: '256MiB' })),
    TypeError,
    'Expected options.maxRecordBytes to be a number',
  ],
  [
    'startHttpProxy',
    'a body limit of 0',
    () => httpProxy(httpOptions({ maxBodyBytes: 0 })),
    RangeError,
    `Expected options.maxBodyBytes to be an integer between 1 and ${256 * 1024 * 1024}`,
  ],
  [
    'startHttpProxy',
    'a non-loopback host without allowNonLoopback (a configuration fact)',
    () => httpProxy(httpOptions({ listen: { host: '0.0.0.0', port: 0 } })),
    api.ProxyConfigError,
    'refusing to listen on non-loopback host 0.0.0.0 (pass --allow-remote / allowNonLoopback to allow it)',
  ],
  [
    'startHttpProxy',
    'a target that is not http (a configuration fact)',
    () => httpProxy(httpOptions({ target: 'ftp://x/mcp' })),
    api.ProxyConfigError,
    'target must be an http:// URL: ftp:',
  ],
  ['runStdioProxy', 'no options', () => stdioProxy(), TypeError, 'Expected options to be an object'],
  [
    'runStdioProxy',
    'a command that is no string',
    () => stdioProxy(stdioOptions({ command: ['node'] })),
    TypeError,
    'Expected options.command to be a string',
  ],
  [
    'runStdioProxy',
    'an empty command',
    () => stdioProxy(stdioOptions({ command: ' ' })),
    RangeError,
    'Expected options.command to be a non-empty string',
  ],
  [
    'runStdioProxy',
    'args as one string',
    () => stdioProxy(stdioOptions({ args: '--stdio' })),
    TypeError,
    'Expected options.args to be an array',
  ],
  [
    'runStdioProxy',
    'an arg that is a number',
    () => stdioProxy(stdioOptions({ args: ['--port', 5151] })),
    TypeError,
    'Expected options.args[1] to be a string',
  ],
  [
    'runStdioProxy',
    'a recorder without close',
    () => stdioProxy(stdioOptions({ recorder: { ...collectingRecorder(), close: undefined } })),
    TypeError,
    'Expected options.recorder.close to be a function',
  ],
  [
    'runStdioProxy',
    'a stdout that cannot be written',
    () => stdioProxy(stdioOptions({ stdout: {} })),
    TypeError,
    'Expected options.stdout.on to be a function',
  ],
  [
    'runStdioProxy',
    'a stdin that cannot be let go of (no off)',
    () => stdioProxy(stdioOptions({ stdin: { on() {}, pause() {}, resume() {} } })),
    TypeError,
    'Expected options.stdin.off to be a function',
  ],
  [
    'runStdioProxy',
    'a stdout that cannot wait for drain (no once)',
    () => stdioProxy(stdioOptions({ stdout: { on() {}, write() {} } })),
    TypeError,
    'Expected options.stdout.once to be a function',
  ],
  [
    'runStdioProxy',
    'a negative fault-answer wait',
    () => stdioProxy(stdioOptions({ faultAnswerMs: -5 })),
    RangeError,
    'Expected options.faultAnswerMs to be an integer between 0 and 86400000',
  ],
  [
    'runStdioProxy',
    'a drain grace as text',
    () => stdioProxy(stdioOptions({ drainGraceMs: '2s' })),
    TypeError,
    'Expected options.drainGraceMs to be a number',
  ],
  [
    'runStdioProxy',
    'forwardSignals as a number',
    () => stdioProxy(stdioOptions({ forwardSignals: 1 })),
    TypeError,
    'Expected options.forwardSignals to be a boolean',
  ],
  [
    'runStdioProxy',
    'a stop grace below 0',
    () => stdioProxy(stdioOptions({ stopGraceMs: -1 })),
    RangeError,
    'Expected options.stopGraceMs to be an integer between 0 and 86400000',
  ],
  [
    'runStdioProxy',
    'a stop signal that is no AbortSignal',
    () => stdioProxy(stdioOptions({ signal: { aborted: false } })),
    TypeError,
    'Expected options.signal to be an AbortSignal',
  ],
  [
    'runStdioProxy',
    'a recording limit of 0',
    () => stdioProxy(stdioOptions({ maxRecordBytes: 0 })),
    RangeError,
    `Expected options.maxRecordBytes to be an integer between 1 and ${MAX_RECORD_BYTES_LIMIT}`,
  ],
];

/** A recorded session (made once) whose reader the report entry points get, past their reader check. */
let fixtureRoot = '';
let fixture: FixtureSession | undefined;
let reader: api.SessionReader | undefined;
beforeAll(() => {
  fixtureRoot = tempDir();
  fixture = FixtureSession.create(fixtureRoot, { sessionId: '5f19c9c01a3f' });
  fixture.end({ passed: true });
  fixture.close();
  reader = api.SessionReader.open(fixture.dir);
});
afterAll(() => {
  reader?.close();
  fs.rmSync(fixtureRoot, { recursive: true, force: true });
});
const summary = { sessionId: '5f19c9c01a3f', dirName: 'x' };
const nowhere = path.join(os.tmpdir(), 'mcec-no-such-session');

refusals.push(
  [
    'renderReportHtml',
    'a reader that is a path',
    () => loose(api.renderReportHtml)('/tmp/session', summary),
    TypeError,
    'Expected reader to be a SessionReader',
  ],
  [
    'renderReportHtml',
    'no summary',
    () => loose(api.renderReportHtml)(reader, null),
    TypeError,
    'Expected summary to be an object',
  ],
  [
    'renderReportHtml',
    'a size cap as text (it became NaN)',
    () => loose(api.renderReportHtml)(reader, summary, { maxBytes: 'x' }),
    TypeError,
    'Expected options.maxBytes to be a number',
  ],
  [
    'renderReportHtml',
    'a size cap under 100,000 bytes (it was raised silently)',
    () => loose(api.renderReportHtml)(reader, summary, { maxBytes: 5000 }),
    RangeError,
    'Expected options.maxBytes to be an integer at least 100000',
  ],
  [
    'renderReportHtml',
    'a negative thumbnail count (it became 0 silently)',
    () => loose(api.renderReportHtml)(reader, summary, { maxThumbnails: -1 }),
    RangeError,
    'Expected options.maxThumbnails to be an integer at least 0',
  ],
  [
    'writeReportHtml',
    'an artifact base that is no string',
    () => loose(api.writeReportHtml)(nowhere, { artifactBase: 7 }),
    TypeError,
    'Expected options.artifactBase to be a string',
  ],
  [
    'writeReportHtml',
    'an empty templates dir',
    () => loose(api.writeReportHtml)(nowhere, { templatesDir: '' }),
    RangeError,
    'Expected options.templatesDir to be a non-empty string',
  ],
  [
    'buildSummary',
    'a reader that is a plain object',
    () => loose(api.buildSummary)({ dir: '/tmp' }),
    TypeError,
    'Expected reader to be a SessionReader',
  ],
  [
    'buildSummary',
    'a negative timeline length (it became 0 silently)',
    () => loose(api.buildSummary)(reader, { timelineLength: -1 }),
    RangeError,
    'Expected options.timelineLength to be an integer at least 0',
  ],
  [
    'buildSummary',
    'a failure count as text',
    () => loose(api.buildSummary)(reader, { maxFailures: '200' }),
    TypeError,
    'Expected options.maxFailures to be a number',
  ],
  [
    'renderFailureSummary',
    'a summary that is a string',
    () => loose(api.renderFailureSummary)('summary'),
    TypeError,
    'Expected summary to be an object',
  ],
  [
    'renderFailureSummary',
    'a templates dir that is a number',
    () => loose(api.renderFailureSummary)(summary, { templatesDir: 1 }),
    TypeError,
    'Expected options.templatesDir to be a string',
  ],
  [
    'renderBugReport',
    'a bundle name that is a number',
    () => loose(api.renderBugReport)(summary, { bundleName: 5 }),
    TypeError,
    'Expected options.bundleName to be a string',
  ],
  [
    'renderBugReport',
    'a run.gif without its frame count',
    () => loose(api.renderBugReport)(summary, { runGif: { path: 'run.gif' } }),
    TypeError,
    'Expected options.runGif.frames to be a number',
  ],
  [
    'renderBugReport',
    'bundle files as one string',
    () => loose(api.renderBugReport)(summary, { bundleFiles: 'x' }),
    TypeError,
    'Expected options.bundleFiles to be an array',
  ],
  [
    'renderBugReport',
    'a bundle file without what it holds',
    () => loose(api.renderBugReport)(summary, { bundleFiles: [{ name: 'run.gif' }] }),
    TypeError,
    'Expected options.bundleFiles[0].holds to be a string',
  ],
  [
    'bugReportText',
    'bundle files as one string',
    () => loose(api.bugReportText)(nowhere, { bundleFiles: 'x' }),
    TypeError,
    'Expected options.bundleFiles to be an array',
  ],
  [
    'SessionReader.open',
    'a dir that is no string',
    () => loose(api.SessionReader.open)(42),
    TypeError,
    'Expected dir to be a string',
  ],
  [
    'SessionReader.open',
    'tidy as text',
    () => loose(api.SessionReader.open)(nowhere, { tidy: 'yes' }),
    TypeError,
    'Expected options.tidy to be a boolean',
  ],
  [
    'declareVerdict',
    'passed as text',
    () => loose(api.declareVerdict)(nowhere, { passed: 'yes' }),
    TypeError,
    'Expected verdict.passed to be a boolean',
  ],
  [
    'declareVerdict',
    'no verdict',
    () => loose(api.declareVerdict)(nowhere),
    TypeError,
    'Expected verdict to be an object',
  ],
  [
    'declareVerdict',
    'a reason that is a number',
    () => loose(api.declareVerdict)(nowhere, { passed: false, reason: 404 }),
    TypeError,
    'Expected verdict.reason to be a string',
  ],
  [
    'declareVerdict',
    'a via it does not know',
    () => loose(api.declareVerdict)(nowhere, { passed: true, via: 'email' }),
    RangeError,
    'Expected verdict.via to be one of "cli", "recorder", "notification"',
  ],
  [
    'listSessionSummaries',
    'failedOnly as text',
    () => loose(api.listSessionSummaries)(nowhere, { failedOnly: 'yes' }),
    TypeError,
    'Expected options.failedOnly to be a boolean',
  ],
  [
    'listSessionSummaries',
    'an onProgress that is no function',
    () => loose(api.listSessionSummaries)(nowhere, { onProgress: true }),
    TypeError,
    'Expected options.onProgress to be a function',
  ],
  [
    'buildBundle',
    'a fractional size cap',
    () => loose(api.buildBundle)(nowhere, { maxBytes: 1.5 }),
    RangeError,
    'Expected options.maxBytes to be an integer',
  ],
  [
    'buildBundle',
    'images as text',
    () => loose(api.buildBundle)(nowhere, { images: 'no' }),
    TypeError,
    'Expected options.images to be a boolean',
  ],
  [
    'buildBundle',
    'mask rules that are one string',
    () => loose(api.buildBundle)(nowhere, { maskRules: 'window=Sign in' }),
    TypeError,
    'Expected options.maskRules to be an array',
  ],
  [
    'pruneSessions',
    'a reference time as text',
    () => loose(api.pruneSessions)(nowhere, { olderThanMs: 0, now: '2026-01-01' }),
    TypeError,
    'Expected options.now to be a Date',
  ],
  [
    'pruneSessions',
    'a negative recent window',
    () => loose(api.pruneSessions)(nowhere, { olderThanMs: 0, recentMs: -1 }),
    RangeError,
    'Expected options.recentMs to be a finite number at least 0',
  ],
  [
    'pruneSessions',
    'dryRun as text',
    () => loose(api.pruneSessions)(nowhere, { olderThanMs: 0, dryRun: 'yes' }),
    TypeError,
    'Expected options.dryRun to be a boolean',
  ],
  [
    'createSimulator (mcec-recorder/sim)',
    'a seed as text',
    () => loose(sim.createSimulator)({ seed: '42' }),
    TypeError,
    'Expected options.seed to be a number',
  ],
  [
    'createSimulator (mcec-recorder/sim)',
    'a consent answer it does not know',
    () => loose(sim.createSimulator)({ consent: 'maybe' }),
    RangeError,
    'Expected options.consent to be one of "allow", "allow-any", "deny", "timeout", "unavailable"',
  ],
  [
    'createSimulator (mcec-recorder/sim)',
    'a record limit of 0 frames',
    () => loose(sim.createSimulator)({ recordLimits: { maxFrames: 0 } }),
    RangeError,
    'Expected options.recordLimits.maxFrames to be an integer at least 1',
  ],
  [
    'createSimulator (mcec-recorder/sim)',
    'a clock that is a Date',
    () => loose(sim.createSimulator)({ now: new Date(0) }),
    TypeError,
    'Expected options.now to be a function',
  ],
  [
    'createSimulator (mcec-recorder/sim)',
    'a poll interval of 0',
    () => loose(sim.createSimulator)({ pollMs: 0 }),
    RangeError,
    'Expected options.pollMs to be a finite number at least 1',
  ],
  [
    'runDemo (mcec-recorder/sim)',
    'a sessions dir that is a number',
    () => loose(sim.runDemo)({ sessionsDir: 1 }),
    TypeError,
    'Expected options.sessionsDir to be a string',
  ],
  [
    'runDemo (mcec-recorder/sim)',
    'a simulator without callTool',
    () => loose(sim.runDemo)({ sessionsDir: nowhere, simulator: { handle: () => null } }),
    TypeError,
    'Expected options.simulator.callTool to be a function',
  ],
  [
    'runDemo (mcec-recorder/sim)',
    'an OTLP export that is a URL',
    () => loose(sim.runDemo)({ sessionsDir: nowhere, otlp: 'http://collector' }),
    TypeError,
    'Expected options.otlp to be an object',
  ],
  [
    'runDemo (mcec-recorder/sim)',
    "an OTLP export whose url is a port (the recorder's own check, before any directory is made)",
    () => loose(sim.runDemo)({ sessionsDir: nowhere, otlp: { url: 4318 } }),
    TypeError,
    'Expected options.otlp.url to be a string',
  ],
  [
    'runDemo (mcec-recorder/sim)',
    'an OTLP export with a negative export delay',
    () =>
      loose(sim.runDemo)({
        sessionsDir: nowhere,
        otlp: { url: 'http://127.0.0.1:1', scheduledDelayMillis: -1 },
      }),
    RangeError,
    'Expected options.otlp.scheduledDelayMillis to be a finite number at least 0',
  ],
  [
    'runScriptedAgent (mcec-recorder/sim)',
    'no dispatch',
    () => loose(sim.runScriptedAgent)(undefined, { step() {} }),
    TypeError,
    'Expected dispatch to be a function',
  ],
  [
    'runScriptedAgent (mcec-recorder/sim)',
    'steps without step()',
    () => loose(sim.runScriptedAgent)(async () => ({}), {}),
    TypeError,
    'Expected steps.step to be a function',
  ],
  [
    'envelopeOf (mcec-recorder/sim)',
    'a result without content',
    () => loose(sim.envelopeOf)({}),
    TypeError,
    'Expected result.content to be an array',
  ],
  [
    'escapeJsonText (mcec-recorder/sim)',
    'an object instead of its JSON',
    () => loose(sim.escapeJsonText)({ a: 1 }),
    TypeError,
    'Expected json to be a string',
  ],
);

describe('startHttpProxy: each timer option is a whole number of ms from 1 to 24 h', () => {
  it.each(['timeoutMs', 'bodyTimeoutMs', 'writeTimeoutMs'])('%s', async (option) => {
    for (const [value, type] of [
      [0, RangeError],
      [-1, RangeError],
      [25 * 3_600_000, RangeError],
      [1.5, RangeError],
      [Number.NaN, TypeError],
    ] as const) {
      const refused = httpProxy(httpOptions({ [option]: value }));
      await expect(refused).rejects.toBeInstanceOf(type);
      await expect(refused).rejects.toThrow(`options.${option}`);
    }
  });
});

describe('every entry point refuses a bad argument with the exact class and message', () => {
  it.each(refusals)('%s: %s', async (entry, _bad, call, type, message) => {
    let thrown: unknown;
    try {
      await call();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(type);
    expect((thrown as Error).constructor).toBe(type);
    expect((thrown as Error).message).toBe(message);
    // A proxy's refusals are its options check's: mcec-record maps only those to usage (exit 2).
    if (entry === 'startHttpProxy' || entry === 'runStdioProxy')
      expect(isOptionError(thrown) || thrown instanceof api.ProxyConfigError).toBe(true);
  });

  it('tells an options check error from any other TypeError', () => {
    expect(isOptionError(new TypeError('Expected options to be an object'))).toBe(false);
    expect(isOptionError(new RangeError('Invalid array length'))).toBe(false);
  });

  it('leaves nothing behind: no session dir was made where the refused calls pointed', () => {
    expect(fs.existsSync(nowhere)).toBe(false);
  });
});
