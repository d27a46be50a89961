/**
 * Clipboard text is user data and invoke's `value` is a selector: a session against the simulator, its
 * every file and its bundle (unzipped with the real `unzip`) searched byte for byte.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/index.js';
import { createRecorder } from '../../src/record/index.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import { calls, sessionDirs, tempDir } from '../record/helpers.js';
import { leakedForm } from '../support/secret-forms.js';

/** Set on the clipboard by the agent, then read back. */
const CLIP_SECRET = 'Clip-B0ard-Secret!';
/** Typed into the password box with invoke setvalue. */
const TYPED = 'Inv0ke-Typed-Pw';

/** Every regular file under `dir`, as bytes (binary files too: a secret must not hide in a page of SQLite). */
function allFiles(dir: string): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out.push({ file, text: fs.readFileSync(file).toString('latin1') });
  }
  return out;
}

describe('clipboard text and invoke selectors, end to end', () => {
  let root: string;
  let dir: string;
  let bundle: string;
  let unzipped: string;

  beforeAll(async () => {
    root = tempDir();
    const sim = createSimulator({ seed: 5, signIn: true, sessionsRoot: tempDir() });
    const recorder = createRecorder({
      sessionsDir: root,
      scenario: 'clipboard round trip',
      stderr: () => {},
    });
    const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => sim.callTool(tool, args));
    const sessionId = envelopeOf((await dispatch('session-start', {})) as never).sessionId!;
    const s = { sessionId };
    const set = envelopeOf(
      (await dispatch('clipboard', { ...s, action: 'set', text: CLIP_SECRET })) as never,
    );
    expect(set.ok).toBe(true);
    const got = envelopeOf((await dispatch('clipboard', { ...s, action: 'get' })) as never);
    // The agent gets the real answer; only the log hides it.
    expect(got.result).toEqual({ text: CLIP_SECRET, length: CLIP_SECRET.length });
    // Pasted into the API token box and read back by find: a later echo of the remembered clipboard text.
    await dispatch('click', { ...s, window: 'Sign in', at: { by: 'automationid', value: 'ApiToken' } });
    await dispatch('send_command', { ...s, command: 'ctrl-v' });
    const pasted = envelopeOf(
      (await dispatch('find', { ...s, window: 'Sign in', by: 'automationid', value: 'ApiToken' })) as never,
    );
    expect((pasted.result as { element: { value: string } }).element.value).toBe(CLIP_SECRET);
    await dispatch('invoke', { ...s, window: 'Sign in', value: 'Password', action: 'setvalue', text: TYPED });
    await dispatch('invoke', { ...s, window: 'Sign in', value: 'Password', action: 'setvalue' });
    await recorder.end(sessionId, { passed: false, reason: 'checking the clipboard' });
    await recorder.close();
    dir = path.join(root, sessionDirs(root).find((d) => d.endsWith(sessionId))!);
    bundle = path.join(tempDir(), 'bundle.zip');
    await buildBundle(dir, { output: bundle });
    unzipped = tempDir();
    const unzip = spawnSync('unzip', ['-q', bundle, '-d', unzipped], { encoding: 'utf8' });
    expect(unzip.status, unzip.stderr).toBe(0);
  });
  afterAll(() => {
    for (const d of [root, unzipped, bundle && path.dirname(bundle)])
      if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  it('the clipboard secret set and read back is in no file of the session dir, the zip or its entries', () => {
    const files = [
      ...allFiles(dir),
      ...allFiles(unzipped),
      { file: bundle, text: fs.readFileSync(bundle).toString('latin1') },
    ];
    expect(files.map((f) => path.basename(f.file))).toEqual(
      expect.arrayContaining(['session.sqlite', 'tool-calls.jsonl', 'report.html', 'failure-summary.md']),
    );
    for (const { file, text } of files)
      for (const secret of [CLIP_SECRET, TYPED])
        expect(leakedForm(text, secret), `${secret} in ${file}`).toBeUndefined();
  });

  it('the pasted value read back by find is scrubbed (the clipboard text was remembered)', () => {
    const find = calls(dir).find((c) => c.tool === 'find')!;
    expect(JSON.parse(find.envelope!).result.element.value).toBe('[redacted]');
  });

  it('set and get are stored with their lengths, like typed text', () => {
    const rows = calls(dir).filter((c) => c.tool === 'clipboard');
    expect(JSON.parse(rows[0]!.args!)).toMatchObject({
      action: 'set',
      text: `[typed text: ${CLIP_SECRET.length} chars]`,
    });
    expect(JSON.parse(rows[1]!.envelope!).result).toEqual({
      text: `[typed text: ${CLIP_SECRET.length} chars]`,
      length: CLIP_SECRET.length,
    });
  });

  it("invoke keeps its selector (value: 'Password'); only text is typed text", () => {
    const rows = calls(dir).filter((c) => c.tool === 'invoke');
    expect(JSON.parse(rows[0]!.args!)).toMatchObject({
      value: 'Password',
      action: 'setvalue',
      text: `[typed text: ${TYPED.length} chars]`,
    });
    expect(JSON.parse(rows[1]!.args!)).toMatchObject({ value: 'Password', action: 'setvalue' });
  });
});
