import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import type { CallRow } from '../../src/store/schema.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { calls, events, expectCleanLog, sessionDirs, sha256, tempDir, withLog } from './helpers.js';

/** Every base64 string in a value (the simulator's captures), to check none reached the log. */
function base64Strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (value.length > 200 && /^[A-Za-z0-9+/=]+$/.test(value.slice(0, 200))) out.push(value);
    else if (value.startsWith('{')) {
      try {
        base64Strings(JSON.parse(value), out);
      } catch {
        // not JSON
      }
    }
  } else if (Array.isArray(value)) for (const v of value) base64Strings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) base64Strings(v, out);
  return out;
}

describe('a session recorded against the simulator', () => {
  let root: string;
  let simRoot: string;
  let dir: string;
  let rows: CallRow[];
  const outputs: unknown[] = [];
  let sessionId: string;

  beforeAll(async () => {
    root = tempDir();
    simRoot = tempDir();
    const sim = createSimulator({ seed: 7, sessionsRoot: simRoot });
    const recorder = createRecorder({ sessionsDir: root, scenario: 'save the file' });
    const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
      const out = await sim.callTool(tool, args);
      outputs.push(out);
      return out;
    });
    const start = envelopeOf((await dispatch('session-start', {})) as never);
    sessionId = start.sessionId!;
    const s = { sessionId };
    await dispatch('windows', s);
    await dispatch('capture', { ...s, window: 'Untitled - Notepad' });
    await dispatch('find', { ...s, window: 'Save As', value: 'Save' });
    await dispatch('find', { ...s, window: 'Save As', by: 'automationid', value: '1' });
    await dispatch('capture', { ...s, window: 'Video Player' });
    await dispatch('wait-for', { ...s, window: 'Save As', value: 'Nowhere', timeout: 50 });
    recorder.step(sessionId, 'save the file', 'failed', 'the video window captured black');
    await dispatch('session-end', s);
    await recorder.end(sessionId, { passed: false, reason: 'black capture' });
    await recorder.close();
    dir = path.join(root, sessionDirs(root).find((d) => d.endsWith(sessionId))!);
    rows = calls(dir);
  });

  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(simRoot, { recursive: true, force: true });
  });

  it('lands in the session the server named, dir stamped with the server start time', () => {
    expect(sessionId).toMatch(/^[0-9a-f]{12}$/);
    expect(sessionDirs(root)).toEqual([expect.stringMatching(new RegExp(`^\\d{8}-\\d{6}-${sessionId}$`))]);
    expect(rows.map((r) => [r.tool, r.status, r.error_code])).toEqual([
      ['session-start', 'ok', null],
      ['windows', 'ok', null],
      ['capture', 'ok', null],
      ['find', 'failed', 'selector-matched-3'],
      ['find', 'ok', null],
      ['capture', 'failed', 'frame-all-black'],
      ['wait-for', 'failed', 'wait-condition-timeout'],
      ['session-end', 'ok', null],
    ]);
    for (const r of rows) expect(r.violations, `${r.tool}: ${r.violations}`).toBeNull();
  });

  it('keeps the simulator PNGs as artifacts with their exact bytes', () => {
    const artifacts = withLog(dir, (db) => db.prepare('SELECT * FROM artifacts ORDER BY id').all()) as Array<{
      call_seq: number;
      role: string;
      path: string;
      sha256: string;
    }>;
    const captured = Buffer.from(envelopeOf(outputs[2] as never).result!.base64 as string, 'base64');
    const black = Buffer.from(
      (envelopeOf(outputs[5] as never) as unknown as { error: { partialResult: { base64: string } } }).error
        .partialResult.base64,
      'base64',
    );
    expect(artifacts.filter((a) => a.call_seq === 3).map((a) => [a.role, a.sha256])).toEqual(
      expect.arrayContaining([
        ['result', sha256(captured)],
        ['image-block', sha256(captured)],
      ]),
    );
    expect(artifacts.find((a) => a.call_seq === 6)).toMatchObject({
      role: 'partialResult',
      sha256: sha256(black),
    });
    for (const a of artifacts) expect(sha256(fs.readFileSync(path.join(dir, a.path)))).toBe(a.sha256);
  });

  it('holds no image bytes (the server escapes + as \\u002B) and reads back as a failed, ended session', () => {
    expectCleanLog(dir, base64Strings(outputs));
    const reader = SessionReader.open(dir);
    expect(reader.session()).toMatchObject({
      status: 'ended',
      passed: 0,
      end_reason: 'black capture',
      scenario: 'save the file',
    });
    expect(reader.stats()).toMatchObject({ calls: 8, failed: 3, pending: 0, recordFailures: 0 });
    reader.close();
    expect(events(dir).map((e) => e.kind)).toEqual(['session-start', 'step', 'session-end', 'session-end']);
  });
});
