import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { runScriptedAgent } from '../../src/demo/scripted-agent.js';
import { loadRecording, ReplayCore, replaySession } from '../../src/replay/index.js';
import { rawZip } from '../bundle/helpers.js';
import { request } from '../sim/helpers.js';
import { slowClients } from '../support/slow-clients.js';
import { callsOf, env, REPLAY_CLI, root, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();

const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });

describe('HTTP: POST /mcp with MCEC front-door checks', () => {
  it('answers tools/call on the real wire and refuses what MCEC refuses', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: { token: 'let-me-in' } });
    try {
      const auth = { authorization: 'Bearer let-me-in' };
      const ok = await request(replay.url, {
        body: rpc(1, 'tools/call', { name: 'session-start', arguments: {} }),
        headers: auth,
      });
      expect(ok.status).toBe(200);
      // MCEC's escaping on the wire: the envelope text is JSON in a JSON string, quotes as \u0022.
      expect(ok.text).toContain('{\\u0022ok\\u0022:true');
      expect(env(JSON.parse(ok.text).result).sessionId).toBe(fixture.demo.sessionId);
      expect((await request(replay.url, { body: rpc(2, 'ping') })).status).toBe(401);
      expect((await request(replay.url, { method: 'GET', headers: auth })).status).toBe(405);
      expect((await request(replay.url, { path: '/mcp/', body: rpc(3, 'ping'), headers: auth })).status).toBe(
        404,
      );
      expect(
        (await request(replay.url, { body: rpc(4, 'ping'), headers: { ...auth, host: 'evil.example' } }))
          .status,
      ).toBe(403);
      expect(
        (
          await request(replay.url, {
            body: rpc(5, 'ping'),
            headers: { ...auth, origin: 'https://evil.example' },
          })
        ).status,
      ).toBe(403);
      expect(
        (await request(replay.url, { body: Buffer.alloc(1024 * 1024 + 1, 32), headers: auth })).status,
      ).toBe(413);
      const batch = await request(replay.url, { body: `[${rpc(6, 'ping')}]`, headers: auth });
      expect(JSON.parse(batch.text).error.code).toBe(-32600);
      const list = JSON.parse(
        (await request(replay.url, { body: rpc(7, 'tools/list'), headers: auth })).text,
      );
      expect(list.result.tools.length).toBe(22); // not recorded: MCEC's catalog, and the report says so
      expect(replay.report().synthesized[0]).toMatch(/^tools\/list: not in the recording/);
    } finally {
      await replay.close();
    }
  });
});

describe('sources', () => {
  it('a bundle zip replays like its session dir, and its temp copy is removed on close', async () => {
    const { bundle } = await buildBundle(fixture.demo.sessionDir);
    const copies = () =>
      fs
        .readdirSync(os.tmpdir())
        // This process's own (the name carries its pid): other suites and runs share the temp dir.
        .filter((n) => n.startsWith(`mcec-replay-bundle-${process.pid}-`))
        .sort();
    const before = copies();
    const replay = await replaySession(bundle, { http: false });
    expect(copies().length).toBe(before.length + 1);
    const run = await runScriptedAgent((tool, args) => replay.callTool(tool, args), { step: () => {} });
    const report = await replay.close();
    expect(callsOf(run)).toEqual(callsOf(fixture.demo.run));
    expect(report.source.kind).toBe('bundle');
    expect(report.calls.reduce((n, c) => n + c.imagesRestored, 0)).toBe(3);
    expect(report.calls.flatMap((c) => c.imagesMissing)).toEqual([]);
    expect(copies()).toEqual(before);
  });

  it('refuses a zip with a ".." entry before writing anything', async () => {
    const zip = path.join(fixture.work, 'evil.zip');
    const top = path.basename(fixture.demo.sessionDir);
    fs.writeFileSync(
      zip,
      rawZip([
        {
          name: `${top}/session.sqlite`,
          data: fs.readFileSync(path.join(fixture.demo.sessionDir, 'session.sqlite')),
        },
        { name: `${top}/artifacts/../../escaped.png`, data: Buffer.from('x') },
      ]),
    );
    await expect(replaySession(zip, { http: false })).rejects.toThrow(/path traversal/);
    expect(fs.existsSync(path.join(fixture.work, 'escaped.png'))).toBe(false);
    const symlink = path.join(fixture.work, 'link.zip');
    fs.writeFileSync(
      symlink,
      rawZip([{ name: `${top}/session.sqlite`, data: Buffer.from('/etc/passwd'), mode: 0o120777 }]),
    );
    await expect(replaySession(symlink, { http: false })).rejects.toThrow(/symlink/);
  });

  it('finds a session by id prefix under --sessions', async () => {
    const replay = await replaySession(fixture.demo.sessionId.slice(0, 6), {
      http: false,
      sessionsDir: fixture.demo.sessionsDir,
    });
    expect(replay.sessionId).toBe(fixture.demo.sessionId);
    expect((await replay.close()).source.kind).toBe('session-id');
  });
});

describe('--speed', () => {
  it('holds each answer for the recorded duration divided by the speed (0: not at all)', async () => {
    const recording = loadRecording(fixture.demo.sessionDir);
    const source = {
      kind: 'session-dir' as const,
      input: fixture.demo.sessionDir,
      sessionId: fixture.demo.sessionId,
      scenario: null,
    };
    for (const speed of [0, 1, 4]) {
      const waits: number[] = [];
      const core = new ReplayCore(recording, source, { speed, sleep: async (ms) => void waits.push(ms) });
      await core.callTool('session-start', {});
      await core.callTool('capture', { window: 'Untitled - Notepad', sessionId: fixture.demo.sessionId });
      const recorded = [recording.calls[0]!.durationMs, recording.calls[3]!.durationMs];
      expect(waits).toEqual(speed === 0 ? [] : recorded.map((ms) => ms / speed));
    }
  });
});

describe('mcec-replay CLI', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [REPLAY_CLI, ...args], { cwd: root, encoding: 'utf8' });

  it('--help teaches with examples', () => {
    const r = cli('--help');
    expect(r.status).toBe(0);
    for (const text of [
      '--stdio',
      '--listen',
      '--lockdown',
      '--order',
      'capture#3=frame-all-black',
      '*@5=emergency-stopped',
      'Exit codes',
    ])
      expect(r.stdout).toContain(text);
  });

  it('bad usage exits 2 with a hint', () => {
    expect(cli(fixture.demo.sessionDir).status).toBe(2); // no transport
    const bad = cli(fixture.demo.sessionDir, '--stdio', '--inject', 'capture=not-a-code');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/not a code MCEC produces/);
    expect(cli(fixture.demo.sessionDir, '--stdio', '--speed', 'fast').status).toBe(2);
  });

  it('--listen serves HTTP until SIGTERM, then prints the report', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(
      process.execPath,
      [REPLAY_CLI, fixture.demo.sessionDir, '--listen', '127.0.0.1:0', '--json'],
      { cwd: root },
    );
    let stderr = '';
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    const url = await new Promise<string>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (s: string) => {
        stderr += s;
        const m = /on (http:\/\/\S+)/.exec(stderr);
        if (m) resolve(m[1]!);
      });
    });
    const answer = await request(url, {
      body: rpc(1, 'tools/call', { name: 'displays', arguments: { sessionId: fixture.demo.sessionId } }),
    });
    expect(env(JSON.parse(answer.text).result).result.count).toBe(2);
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(JSON.parse(stdout).counts).toMatchObject({ calls: 1, matched: 1 });
  });

  it('--listen is not starved by 16 clients trickling their bodies: each gets 408 at the body deadline', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(
      process.execPath,
      [REPLAY_CLI, fixture.demo.sessionDir, '--listen', '127.0.0.1:0', '--body-timeout', '1s', '--json'],
      { cwd: root },
    );
    let stderr = '';
    const url = await new Promise<string>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (s: string) => {
        stderr += s;
        const m = /on (http:\/\/\S+)/.exec(stderr);
        if (m) resolve(m[1]!);
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // The attack: 16 clients, every request slot, a byte of body every so often (for minutes).
    const slow = await slowClients(url, 16, { everyMs: 200 });
    try {
      const ask = () =>
        request(url, {
          body: rpc(1, 'tools/call', { name: 'displays', arguments: { sessionId: fixture.demo.sessionId } }),
        });
      // While they hold the slots, MCEC's own 503; once their bodies are past the deadline, answers again.
      const deadline = Date.now() + 15_000;
      let answer = await ask();
      while (answer.status !== 200 && Date.now() < deadline) {
        expect(answer.status).toBe(503);
        await new Promise((r) => setTimeout(r, 100));
        answer = await ask();
      }
      expect(answer.status).toBe(200);
      expect(env(JSON.parse(answer.text).result).result.count).toBe(2);
      await Promise.all(slow.map((c) => c.closed));
      expect(slow.map((c) => c.status())).toEqual(Array(16).fill(408));
    } finally {
      for (const c of slow) c.destroy();
      child.kill('SIGTERM');
      await exited;
    }
  });
});
