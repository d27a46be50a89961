/**
 * The closed-sessions handler (src/record/closed-sessions.ts) never fails the close, and says one line when it
 * could not be loaded or threw: a misconfigured handler would otherwise drop every catalog sidecar unseen.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type ClosedSessionsHandler, handlerInModule } from '../../src/record/closed-sessions.js';
import { createRecorder } from '../../src/record/index.js';
import { tempDir } from './helpers.js';

const root = tempDir('mcec-closed-sessions-');
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Record one call in a fresh sessions dir, close with `handler`: the recorder's notices. */
async function closeWith(name: string, handler: ClosedSessionsHandler): Promise<string[]> {
  const notices: string[] = [];
  const recorder = createRecorder(
    { sessionsDir: path.join(root, name), stderr: (l) => notices.push(l) },
    handler,
  );
  const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    ok: true,
    sessionId: `${name}00001`,
    result: { found: true },
  }));
  await call('find', { sessionId: `${name}00001`, window: 'Notepad' });
  await expect(recorder.close()).resolves.toBeUndefined();
  return notices;
}

/** A module on disk exporting `writeSidecars` only. */
function moduleFile(): string {
  const file = path.join(root, 'handler-module.mjs');
  fs.writeFileSync(file, 'export async function writeSidecars() {}\n');
  return pathToFileURL(file).href;
}

describe('the closed-sessions handler', () => {
  it('that throws: the close resolves, one notice says what failed', async () => {
    const notices = await closeWith('throws', async () => {
      throw new Error('disk full');
    });
    expect(notices).toEqual([
      `mcec-recorder: the closed-sessions handler failed for 1 closed session (disk full)`,
    ]);
  });

  it('named by a module without that export: the close resolves, one notice names the module and export', async () => {
    const url = moduleFile();
    const notices = await closeWith('noexport', handlerInModule({ url, name: 'writeSidecarz' }));
    expect(notices).toEqual([
      `mcec-recorder: the closed-sessions handler failed for 1 closed session (${url} exports no writeSidecarz)`,
    ]);
  });

  it('named by a module that is not there: the close resolves, one notice says it could not be loaded', async () => {
    const url = pathToFileURL(path.join(root, 'missing.mjs')).href;
    const notices = await closeWith('missing', handlerInModule({ url, name: 'writeSidecars' }));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      `mcec-recorder: the closed-sessions handler failed for 1 closed session (could not load ${url}: `,
    );
    expect(notices[0]).toMatch(/\)$/);
  });

  it("named by a module without that export, in a worker recorder: the notice reaches the creator's stderr", async () => {
    // The worker runs the built entry, so the port is imported from dist/ (test/global-setup.ts builds it).
    const dist = path.resolve(import.meta.dirname, '../../dist/record/worker-recorder.js');
    const { createWorkerRecorder } = (await import(
      dist
    )) as typeof import('../../src/record/worker-recorder.js');
    const url = moduleFile();
    const notices: string[] = [];
    const worker = createWorkerRecorder(
      { sessionsDir: path.join(root, 'worker'), transport: 'stdio', stderr: (l) => notices.push(l) },
      { url, name: 'writeSidecarz' },
    );
    await worker.ready();
    const request = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'find', arguments: {} } };
    const envelope = { ok: true, sessionId: 'worker000001', result: { found: true } };
    worker.beginExchange(request, { transport: 'stdio' }).complete({
      jsonrpc: '2.0',
      id: 1,
      result: { content: [{ type: 'text', text: JSON.stringify(envelope) }] },
    });
    await expect(worker.close()).resolves.toBeUndefined();
    expect(notices.filter((l) => l.includes('closed-sessions handler'))).toEqual([
      `mcec-recorder: the closed-sessions handler failed for 1 closed session (${url} exports no writeSidecarz)`,
    ]);
  });

  it('that works: no notice', async () => {
    const url = moduleFile();
    expect(await closeWith('works', handlerInModule({ url, name: 'writeSidecars' }))).toEqual([]);
  });
});
