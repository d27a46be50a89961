// Session and artifact names are UTC: run this suite in a zone far from it.
process.env.TZ = 'Asia/Kolkata';

import { describe, expect, it } from 'vitest';
import { runScriptedAgent } from '../../src/demo/scripted-agent.js';
import { replaySession } from '../../src/replay/index.js';
import type { CallToolResult } from '../../src/sim/index.js';
import { useDemoSession } from '../support/demo-session.js';
import { callsOf, reportValidator, StdioReplay, useRecordedDemo } from './helpers.js';

const fixture = useRecordedDemo();
const demoSession = useDemoSession();

const envelopeText = (out: CallToolResult) => out.content.at(-1)!;

describe('the demo session replayed through a second run of the scripted agent', () => {
  it('gives the same calls, the same verdict and byte-identical answers where the recording holds them', async () => {
    const replay = await replaySession(fixture.demo.sessionDir, { http: false });
    const outputs: CallToolResult[] = [];
    const run = await runScriptedAgent(
      async (tool, args) => {
        const out = await replay.callTool(tool, args);
        outputs.push(out);
        return out;
      },
      { step: () => {} },
    );
    const report = await replay.close();

    expect(callsOf(run)).toEqual(callsOf(fixture.demo.run));
    expect([run.passed, run.reason]).toEqual([fixture.demo.run.passed, fixture.demo.run.reason]);
    expect(outputs).toHaveLength(fixture.demo.wire.length);
    expect(report.counts).toMatchObject({ calls: 12, matched: 12, unmatched: 0, unused: 0, injected: 0 });
    expect(reportValidator()(report)).toEqual([]);

    for (const [i, original] of fixture.demo.wire.entries()) {
      const replayed = outputs[i]!;
      // Same blocks in the same order: the image block first (byte for byte), the envelope text last.
      expect(replayed.content.map((b) => b.type)).toEqual(original.output.content.map((b) => b.type));
      expect(replayed.isError).toBe(original.output.isError);
      for (const [j, block] of original.output.content.entries())
        if (block.type === 'image') expect(replayed.content[j]).toEqual(block);
      // Nothing in the demo is a secret: every answer, session-start's commandAccess note (which quotes
      // `chars:` as documentation) included, comes back as MCEC sent it.
      expect(envelopeText(replayed)).toEqual(envelopeText(original.output));
    }
    expect(report.calls.filter((c) => c.redacted.length > 0)).toEqual([]);
    // Both images came back: Notepad's capture (envelope and block) and the black partialResult.
    expect(report.calls.reduce((n, c) => n + c.imagesRestored, 0)).toBe(3);
    const black = JSON.parse((envelopeText(outputs[10]!) as { text: string }).text);
    const blackOriginal = JSON.parse((envelopeText(fixture.demo.wire[10]!.output) as { text: string }).text);
    expect(Buffer.from(black.error.partialResult.base64, 'base64')).toEqual(
      Buffer.from(blackOriginal.error.partialResult.base64, 'base64'),
    );
  });

  it('npm run demo, then mcec-replay <that session> --stdio drives the agent to the same verdict with the same calls', async () => {
    const { sessionsDir, ...recorded } = demoSession();
    const replay = new StdioReplay([recorded.sessionId, '--sessions', sessionsDir, '--stdio']);
    const init = await replay.request('initialize', { protocolVersion: '2025-06-18' });
    expect((init.result as { serverInfo: unknown }).serverInfo).toEqual({
      name: 'MCEC',
      version: '3.0.0-sim',
    });
    const run = await runScriptedAgent(replay.dispatch, { step: () => {} });
    expect(await replay.end()).toBe(0);
    expect(callsOf(run)).toEqual(callsOf(recorded.run));
    expect([run.passed, run.reason]).toEqual([recorded.run.passed, recorded.run.reason]);
    // The wire is MCEC's: the envelope inside the text block is escaped again (\u0022).
    expect(replay.lines.some((l) => l.includes('{\\u0022ok\\u0022:'))).toBe(true);
    expect(replay.stderr).toContain('12 calls: 12 matched');
    expect(replay.stderr).not.toMatch(/redacted:/);
  });
});
