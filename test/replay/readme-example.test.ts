// The block between the markers is quoted verbatim in README.md ("Turn a failure bundle into a regression
// test"), with the imports from '../../src/index.js' and '../../src/sim.js' written as 'mcec-recorder' and
// 'mcec-recorder/sim'; the last test keeps them equal. It calls runDemo itself, as the README shows a user doing.
// --- README example start
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { replaySession } from '../../src/index.js';
import { runDemo, runScriptedAgent } from '../../src/sim.js';

it('the agent gives up cleanly when Notepad comes back black', async () => {
  // 1. Record once: here the demo's scripted agent; in your suite, the bundle of a run that failed.
  const sessionsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sessions-'));
  const { bundle } = await runDemo({ sessionsDir });

  // 2. Replay it as MCEC, with the first capture answered frame-all-black (capture-blank) instead.
  const replay = await replaySession(bundle, { lockdown: true, inject: ['capture#1=frame-all-black'] });
  try {
    // 3. Point the agent at replay.url (POST /mcp, as MCEC on 5151). The demo's agent takes a dispatch:
    let id = 0;
    const callTool = async (name: string, args: Record<string, unknown>) => {
      const res = await fetch(replay.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: ++id,
          method: 'tools/call',
          params: { name, arguments: args },
        }),
      });
      return ((await res.json()) as { result: unknown }).result; // MCEC's CallToolResult
    };
    const run = await runScriptedAgent(callTool, { step() {} });

    // 4. Assert what the agent did with the failure: it saw it, stopped at step 2 and ended its session.
    expect(run.calls[3]).toMatchObject({ tool: 'capture', ok: false, code: 'frame-all-black' });
    expect(run.calls.at(-1)?.tool).toBe('session-end');
    expect(run.reason).toBe('open notepad: Notepad or its editor is not there');
  } finally {
    const report = await replay.close();
    // Lockdown: every call the agent made is in the recording (a new one would be replay-unmatched, exit 1).
    expect(report.exitCode).toBe(0);
    expect(report.counts.injected).toBe(1);
    fs.rmSync(sessionsDir, { recursive: true, force: true });
  }
});
// --- README example end

it('README.md quotes this example verbatim', () => {
  const self = fs.readFileSync(new URL(import.meta.url), 'utf8');
  const example = self
    .slice(self.indexOf('// --- README example start\n') + 28, self.indexOf('// --- README example end'))
    .replace("from '../../src/index.js'", "from 'mcec-recorder'")
    .replace("from '../../src/sim.js'", "from 'mcec-recorder/sim'");
  const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
});
