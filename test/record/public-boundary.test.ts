/**
 * The package's entry points check what they are given, as better-sqlite3 does: a wrong type is a TypeError,
 * a value out of range a RangeError, each naming the option; nothing is created before the check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as api from '../../src/index.js';
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
      new RangeError('Expected options.maxBytes to be a finite number at least 1'),
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
