import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/recorder.js';
import { redactedStringMatches, replaySession } from '../../src/replay/index.js';
import { type CallToolResult, createSimulator, envelopeOf } from '../../src/sim/index.js';
import { env, tempDir } from './helpers.js';

let work: string;
let sessionDir: string;
let sessionId: string;
let notepadHandle: number;

/**
 * A recording that exercises every matching rule: a handle passed back from an answer, a click by pixel, typed
 * text, a secret argument, two `windows` calls whose answers differ (Save As closes in between).
 */
beforeAll(async () => {
  work = tempDir();
  const sim = createSimulator({ seed: 11, sessionsRoot: path.join(work, 'sim') });
  const recorder = createRecorder({ sessionsDir: path.join(work, 'sessions'), stderr: () => {} });
  const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  const started = envelopeOf((await call('session-start', {})) as CallToolResult);
  sessionId = started.sessionId!;
  const s = { sessionId };
  const windows = envelopeOf(
    (await call('windows', { ...s, authToken: 'tok-recorded-1234' })) as CallToolResult,
  );
  const list = (windows as unknown as { result: { windows: Array<{ handle: number; title: string }> } })
    .result.windows;
  notepadHandle = list.find((w) => w.title === 'Untitled - Notepad')!.handle;
  await call('capture', { ...s, handle: notepadHandle });
  await call('click', { ...s, window: 'Untitled - Notepad', at: { x: 200, y: 150 } });
  await call('send_command', { ...s, command: 'chars:hunter2' });
  await call('invoke', { ...s, window: 'Save As', by: 'automationid', value: '2', action: 'invoke' });
  await call('windows', { ...s, authToken: 'tok-recorded-1234' });
  await call('session-end', s);
  await recorder.flush();
  sessionDir = recorder.session(sessionId)!.dir;
  await recorder.close();
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('matching survives real agents', () => {
  it('maps handles, coordinates within tolerance, redacted secrets, typed text by length; identical calls in order', async () => {
    const replay = await replaySession(sessionDir, { http: false });
    const s = { sessionId };
    expect(env(await replay.callTool('session-start', {})).ok).toBe(true);
    // Another secret value under the same key: the recording holds [redacted], which matches any.
    const first = env(await replay.callTool('windows', { ...s, authToken: 'a-different-secret' }));
    expect(first.result.count).toBe(4);
    // The handle the replayed windows answer handed out.
    const shot = await replay.callTool('capture', { ...s, handle: notepadHandle });
    expect(shot.content[0]!.type).toBe('image');
    // 3 px off: within the default tolerance of 4.
    expect(
      env(await replay.callTool('click', { ...s, window: 'Untitled - Notepad', at: { x: 203, y: 148 } })).ok,
    ).toBe(true);
    // Other text of the same length: the recording kept only the length.
    expect(env(await replay.callTool('send_command', { ...s, command: 'chars:swordfi' })).ok).toBe(true);
    expect(
      env(
        await replay.callTool('invoke', {
          ...s,
          window: 'Save As',
          by: 'automationid',
          value: '2',
          action: 'invoke',
        }),
      ).ok,
    ).toBe(true);
    // The second identical windows call takes the second recording (Save As gone).
    const second = env(await replay.callTool('windows', { ...s, authToken: 'whatever' }));
    expect(second.result.count).toBe(3);
    // A third: every recording like it was used, the last answers again.
    const third = env(await replay.callTool('windows', { ...s, authToken: 'whatever' }));
    expect(third.result.count).toBe(3);
    const report = replay.report();
    expect(report.calls.map((c) => c.outcome)).toEqual([
      'matched',
      'matched',
      'matched',
      'matched',
      'matched',
      'matched',
      'matched',
      'repeat',
    ]);
    // What the report shows of the live arguments is redacted as the recorder stores them.
    expect(JSON.stringify(report)).not.toContain('a-different-secret');
    expect(JSON.stringify(report)).not.toContain('swordfi');
    expect(report.unused.map((u) => u.tool)).toEqual(['session-end']);
    await replay.close();
  });

  it('says why a call did not match: coordinates off, typed text of another length, another value', async () => {
    const replay = await replaySession(sessionDir, { http: false, lockdown: true });
    const s = { sessionId };
    await replay.callTool('session-start', {});
    const click = env(
      await replay.callTool('click', { ...s, window: 'Untitled - Notepad', at: { x: 230, y: 150 } }),
    );
    expect(click.ok).toBe(false);
    expect(click.error).toMatchObject({ code: 'replay-unmatched', category: 'internal' });
    const typed = env(await replay.callTool('send_command', { ...s, command: 'chars:abc' }));
    expect(typed.error.code).toBe('replay-unmatched');
    const other = env(await replay.callTool('capture', { ...s, handle: 999999 }));
    expect(other.error.code).toBe('replay-unmatched');
    const report = await replay.close();
    expect(report.exitCode).toBe(1);
    const why = report.unmatched.map((u) => ({
      seq: u.nearest?.seq,
      diffs: u.differences.map((d) => [d.path, d.why]),
    }));
    expect(why[0]).toEqual({ seq: 4, diffs: [['/at/x', 'coordinate off by 30 (tolerance 4)']] });
    expect(why[1]).toEqual({
      seq: 5,
      diffs: [['/command', 'typed text of another length (recorded 7 chars)']],
    });
    expect(why[2]!.seq).toBe(3);
    expect(why[2]!.diffs[0]![0]).toBe('/handle');
    expect(why[2]!.diffs[0]![1]).toMatch(
      /came from #2 at \/result\/windows\/\d\/handle, the live one from no answer/,
    );
    expect(report.firstDivergence?.n).toBe(2);
  });

  it('maps a session id the replay never handed out onto the recorded one, and answers with it', async () => {
    const replay = await replaySession(sessionDir, { http: false });
    const live = 'abcdefabcdef';
    const out = env(await replay.callTool('windows', { sessionId: live, authToken: 'x1234567' }));
    expect(out.sessionId).toBe(live);
    expect(replay.report().calls[0]!.notes[0]).toBe(`session id ${live} mapped to the recorded ${sessionId}`);
    // From now on the recorded id itself is another session: it no longer matches.
    const end = env(await replay.callTool('session-end', { sessionId: live }));
    expect(end.result).toMatchObject({ sessionId: live, ended: true });
    await replay.close();
  });

  it('a typed text stored as sent (keepTypedText, or a log older than its rule) matches the same text sent', async () => {
    const root = path.join(work, 'kept');
    const sim = createSimulator({ seed: 11, sessionsRoot: path.join(work, 'sim-kept') });
    const recorder = createRecorder({ sessionsDir: root, stderr: () => {}, redact: { keepTypedText: true } });
    const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const kept = envelopeOf((await call('session-start', {})) as CallToolResult).sessionId!;
    await call('send_command', { sessionId: kept, command: 'chars:hunter2' });
    await call('send-input', { sessionId: kept, input: 'hunter2' });
    await recorder.flush();
    const dir = recorder.session(kept)!.dir;
    await recorder.close();
    const replay = await replaySession(dir, { http: false });
    await replay.callTool('session-start', {});
    await replay.callTool('send_command', { sessionId: kept, command: 'chars:hunter2' });
    await replay.callTool('send-input', { sessionId: kept, input: 'hunter2' });
    expect(replay.report().calls.map((c) => c.outcome)).toEqual(['matched', 'matched', 'matched']);
    await replay.close();
  });

  it('redacted strings match any value in the redaction and typed text by exact length', () => {
    expect(redactedStringMatches('--token [redacted] --v', '--token abc --v')).toBe(true);
    expect(redactedStringMatches('--token [redacted] --v', '--token abc --w')).toBe(false);
    expect(redactedStringMatches('[redacted]', '')).toBe(false);
    expect(redactedStringMatches('chars:[typed text: 3 chars]', 'chars:abc')).toBe(true);
    expect(redactedStringMatches('chars:[typed text: 3 chars]', 'chars:abcd')).toBe(false);
  });
});
