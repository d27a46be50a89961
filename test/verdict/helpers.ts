import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { readZip } from '../bundle/helpers.js';
import { post } from '../proxy/helpers.js';
import { sessionIdFrom } from '../proxy/sim-script.js';
import { sessionDirs } from '../record/helpers.js';
import { BUNDLE_CLI, type ChildRun, runNode } from '../support/programs.js';
import { type SimWithProxy, simBehindHttpProxy as simBehindTap } from '../support/sim-http-proxy.js';
import { removeDir, tempDir } from '../support/temp.js';

export { BUNDLE_CLI } from '../support/programs.js';
export type { SimWithProxy } from '../support/sim-http-proxy.js';

export type CliRun = ChildRun;

/** Run the built `mcec-bundle` with `--sessions` appended where a command takes it. */
export function runBundle(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runNode([BUNDLE_CLI, ...args], { env });
}

/** A fresh temp dir. */
export function tempRoot(): string {
  return tempDir('mcec-verdict-');
}

/** The simulator behind a recording HTTP proxy, with the tap that keeps every body the simulator gets. */
export function simBehindHttpProxy(root: string): Promise<SimWithProxy> {
  return simBehindTap(root, { tap: true });
}

const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify(
    params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
  );
export const toolCall = (id: number, name: string, args: Record<string, unknown>) =>
  rpc(id, 'tools/call', { name, arguments: args });

/** POST one JSON-RPC body and return the answer's text. */
export async function send(url: string, body: string): Promise<{ status: number; text: string }> {
  const answer = await post(url, body);
  return { status: answer.status, text: answer.body.toString('utf8') };
}

/**
 * The run of issue 11: session-start, windows, capture, a find failing selector-matched-3, an invoke
 * failing target-elevated, a capture failing frame-all-black, an unknown tool, then session-end.
 * Returns the MCEC session id.
 */
export async function playIssueRun(url: string): Promise<string> {
  await send(
    url,
    rpc(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'verdict-test', version: '1' },
    }),
  );
  await send(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  const started = await send(url, toolCall(2, 'session-start', {}));
  const sid = sessionIdFrom(started.text);
  const expectCode = async (id: number, tool: string, args: Record<string, unknown>, code: string | null) => {
    const { text } = await send(url, toolCall(id, tool, { ...args, sessionId: sid }));
    const content = (JSON.parse(text) as { result: { content: Array<{ text?: string }> } }).result.content;
    const envelope = JSON.parse(content[content.length - 1]!.text!) as {
      ok: boolean;
      error?: { code: string };
    };
    const got = envelope.ok ? null : (envelope.error?.code ?? '?');
    if (got !== code) throw new Error(`${tool}: expected ${code ?? 'ok'}, the simulator said ${got ?? 'ok'}`);
  };
  await expectCode(3, 'windows', {}, null);
  await expectCode(4, 'capture', { window: 'Notepad' }, null);
  await expectCode(5, 'find', { window: 'Save As', value: 'Save' }, 'selector-matched-3');
  await expectCode(6, 'invoke', { window: 'Administrator', value: 'Close' }, 'target-elevated');
  await expectCode(7, 'capture', { window: 'Video Player' }, 'frame-all-black');
  await expectCode(8, 'no-such-tool', {}, 'unknown-tool');
  await expectCode(9, 'session-end', {}, null);
  return sid;
}

/** Issue 11's run, recorded once for a test file: the temp root it lives in, the recorder's dir, its session id. */
export interface RecordedIssueRun {
  readonly root: string;
  readonly sessionsDir: string;
  readonly sid: string;
}

/**
 * Call once at the top of a test file: before its tests, {@link playIssueRun} through the simulator behind the
 * HTTP proxy (everything closed again, so the tests read a finished run); after them, the root is removed.
 */
export function issueRunRecordedPerFile(): RecordedIssueRun {
  const run = { root: '', sessionsDir: '', sid: '' };
  beforeAll(async () => {
    run.root = tempRoot();
    const rig = await simBehindHttpProxy(run.root);
    run.sessionsDir = rig.sessionsDir;
    run.sid = await playIssueRun(rig.url);
    await rig.close();
  }, 60_000);
  afterAll(() => {
    removeDir(run.root);
  });
  return run;
}

/** The dir of session `id` below `sessionsDir`. */
export function sessionDirOf(sessionsDir: string, id: string): string {
  return path.join(sessionsDir, sessionDirs(sessionsDir).find((d) => d.endsWith(`-${id}`))!);
}

/** The text entries of a bundle zip by their path below the top folder. */
export async function bundleTexts(zip: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readZip(zip)) {
    const rel = entry.name.split('/').slice(1).join('/');
    if (/\.(json|jsonl|md|html)$/.test(rel)) out.set(rel, entry.data.toString('utf8'));
  }
  return out;
}
