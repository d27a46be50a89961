import { describe, expect, it } from 'vitest';
import type { MachineInfo } from '../../bench/lib/machine.js';
import { mergeResults, type Results } from '../../bench/lib/report.js';
import type { FigureResult } from '../../bench/lib/types.js';

const ORDER = [{ id: 'compaction' }, { id: 'bundle' }, { id: 'soak', onlyWhenAsked: true }];

function machine(commit: string): MachineInfo {
  return { gitCommit: commit } as unknown as MachineInfo;
}
function figure(id: string, measured: string): FigureResult {
  return { id, title: id, rows: [{ name: id, measured } as never], notes: [], durationMs: 1 };
}
function results(commit: string, figures: FigureResult[], reruns?: Results['reruns']): Results {
  return { quick: false, machine: machine(commit), durationMs: 1, figures, ...(reruns ? { reruns } : {}) };
}

describe('mergeResults (the results file after a bench run)', () => {
  const soakRun = { figures: ['soak'], machine: machine('soak-commit') };
  const previous = results(
    'full-1',
    [figure('compaction', 'old'), figure('bundle', 'old'), figure('soak', 'old soak')],
    [soakRun],
  );

  it('a full run keeps the soak it never runs, under the re-run that measured it', () => {
    const full = results('full-2', [figure('compaction', 'new'), figure('bundle', 'new')]);
    const out = mergeResults(previous, full, ORDER, null);
    expect(out.machine.gitCommit).toBe('full-2');
    expect(out.figures.map((f) => [f.id, f.rows[0]?.measured])).toEqual([
      ['compaction', 'new'],
      ['bundle', 'new'],
      ['soak', 'old soak'],
    ]);
    expect(out.reruns).toEqual([soakRun]);
  });

  it('a kept soak with no re-run line is said to come from the previous header run', () => {
    const noLine = results('full-1', [figure('soak', 'old soak')]);
    const out = mergeResults(noLine, results('full-2', [figure('bundle', 'new')]), ORDER, null);
    expect(out.reruns).toEqual([{ figures: ['soak'], machine: machine('full-1') }]);
  });

  it('a soak measured by a re-run of several figures stays credited to that re-run', () => {
    const both = results(
      'full-1',
      [figure('bundle', 'old'), figure('soak', 'old soak')],
      [{ figures: ['bundle', 'soak'], machine: machine('only-2') }],
    );
    const out = mergeResults(both, results('full-3', [figure('bundle', 'new')]), ORDER, null);
    expect(out.reruns).toEqual([{ figures: ['soak'], machine: machine('only-2') }]);
  });

  it('a full run over a file without a soak is written as measured', () => {
    const plain = results('full-1', [figure('bundle', 'old')]);
    const full = results('full-2', [figure('bundle', 'new')]);
    expect(mergeResults(plain, full, ORDER, null)).toBe(full);
  });

  it('a partial run merges its figures in order, keeps the header, and lists itself as a re-run', () => {
    const partial = results('only-1', [figure('bundle', 'newer')]);
    const out = mergeResults(previous, partial, ORDER, ['bundle']);
    expect(out.machine.gitCommit).toBe('full-1');
    expect(out.figures.map((f) => [f.id, f.rows[0]?.measured])).toEqual([
      ['compaction', 'old'],
      ['bundle', 'newer'],
      ['soak', 'old soak'],
    ]);
    expect(out.reruns).toEqual([soakRun, { figures: ['bundle'], machine: machine('only-1') }]);
  });

  it('a partial run takes its figures out of an older re-run line that measured others too', () => {
    const both = results(
      'full-1',
      [figure('bundle', 'old'), figure('soak', 'old soak')],
      [{ figures: ['bundle', 'soak'], machine: machine('only-2') }],
    );
    const out = mergeResults(both, results('only-3', [figure('bundle', 'new')]), ORDER, ['bundle']);
    expect(out.reruns).toEqual([
      { figures: ['soak'], machine: machine('only-2') },
      { figures: ['bundle'], machine: machine('only-3') },
    ]);
  });

  it('a partial run drops an older re-run it replaces entirely', () => {
    const again = results('soak-2', [figure('soak', 'new soak')]);
    const out = mergeResults(previous, again, ORDER, ['soak']);
    expect(out.reruns).toEqual([{ figures: ['soak'], machine: machine('soak-2') }]);
  });
});
