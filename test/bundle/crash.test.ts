import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { killWhenReady } from '../support/crash.js';
import { bundleValidators, readZip, tempDir } from './helpers.js';

describe('a session whose process was killed during a call', () => {
  const root = tempDir();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('bundles as FAIL, aborted, with the pending call named', async () => {
    const sessionsDir = path.join(root, 'sessions');
    // Killed once the capture and the find are committed and the wait-for is a pending row.
    const { sessionId } = (await killWhenReady('in-flight', sessionsDir)).ready;
    const dirName = fs.readdirSync(sessionsDir).find((d) => d.endsWith(`-${sessionId}`))!;
    expect(dirName).toBeDefined();
    const res = await buildBundle(path.join(sessionsDir, dirName));
    expect(res.verdict).toBe('FAIL');
    expect((await verifyBundle(res.bundle)).ok).toBe(true);

    const files = new Map((await readZip(res.bundle)).map((e) => [e.name.slice(dirName.length + 1), e.data]));
    const session = JSON.parse(files.get('session.json')!.toString('utf8'));
    expect(bundleValidators().session(session)).toEqual([]);
    expect(session).toMatchObject({
      passed: false,
      verdict: 'FAIL',
      status: 'aborted',
      endedAt: null,
      failingCall: { seq: 3, tool: 'wait-for', status: 'pending' },
    });
    expect(session.counts.pending).toBe(1);
    expect(session.verdictReason).toMatch(/pending/);

    const summary = files.get('failure-summary.md')!.toString('utf8');
    expect(summary).toMatch(/FAIL/);
    expect(summary).toMatch(/wait-for/);
    expect(summary).toMatch(/pending/);

    // The log shows the request in flight and no response for it.
    const lines = files
      .get('tool-calls.jsonl')!
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const waitFor = lines.filter((l) => l.seq === 3);
    expect(waitFor.map((l) => l.direction)).toEqual(['request']);
    expect(waitFor[0].payload.params.name).toBe('wait-for');
    // The capture made before the crash is in the bundle.
    expect([...files.keys()].filter((n) => n.endsWith('.png')).length).toBe(1);
    // Bundling the crashed session again gives the same bytes (its log is snapshotted the same way).
    const again = await buildBundle(path.join(sessionsDir, dirName), {
      output: path.join(root, 'again.zip'),
    });
    expect(fs.readFileSync(again.bundle).equals(fs.readFileSync(res.bundle))).toBe(true);
    // The crashed log (WAL not checkpointed) was snapshotted, and the snapshot opens.
    expect(files.get('session.sqlite')!.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
  });
});
