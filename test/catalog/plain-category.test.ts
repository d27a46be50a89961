/**
 * Triage of an old plain-server log (a failed tool result stored with the stand-in category 'internal'):
 * the group, its shown category and its recovery say no category, as its fingerprint does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refreshCatalog } from '../../src/fleet/catalog.js';
import { renderTriageMarkdown, renderTriageText, triage } from '../../src/fleet/triage.js';
import { SessionLog } from '../../src/store/session-log.js';
import { callRow, oldPlainFailure, sessionRow } from '../support/log-rows.js';
import { scratchRoot } from './helpers.js';

describe('triage: an old plain-server log', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it("shows no '(internal)' for a failed plain tool result", async () => {
    const sessionsDir = path.join(root, 'sessions');
    const log = SessionLog.open({
      dir: path.join(sessionsDir, '20261202-101502-a1b2c3d4e5f6'),
      session: sessionRow('a1b2c3d4e5f6', {
        status: 'ended',
        ended_at: '2026-12-02T10:16:00.000Z',
        environment: JSON.stringify({ server: { name: 'example-servers/everything', version: '1.0.0' } }),
      }),
    });
    log.beginCall(callRow(1, { transport: 'http', ...oldPlainFailure('echo') }));
    log.close();
    const { catalog } = await refreshCatalog(sessionsDir, { full: true });
    try {
      // The rows are dated 2026-12-02: triage as of the next day, whatever today is.
      const report = triage(catalog, { now: new Date('2026-12-03T00:00:00Z') });
      expect(report.groups.map((g) => [g.tool, g.code, g.category, g.recovery])).toEqual([
        ['echo', 'tool-error', null, null],
      ]);
      expect(renderTriageText(report)).not.toContain('internal');
      // No category is shown as none at all, not as a placeholder.
      expect(renderTriageText(report)).toMatch(/^ {4}echo tool-error$/m);
      expect(renderTriageMarkdown(report)).toContain('| echo | tool-error |');
    } finally {
      catalog.close();
    }
  });
});
