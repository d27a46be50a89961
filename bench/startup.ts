/** `mcec-bundle --help` start-up (the built CLI) against `node -e 0`: spawn each N times, alternated, medians. */
import path from 'node:path';
import { timedRun } from './lib/spawn.js';
import { alternate, fmtMs, median, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

export const figure: Figure = {
  id: 'startup',
  title: 'mcec-bundle --help start-up vs node -e 0',
  async run(ctx) {
    const rounds = ctx.quick ? 10 : 40;
    const cli = path.join(ctx.root, 'dist', 'cli', 'mcec-bundle.js');
    const run = async (args: string[]) => {
      const r = await timedRun(process.execPath, args, { cwd: ctx.tmp });
      if (r.code !== 0) throw new Error(`node ${args.join(' ')} exited ${r.code}: ${r.stderr.slice(0, 300)}`);
      return r.ms;
    };
    for (let i = 0; i < 3; i++) {
      await run(['-e', '0']);
      await run([cli, '--help']);
    }
    const times = await alternate(rounds, {
      node: () => run(['-e', '0']),
      help: () => run([cli, '--help']),
    });
    const h = median(times.help);
    const n = median(times.node);
    const rows: Row[] = [
      {
        name: 'mcec-bundle --help (spawn to exit)',
        budget: '<= 1.5x node -e 0',
        measured: fmtMs(h),
        baseline: fmtMs(n),
        ratio: round(h / n, 3),
        holds: h / n <= 1.5,
        notes: [`${rounds} spawns of each, alternated; medians. Both through the same spawn path.`],
        data: {
          helpMsPerRound: times.help.map((v) => round(v, 2)),
          nodeMsPerRound: times.node.map((v) => round(v, 2)),
        },
      },
    ];
    return { rows, notes: [] };
  },
};
