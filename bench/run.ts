/**
 * `npm run bench [-- --quick] [-- --only id,id]`: measure every figure beside its baseline in the same run and
 * write the results (bench/results.json, or bench/results.quick.json for --quick) and, for a full run, the
 * generated part of BENCHMARKS.md. Each figure runs in its own child process (clean memory figures, GC
 * available). Exits non-zero only when the harness breaks (a figure could not be measured); a missed budget
 * is a result (`holds: false`), not a failure.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDist } from './lib/dist.js';
import { machineInfo } from './lib/machine.js';
import { mergeResults, type Results, renderBenchmarks } from './lib/report.js';
import type { Figure, FigureResult } from './lib/types.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BENCH = path.join(ROOT, 'bench');
const TMP = path.join(BENCH, 'tmp');

/** Figures in the order they run, with the module that measures each. */
const FIGURES: Array<{ id: string; module: string; timeoutMs?: number; onlyWhenAsked?: boolean }> = [
  { id: 'critical-path', module: './critical-path.js' },
  { id: 'masking', module: './masking.js' },
  { id: 'throughput', module: './throughput.js' },
  { id: 'compaction', module: './compaction.js' },
  { id: 'bundle', module: './bundle.js' },
  { id: 'startup', module: './startup.js' },
  { id: 'proxy', module: './proxy.js' },
  { id: 'redaction', module: './redaction.js' },
  // Generating and indexing a 10,000-session fleet takes minutes on a busy machine.
  { id: 'list', module: './list.js', timeoutMs: 1_500_000 },
  { id: 'mcp', module: './mcp.js', timeoutMs: 1_500_000 },
  // Minutes to an hour: only by `--only soak`, never in a full or quick run.
  { id: 'soak', module: './soak.js', timeoutMs: 3_600_000, onlyWhenAsked: true },
];

interface Args {
  quick: boolean;
  only: string[] | null;
  child: string | null;
  resultFile: string | null;
  soakCalls: number | null;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, only: null, child: null, resultFile: null, soakCalls: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') args.quick = true;
    else if (a === '--only') args.only = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a.startsWith('--only=')) args.only = a.slice(7).split(',').filter(Boolean);
    else if (a === '--child') args.child = argv[++i] ?? null;
    else if (a === '--result-file') args.resultFile = argv[++i] ?? null;
    else if (a === '--soak-calls') {
      const n = Number(argv[++i]);
      if (!Number.isSafeInteger(n) || n < 10_000) {
        process.stderr.write('bench: --soak-calls takes a whole number >= 10000\n');
        process.exit(2);
      }
      args.soakCalls = n;
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: npm run bench [-- --quick] [-- --only critical-path,throughput,compaction,bundle,startup,proxy,redaction,list,mcp,soak] [-- --soak-calls N]\n',
      );
      process.exit(0);
    } else {
      process.stderr.write(`bench: unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  return args;
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

/** Child mode: run one figure in this process and write its result as JSON. */
async function runChild(
  id: string,
  quick: boolean,
  resultFile: string,
  soakCalls: number | null,
): Promise<void> {
  const entry = FIGURES.find((f) => f.id === id);
  if (!entry) throw new Error(`unknown figure ${id}`);
  const tmp = fs.mkdtempSync(path.join(TMP, `${id}-`));
  const started = performance.now();
  let result: FigureResult;
  try {
    const mod = (await import(entry.module)) as { figure: Figure };
    const out = await mod.figure.run({
      quick,
      root: ROOT,
      tmp,
      log: (m) => log(`[${id}] ${m}`),
      ...(soakCalls !== null ? { soakCalls } : {}),
    });
    result = { id, title: mod.figure.title, ...out, durationMs: Math.round(performance.now() - started) };
  } catch (err) {
    const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
    log(`[${id}] failed: ${message}`);
    result = { id, title: id, rows: [], notes: [], error: message.split('\n', 1)[0]!, durationMs: 0 };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  fs.writeFileSync(resultFile, JSON.stringify(result));
}

/** Run one figure in a child process; a crash or timeout becomes a result with `error`. */
function runFigure(
  id: string,
  quick: boolean,
  timeoutMs: number,
  soakCalls: number | null,
): Promise<FigureResult> {
  const resultFile = path.join(TMP, `result-${id}-${process.pid}.json`);
  fs.rmSync(resultFile, { force: true });
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--expose-gc',
        path.join(BENCH, 'run.ts'),
        '--child',
        id,
        '--result-file',
        resultFile,
        ...(quick ? ['--quick'] : []),
        ...(soakCalls !== null ? ['--soak-calls', String(soakCalls)] : []),
      ],
      { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const durationMs = Math.round(performance.now() - started);
      try {
        const result = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as FigureResult;
        fs.rmSync(resultFile, { force: true });
        resolve(result);
      } catch {
        const why = signal
          ? `killed by ${signal}${signal === 'SIGKILL' ? ' (timeout?)' : ''}`
          : `exit code ${code}`;
        resolve({ id, title: id, rows: [], notes: [], error: `figure did not finish: ${why}`, durationMs });
      }
    });
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(TMP, { recursive: true });
  if (args.child) {
    await runChild(
      args.child,
      args.quick,
      args.resultFile ?? path.join(TMP, `result-${args.child}.json`),
      args.soakCalls,
    );
    process.exit(0); // servers or timers a figure left behind must not keep the child alive
  }
  const started = performance.now();
  const machine = machineInfo(ROOT); // date and load as the run starts
  ensureDist(ROOT, log);
  const selected = FIGURES.filter((f) => (args.only ? args.only.includes(f.id) : !f.onlyWhenAsked));
  const figures: FigureResult[] = [];
  for (const f of selected) {
    log(`${f.id}: running${args.quick ? ' (quick)' : ''}`);
    // A quick figure takes seconds on a quiet machine; the limit only catches a hang, on a busy CI core too.
    const result = await runFigure(
      f.id,
      args.quick,
      // The soak (asked for by name) keeps its own limit under --quick too.
      args.quick && !f.onlyWhenAsked ? 180_000 : (f.timeoutMs ?? 600_000),
      args.soakCalls,
    );
    figures.push(result);
    if (result.error) log(`${f.id}: ERROR ${result.error}`);
    for (const r of result.rows) {
      const verdict = r.holds === null ? 'reported' : r.holds ? 'holds' : 'MISSED';
      log(
        `${f.id}: ${r.name}: ${r.measured} vs ${r.baseline} (${r.ratio ?? 'n/a'}x, budget ${r.budget}): ${verdict}`,
      );
    }
  }
  const ranMs = Math.round(performance.now() - started);
  let results: Results = {
    quick: args.quick,
    machine: { ...machine, loadAverageAtEnd1m: Math.round(os.loadavg()[0]! * 100) / 100 },
    durationMs: ranMs,
    figures,
  };
  const file = path.join(BENCH, args.quick ? 'results.quick.json' : 'results.json');
  if (fs.existsSync(file)) {
    try {
      const previous = JSON.parse(fs.readFileSync(file, 'utf8')) as Results;
      results = mergeResults(previous, results, FIGURES, args.only ? selected.map((f) => f.id) : null);
    } catch {
      // an unreadable previous file is simply replaced
    }
  }
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  // This run's own time: with --only, `results` carries the merged full run's.
  log(`wrote ${path.relative(ROOT, file)}; this run took ${(ranMs / 1000).toFixed(1)} s`);
  if (!args.quick) {
    const md = path.join(ROOT, 'BENCHMARKS.md');
    const previous = fs.existsSync(md) ? fs.readFileSync(md, 'utf8') : null;
    fs.writeFileSync(md, renderBenchmarks(results, previous));
    log('updated BENCHMARKS.md');
  }
  const broken = figures.filter((f) => f.error);
  if (broken.length > 0) {
    log(`harness failures: ${broken.map((f) => `${f.id} (${f.error})`).join('; ')}`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  log(`harness error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
});
