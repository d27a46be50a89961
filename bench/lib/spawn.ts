/** Spawn a program, time it from spawn to exit, and read its peak RSS (GNU time's maximum resident set). */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { nowMs } from './stats.js';

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
  const [cmd, argv] = useTime ? [GNU_TIME, ['-v', command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const child = spawn(cmd, argv, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      }
      resolve({ ms, peakRss, code, stdout: Buffer.concat(out).toString('utf8'), stderr });
    });
  });
}
