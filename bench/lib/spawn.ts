/**
 * Spawn a program, time it from spawn to exit, and read its peak RSS: GNU time's maximum resident set, or,
 * without GNU time, VmHWM written at exit by a preload (node programs only).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nowMs } from './stats.js';

const PEAK_PRELOAD = fileURLToPath(new URL('./peak-rss.cjs', import.meta.url));

const GNU_TIME = '/usr/bin/time';
/** GNU time is here on Debian (the `time` package); without it the peak memory is not measured. */
export const HAVE_GNU_TIME = fs.existsSync(GNU_TIME);

export interface Timed {
  ms: number;
  /** Peak resident set in bytes, or null without GNU time. */
  peakRss: number | null;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `command args` in `cwd`; with `measureMemory` under GNU time -v (its report is taken out of stderr). */
export function timedRun(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; measureMemory?: boolean } = {},
): Promise<Timed> {
  const useTime = options.measureMemory === true && HAVE_GNU_TIME;
  // Without GNU time, a node program reports its own VmHWM through the preload.
  const usePreload = options.measureMemory === true && !HAVE_GNU_TIME && command === process.execPath;
  const peakFile = usePreload ? path.join(os.tmpdir(), `mcec-bench-peak-${process.pid}-${Date.now()}`) : '';
  const [cmd, argv] = useTime
    ? [GNU_TIME, ['-v', command, ...args]]
    : usePreload
      ? [command, ['--require', PEAK_PRELOAD, ...args]]
      : [command, args];
  const env = { ...(options.env ?? process.env), ...(usePreload ? { MCEC_BENCH_PEAK_FILE: peakFile } : {}) };
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const child = spawn(cmd, argv, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = nowMs() - t0;
      let stderr = Buffer.concat(err).toString('utf8');
      let peakRss: number | null = null;
      if (useTime) {
        const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
        if (m) peakRss = Number(m[1]) * 1024;
        const cut = stderr.indexOf('\tCommand being timed:');
        if (cut >= 0) stderr = stderr.slice(0, cut);
      } else if (usePreload) {
        try {
          peakRss = Number(fs.readFileSync(peakFile, 'utf8'));
          fs.rmSync(peakFile, { force: true });
        } catch {
          peakRss = null;
        }
      }
      resolve({ ms, peakRss, code, stdout: Buffer.concat(out).toString('utf8'), stderr });
    });
  });
}
