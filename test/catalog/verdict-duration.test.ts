/**
 * A run's duration is from its start to its end, or while it has none to its last recorded activity: a verdict
 * declared later (`mcec-bundle verdict`, minutes or days after the last call) is about the run, not part of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FixtureSession } from '../support/fixture-session.js';
import { cli, scratchRoot } from './helpers.js';

describe('a verdict declared after the last call', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('leaves the duration of a run still open (list, show) as it was', () => {
    const sessionsDir = path.join(root, 'sessions');
    // Open: its writer (this process) is alive, the session not ended, as under a running proxy. Started
    // long ago, so the verdict comes after its calls whatever the clock says.
    const s = FixtureSession.create(sessionsDir, {
      sessionId: '5ed0c0de0001',
      startedAt: new Date('2020-01-02T03:04:05.000Z'),
    });
    s.call({ tool: 'windows', result: { windows: [] } });
    s.call({ tool: 'windows', result: { windows: [] } });
    s.close();
    const durations = () => {
      const listed = JSON.parse(cli(['list', '--json', '--sessions', sessionsDir]).stdout) as Array<{
        durationMs: number | null;
        duration: string;
      }>;
      const shown = JSON.parse(cli(['show', '5ed0', '--json', '--sessions', sessionsDir]).stdout) as {
        durationMs: number | null;
      };
      return { list: listed[0]!.durationMs, listText: listed[0]!.duration, show: shown.durationMs };
    };
    const before = durations();
    expect(before.list).toBeGreaterThan(0);
    expect(before.list).toBeLessThan(1000);
    expect(before.show).toBe(before.list);

    const declared = cli([
      'verdict',
      '5ed0',
      'pass',
      '--reason',
      'checked by hand',
      '--sessions',
      sessionsDir,
    ]);
    expect(declared.code, declared.stderr).toBe(0);
    expect(durations()).toEqual(before);
  });
});
