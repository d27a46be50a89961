/**
 * Redaction end to end: calls through `wrap` against the simulator (and, where a case needs a server that
 * echoes, MCEC-shaped answers from the dispatch), the real SQLite log read back, then the session's bundle
 * written and every file of the zip read back and searched for each secret in every encoding.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { readZip } from '../bundle/helpers.js';
import { allTextValues, calls, callToolResult, sessionDirs, tempDir } from '../record/helpers.js';
import { leakedForm } from '../support/secret-forms.js';

/** Typed through MCEC's raw `chars:` command. */
const TYPED = 'Typed-Pa55word!';
/** Passed under keys the old list missed, one per key. */
const KEYED: Record<string, string> = {
  password_confirmation: 'Conf1rm-Secret',
  passwordValue: 'PwValue-Secret9',
  pass: 'Pass-Secret-77',
  privateKeyPem: 'PemBody-Secret-1',
  sessionKey: 'SessKey-Secret-2',
  jwt: 'Jwt-Secret-Value-3',
  otp: '73129054',
};
/** Inside a JSON string argument, escaped JSON, and URL userinfo. */
const IN_JSON = 'InJson-Secret-4';
const IN_ESCAPED = 'Escaped-Secret-5';
const IN_URL = 'UrlUser-Secret-6';
/** A secret from the arguments, echoed by the server in encoded forms after a flood of token=... values. */
const ECHOED = 'Echo/Secret+7 x';
/** Typed into tools MCEC does not have (misspelled names), one of them echoed by the server. */
const MISTYPED = 'Mis-Typed-Pw-31';

const ALL = [TYPED, ...Object.values(KEYED), IN_JSON, IN_ESCAPED, IN_URL, ECHOED, MISTYPED];

describe('redaction end to end: wrap, the SQLite log and the bundle', () => {
  let root: string;
  let simRoot: string;
  let dir: string;
  let sessionId: string;

  beforeAll(async () => {
    root = tempDir();
    simRoot = tempDir();
    const sim = createSimulator({ seed: 11, sessionsRoot: simRoot });
    const recorder = createRecorder({ sessionsDir: root, scenario: 'type a password', stderr: () => {} });
    /** When set, the next call is answered with this instead of the simulator (a server that echoes). */
    let answer: unknown;
    const dispatch = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
      if (answer !== undefined) {
        const out = answer;
        answer = undefined;
        return out;
      }
      return sim.callTool(tool, args);
    });
    sessionId = envelopeOf((await dispatch('session-start', {})) as never).sessionId!;
    const s = { sessionId };
    const envelope = (result: Record<string, unknown>) => callToolResult({ ok: true, sessionId, result });

    // Typed text: MCEC's chars:, an unanchored one that MCEC still types, and its echo in an error detail.
    await dispatch('send_command', { ...s, command: `chars:${TYPED}` });
    await dispatch('send_command', { ...s, command: `oops chars:${TYPED}` });
    answer = callToolResult({
      ok: false,
      sessionId,
      error: {
        code: 'command-dropped',
        category: 'internal',
        detail: `The command 'CHARS:${TYPED}' was dropped whole and never executed.`,
      },
    });
    await dispatch('send_command', { ...s, command: `CHARS:${TYPED}` });
    // Nested send_command output: the legacy command's own JSON, echoing what was typed.
    answer = envelope({ output: JSON.stringify({ success: true, command: `chars:${TYPED}`, typed: TYPED }) });
    await dispatch('send_command', { ...s, command: `chars:${TYPED}` });

    // Keys, a JSON string argument, escaped JSON and URL userinfo.
    await dispatch('launch', { ...s, path: 'C:\\Tools\\app.exe', ...KEYED });
    await dispatch('launch', {
      ...s,
      path: 'C:\\Tools\\app.exe',
      args: JSON.stringify({ user: 'bob', password: IN_JSON }),
      env: JSON.stringify({ inner: JSON.stringify({ apiKey: IN_ESCAPED }) }),
      url: `https://bob:${IN_URL}@intranet.example/login`,
    });

    // A flood of token=... in server output, then the server echoes an argument secret encoded.
    await dispatch('launch', { ...s, path: 'C:\\Tools\\login.exe', password: ECHOED });
    answer = envelope({
      log: Array.from({ length: 2000 }, (_, i) => `retry token=Fl00d${i}-abcdefgh`).join('\n'),
    });
    await dispatch('get-text', { ...s, window: 'Untitled - Notepad' });
    answer = envelope({
      url: `https://intranet.example/cb?p=${encodeURIComponent(ECHOED)}`,
      basic: `Basic ${Buffer.from(`bob:${ECHOED}`).toString('base64')}`,
      shout: `LOGIN FAILED FOR ${ECHOED.toUpperCase()}`,
      raw: `{\\"password\\":\\"${ECHOED}\\"}`,
    });
    await dispatch('get-text', { ...s, window: 'Untitled - Notepad' });

    // Hostile text cannot blank evidence: secret=Notepad, a code as a token value.
    answer = callToolResult({
      ok: false,
      sessionId,
      error: {
        code: 'window-not-found',
        category: 'no-target',
        detail: 'secret=Notepad token=window-not-found',
      },
    });
    await dispatch('capture', { ...s, window: 'Notepad' });
    await dispatch('windows', s);

    // Typed input sent to tools MCEC does not have (the simulator refuses them as unknown-tool); a server
    // that echoes it in its error; a known tool that types nothing keeps its `text`.
    await dispatch('chars', { ...s, chars: MISTYPED });
    await dispatch('send-input', { ...s, window: 'Login', input: MISTYPED });
    answer = callToolResult({
      ok: false,
      sessionId,
      error: {
        code: 'unknown-tool',
        category: 'internal',
        detail: `Unknown tool type_txt (Text: ${MISTYPED})`,
      },
    });
    await dispatch('type_txt', { ...s, Text: MISTYPED });
    await dispatch('find', { ...s, text: 'Save' });
    await dispatch('capture', { ...s, window: 'Nowhere at all' });

    await dispatch('session-end', s);
    await recorder.end(sessionId, { passed: false, reason: 'checking redaction' });
    await recorder.close();
    dir = path.join(root, sessionDirs(root).find((d) => d.endsWith(sessionId))!);
  });

  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(simRoot, { recursive: true, force: true });
  });

  it('the log holds no secret and no typed text, in any encoding, in any column or page', () => {
    for (const text of allTextValues(dir)) {
      for (const secret of ALL)
        expect(leakedForm(text, secret), `${secret} in ${text.slice(0, 200)}`).toBeUndefined();
    }
    for (const f of fs.readdirSync(dir).filter((n) => n.startsWith('session.sqlite'))) {
      const raw = fs.readFileSync(path.join(dir, f)).toString('latin1');
      for (const secret of ALL) expect(leakedForm(raw, secret), `${secret} in ${f}`).toBeUndefined();
    }
  });

  it('typed text is stored as its length, the command verb kept', () => {
    const sends = calls(dir).filter((c) => c.tool === 'send_command');
    expect(sends.map((c) => JSON.parse(c.args!).command)).toEqual([
      `chars:[typed text: ${TYPED.length} chars]`,
      `oops chars:[typed text: ${TYPED.length} chars]`,
      `CHARS:[typed text: ${TYPED.length} chars]`,
      `chars:[typed text: ${TYPED.length} chars]`,
    ]);
    const dropped = sends[2]!;
    expect(dropped.error_code).toBe('command-dropped');
    expect(dropped.error_detail).toBe(
      `The command 'CHARS:[typed text: ${TYPED.length} chars]' was dropped whole and never executed.`,
    );
    // The simulator's own echo of an unknown command.
    expect(sends[1]!.error_detail ?? '').not.toContain('Pa55');
  });

  it("typed input of a tool MCEC does not have is stored as its length; a known tool's text is kept", () => {
    const byTool = (tool: string) => JSON.parse(calls(dir).find((c) => c.tool === tool)!.args!);
    const marker = `[typed text: ${MISTYPED.length} chars]`;
    expect(byTool('chars')).toEqual({ sessionId, chars: marker });
    expect(byTool('send-input')).toEqual({ sessionId, window: 'Login', input: marker });
    expect(byTool('type_txt')).toEqual({ sessionId, Text: marker });
    expect(calls(dir).find((c) => c.tool === 'type_txt')!.error_detail).toBe(
      `Unknown tool type_txt (Text: ${marker})`,
    );
    expect(byTool('find')).toEqual({ sessionId, text: 'Save' });
  });

  it('evidence stays: window names, error codes and categories', () => {
    const rows = calls(dir);
    const hostile = rows.find((c) => c.tool === 'capture' && c.error_code === 'window-not-found')!;
    expect(hostile.error_category).toBe('no-target');
    expect(hostile.error_detail).toBe('secret=[redacted] token=window-not-found');
    const windows = rows.find((c) => c.tool === 'windows')!;
    expect(windows.envelope).toContain('Untitled - Notepad');
    const miss = rows.filter((c) => c.tool === 'capture').at(-1)!;
    expect(miss.error_code).toBe('window-not-found');
    expect(miss.args).toContain('Nowhere at all');
  });

  it('the bundle holds none of them in any file, in any encoding', async () => {
    const out = path.join(root, 'bundle.zip');
    await buildBundle(dir, { output: out });
    const verified = await verifyBundle(out);
    expect(verified.ok, JSON.stringify(verified)).toBe(true);
    const entries = await readZip(out);
    expect(entries.map((e) => e.name).join('\n')).toContain('tool-calls.jsonl');
    for (const e of entries) {
      const texts = [e.data.toString('utf8'), e.data.toString('latin1')];
      for (const text of texts)
        for (const secret of ALL) expect(leakedForm(text, secret), `${secret} in ${e.name}`).toBeUndefined();
    }
    // The evidence made it into the bundle's files too.
    const jsonl = entries.find((e) => e.name.endsWith('tool-calls.jsonl'))!.data.toString('utf8');
    expect(jsonl).toContain(`chars:[typed text: ${TYPED.length} chars]`);
    expect(jsonl).toContain('window-not-found');
  });
});
