/** Helpers of the catalog suites: a scratch root on tmpfs when there is one, the CLI, the listing schema. */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { tempDir } from '../support/temp.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = path.join(ROOT, 'dist/cli/mcec-bundle.js');

/**
 * A scratch dir on tmpfs when the machine has one: fleets write thousands of logs, and each log's close
 * costs a checkpoint sync on this VM's disk, which says nothing about the catalog.
 */
export function scratchRoot(): string {
  for (const base of ['/dev/shm', os.tmpdir()]) {
    try {
      return tempDir('mcec-cat-', base);
    } catch {
      // not writable here: try the next
    }
  }
  throw new Error('no writable temp dir');
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the built mcec-bundle synchronously. */
export function cli(args: string[], options: { cwd?: string } = {}): Run {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.MCEC_SESSIONS_DIR;
  const res = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env,
    cwd: options.cwd ?? ROOT,
    timeout: 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Run a node script, resolving with its output once it exits. */
export function runNode(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A validator for one schema file of schema/ (Ajv2020, strict); returns the problems found. */
export function validator(file: string): (value: unknown) => string[] {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const fn = ajv.compile(JSON.parse(fs.readFileSync(path.join(ROOT, 'schema', file), 'utf8')));
  return (value) =>
    fn(value) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
}
