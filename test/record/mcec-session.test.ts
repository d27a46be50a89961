// Names of sessions and artifacts are UTC: run this suite in a zone far from it.
process.env.TZ = 'Asia/Kolkata';

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdvancingClock } from '../../src/record/clock.js';
import { createRecorderOnClock } from '../../src/record/recorder.js';
import type { CallRow } from '../../src/store/schema.js';
import {
  calls,
  callToolResult,
  envelopeIn,
  events,
  expectCleanLog,
  expectEventsValid,
  makePng,
  NOTEPAD,
  sessionDirs,
  sha256,
  tempDir,
  withLog,
} from './helpers.js';

const SID = '5f19c9c01a3f';
const SECRET = 'S3cr3t-P4ssw0rd!';

describe('an MCEC-shaped session through wrap', () => {
  let root: string;
  let capturePng: Buffer;
  let leakedPng: Buffer;
  let blackPng: Buffer;
  let legacyPng: Buffer;
  const returned: Record<string, unknown> = {};
  const outputs: Record<string, unknown> = {};
  const stderr: string[] = [];
  let dir: string;
  let rows: CallRow[];

  beforeAll(async () => {
    root = tempDir();
    capturePng = await makePng(64, 48, [200, 30, 30]);
    leakedPng = await makePng(40, 30, [20, 120, 220]);
    blackPng = await makePng(32, 32, [0, 0, 0], { uniform: true });
    legacyPng = await makePng(24, 16, [10, 200, 60]);
    const b64 = (b: Buffer) => b.toString('base64');
    const capture = {
      handle: NOTEPAD.handle,
      width: 64,
      height: 48,
      encoding: 'png',
      bytes: capturePng.length,
      base64: b64(capturePng),
      window: NOTEPAD,
      blankCheck: { blank: false, dominantFraction: 0.5, dominantIsDark: false },
    };
    const queryResult = {
      window: NOTEPAD,
      nodeCount: 1000,
      truncated: true,
      tree: { controlType: 'Window', name: 'Untitled - Notepad', children: [] },
    };
    const findResult = {
      found: true,
      element: { controlType: 'Button', name: 'Save', automationId: '1', x: 1, y: 2, width: 3, height: 4 },
      window: NOTEPAD,
    };
    let findCalls = 0;
    const script: Record<string, (args: Record<string, unknown>) => unknown> = {
      'session-start': () =>
        callToolResult({
          sessionId: SID,
          ok: true,
          result: { sessionId: SID, startedAt: '2026-12-02T10:15:02.123Z', artifactDir: `C:\\mcec\\${SID}` },
        }),
      capture: (args) =>
        args.handle === 666
          ? callToolResult({
              sessionId: SID,
              ok: false,
              error: {
                code: 'frame-all-black',
                category: 'capture-blank',
                detail: 'the captured frame is all black',
                partialResult: {
                  handle: 666,
                  width: 32,
                  height: 32,
                  encoding: 'png',
                  bytes: blackPng.length,
                  base64: b64(blackPng),
                },
              },
            })
          : callToolResult({ sessionId: SID, ok: true, result: capture }, capturePng),
      query: () =>
        callToolResult({
          sessionId: SID,
          ok: true,
          result: queryResult,
          warnings: [{ code: 'tree-truncated', detail: 'UIA tree clipped at 1000 nodes' }],
        }),
      find: () => {
        findCalls += 1;
        return findCalls === 1
          ? callToolResult({
              sessionId: SID,
              ok: false,
              error: {
                code: 'selector-matched-3',
                category: 'ambiguous-selector',
                detail: "Selector name='Save' matched 3 elements",
              },
            })
          : callToolResult({ sessionId: SID, ok: true, result: findResult });
      },
      'wait-for': () =>
        callToolResult({
          sessionId: SID,
          ok: false,
          error: {
            code: 'wait-condition-timeout',
            category: 'timeout',
            detail: 'element did not appear within 5000 ms',
            // The server leak: a capture with its bytes as the last observation.
            lastObservation: {
              handle: NOTEPAD.handle,
              width: 40,
              height: 30,
              encoding: 'png',
              bytes: leakedPng.length,
              base64: b64(leakedPng),
              window: NOTEPAD,
            },
          },
        }),
      clipboard: (args) =>
        callToolResult({
          sessionId: SID,
          ok: true,
          result: { set: true, length: 5, echo: `token was ${args.password}` },
        }),
      send_command: () =>
        callToolResult({
          sessionId: SID,
          ok: true,
          result: {
            output: JSON.stringify({
              success: true,
              command: 'capture',
              data: {
                width: 24,
                height: 16,
                encoding: 'png',
                bytes: legacyPng.length,
                base64: b64(legacyPng),
              },
            }),
          },
        }),
      click: () => {
        throw new Error('pipe to MCEC closed');
      },
      invoke: () =>
        callToolResult({
          sessionId: SID,
          ok: false,
          error: { code: 'emergency-stopped', category: 'internal', detail: 'operator pressed the stop key' },
        }),
      'session-end': () =>
        callToolResult({ sessionId: SID, ok: true, result: { sessionId: SID, ended: true } }),
    };
    // The recorder's wall clock runs from the fixture's day: the server's startedAt is within its skew limit
    // whatever today's date is.
    const recorder = createRecorderOnClock(
      { sessionsDir: root, scenario: 'notepad save', stderr: (l) => stderr.push(l) },
      new AdvancingClock(new Date('2026-12-02T10:15:01.000Z')),
    );
    const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
      const out = script[tool]!(args);
      outputs[`${tool}#${Object.keys(outputs).filter((k) => k.startsWith(`${tool}#`)).length + 1}`] = out;
      return out;
    });
    const run = async (key: string, tool: string, args: Record<string, unknown>) => {
      returned[key] = await dispatch(tool, args);
    };
    await run('session-start', 'session-start', {});
    await run('query', 'query', { sessionId: SID, handle: NOTEPAD.handle });
    await run('capture', 'capture', { sessionId: SID, handle: NOTEPAD.handle });
    await run('find-fail', 'find', { sessionId: SID, selector: "name='Save'" });
    await run('find-ok', 'find', { sessionId: SID, selector: "name='Save' and automationId='1'" });
    await run('wait-for', 'wait-for', { sessionId: SID, selector: "name='Done'", timeoutMs: 5000 });
    await run('capture-black', 'capture', { sessionId: SID, handle: 666 });
    await run('clipboard', 'clipboard', { sessionId: SID, text: 'hello', password: SECRET });
    await run('send_command', 'send_command', { sessionId: SID, command: 'capture 1001' });
    await run('click', 'click', { sessionId: SID, x: 5, y: 5 });
    await run('invoke', 'invoke', { sessionId: SID, selector: "name='Save'", action: 'click' });
    await run('session-end', 'session-end', { sessionId: SID });
    await recorder.close();
    dir = path.join(root, sessionDirs(root)[0]!);
    rows = calls(dir);
  });

  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('writes one session dir named from the session-start time in UTC, with a complete session row', () => {
    expect(sessionDirs(root)).toEqual([`20261202-101502-${SID}`]); // the default session held nothing: gone
    const session = withLog(dir, (db) => db.prepare('SELECT * FROM session').get()) as Record<
      string,
      unknown
    >;
    expect(session).toMatchObject({
      session_id: SID,
      scenario: 'notepad save',
      started_at: '2026-12-02T10:15:02.123Z',
      status: 'ended',
      writer_pid: process.pid,
    });
    expect(session.ended_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const env = JSON.parse(session.environment as string);
    expect(env).toMatchObject({ node: process.version, recorder: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(env.os).toContain(process.arch);
    // The last good observation is the successful find (compact, no bytes).
    expect(JSON.parse(session.last_observation as string)).toMatchObject({ found: true });
  });

  it('records every call in order with status, codes, args, transport and times', () => {
    expect(rows.map((r) => [r.seq, r.tool, r.status, r.error_code])).toEqual([
      [1, 'session-start', 'ok', null],
      [2, 'query', 'ok', null],
      [3, 'capture', 'ok', null],
      [4, 'find', 'failed', 'selector-matched-3'],
      [5, 'find', 'ok', null],
      [6, 'wait-for', 'failed', 'wait-condition-timeout'],
      [7, 'capture', 'failed', 'frame-all-black'],
      [8, 'clipboard', 'ok', null],
      [9, 'send_command', 'ok', null],
      [10, 'click', 'failed', 'unhandled'],
      [11, 'invoke', 'failed', 'emergency-stopped'],
      [12, 'session-end', 'ok', null],
    ]);
    for (const r of rows) {
      expect(r.transport).toBe('wrap');
      expect(r.started_at).toMatch(/Z$/);
      expect(r.ended_at! >= r.started_at).toBe(true);
      expect(r.duration_ms).toBeGreaterThanOrEqual(0);
      expect(r.payload_dropped).toBe(0);
      if (r.tool !== 'click') expect(r.output_kind).toBe('call-tool-result');
    }
    expect(rows[3]).toMatchObject({ error_category: 'ambiguous-selector', ok: 0 });
    expect(rows[9]).toMatchObject({
      output_kind: 'exception',
      error_category: 'internal',
      error_detail: 'pipe to MCEC closed',
    });
    expect(JSON.parse(rows[1]!.args!)).toEqual({ sessionId: SID, handle: NOTEPAD.handle });
    // The envelope's text block is stored once, as the envelope column.
    expect(JSON.parse(rows[1]!.response!)).toEqual({
      content: [{ type: 'text', text: '[envelope]' }],
      isError: false,
    });
  });

  it('stores warnings, and the events of the session', () => {
    const warnings = withLog(dir, (db) => db.prepare('SELECT call_seq, code, detail FROM warnings').all());
    expect(warnings).toEqual([
      { call_seq: 2, code: 'tree-truncated', detail: 'UIA tree clipped at 1000 nodes' },
    ]);
    expect(events(dir).map((e) => [e.kind, e.data.via ?? e.data.code ?? null])).toEqual([
      ['session-start', 'session-start'],
      ['emergency-stop', 'emergency-stopped'],
      ['session-end', 'session-end'],
    ]);
    expect(events(dir, 'emergency-stop')[0]).toMatchObject({ call_seq: 11 });
    expect(expectEventsValid(dir)).toBe(3);
  });

  it('writes each distinct image once, with rows for every place it was found, bytes equal to the input', () => {
    const artifacts = withLog(dir, (db) => db.prepare('SELECT * FROM artifacts ORDER BY id').all()) as Array<
      Record<string, unknown>
    >;
    const byRole = artifacts.map((a) => [a.call_seq, a.role, a.sha256]);
    expect(byRole).toEqual(
      expect.arrayContaining([
        [3, 'result', sha256(capturePng)],
        [3, 'image-block', sha256(capturePng)],
        [6, 'lastObservation', sha256(leakedPng)],
        [7, 'partialResult', sha256(blackPng)],
        [9, 'nested', sha256(legacyPng)],
      ]),
    );
    expect(artifacts).toHaveLength(5);
    const files = fs.readdirSync(path.join(dir, 'artifacts')).sort();
    expect(files).toHaveLength(4); // the capture's two copies share one file
    // Named by the recorder's clock (2026-12-02 10:15 UTC here), in UTC whatever the zone.
    for (const f of files) expect(f).toMatch(/^capture-20261202-1015\d{5}-\d+\.png$/);
    for (const a of artifacts) {
      expect(a.path).toMatch(/^artifacts\/capture-/);
      const bytes = fs.readFileSync(path.join(dir, a.path as string));
      expect(sha256(bytes)).toBe(a.sha256);
      expect(a.error).toBeNull();
      expect(a.format).toBe('png');
    }
    const black = artifacts.find((a) => a.role === 'partialResult')!;
    expect(black).toMatchObject({ width: 32, height: 32 });
    // The leaked lastObservation carried no blankCheck: computed with the server's algorithm.
    const leaked = artifacts.find((a) => a.role === 'lastObservation')!;
    expect(JSON.parse(leaked.blank_check as string)).toMatchObject({ blank: false });
  });

  it('stores envelopes with capture summaries (relative artifacts) in place of every image', () => {
    const capture = JSON.parse(rows[2]!.envelope!);
    expect(capture.result).toMatchObject({
      kind: 'capture-summary',
      handle: NOTEPAD.handle,
      width: 64,
      height: 48,
      encoding: 'png',
      bytes: capturePng.length,
      artifact: expect.stringMatching(/^artifacts\/capture-.*\.png$/),
      window: NOTEPAD,
    });
    const response = JSON.parse(rows[2]!.response!);
    expect(response.content[0]).toMatchObject({
      type: 'image',
      mimeType: 'image/png',
      summary: { kind: 'capture-summary' },
    });
    expect(response.content[1]).toEqual({ type: 'text', text: '[envelope]' });
    const black = JSON.parse(rows[6]!.envelope!);
    expect(black.error.partialResult).toMatchObject({
      kind: 'capture-summary',
      blankCheck: { blank: true, dominantIsDark: true },
    });
    const nested = JSON.parse(JSON.parse(rows[8]!.envelope!).result.output);
    expect(nested.data).toMatchObject({ kind: 'capture-summary', width: 24, height: 16 });
  });

  it('hands successes back untouched: the very same objects, inline images included', () => {
    for (const key of [
      'session-start',
      'query',
      'capture',
      'find-ok',
      'clipboard',
      'send_command',
      'session-end',
    ]) {
      const tool = key === 'find-ok' ? 'find#2' : `${key}#1`;
      expect(returned[key], key).toBe(outputs[tool]);
    }
    expect((returned.capture as { content: Array<{ data?: string }> }).content[0]!.data).toBe(
      capturePng.toString('base64'),
    );
  });

  it('fills a command-level failure with the last good observation: the capture summary, at an absolute path', () => {
    const env = envelopeIn(returned['find-fail']);
    const lo = (env.error as Record<string, unknown>).lastObservation as Record<string, unknown>;
    expect(lo).toMatchObject({ kind: 'capture-summary', width: 64, height: 48, sha256: sha256(capturePng) });
    expect(path.isAbsolute(lo.artifact as string)).toBe(true);
    expect(sha256(fs.readFileSync(lo.artifact as string))).toBe(sha256(capturePng));
    expect((returned['find-fail'] as { isError: boolean }).isError).toBe(true);
    // The stored envelope is what the server sent (the fill is for the agent).
    expect(JSON.parse(rows[3]!.envelope!).error.lastObservation).toBeUndefined();
  });

  it('replaces base64 in a failure lastObservation by a summary whose absolute artifact exists', () => {
    const env = envelopeIn(returned['wait-for']);
    const lo = (env.error as Record<string, unknown>).lastObservation as Record<string, unknown>;
    expect(lo).toMatchObject({ kind: 'capture-summary', width: 40, height: 30, window: NOTEPAD });
    expect(lo.base64).toBeUndefined();
    expect(path.isAbsolute(lo.artifact as string)).toBe(true);
    expect(sha256(fs.readFileSync(lo.artifact as string))).toBe(sha256(leakedPng));
    expect(JSON.stringify(returned['wait-for'])).not.toContain(leakedPng.toString('base64').slice(0, 40));
    // The dispatch's own object was not changed.
    expect(envelopeIn(outputs['wait-for#1'])).toMatchObject({
      error: { lastObservation: { base64: expect.any(String) } },
    });
  });

  it('keeps partialResult for the agent and fills lastObservation of a blank capture failure', () => {
    const env = envelopeIn(returned['capture-black']);
    const error = env.error as Record<string, unknown>;
    expect((error.partialResult as Record<string, unknown>).base64).toBe(blackPng.toString('base64'));
    expect(error.lastObservation).toMatchObject({ found: true });
  });

  it('turns a throwing dispatch into an internal failure in the shape the dispatch returns', () => {
    const out = returned.click as { content: Array<{ type: string; text: string }>; isError: boolean };
    expect(out.isError).toBe(true);
    expect(out.content).toHaveLength(1);
    const env = envelopeIn(out);
    expect(env).toMatchObject({
      sessionId: SID,
      ok: false,
      error: {
        code: 'unhandled',
        category: 'internal',
        detail: 'pipe to MCEC closed',
        lastObservation: { found: true },
      },
    });
  });

  it('gives a refusal (emergency-stopped) back untouched, with no observation', () => {
    expect(returned.invoke).toBe(outputs['invoke#1']);
  });

  it('keeps image bytes and secrets out of every column and the file itself', () => {
    const all = [capturePng, leakedPng, blackPng, legacyPng].map((b) => b.toString('base64'));
    expectCleanLog(dir, all, [SECRET]);
    const clipboard = rows[7]!;
    expect(JSON.parse(clipboard.args!)).toEqual({
      sessionId: SID,
      text: '[typed text: 5 chars]',
      password: '[redacted]',
    });
    expect(JSON.parse(clipboard.envelope!).result.echo).toBe('token was [redacted]');
    expect(stderr).toEqual([]);
  });
});
