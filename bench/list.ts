/**
 * `mcec-bundle list` over a generated fleet of 10,000 sessions, read from the catalog, against `node`
 * opening catalog.sqlite with better-sqlite3 and selecting every row (the floor: start-up plus one query).
 * Also reported: the same list over 1,000 sessions (growth), `mcec-bundle index` of sessions closed by the
 * recorder (each dir's catalog sidecar checked against its log), again, and of logs without sidecars (every
 * log read, what `list` did before the catalog), and the first list after session dirs are moved or copied in.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENTRY_SIDECAR_FILE } from '../src/store/entry-sidecar.js';
import { generateFleet } from './lib/fleet.js';
import { timedRun } from './lib/spawn.js';
import { alternate, fmtMs, median, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

/** tmpfs when there is one: 10,000 logs written through SessionLog sync on every close on this VM's disk. */
function scratch(fallback: string): string {
  try {
    return fs.mkdtempSync(path.join('/dev/shm', 'mcec-bench-list-'));
  } catch {
    return fs.mkdtempSync(path.join(fallback, 'list-'));
  }
}

/** A reported row: a first list after many session dirs came, against the list without a sweep. */
function movedInRow(
  name: string,
  ms: number,
  plainMs: number,
  note: string,
  data: Record<string, number>,
): Row {
  return {
    name,
    budget: 'none (reported)',
    measured: fmtMs(ms),
    baseline: `list without a sweep: ${fmtMs(plainMs)}`,
    ratio: round(ms / plainMs, 2),
    holds: null,
    notes: [note],
    data,
  };
}

/** Remove every session dir's catalog sidecar: logs as a recorder before 2026-12-06 left them. */
function dropSidecars(sessionsDir: string): void {
  for (const e of fs.readdirSync(sessionsDir, { withFileTypes: true }))
    if (e.isDirectory()) fs.rmSync(path.join(sessionsDir, e.name, ENTRY_SIDECAR_FILE), { force: true });
}

/** Remove the logs' -wal and -shm files under a sessions dir (a closed log does not need them). */
function dropWalFiles(sessionsDir: string): void {
  for (const name of fs.readdirSync(sessionsDir)) {
    for (const suffix of ['-wal', '-shm'])
      fs.rmSync(path.join(sessionsDir, name, `session.sqlite${suffix}`), { force: true });
  }
}

export const figure: Figure = {
  id: 'list',
  title: 'mcec-bundle list of 10,000 sessions from the catalog vs node + one SQLite query',
  async run(ctx) {
    // Quick mode: a fleet of 500, one warm-up, and two rounds of the moved-in dir (each waits 2.5 s for the dir's time).
    const big = ctx.quick ? 500 : 10_000;
    const small = big / 10;
    const rounds = ctx.quick ? 3 : 12;
    const sweepRoundCount = ctx.quick ? 2 : rounds;
    const root = scratch(ctx.tmp);
    try {
      const cli = path.join(ctx.root, 'dist', 'cli', 'mcec-bundle.js');
      const sqlite = path.join(ctx.root, 'node_modules', 'better-sqlite3');
      const dirs = { big: path.join(root, 'big'), small: path.join(root, 'small') };
      const t = performance.now();
      generateFleet(dirs.big, { sessions: big, seed: 3 });
      generateFleet(dirs.small, { sessions: small, seed: 4 });
      // Logs as a finished recorder (or a copy from CI, another machine) leaves them: no -wal, -shm.
      dropWalFiles(dirs.big);
      dropWalFiles(dirs.small);
      ctx.log(`generated ${big} + ${small} sessions in ${((performance.now() - t) / 1000).toFixed(1)} s`);

      const run = async (args: string[], expectRows?: number) => {
        const r = await timedRun(process.execPath, args, { cwd: root });
        if (r.code !== 0)
          throw new Error(`node ${args.join(' ').slice(0, 200)} exited ${r.code}: ${r.stderr.slice(0, 300)}`);
        if (expectRows !== undefined) {
          const lines = r.stdout.split('\n').filter(Boolean).length - 1; // the header
          if (lines !== expectRows) throw new Error(`expected ${expectRows} rows, got ${lines}`);
        }
        return r.ms;
      };
      // Sessions closed by the recorder carry their sidecar, stamped at close (so checked by the log's hash);
      // the first index stamps them settled, so the next compares times only. Then the logs alone.
      const index = () => run([cli, 'index', '--sessions', dirs.big]);
      const indexMs = await index();
      const indexAgainMs = await index();
      dropSidecars(dirs.big);
      // Removing them moved every dir's time: logs of an older recorder have been at rest a while.
      await new Promise((r) => setTimeout(r, 2500));
      const indexLogsMs = await index();
      ctx.log(
        `index of ${big} sessions: ${(indexMs / 1000).toFixed(2)} s first, ${(indexAgainMs / 1000).toFixed(2)} s again, ${(indexLogsMs / 1000).toFixed(2)} s from the logs`,
      );
      await run([cli, 'index', '--sessions', dirs.small]);
      // The catalog trusts the sessions dir's time once it is 2 s old (a time tick could hide a change).
      await new Promise((r) => setTimeout(r, 2500));
      const baselineScript = (dir: string, n: number) =>
        `const D=require(${JSON.stringify(sqlite)});const db=new D(${JSON.stringify(path.join(dir, 'catalog.sqlite'))},{readonly:true});` +
        `const rows=db.prepare('SELECT * FROM sessions ORDER BY dir_name').all();db.close();if(rows.length!==${n})process.exit(3)`;
      for (let i = 0; i < (ctx.quick ? 1 : 3); i++) {
        await run([cli, 'list', '--sessions', dirs.big], big);
        await run([cli, 'list', '--sessions', dirs.small], small);
        await run(['-e', baselineScript(dirs.big, big)]);
        await run(['-e', '0']);
      }
      const times = await alternate(rounds, {
        list: () => run([cli, 'list', '--sessions', dirs.big], big),
        query: () => run(['-e', baselineScript(dirs.big, big)]),
        listSmall: () => run([cli, 'list', '--sessions', dirs.small], small),
        node: () => run(['-e', '0']),
      });
      ctx.log('rounds done');
      const list = median(times.list);
      const query = median(times.query);
      const listSmall = median(times.listSmall);
      const node = median(times.node);

      // A names sweep: session dirs recorded elsewhere (closed by a recorder: sidecars stamped at close) are
      // moved in (times kept, as a rename or unzip does), so the sessions dir's names are compared with the
      // rows and the new ones are read: one dir, then a tenth of the fleet; then another tenth copied in
      // without their times (cp -r): each sidecar is checked against its log's hash.
      const movedIn = big / 10;
      const extra = generateFleet(path.join(root, 'extra'), {
        sessions: 1 + 2 * movedIn,
        seed: 5,
        start: new Date('2026-12-01T00:00:00Z'),
      });
      dropWalFiles(path.join(root, 'extra'));
      await new Promise((r) => setTimeout(r, 2500)); // recorded a while ago
      const moveIn = (names: string[]) => {
        for (const name of names) fs.renameSync(path.join(root, 'extra', name), path.join(dirs.big, name));
      };
      const copyIn = (names: string[]) => {
        for (const name of names)
          fs.cpSync(path.join(root, 'extra', name), path.join(dirs.big, name), { recursive: true });
      };
      const extraNames = extra.sessions.map((s) => s.dirName);
      // One dir, alternated with the plain list: each round lists, moves the dir in and lists (the sweep),
      // moves it out again and lists twice, 2.5 s apart (the sessions dir's new time is trusted once 2 s old).
      const one = extraNames.slice(0, 1);
      const moveOut = (names: string[]) => {
        for (const name of names) fs.renameSync(path.join(dirs.big, name), path.join(root, 'extra', name));
      };
      const sweepRounds = { plain: [] as number[], sweep: [] as number[] };
      for (let i = 0; i < sweepRoundCount; i++) {
        sweepRounds.plain.push(await run([cli, 'list', '--sessions', dirs.big], big));
        moveIn(one);
        sweepRounds.sweep.push(await run([cli, 'list', '--sessions', dirs.big], big + 1));
        moveOut(one);
        await run([cli, 'list', '--sessions', dirs.big], big);
        await new Promise((r) => setTimeout(r, 2500));
        await run([cli, 'list', '--sessions', dirs.big], big);
      }
      const sweepMs = median(sweepRounds.sweep);
      const plainRoundsMs = median(sweepRounds.plain);
      moveIn(one);
      await run([cli, 'list', '--sessions', dirs.big], big + 1);
      moveIn(extraNames.slice(1, 1 + movedIn));
      const sweepManyMs = await run([cli, 'list', '--sessions', dirs.big], big + 1 + movedIn);
      // Not a plain list: right after the move the sessions dir's time is not trusted, so this one sweeps fully.
      const listRightAfterMs = await run([cli, 'list', '--sessions', dirs.big], big + 1 + movedIn);
      copyIn(extraNames.slice(1 + movedIn));
      const copyManyMs = await run([cli, 'list', '--sessions', dirs.big], big + 1 + 2 * movedIn);

      const fleetNote = `Generated fleet (bench/lib/fleet.ts, written through SessionLog on ${root.startsWith('/dev/shm') ? 'tmpfs' : 'disk'}): 4 scenarios, recurring failures injected.`;
      const rows: Row[] = [
        {
          name: `list of ${big.toLocaleString('en-US')} sessions (spawn to exit)`,
          budget: '< 0.3 s',
          measured: fmtMs(list),
          baseline: `node -e 0: ${fmtMs(node)}`,
          ratio: round(list / 300, 3),
          holds: list < 300,
          notes: [
            `${rounds} rounds, arms alternated, medians; stdout (${big + 1} lines) read through a pipe. Ratio is measured / budget.`,
            fleetNote,
          ],
          data: { listMs: times.list.map((v) => round(v, 2)), nodeMs: times.node.map((v) => round(v, 2)) },
        },
        {
          name: `list of ${big.toLocaleString('en-US')} sessions vs node + one SQLite query`,
          budget: '<= 1.2x node + SELECT * FROM sessions',
          measured: fmtMs(list),
          baseline: fmtMs(query),
          ratio: round(list / query, 3),
          holds: list / query <= 1.2,
          notes: [
            'Baseline: node -e that requires better-sqlite3, opens catalog.sqlite read-only and selects every row. The list also loads commander, checks the sessions dir time, formats and prints the table.',
          ],
          data: { queryMs: times.query.map((v) => round(v, 2)) },
        },
        {
          name: `growth: list of ${small.toLocaleString('en-US')} vs ${big.toLocaleString('en-US')} sessions`,
          budget: 'sublinear (< 10x for 10x the sessions)',
          measured: `${fmtMs(list)} for ${big.toLocaleString('en-US')}`,
          baseline: `${fmtMs(listSmall)} for ${small.toLocaleString('en-US')}`,
          ratio: round(list / listSmall, 3),
          holds: list / listSmall < 10,
          notes: ['Start-up dominates; the rows add about (list - list of 1/10) / 0.9 per 10,000.'],
          data: { listSmallMs: times.listSmall.map((v) => round(v, 2)) },
        },
        {
          name: `mcec-bundle index of ${big.toLocaleString('en-US')} sessions closed by the recorder (first)`,
          budget: '<= 0.3 ms per session (3 s at 10,000)',
          measured: `${fmtMs(indexMs)} (${fmtMs(indexMs / big)} per session)`,
          baseline: `list from the catalog: ${fmtMs(list)}`,
          ratio: round(indexMs / big / 0.3, 2),
          holds: indexMs / big <= 0.3,
          notes: [
            "The first index of a fleet whose logs each carry the catalog sidecar the recorder wrote at close: each is checked against its log's sha1 (its stamp is not settled) and stamped settled again. Ratio is measured / budget. One run.",
          ],
          data: { indexMs: round(indexMs, 1) },
        },
        {
          name: `mcec-bundle index of the same ${big.toLocaleString('en-US')} again`,
          budget: 'none (reported)',
          measured: `${fmtMs(indexAgainMs)} (${fmtMs(indexAgainMs / big)} per session)`,
          baseline: `first index: ${fmtMs(indexMs)}`,
          ratio: round(indexAgainMs / indexMs, 2),
          holds: null,
          notes: ['Settled sidecars: each log stat-ed, not read. One run.'],
          data: { indexAgainMs: round(indexAgainMs, 1) },
        },
        {
          name: `mcec-bundle index: every log of ${big.toLocaleString('en-US')} read (no sidecars)`,
          budget: 'none (reported)',
          measured: `${fmtMs(indexLogsMs)} (${fmtMs(indexLogsMs / big)} per session)`,
          baseline: `first index with sidecars: ${fmtMs(indexMs)}`,
          ratio: round(indexLogsMs / indexMs, 2),
          holds: null,
          notes: [
            'Logs as a recorder before 2026-12-06 left them: every session opened, verdict decided (what list cost before the catalog), and its sidecar written. One run.',
          ],
          data: { indexLogsMs: round(indexLogsMs, 1) },
        },
        {
          name: 'first list after the index when a session dir is moved in (a sweep)',
          budget: '<= 1.2x list without a sweep',
          measured: fmtMs(sweepMs),
          baseline: `list without a sweep: ${fmtMs(plainRoundsMs)}`,
          ratio: round(sweepMs / plainRoundsMs, 2),
          holds: sweepMs / plainRoundsMs <= 1.2,
          notes: [
            `Logs without -wal, -shm (as a finished recorder or a copy leaves them), index run first. A session name came, so a names sweep: the sessions dir's names are compared with the rows' (no other session dir is stat-ed) and only the new session is read (from its sidecar). ${sweepRoundCount} rounds, each a plain list, then the dir moved in and listed, moved out and listed twice 2.5 s apart; medians of the plain and moved-in lists, the ratio theirs.`,
          ],
          data: {
            sweepMs: sweepRounds.sweep.map((v) => round(v, 1)),
            plainMs: sweepRounds.plain.map((v) => round(v, 1)),
            cpus: os.cpus().length,
          },
        },
        movedInRow(
          `first list after ${movedIn.toLocaleString('en-US')} session dirs are moved in`,
          sweepManyMs,
          list,
          "Times kept (a rename, unzip): each moved-in dir's sidecar is checked against its log's sha1 (stamped at close; a sweep does not stamp it settled, index does); the dirs already in the catalog are not stat-ed (a names sweep). In data: the list right after, a full sweep (the sessions dir's time just moved is not trusted yet and no name came). One run.",
          { sweepManyMs: round(sweepManyMs, 1), listRightAfterMs: round(listRightAfterMs, 1) },
        ),
        movedInRow(
          `first list after ${movedIn.toLocaleString('en-US')} session dirs are copied in without their times`,
          copyManyMs,
          list,
          "cp -r without -p: every file is new, so each sidecar is trusted only after its log's sha1 matches. One run.",
          { copyManyMs: round(copyManyMs, 1) },
        ),
      ];
      return { rows, notes: [] };
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  },
};
