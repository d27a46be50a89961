/** The session the report.html tests look at: a Notepad save that ends in a blank capture. */
import fs from 'node:fs';
import path from 'node:path';
import { renderReportHtml } from '../../src/report/html/index.js';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { blankPng, FixtureSession, windowPng } from './fixture.js';

const NOTEPAD = {
  handle: 1001,
  title: 'Untitled - Notepad',
  className: 'Notepad',
  processName: 'notepad',
  processId: 4242,
  x: 0,
  y: 0,
  width: 800,
  height: 500,
};

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
}

/** Record the scenario under `root`, render report.html into the session dir and return what the tests need. */
export async function writeScenario(root: string): Promise<Scenario> {
  const s = FixtureSession.create(root);
  const ok: number[] = [];
  const failed: number[] = [];
  const keep = (seq: number, list: number[]) => {
    list.push(seq);
    return seq;
  };
  keep(
    s.call({
      tool: 'session-start',
      args: {},
      result: { sessionId: s.sessionId, startedAt: '2026-12-02T10:15:02.123Z' },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'windows',
      args: { processName: 'notepad' },
      result: { condition: 'any', count: 1, windows: [NOTEPAD] },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'capture',
      args: { title: 'Untitled - Notepad' },
      result: {
        handle: 1001,
        window: NOTEPAD,
        blankCheck: { blank: false, dominantFraction: 0.61, dominantIsDark: false },
      },
      image: { png: await windowPng('Untitled - Notepad') },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'query',
      args: { title: 'Untitled - Notepad', depth: 3 },
      result: {
        window: NOTEPAD,
        nodeCount: 1000,
        truncated: true,
        tree: {
          controlType: 'Window',
          name: 'Untitled - Notepad',
          children: [{ controlType: 'Edit', name: 'Text editor' }],
        },
      },
      warnings: [{ code: 'tree-truncated', detail: 'UIA tree clipped at 1000 nodes' }],
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'type',
      args: { title: 'Untitled - Notepad', text: '[redacted: typed text, 26 chars]', password: '[redacted]' },
      result: { typed: true, length: 26 },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'find',
      args: { title: 'Untitled - Notepad', name: 'Save' },
      error: {
        code: 'selector-matched-3',
        category: 'ambiguous-selector',
        detail: `Selector name='Save' matched 3 elements; refine with automationId. ${HOSTILE}`,
      },
    }),
    failed,
  );
  keep(
    s.call({
      tool: 'find',
      args: { title: 'Untitled - Notepad', automationId: 'SaveButton' },
      result: {
        found: true,
        element: { controlType: 'Button', name: 'Save', automationId: 'SaveButton' },
        window: NOTEPAD,
      },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'invoke',
      args: { automationId: 'SaveButton', action: 'click' },
      result: { invoked: true, modalPending: true, note: 'modal dialog opened' },
    }),
    ok,
  );
  keep(
    s.call({
      tool: 'capture',
      args: { title: 'Save As' },
      result: { handle: 1002, blankCheck: { blank: false, dominantFraction: 0.55, dominantIsDark: false } },
      image: { png: await windowPng('Untitled - Notepad', { dialog: 'Save As', accent: '#6b2fa0' }) },
      warnings: [{ code: 'capture-fallback', detail: 'PrintWindow failed; used screen copy' }],
    }),
    ok,
  );
  const lastGoodSeq = keep(
    s.call({
      tool: 'wait-for',
      args: { title: 'Save As', name: 'File name:', timeoutMs: 5000 },
      result: {
        found: true,
        element: { controlType: 'Edit', name: 'File name:' },
        window: { ...NOTEPAD, title: 'Save As', handle: 1002 },
      },
    }),
    ok,
  );
  s.step('open the Save As dialog', 'passed');
  const failingSeq = keep(
    s.call({
      tool: 'capture',
      args: { title: 'Save As' },
      error: {
        code: 'frame-all-black',
        category: 'capture-blank',
        detail:
          'The captured frame is all black (dominant colour 1.0000); the window may be minimized or occluded.',
      },
      image: { png: await blankPng(), role: 'partialResult' },
    }),
    failed,
  );
  s.step('check the dialog renders', 'failed', 'capture of Save As was all black');
  const dir = s.end({ passed: false, reason: 'the Save As dialog rendered black' });
  const reader = SessionReader.open(dir);
  try {
    const summary = await buildSummary(reader);
    const html = await renderReportHtml(reader, summary);
    const reportPath = path.join(dir, 'report.html');
    fs.writeFileSync(reportPath, html);
    return { dir, reportPath, html, failingSeq, lastGoodSeq, okSeqs: ok, failedSeqs: failed };
  } finally {
    reader.close();
  }
}
