/**
 * `mcec-bundle diff` on screenshots it cannot decode (PNGs cut short, as in a session dir copied without
 * care): such a pair is "not compared", with the decoder's reason, and counts neither as alike nor as
 * different, so `--exit-code` exits 0 when nothing else differs. Two runs recorded by the recorder with real
 * PNGs (sharp), the built CLI.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionDiff } from '../../src/fleet/diff.js';
import { recordCaptureRun } from '../support/capture-run.js';
import { noisyPng } from '../support/images.js';
import { runNodeSync } from '../support/programs.js';
import { CLI, cli, scratchRoot, validator } from './helpers.js';

/** A run of captures of 'Untitled - Notepad' returning `pngs`; its session id and dir. */
function recordRun(sessionsDir: string, pngs: Buffer[]): Promise<{ sessionId: string; dir: string }> {
  return recordCaptureRun(sessionsDir, pngs, (i) => ({ window: 'Untitled - Notepad', region: i }));
}

/** Cut every capture of a run to 500 bytes: no decoder reads it. */
function truncateCaptures(dir: string, which: (name: string, index: number) => boolean): void {
  const names = fs.readdirSync(path.join(dir, 'artifacts')).sort();
  names.forEach((name, i) => {
    if (which(name, i)) fs.truncateSync(path.join(dir, 'artifacts', name), 500);
  });
}

describe('diff: screenshots that cannot be decoded', () => {
  const root = scratchRoot();
  const validate = validator('diff.schema.json');
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('are "not compared", not "differ": --exit-code exits 0 when nothing else differs', async () => {
    const sessionsDir = path.join(root, 'all');
    const pngs = [await noisyPng(40, 30, 1), await noisyPng(40, 30, 2)];
    const a = await recordRun(sessionsDir, pngs);
    const b = await recordRun(sessionsDir, pngs);
    truncateCaptures(b.dir, () => true);
    const json = cli(['diff', a.sessionId, b.sessionId, '--json', '--sessions', sessionsDir]);
    expect(json.code, json.stderr).toBe(0);
    const d = JSON.parse(json.stdout) as SessionDiff;
    expect(validate(d)).toEqual([]);
    expect(d.screenshots).toHaveLength(2);
    for (const s of d.screenshots) {
      expect([s.compared, s.changedPixels, s.changedShare, s.diffImage]).toEqual([false, 0, 0, null]);
      expect(s.note).toMatch(/^not compared: /);
    }
    expect(d.differs).toBe(false);
    const text = cli(['diff', a.sessionId, b.sessionId, '--exit-code', '--sessions', sessionsDir]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('Screenshots: 0 compared, 0 differ, 2 not compared');
    expect(text.stdout).not.toMatch(/pixels changed/);
    expect(text.stdout).toMatch(/capture A#\d+ \/ B#\d+: not compared: \S/);
  });

  it('are counted apart from a pair that was compared and differs (--exit-code exits 1 for that one)', async () => {
    const sessionsDir = path.join(root, 'mixed');
    const a = await recordRun(sessionsDir, [await noisyPng(40, 30, 1), await noisyPng(40, 30, 2)]);
    const b = await recordRun(sessionsDir, [await noisyPng(40, 30, 3), await noisyPng(40, 30, 2)]);
    truncateCaptures(b.dir, (_name, i) => i === 1);
    const json = cli(['diff', a.sessionId, b.sessionId, '--json', '--sessions', sessionsDir]);
    const d = JSON.parse(json.stdout) as SessionDiff;
    expect(validate(d)).toEqual([]);
    expect(d.screenshots.map((s) => s.compared)).toEqual([true, false]);
    expect(d.screenshots[0]!.changedShare).toBeGreaterThan(0.5); // two noise images
    expect(d.differs).toBe(true);
    const text = cli(['diff', a.sessionId, b.sessionId, '--exit-code', '--sessions', sessionsDir]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('Screenshots: 1 compared, 1 differ, 1 not compared');
  });

  it('a symlink or a FIFO under a capture\'s name is "not compared", never followed nor waited on', async () => {
    const sessionsDir = path.join(root, 'links');
    const pngs = [await noisyPng(40, 30, 1), await noisyPng(40, 30, 2)];
    const a = await recordRun(sessionsDir, pngs);
    const b = await recordRun(sessionsDir, pngs);
    const names = fs.readdirSync(path.join(b.dir, 'artifacts')).sort();
    expect(names).toHaveLength(2);
    // The same PNG, outside the sessions dir: followed, it compared as alike.
    const outside = path.join(root, 'outside.png');
    fs.copyFileSync(path.join(b.dir, 'artifacts', names[0]!), outside);
    fs.rmSync(path.join(b.dir, 'artifacts', names[0]!));
    fs.symlinkSync(outside, path.join(b.dir, 'artifacts', names[0]!));
    const fifo = process.platform !== 'win32';
    if (fifo) {
      fs.rmSync(path.join(b.dir, 'artifacts', names[1]!));
      execFileSync('mkfifo', [path.join(b.dir, 'artifacts', names[1]!)]);
    }
    // Read as before, the FIFO blocks the diff for ever: killed after a minute, the run fails.
    const json = runNodeSync([CLI, 'diff', a.sessionId, b.sessionId, '--json', '--sessions', sessionsDir], {
      timeoutMs: 60_000,
    });
    expect(json.code, json.stderr).toBe(0);
    const d = JSON.parse(json.stdout) as SessionDiff;
    expect(validate(d)).toEqual([]);
    expect(d.screenshots.map((s) => s.compared)).toEqual([false, !fifo]);
    expect(d.screenshots[0]!.note).toBe(`not compared: B's artifacts/${names[0]} is not a regular file`);
    if (fifo)
      expect(d.screenshots[1]!.note).toBe(`not compared: B's artifacts/${names[1]} is not a regular file`);
  });
});
