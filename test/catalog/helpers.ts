/** Helpers of the catalog suites: a scratch root on tmpfs when there is one, the CLI, the listing schema. */
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { CatalogSession } from '../../src/store/catalog.js';
import { BUNDLE_CLI, type ChildRun, ROOT, runNodeSync } from '../support/programs.js';
import { tmpfsTempDir } from '../support/temp.js';

export { ROOT, runNode } from '../support/programs.js';
export const CLI = BUNDLE_CLI;

/** A scratch root on tmpfs when there is one: fleets write thousands of logs. */
export function scratchRoot(): string {
  return tmpfsTempDir('mcec-cat-');
}

export type Run = ChildRun;

/** Run the built mcec-bundle synchronously. */
export function cli(args: string[], options: { cwd?: string } = {}): Run {
  return runNodeSync([CLI, ...args], options);
}

/** A validator for one schema file of schema/ (Ajv2020, strict); returns the problems found. */
export function validator(file: string): (value: unknown) => string[] {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const fn = ajv.compile(JSON.parse(fs.readFileSync(path.join(ROOT, 'schema', file), 'utf8')));
  return (value) =>
    fn(value) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
}

/** A catalog row for an ended, passed session of 3 calls; `over` sets the rest. */
export function catalogSession(
  over: Partial<CatalogSession> & { dir_name: string; session_id: string },
): CatalogSession {
  return {
    scenario: null,
    server: 'MCEC',
    host: null,
    started_at: '2026-11-25T10:15:00.123Z',
    ended_at: null,
    duration_ms: 1200,
    duration: '1.2 s',
    last_activity_at: null,
    status: 'ended',
    unchecked_host: null,
    verdict: 'PASS',
    verdict_reason: null,
    calls: 3,
    failures: 0,
    recovered: 0,
    pending: 0,
    warnings: 0,
    artifacts: 0,
    fingerprints: '[]',
    error: null,
    ...over,
  };
}
