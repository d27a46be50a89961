/**
 * recorder.ts stays a coordinator (issue 30: "recorder.ts a coordinator of at most 500 lines"): the critical
 * path and the public API, the work done by its parts in their own files (src/record/README.md "How it is
 * built"). A concern that grows it past the limit goes into a part of its own.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RECORDER = fileURLToPath(new URL('../../src/record/recorder.ts', import.meta.url));
const MAX_LINES = 500;

describe('src/record/recorder.ts', () => {
  it(`is at most ${MAX_LINES} lines`, () => {
    const text = fs.readFileSync(RECORDER, 'utf8');
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
    expect(lines).toBeLessThanOrEqual(MAX_LINES);
  });
});
