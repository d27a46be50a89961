/** Where and when the figures were measured. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export interface MachineInfo {
  date: string;
  node: string;
  platform: string;
  kernel: string;
  cpus: number;
  cpuModel: string;
  memoryGB: number;
  gitCommit: string | null;
  /** 1-minute load average when the run started: other work on the machine skews absolute figures. */
  loadAverage1m: number;
}

/** The machine, the runtime and the commit the figures belong to. */
export function machineInfo(root: string): MachineInfo {
  let gitCommit: string | null = null;
  try {
    gitCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    gitCommit = null;
  }
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    gitCommit,
    loadAverage1m: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}
