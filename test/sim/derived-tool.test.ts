/**
 * A catalog tool the simulator has no scripted behaviour for is served from its catalog row alone: synthetic
 * rows (one per kind) added to a simulator's tool set answer valid envelopes through the whole call path
 * (tools/list, the command table, gates, routing, the last good observation).
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { McecToolSpec } from '../../src/contract/tool-catalog.js';
import { MCEC_TOOL_NAMES } from '../../src/contract/tool-catalog.js';
import type { ToolListing } from '../../src/contract/tool-listings.js';
import { HANDLES } from '../../src/sim/index.js';
import { SimulatorCore } from '../../src/sim/server.js';
import { simulatedTool, TOOLS } from '../../src/sim/tools.js';
import { type Called, envelopeFrom, type Loose, tempDir } from './helpers.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/** A tools/list entry for a tool MCEC does not have (yet): window selectors and the routing argument. */
function listing(name: string): ToolListing {
  const str = (description: string) => ({ type: 'string' as const, description });
  return {
    name,
    description: `A tool added to the catalog in a test: ${name}.`,
    inputSchema: {
      type: 'object',
      properties: { window: str('Window title substring'), sessionId: str('Optional session id') },
      required: [],
    },
  };
}

const ROWS: Record<string, McecToolSpec> = {
  'probe-pixels': { kind: 'observation', servedDuringConsent: true },
  'list-monitors-x': { kind: 'read-only' },
  'nudge-window': { kind: 'action', typedText: { keys: ['text'] } },
  'format-disk': { kind: 'action', gatedByDefault: true },
  'session-peek': { kind: 'lifecycle' },
  'ask-operator-x': { kind: 'meta' },
};

let made = 0;
/** A simulator serving the catalog's tools plus the synthetic rows, each with the behaviour its row implies. */
function simulator(): SimulatorCore {
  made += 1;
  const extra = Object.entries(ROWS).map(([name, spec]) => simulatedTool(listing(name), spec));
  return new SimulatorCore(
    { seed: 3, sessionsRoot: path.join(dir, `root-${made}`), tempDir: dir, consentDelayMs: 5 },
    [...TOOLS, ...extra],
  );
}

async function call(core: SimulatorCore, name: string, args: Record<string, unknown> = {}): Promise<Called> {
  return envelopeFrom(await core.callTool(name, args));
}

describe('a catalog row without a scripted behaviour', () => {
  it('is listed, enters the command table and passes the consent gate as its row says', async () => {
    const core = simulator();
    const list = (await core.handle({ jsonrpc: '2.0', id: 1, method: 'tools/list' })) as Loose;
    const names = list.result.tools.map((t: Loose) => t.name);
    expect(names).toEqual([...MCEC_TOOL_NAMES, ...Object.keys(ROWS)]);
    expect(Object.keys(list.result.tools.at(-1))).toEqual(['name', 'description', 'inputSchema']);
    const init = (await core.handle({ jsonrpc: '2.0', id: 2, method: 'initialize' })) as Loose;
    const access = init.result.commandAccess;
    expect(access.enabledTools).toEqual(
      expect.arrayContaining(['probe-pixels', 'list-monitors-x', 'nudge-window']),
    );
    expect(access.gatedTools).toEqual(['launch', 'format-disk']);
    expect(access.enabledTools).not.toContain('session-peek');
    // While a consent prompt is open, a row marked servedDuringConsent is served and the others refused.
    core.setGate('consentPending', true);
    expect((await call(core, 'probe-pixels')).env.ok).toBe(true);
    expect((await call(core, 'nudge-window')).env.error).toMatchObject({ code: 'consent-pending' });
  });

  it('observation: ok with the tool and its window, kept as the last good observation', async () => {
    const core = simulator();
    const seen = await call(core, 'probe-pixels', { window: 'Notepad' });
    expect(seen.env.ok).toBe(true);
    expect(seen.env.result).toEqual({
      tool: 'probe-pixels',
      window: expect.objectContaining({ handle: HANDLES.notepad, title: 'Untitled - Notepad' }),
    });
    const status = await call(core, 'session-status');
    expect(status.env.result!.lastObservation).toEqual(seen.env.result);
    expect(status.env.result!.lastAction).toBe('probe-pixels');
    // No selector: no window; a selector that misses fails with the real code, the observation attached.
    expect((await call(core, 'list-monitors-x')).env.result).toEqual({ tool: 'list-monitors-x' });
    // The scripted tools keep their own behaviour.
    expect((await call(core, 'displays')).env.result).toHaveProperty('virtualBounds');
    const missing = await call(core, 'probe-pixels', { window: 'No Such Window' });
    expect(missing.env.error).toMatchObject({ code: 'window-not-found', category: 'no-target' });
    expect(missing.env.error!.lastObservation).toEqual(seen.env.result);
  });

  it('action: ok with its target; an elevated target is refused, a gated row is command-disabled', async () => {
    const core = simulator();
    expect((await call(core, 'nudge-window', { window: 'Notepad' })).env.result).toEqual({
      tool: 'nudge-window',
      done: true,
      window: expect.objectContaining({ handle: HANDLES.notepad }),
    });
    expect((await call(core, 'nudge-window')).env.result).toEqual({ tool: 'nudge-window', done: true });
    const elevated = await call(core, 'nudge-window', { window: 'Command Prompt' });
    expect(elevated.env.error).toMatchObject({ code: 'target-elevated', category: 'elevation' });
    const gated = await call(core, 'format-disk');
    expect(gated.env.error).toMatchObject({ code: 'command-disabled', category: 'internal' });
    await call(core, 'request-command-access', { commands: ['format-disk'], reason: 'a test needs it' });
    expect((await call(core, 'format-disk')).env.result).toEqual({ tool: 'format-disk', done: true });
  });

  it('lifecycle: the status of the session its sessionId names; meta: ok with the tool', async () => {
    const core = simulator();
    const started = await call(core, 'session-start');
    const id = started.env.result!.sessionId as string;
    const peek = await call(core, 'session-peek', { sessionId: id });
    expect(peek.env.sessionId).toBe(id);
    expect(peek.env.result).toMatchObject({ sessionId: id, artifactDir: started.env.result!.artifactDir });
    const unknown = await call(core, 'session-peek', { sessionId: 'feedfacecafe' });
    expect(unknown.env.error).toMatchObject({ code: 'unknown-session' });
    expect((await call(core, 'ask-operator-x')).env.result).toEqual({ tool: 'ask-operator-x' });
  });
});
