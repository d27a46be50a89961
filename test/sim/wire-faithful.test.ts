/** The server's text on the wire, read as raw bytes: System.Text.Json escaping and .NET round-trip times. */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { utcStamp } from '../../src/paths/naming.js';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { call, request, tempDir, toolsCall } from './helpers.js';

process.env.TZ = 'America/New_York';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** A selector value with every character the server's encoder escapes specially. */
const NASTY = 'say "hi" `now` + <b> & \'x\' é';

describe('escaping on the wire (raw bytes)', () => {
  it('HTTP: quotes inside the envelope text are \\u0022, backticks \\u0060, and the answer is printable ASCII', async () => {
    const sim = createSimulator({ seed: 3, sessionsRoot: path.join(tmp.dir, 'http') });
    const listener = await sim.listenHttp({ port: 0 });
    try {
      const a = await request(listener.url, {
        body: toolsCall(1, 'invoke', { window: 'Notepad', value: NASTY }),
      });
      const raw = a.text;
      // The envelope is JSON inside a JSON string: its own quotes are written \u0022 on the outer line...
      expect(raw).toContain('"text":"{\\u0022ok\\u0022:false,\\u0022sessionId\\u0022:');
      // ...and the escapes inside it have their backslash escaped again.
      expect(raw).toContain(
        '\\\\u0022hi\\\\u0022 \\\\u0060now\\\\u0060 \\\\u002B \\\\u003Cb\\\\u003E \\\\u0026 \\\\u0027x\\\\u0027 \\\\u00E9',
      );
      expect(raw).not.toContain('\\"');
      expect(raw).not.toContain('`');
      expect(/^[\x20-\x7e]*$/.test(raw)).toBe(true);
      const env = JSON.parse(JSON.parse(raw).result.content[0].text);
      expect(env.error.detail).toContain(NASTY);
    } finally {
      await listener.close();
    }
  });

  it('stdio: the same bytes on the line', async () => {
    const sim = createSimulator({ seed: 3, sessionsRoot: path.join(tmp.dir, 'stdio') });
    const input = new PassThrough();
    const output = new PassThrough();
    const chunks: Buffer[] = [];
    output.on('data', (c: Buffer) => chunks.push(c));
    const served = sim.serveStdio(input, output);
    input.end(`${toolsCall(7, 'invoke', { window: 'Notepad', value: NASTY })}\n`);
    await served;
    const line = Buffer.concat(chunks).toString('utf8');
    expect(line.endsWith('\n')).toBe(true);
    expect(line).toContain('{\\u0022ok\\u0022:false');
    expect(line).toContain('\\\\u0022hi\\\\u0022 \\\\u0060now\\\\u0060');
    expect(line).not.toContain('\\"');
    expect(/^[\x20-\x7e]*\n$/.test(line)).toBe(true);
  });
});

describe('startedAt in the round-trip format (7 fractional digits)', () => {
  const SEVEN = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/;

  it('session-start and session-status write 7 digits, from the real clock too', async () => {
    const real = createSimulator({ seed: 5, sessionsRoot: path.join(tmp.dir, 'real') });
    const started = await call(real, 'session-start');
    expect(started.env.result!.startedAt).toMatch(SEVEN);
    const status = await call(real, 'session-status', { sessionId: started.env.result!.sessionId });
    expect(status.env.result!.startedAt).toBe(started.env.result!.startedAt);
    const fixed = createSimulator({
      seed: 5,
      now: () => new Date('2026-07-01T23:30:05.123Z'),
      sessionsRoot: path.join(tmp.dir, 'fixed'),
    });
    expect((await call(fixed, 'session-start')).env.result!.startedAt).toBe('2026-07-01T23:30:05.1230000Z');
  });

  it('the recorder names the session dir from startedAt as MCEC names its artifact dir (truncated, UTC)', async () => {
    const simRoot = path.join(tmp.dir, 'edge-sim');
    const sessionsDir = path.join(tmp.dir, 'edge-rec');
    // The last tick of a second, near the real clock (the recorder ignores a server time that is far off).
    const at = new Date();
    at.setUTCMilliseconds(999);
    const sim = createSimulator({
      seed: 9,
      now: () => at,
      subMillisecondTicks: () => 9999,
      sessionsRoot: simRoot,
    });
    const recorder = createRecorder({ sessionsDir });
    const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const start = envelopeOf((await dispatch('session-start', {})) as never);
    const result = start.result as { sessionId: string; startedAt: string; artifactDir: string };
    expect(result.startedAt).toBe(`${at.toISOString().slice(0, 23)}9999Z`);
    await dispatch('windows', { sessionId: result.sessionId });
    await recorder.close();
    const mcecDir = path.basename(result.artifactDir);
    expect(mcecDir).toBe(`${utcStamp(at)}-${result.sessionId}`);
    expect(fs.readdirSync(sessionsDir)).toContain(mcecDir);
  });
});
