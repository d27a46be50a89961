/**
 * A client pointed at a replay keeps its configuration, bearer token included: the replay treats the
 * Authorization header it is sent as the recording proxy does, a secret scrubbed from the live arguments its
 * report holds.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/recorder.js';
import { replaySession } from '../../src/replay/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { tempDir } from './helpers.js';

/** The client's bearer token: sent to MCEC while recording (the proxy remembered it), then to the replay. */
const TOKEN = 'SimTok3nQz9xY7wVv';

let work: string;
let sessionDir: string;
let sessionId: string;
beforeAll(async () => {
  work = tempDir();
  const sim = createSimulator({ seed: 3, sessionsRoot: tempDir() });
  // What mcec-record http stores: the header's token known to the redactor (here as a configured secret).
  const recorder = createRecorder({ sessionsDir: work, stderr: () => {}, redact: { secrets: [TOKEN] } });
  const call = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
  sessionId = envelopeOf(await call('session-start', {})).sessionId!;
  await call('find', { sessionId, window: 'Notepad', value: `token ${TOKEN}` });
  await recorder.flush();
  sessionDir = recorder.session(sessionId)!.dir;
  await recorder.close();
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('the bearer token a client sends a replay', () => {
  it('is scrubbed from the live arguments in the report, as the recording proxy scrubbed it', async () => {
    const replay = await replaySession(sessionDir, { http: { port: 0 } });
    const post = (id: number, name: string, args: Record<string, unknown>) =>
      fetch(replay.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
      }).then((r) => r.json());
    await post(1, 'session-start', {});
    const answer = await post(2, 'find', { sessionId, window: 'Notepad', value: `token ${TOKEN}` });
    expect(JSON.stringify(answer)).toContain('found');
    const report = await replay.close();
    expect(report.calls.map((c) => c.outcome)).toEqual(['matched', 'matched']);
    expect(JSON.stringify(report)).not.toContain(TOKEN);
    expect(JSON.stringify(report)).toContain('token [redacted]');
  });
});
