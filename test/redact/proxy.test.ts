/** Redaction through both proxies: malformed requests' excerpts and typed commands, every recorded file read back. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHttpProxy } from '../../src/proxy/http.js';
import { createRecorder } from '../../src/record/index.js';
import { post, startServer, waitFor } from '../proxy/helpers.js';
import { allText, readSessions } from '../proxy/sim-script.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { leakedForm } from '../support/secret-forms.js';
import { simBehindHttpProxy } from '../support/sim-http-proxy.js';
import { SIM_STDIO_CHILD, stdioProxy } from '../support/stdio-proxy.js';

const TOKEN = 'tok-5e1d2c3b4a596877';
const PASSWORD = 'Malformed-Pw-91';
const TYPED = 'Typed-In-Bad-92';
/** Typed into tools MCEC does not have (misspelled names). */
const MISTYPED = 'Mis-Typed-Pw-31';

const temp = tempDirPerTest('mcec-');

describe('redaction through the HTTP proxy', () => {
  it("a malformed body's excerpt keeps neither its password nor its typed text; nor does a typed call", async () => {
    const sessionsDir = path.join(temp.dir, 'recorded');
    const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
    const proxy = await simBehindHttpProxy(temp.dir, { seed: 7, token: TOKEN, recorder });
    temp.defer(() => proxy.close());
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const call = (id: number, name: string, args: Record<string, unknown>) =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

    const start = await post(proxy.url, call(1, 'session-start', {}), auth);
    // MCEC writes the envelope's quotes as \u0022: read the id after JSON.parse, never from the raw text.
    const startEnv = JSON.parse(JSON.parse(start.body.toString('utf8')).result.content[0].text);
    const sessionId: string = startEnv.sessionId;
    await post(proxy.url, call(2, 'send_command', { sessionId, command: `chars:${TYPED}` }), auth);
    // Cut bodies: not JSON, so only an excerpt of them is recorded.
    const bad1 = await post(
      proxy.url,
      `{"jsonrpc":"2.0","id":3,"params":{"arguments":{"password":"${PASSWORD}"`,
      auth,
    );
    const bad2 = await post(proxy.url, `{"id":4,"params":{"arguments":{"command":"chars:${TYPED}`, auth);
    expect(bad1.status).toBeGreaterThanOrEqual(200);
    expect(bad2.status).toBeGreaterThanOrEqual(200);
    // Tools MCEC does not have: the simulator refuses them, their typed input is stored as its length.
    await post(proxy.url, call(6, 'chars', { sessionId, chars: MISTYPED }), auth);
    await post(proxy.url, call(7, 'type_txt', { sessionId, text: MISTYPED }), auth);
    await post(proxy.url, call(5, 'session-end', { sessionId }), auth);
    await proxy.close();
    await recorder.close();

    const sessions = readSessions(sessionsDir);
    const recorded = JSON.stringify(sessions);
    // The malformed bodies were recorded (as excerpts), just without what they must not keep.
    expect(recorded).toContain('[redacted]');
    expect(recorded).toContain('[typed text: ');
    expect(recorded).toContain(`chars\\":\\"[typed text: ${MISTYPED.length} chars]`);
    const files = allText(sessionsDir);
    for (const secret of [PASSWORD, TYPED, TOKEN, MISTYPED]) {
      expect(leakedForm(recorded, secret), `${secret} in the logs' rows`).toBeUndefined();
      expect(leakedForm(files, secret), `${secret} in the recorded files`).toBeUndefined();
    }
  });
});

describe("the HTTP proxy's Authorization headers", () => {
  // That a token still in use is never the one forgotten (seen again, it is its pool's newest) is held by
  // test/redact/redactor.test.ts: here each answer is recorded right after its request re-taught the token.
  it('600 distinct bearer tokens never push a configured secret out; the newest and a steady token stay scrubbed', async () => {
    const CONFIGURED = 'Configured-Secret-77x';
    // A server that echoes what it was sent: the client's Authorization header, and the configured secret.
    const target = await startServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const { id } = JSON.parse(Buffer.concat(parts).toString('utf8')) as { id: number };
        const text = `seen ${req.headers.authorization} and ${CONFIGURED}`;
        const body = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
      });
    });
    temp.defer(() => target.close());
    const sessionsDir = path.join(temp.dir, 'recorded');
    const recorder = createRecorder({
      sessionsDir,
      transport: 'http',
      stderr: () => {},
      redact: { secrets: [CONFIGURED] },
    });
    const proxy = await startHttpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      target: target.url,
      recorder,
    });
    const call = (id: number, token: string) =>
      post(
        proxy.url,
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } }),
        { Authorization: `Bearer ${token}` },
      );
    // One client keeps its token all along; 600 others come and go, each with its own (1,200 values with
    // the bare tokens: more than the 1,000 configured secrets the config pool held them beside).
    const steady = 'Steady-Client-Tok-0001';
    const passing = Array.from({ length: 600 }, (_, i) => `Passing-Tok-${String(i).padStart(4, '0')}-zz`);
    for (let i = 0; i < passing.length; i++) {
      expect((await call(i + 1, passing[i]!)).status).toBe(200);
      if (i % 50 === 0) await call(10_000 + i, steady);
    }
    await call(20_000, steady);
    await proxy.close();
    await recorder.close();
    const stored = allText(sessionsDir);
    expect(stored).toContain('seen [redacted] and [redacted]');
    expect(stored).not.toContain(CONFIGURED);
    expect(stored).not.toContain(steady);
    expect(stored).not.toContain(passing[599]!);
  }, 60_000);
});

describe('redaction through the stdio proxy', () => {
  it('an unparsable line and a typed call keep neither the password nor the typed text', async () => {
    const lines: string[] = [];
    let buffered = '';
    const recorder = createRecorder({
      sessionsDir: path.join(temp.dir, 'recorded'),
      transport: 'stdio',
      stderr: () => {},
    });
    const { stdin, stdout, exit } = stdioProxy(recorder, [SIM_STDIO_CHILD, path.join(temp.dir, 'sim')]);
    stdout.on('data', (c: Buffer) => {
      buffered += c.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts.filter(Boolean));
    });
    const call = (id: number, name: string, args: Record<string, unknown>) =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    stdin.write(`${call(1, 'session-start', {})}\n`);
    await waitFor(() => lines.length === 1);
    // MCEC writes the envelope's quotes as \u0022: read the id after JSON.parse, never from the raw text.
    const sessionId: string = JSON.parse(JSON.parse(lines[0]!).result.content[0].text).sessionId;
    stdin.write(`${call(2, 'send_command', { sessionId, command: `chars:${TYPED}` })}\n`);
    await waitFor(() => lines.length === 2);
    stdin.write(
      `{"jsonrpc":"2.0","id":3,"params":{"arguments":{"password":"${PASSWORD}","command":"chars:${TYPED}\n`,
    );
    await waitFor(() => lines.length === 3);
    stdin.write(`${call(5, 'send-input', { sessionId, input: MISTYPED })}\n`);
    await waitFor(() => lines.length === 4);
    stdin.write(`${call(4, 'session-end', { sessionId })}\n`);
    await waitFor(() => lines.length === 5);
    stdin.end();
    expect(await exit).toBe(0);
    await recorder.close();

    const recorded = JSON.stringify(readSessions(recorder.sessionsDir));
    expect(recorded).toContain(`chars:[typed text: ${TYPED.length} chars]`);
    expect(recorded).toContain(`input\\":\\"[typed text: ${MISTYPED.length} chars]`);
    // The unparsable line was recorded (its excerpt), without the password.
    expect(recorded).toContain('\\"password\\":\\"[redacted]');
    const files = allText(recorder.sessionsDir);
    for (const secret of [PASSWORD, TYPED, MISTYPED]) {
      expect(leakedForm(recorded, secret), `${secret} in the logs' rows`).toBeUndefined();
      expect(leakedForm(files, secret), `${secret} in the recorded files`).toBeUndefined();
    }
  });
});
