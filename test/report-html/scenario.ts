/** The session the report.html tests look at: a Notepad save that ends in a blank capture of the Save As dialog. */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { writeReportHtml } from '../../src/report/html/index.js';
import { FixtureSession, NOTEPAD, SAVE_AS } from '../support/fixture-session.js';
import { blankPng, windowPng } from '../support/images.js';

/** Text that would run or fetch something if the page did not escape it. */
export const HOSTILE = `<img src="http://example.invalid/x.png"><script>window.__pwned = 1</script>`;

export interface Scenario {
  dir: string;
  reportPath: string;
  html: string;
  failingSeq: number;
  lastGoodSeq: number;
  okSeqs: number[];
  failedSeqs: number[];
  /** Seq of the only call with a tree-truncated warning. */
  truncatedSeq: number;
}

/** Render report.html for the session in `dir` with writeReportHtml and read it back. */
export async function writeReport(
  dir: string,
  options: Parameters<typeof writeReportHtml>[1] = {},
): Promise<{ html: string; reportPath: string }> {
  const reportPath = await writeReportHtml(dir, options);
  expect(reportPath).toBe(path.join(dir, 'report.html'));
  expect(fs.readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
  return { html: fs.readFileSync(reportPath, 'utf8'), reportPath };
}

/** Record the scenario under `root`, render report.html into the session dir and return what the tests need. */
export async function writeScenario(root: string): Promise<Scenario> {
  const s = FixtureSession.create(root, { sessionId: '5f19c9c01a3f', scenario: 'Save a Notepad document' });
  const ok: number[] = [];
  const failed: number[] = [];
  const okCall = (seq: number) => {
    ok.push(seq);
    return seq;
  };
  okCall(s.call({ tool: 'session-start', args: {}, result: { sessionId: s.sessionId } }));
  okCall(
    s.call({ tool: 'windows', args: { processName: 'notepad' }, result: { count: 1, windows: [NOTEPAD] } }),
  );

  const first = s.storePng(await windowPng('Untitled - Notepad'));
  const firstSeq = okCall(
    s.call({ tool: 'capture', args: { title: NOTEPAD.title }, result: { ...s.summaryOf(first, NOTEPAD) } }),
  );
  s.artifactRow(firstSeq, 'result', first);

  const truncatedSeq = okCall(
    s.call({
      tool: 'query',
      args: { title: NOTEPAD.title },
      result: {
        window: NOTEPAD,
        nodeCount: 1000,
        truncated: true,
        tree: [{ controlType: 'Edit', children: [] }],
      },
      warnings: [{ code: 'tree-truncated', detail: 'UIA tree clipped at 1000 nodes' }],
    }),
  );
  okCall(
    s.call({
      tool: 'send_command',
      args: { command: 'type', text: '[redacted: typed text, 26 chars]', password: '[redacted]' },
      result: { output: 'typed 26 characters' },
    }),
  );
  failed.push(
    s.call({
      tool: 'find',
      args: { name: 'Save' },
      error: {
        code: 'selector-matched-3',
        category: 'ambiguous-selector',
        detail: `Selector name='Save' matched 3 elements; refine with automationId. ${HOSTILE}`,
      },
    }),
  );
  okCall(
    s.call({
      tool: 'find',
      args: { automationId: 'SaveButton' },
      result: { found: true, element: { controlType: 'Button', name: 'Save' }, window: NOTEPAD },
    }),
  );
  okCall(
    s.call({
      tool: 'invoke',
      args: { automationId: 'SaveButton' },
      result: { invoked: true, modalPending: true },
    }),
  );

  const dialog = s.storePng(await windowPng('Untitled - Notepad', { dialog: 'Save As', accent: '#6b2fa0' }));
  const dialogSeq = okCall(
    s.call({
      tool: 'capture',
      args: { title: SAVE_AS.title },
      result: { ...s.summaryOf(dialog, SAVE_AS) },
      warnings: [{ code: 'capture-fallback', detail: 'PrintWindow failed; used a screen copy' }],
    }),
  );
  s.artifactRow(dialogSeq, 'result', dialog);
  const lastGoodSeq = okCall(
    s.call({
      tool: 'wait-for',
      args: { title: SAVE_AS.title, name: 'File name:', timeoutMs: 5000 },
      result: { found: true, element: { controlType: 'Edit', name: 'File name:' }, window: SAVE_AS },
    }),
  );
  s.step('open the Save As dialog', 'passed');

  const black = s.storePng(await blankPng());
  const failingSeq = s.call({
    tool: 'capture',
    args: { title: SAVE_AS.title },
    error: {
      code: 'frame-all-black',
      category: 'capture-blank',
      detail:
        'The captured frame is all black (dominant colour 100%); the window may be minimized or occluded.',
      lastObservation: { ...s.summaryOf(dialog, SAVE_AS) },
      partialResult: { ...s.summaryOf(black, SAVE_AS, true) },
    },
  });
  s.artifactRow(failingSeq, 'partialResult', black, '/error/partialResult/base64');
  failed.push(failingSeq);
  s.step('check the dialog renders', 'failed', 'capture of Save As was all black');
  s.end({ passed: false, reason: 'the Save As dialog rendered black' });
  s.close();
  const { html, reportPath } = await writeReport(s.dir);
  return {
    dir: s.dir,
    reportPath,
    html,
    failingSeq,
    lastGoodSeq,
    okSeqs: ok,
    failedSeqs: failed,
    truncatedSeq,
  };
}
