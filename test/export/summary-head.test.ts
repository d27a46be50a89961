/** The failure summary's head a JUnit failure and a GitHub annotation carry: cut where Markdown allows. */
import { describe, expect, it } from 'vitest';
import { SUMMARY_HEAD_LINES, summaryHead } from '../../src/export/ci-sessions.js';

/** The first lines of a real failure-summary.md (a server-everything run through mcec-record stdio). */
const TOP = [
  '# mcp-servers-everything-a77d0a26; FAIL',
  '',
  '- Session: `mcp-servers-everything-a77d0a26` (20261207-070152-mcp-servers-everything-a77d0a26)',
  '- Scenario: (none)',
  '- Verdict: **FAIL**: call #17 trigger-long-running-operation hit a proxy error: server exited',
  '- Status: ended; started 2026-12-07T07:01:52.095Z; ended 2026-12-07T07:01:56.405Z; 4.3 s',
  '- Calls: 18; failures: 3 (0 recovered); warnings: 0; violations: 0',
  '- Failing step: none (no step declared)',
  '',
  '## Failing call',
  '',
  'Call #17 `trigger-long-running-operation` at 2026-12-07T07:01:53.341Z (3.1 s) failed with `proxy-error`:',
  '',
  '> server exited',
  '',
  'Next step: the proxy refused or could not forward the call: the detail says why; fix that, then run the call again.',
  '',
];
const ARGS = ['Its arguments (secrets redacted):', '', '```json', '{"duration":3,"steps":3}', '```', ''];
const REST = ['## Last image before the failure', '', 'No image was recorded.', ''];

describe('summaryHead', () => {
  it('never ends inside a code fence, nor on the line that introduces what it cut', () => {
    // Line 20 is the fence's opening: the head used to end there ("```json" and nothing after it).
    const text = [...TOP, ...ARGS, ...REST].join('\n');
    expect(text.split('\n')[SUMMARY_HEAD_LINES - 1]).toBe('```json');
    expect(summaryHead(text)).toBe(TOP.join('\n').trimEnd());
    // Line 20 is the introduction itself.
    const shifted = [...TOP, '', '', ...ARGS, ...REST].join('\n');
    expect(shifted.split('\n')[SUMMARY_HEAD_LINES - 1]).toBe('Its arguments (secrets redacted):');
    expect(summaryHead(shifted)).toBe(TOP.join('\n').trimEnd());
  });

  it('keeps a whole fenced block that fits, never a heading without its text, and a short text as it is', () => {
    // Line 20 is the second section's heading: it goes, the first section stays whole.
    const fits = [...TOP.slice(0, 9), ...ARGS, ...REST, ...REST].join('\n');
    expect(fits.split('\n')[SUMMARY_HEAD_LINES - 1]).toBe(REST[0]);
    expect(summaryHead(fits)).toBe([...TOP.slice(0, 9), ...ARGS, ...REST].join('\n').trimEnd());
    const short = [...TOP.slice(0, 9), ...ARGS].join('\n');
    expect(summaryHead(short)).toBe(short);
  });
});
