/**
 * A session id prefix in another case (`775B` for MCEC's lower-case hex `775b...`): an exact-case match wins,
 * else a unique case-insensitive one is taken; two that differ only in case stay ambiguous.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionLocation } from '../../src/store/session-reader.js';
import { resolveSession } from '../../src/store/session-reader.js';
import { FixtureSession } from '../support/fixture-session.js';
import { cli, scratchRoot } from './helpers.js';

function at(sessionId: string, stamp = '20261207-220713'): SessionLocation {
  const dirName = `${stamp}-${sessionId}`;
  return { dir: path.join('/sessions', dirName), dirName, sessionId, stamp };
}

const picked = (ids: string[], input: string) => {
  const r = resolveSession(
    '/sessions',
    input,
    ids.map((id, i) => at(id, `2026120${i}-000000`)),
  );
  return r.ok ? r.session.sessionId : r.reason;
};

describe('resolveSession: the case of an id', () => {
  it('takes a unique case-insensitive match when no exact-case one exists', () => {
    expect(picked(['775b1c0de0a1', '1234abcd0000'], '775B')).toBe('775b1c0de0a1');
    expect(picked(['775b1c0de0a1', '1234abcd0000'], '775B1C0DE0A1')).toBe('775b1c0de0a1');
    expect(picked(['775b1c0de0a1', '775bffff0000'], '775B')).toBe('ambiguous');
    expect(picked(['775b1c0de0a1'], '776B')).toBe('not-found');
  });

  it('lets an exact-case match win over matches in another case', () => {
    // A full id in exact case, though another id is it in another case.
    expect(picked(['Run-A', 'run-a'], 'run-a')).toBe('run-a');
    // An exact-case prefix, though another id matches it in another case.
    expect(picked(['abc1', 'ABC2'], 'abc')).toBe('abc1');
    expect(picked(['abc1', 'ABC2'], 'ABC')).toBe('ABC2');
    // A full id in another case before longer ids it prefixes.
    expect(picked(['abc', 'abcdef'], 'ABC')).toBe('abc');
    // Two ids differing only in case, neither in the case given: ambiguous, as today.
    expect(picked(['Run-A', 'run-a'], 'RUN-A')).toBe('ambiguous');
  });
});

describe('mcec-bundle show: an upper-case prefix of a lower-case id', () => {
  const root = scratchRoot();
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('finds the session', () => {
    const sessionsDir = path.join(root, 'sessions');
    const s = FixtureSession.create(sessionsDir, { sessionId: '775b1c0de0a1', status: 'ended' });
    s.call({ tool: 'windows', result: { windows: [] } });
    s.end();
    s.close();
    const res = cli(['show', '775B', '--sessions', sessionsDir]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('775b1c0de0a1');
  });
});
