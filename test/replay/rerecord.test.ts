import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runScriptedAgent } from '../../src/demo/scripted-agent.js';
import { listSessions, SessionReader } from '../../src/store/session-reader.js';
import { callsOf, RECORD_CLI, REPLAY_CLI, StdioReplay, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();

/** A session's calls as comparable facts: artifact file names (named by the time they were written) as sha256s. */
function factsOf(dir: string) {
  const reader = SessionReader.open(dir);
  try {
    const byPath = new Map(reader.artifacts().map((a) => [a.path, a.sha256]));
    const calls = [...reader.calls()].map((c) => ({
      tool: c.tool,
      args: c.args,
      status: c.status,
      code: c.error_code,
      category: c.error_category,
      envelope:
        c.envelope?.replace(/artifacts\/capture-[0-9-]+\.png/g, (p) => `sha256:${byPath.get(p)}`) ?? null,
    }));
    const images = reader.artifacts().map((a) => [a.role, a.json_path, a.sha256, a.width, a.height]);
    const server = JSON.parse(reader.session().environment).server;
    return { sessionId: reader.session().session_id, calls, images, server };
  } finally {
    reader.close();
  }
}

describe('a replay recorded through mcec-record', () => {
  it('records the same session as the original: same calls, answers and images', async () => {
    const sessions2 = path.join(fixture.work, 'rerecorded');
    fs.mkdirSync(sessions2);
    const proxied = new StdioReplay(
      [
        'stdio',
        '--sessions',
        sessions2,
        '--',
        process.execPath,
        REPLAY_CLI,
        fixture.demo.sessionDir,
        '--stdio',
      ],
      {},
      RECORD_CLI,
    );
    await proxied.request('initialize', { protocolVersion: '2025-06-18', capabilities: {} });
    const run = await runScriptedAgent(proxied.dispatch, { step: () => {} });
    expect(await proxied.end()).toBe(0);
    expect(callsOf(run)).toEqual(callsOf(fixture.demo.run));

    const [again] = listSessions(sessions2);
    const original = factsOf(fixture.demo.sessionDir);
    const replayed = factsOf(again!.dir);
    expect(replayed.sessionId).toBe(original.sessionId);
    expect(again!.dirName).toBe(path.basename(fixture.demo.sessionDir));
    expect(replayed.server).toEqual(original.server);
    expect(replayed.images).toEqual(
      original.images.map((i) => (i[0] === 'image-block' ? [i[0], `/result${i[1]}`, ...i.slice(2)] : i)),
    );
    expect(replayed.calls).toHaveLength(original.calls.length);
    // Nothing was redacted (session-start's commandAccess note is the server's prose): every call is the same.
    for (const [i, call] of original.calls.entries()) expect(replayed.calls[i]).toEqual(call);
  });
});
