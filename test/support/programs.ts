/** The built programs (`dist/`, built once by test/global-setup.ts) and one way to run a node child to its end. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The built `mcec-bundle`. */
export const BUNDLE_CLI = path.join(ROOT, 'dist', 'cli', 'mcec-bundle.js');

/** How a finished child exited and what it printed. */
export interface ChildRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Where a child runs and what it is given (`env` on top of this process's). */
export interface ChildOptions {
  env?: Record<string, string>;
  /** Default: the repository root. */
  cwd?: string;
}

/** This process's environment plus `env`; `MCEC_SESSIONS_DIR` only when `env` sets it (a developer's own must not leak in). */
function childEnv(env: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!env?.MCEC_SESSIONS_DIR) delete merged.MCEC_SESSIONS_DIR;
  return merged;
}

/** What a running child has printed so far, as text. */
export interface ChildOutput {
  readonly stdout: string;
  readonly stderr: string;
}

/** Collect `child`'s stdout and stderr as text while it runs (both must be pipes). */
export function collectOutput(child: ChildProcess): ChildOutput {
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    output.stdout += s;
  });
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    output.stderr += s;
  });
  return output;
}

/**
 * Run `node <args>` without blocking (the test's own work goes on meanwhile); resolves once it exited, or
 * once it was killed after `timeoutMs` (default: never).
 */
export function runNode(
  args: string[],
  options: ChildOptions & { timeoutMs?: number } = {},
): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: childEnv(options.env),
      cwd: options.cwd ?? ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = collectOutput(child);
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: output.stdout, stderr: output.stderr });
    });
  });
}

/** Run `node <args>` to its end (killed after `timeoutMs`, default 120 s). */
export function runNodeSync(args: string[], options: ChildOptions & { timeoutMs?: number } = {}): ChildRun {
  const res = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: childEnv(options.env),
    cwd: options.cwd ?? ROOT,
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}
