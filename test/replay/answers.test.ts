import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/recorder.js';
import { replaySession } from '../../src/replay/index.js';
import { type CallToolResult, createSimulator, envelopeOf } from '../../src/sim/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { env, tempDir } from './helpers.js';

let work: string;
beforeAll(() => {
  work = tempDir();
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** Record `calls` against a fresh simulator through `wrap`; `bare` returns the envelope object instead of the CallToolResult. */
async function record(calls: Array<[string, Record<string, unknown>]>, bare = false) {
  // Dirs of its own: the seeded simulator gives every recording the same session id, and two recordings
  // started in the same second into one sessions dir would share a session dir.
  const sim = createSimulator({ seed: 3, sessionsRoot: fs.mkdtempSync(path.join(work, 'sim-')) });
  const recorder = createRecorder({
    sessionsDir: fs.mkdtempSync(path.join(work, 'sessions-')),
    stderr: () => {},
  });
  const outputs: CallToolResult[] = [];
  const call = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
    const out = await sim.callTool(tool, args);
    outputs.push(structuredClone(out));
    return bare ? envelopeOf(out) : out;
  });
  const first = await call('session-start', {});
  const started = (bare ? (first as { sessionId: string }) : envelopeOf(first as CallToolResult)).sessionId!;
  for (const [tool, args] of calls) await call(tool, { ...args, sessionId: started });
  await recorder.flush();
  const dir = recorder.session(started)!.dir;
  await recorder.close();
  return { dir, sessionId: started, outputs };
}

describe('answers rebuilt from the recording', () => {
  it('region, path-only and legacy (nested JSON) captures come back byte for byte (host-file copies taken out)', async () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['capture', { x: 100, y: 100, width: 64, height: 32 }],
      ['capture', { window: 'Untitled - Notepad', pathOnly: true }],
      // A legacy capture: the PNG sits in a CommandResult JSON string inside `output` (role nested).
      ['send_command', { command: 'capture Untitled - Notepad' }],
    ];
    const rec = await record(calls);
    const replay = await replaySession(rec.dir, { http: false });
    await replay.callTool('session-start', {});
    for (const [i, [tool, args]] of calls.entries()) {
      const out = await replay.callTool(tool, { ...args, sessionId: rec.sessionId });
      expect(out).toEqual(rec.outputs[i + 1]);
    }
    const report = await replay.close();
    expect(report.calls.map((c) => c.imagesRestored)).toEqual([0, 2, 0, 1]);
    // The path-only capture names its file on the MCEC host; the recorder's copy key is not on the wire.
    expect(JSON.stringify(rec.outputs[2])).not.toContain('artifactCopy');
  });

  it('a recording of bare envelopes is served as MCEC sends it: the image block first, then the envelope', async () => {
    const rec = await record([['capture', { window: 'Untitled - Notepad' }]], true);
    const replay = await replaySession(rec.dir, { http: false });
    await replay.callTool('session-start', {});
    const out = await replay.callTool('capture', { window: 'Untitled - Notepad', sessionId: rec.sessionId });
    await replay.close();
    expect(out).toEqual(rec.outputs[1]);
    expect(out.content.map((b) => b.type)).toEqual(['image', 'text']);
    expect(env(out).result.base64).toBe((out.content[0] as { data: string }).data);
  });

  it('a call MCEC answered with a JSON-RPC error gets the same error back', async () => {
    const recorder = createRecorder({ sessionsDir: path.join(work, 'sessions-rpc'), stderr: () => {} });
    const sessionId = 'a1b2c3d4e5f6';
    const call = recorder.wrap(async (tool: string, _args: Record<string, unknown>) =>
      tool === 'send_command'
        ? { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'Internal error: handler fault' } }
        : {
            jsonrpc: '2.0',
            id: 6,
            result: {
              content: [
                {
                  type: 'text',
                  text: JSON.stringify({ ok: true, sessionId, result: { count: 0, windows: [] } }),
                },
              ],
              isError: false,
            },
          },
    );
    await call('windows', { sessionId });
    await call('send_command', { sessionId, command: 'VK_TAB' });
    await recorder.flush();
    const dir = recorder.session(sessionId)!.dir;
    await recorder.close();
    const replay = await replaySession(dir, { http: false });
    const answer = await replay.handle({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'send_command', arguments: { sessionId, command: 'VK_TAB' } },
    });
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 9,
      error: { code: -32603, message: 'Internal error: handler fault' },
    });
    const report = await replay.close();
    expect(report.calls[0]).toMatchObject({ outcome: 'matched', recordedSeq: 2, ok: false, code: '-32603' });
  });
});

describe('an artifacts/ file that is not a regular file (a session dir unpacked from a tar)', () => {
  // A FIFO read as before blocks the replay for ever: the test's timeout is the check.
  it('a symlink is never followed and a FIFO never blocks: the capture stays a summary, its images missing', async () => {
    const rec = await record([['capture', { window: 'Untitled - Notepad' }]]);
    const reader = SessionReader.open(rec.dir);
    const stored = new Set(reader.artifactsOfCall(2).map((a) => a.path));
    reader.close();
    expect(stored.size).toBe(1);
    const image = path.join(rec.dir, [...stored][0]!);
    // Outside the session dir, a file this machine's user would not want served to a replay client.
    const secret = path.join(work, 'outside-secret.txt');
    fs.writeFileSync(secret, 'TOP-SECRET-FILE-CONTENT\n');
    const secret64 = fs.readFileSync(secret).toString('base64');
    const kinds: Array<[string, () => void]> = [['symlink', () => fs.symlinkSync(secret, image)]];
    if (process.platform !== 'win32') kinds.push(['fifo', () => execFileSync('mkfifo', [image])]);
    for (const [kind, make] of kinds) {
      fs.rmSync(image);
      make();
      const replay = await replaySession(rec.dir, { http: false });
      await replay.callTool('session-start', {});
      const out = await replay.callTool('capture', {
        window: 'Untitled - Notepad',
        sessionId: rec.sessionId,
      });
      expect(JSON.stringify(out), kind).not.toContain(secret64);
      expect(env(out).result.kind, kind).toBe('capture-summary');
      const report = await replay.close();
      expect(report.calls[1]!.imagesMissing, kind).not.toEqual([]);
    }
  });

  it('a file a log row names as Windows would not keep it (a device, a stream, a trailing dot) is not read', async () => {
    const rec = await record([['capture', { window: 'Untitled - Notepad' }]]);
    const reader = SessionReader.open(rec.dir);
    const stored = [...new Set(reader.artifactsOfCall(2).map((a) => a.path!))];
    reader.close();
    expect(stored.length).toBe(1);
    const served = async () => {
      const replay = await replaySession(rec.dir, { http: false });
      await replay.callTool('session-start', {});
      const out = await replay.callTool('capture', {
        window: 'Untitled - Notepad',
        sessionId: rec.sessionId,
      });
      return { out: env(out).result, report: await replay.close() };
    };
    expect((await served()).report.calls[1]!.imagesRestored).toBeGreaterThan(0);
    // The same file under each name (on Linux a plain file; on Windows `CON.png` is the console).
    let from = stored[0]!;
    for (const name of ['artifacts/CON.png', 'artifacts/a.png:x', 'artifacts/capture.png.']) {
      fs.renameSync(path.join(rec.dir, from), path.join(rec.dir, name));
      const db = new Database(path.join(rec.dir, 'session.sqlite'));
      db.prepare('UPDATE artifacts SET path = ? WHERE path = ?').run(name, from);
      db.prepare('UPDATE calls SET envelope = replace(envelope, ?, ?)').run(from, name);
      db.close();
      from = name;
      const { out, report } = await served();
      expect(out.kind, name).toBe('capture-summary');
      expect(report.calls[1]!.imagesRestored, name).toBe(0);
      expect(report.calls[1]!.imagesMissing, name).not.toEqual([]);
    }
  });
});
