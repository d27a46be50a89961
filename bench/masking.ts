/**
 * Masking on the agent's critical path: the same timed `find`s as the critical-path figure, with an untimed
 * capture every 40 calls, through a recorder with a mask rule over part of every capture (each capture is
 * decoded, painted and encoded again before its file is written) against one with masking off.
 */
import type { RecorderOptions } from '../src/record/types.js';
import { added, CAPTURE_EVERY, measureWithCaptures } from './critical-path.js';
import { smallResults } from './lib/fixtures.js';
import { fmtMs, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

const ON: Partial<RecorderOptions> = {
  mask: { rules: [{ window: { title: 'Notepad' }, rect: { x: 0, y: 56, width: 400, height: 100 } }] },
};
const OFF: Partial<RecorderOptions> = { mask: { enabled: false } };

/** The same, masking on (a rule over part of every capture) against off: the painting happens off the call. */
function maskingRow(m: { on: number[]; off: number[]; bare: number[] }, rounds: number, calls: number): Row {
  const on = added(m.on, m.bare);
  const off = added(m.off, m.bare);
  const ratio = on.median / off.median;
  return {
    name: 'successful find while captures are masked (median call)',
    budget: '<= 1.2x masking off',
    measured: `${fmtMs(on.median)} added per call`,
    baseline: `${fmtMs(off.median)} added per call, masking off`,
    ratio: round(ratio, 3),
    holds: ratio <= 1.2,
    notes: [
      `${rounds} rounds x ${calls} timed finds per arm, an untimed capture (800x600, distinct) every ${CAPTURE_EVERY} calls;`,
      'the on arm has a mask rule over part of every capture, so each is decoded, painted and encoded again',
      '(src/mask) before its file is written, in the queue. Both arms in the same run, alternated.',
    ],
    data: { addedMsPerRound: { on: on.perRound, off: off.perRound } },
  };
}

export const figure: Figure = {
  id: 'masking',
  title: 'Masking captures: the critical path of the calls around them',
  async run(ctx) {
    const rounds = ctx.quick ? 2 : 4;
    const calls = ctx.quick ? 400 : 2000;
    const { find } = await smallResults();
    ctx.log(`find ok while captures are masked: ${rounds} rounds x ${calls} calls per arm`);
    const m = await measureWithCaptures(find, rounds, calls, ctx.tmp, { label: 'mask', on: ON, off: OFF });
    return { rows: [maskingRow(m, rounds, calls)], notes: [] };
  },
};
