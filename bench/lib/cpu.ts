/**
 * CPU time of another process, read from /proc: the sum of its threads' run time (schedstat, ns), so the
 * proxy's libuv and V8 helper threads count too; /proc/<pid>/stat ticks (10 ms) where schedstat is missing.
 */
import fs from 'node:fs';

/** CPU time (ms) a process has used so far, all its live threads; NaN without /proc. */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    }
    if (Number.isFinite(ns)) return ns / 1e6;
  } catch {
    // fall back to the tick counts below
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5): 11 and 12 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The pids of a process's children, from every process's parent in /proc/<pid>/stat. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // ppid is field 4 of stat(5): the second after the command name.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
