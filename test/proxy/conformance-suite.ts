/**
 * The MCP conformance suite (@modelcontextprotocol/conformance) as a test harness: run its server scenarios
 * against a URL and read back every check's status. The suite needs Node 22 (it imports fs.globSync): it runs
 * under this process's Node when that is 22 or later (CI's Node 22 pass), else under MCEC_NODE22 when set.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const CONFORMANCE = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);

/** A Node 22+ binary to run the suite with, or null (the suite is then skipped). */
export function node22(): string | null {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const given = process.env.MCEC_NODE22;
  return given && fs.existsSync(given) ? given : null;
}

/** `scenario/checkId` -> status (SUCCESS, FAILURE, WARNING, INFO...), with the error message when one is given. */
export type Checks = Map<string, string> & {
  /** `scenario/checkId` -> the `result` the check saw (a tool call's CallToolResult), when it names one. */
  results?: Map<string, unknown>;
};

/**
 * Run the suite's server scenarios (all of the active suite, or the one named) against `url`, results in
 * `outDir`; resolves with every check. The suite exits 1 when a check fails: that is a result, not an error.
 */
export async function runConformance(
  node: string,
  url: string,
  outDir: string,
  scenario?: string,
): Promise<Checks> {
  const args = [CONFORMANCE, 'server', '--url', url, '-o', outDir];
  if (scenario) args.push('--scenario', scenario);
  await new Promise<void>((resolve, reject) => {
    execFile(node, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      // Exit 1 is "some check failed"; anything else (a crash, a timeout) is the harness failing.
      if (err && (err as { code?: unknown }).code !== 1)
        reject(new Error(`conformance: ${err.message}\n${stderr}`));
      else if (!/=== SUMMARY ===|Test Results:/.test(stdout))
        reject(new Error(`conformance gave no results:\n${stdout}${stderr}`));
      else resolve();
    });
  });
  return readChecks(outDir);
}

/** The checks of every `server-<scenario>-<timestamp>/checks.json` under `outDir`. */
export function readChecks(outDir: string): Checks {
  const checks: Checks = new Map();
  const results = new Map<string, unknown>();
  checks.results = results;
  for (const dir of fs.readdirSync(outDir).sort()) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
    const file = path.join(outDir, dir, 'checks.json');
    if (!fs.existsSync(file)) continue;
    const list = JSON.parse(fs.readFileSync(file, 'utf8')) as Array<{
      id: string;
      status: string;
      errorMessage?: string;
      details?: { result?: unknown };
    }>;
    for (const c of list) {
      const key = `${scenario}/${c.id}`;
      const value = c.errorMessage ? `${c.status}: ${c.errorMessage}` : c.status;
      checks.set(key, checks.has(key) ? `${checks.get(key)} | ${value}` : value);
      if (c.details?.result !== undefined) results.set(key, c.details.result);
    }
  }
  return checks;
}

/** Checks whose result differs between `a` and `b`: key -> [a's, b's] (undefined when one has no such check). */
export function differences(a: Checks, b: Checks): Record<string, [string | undefined, string | undefined]> {
  const out: Record<string, [string | undefined, string | undefined]> = {};
  for (const key of new Set([...a.keys(), ...b.keys()]))
    if (a.get(key) !== b.get(key)) out[key] = [a.get(key), b.get(key)];
  return out;
}

/** Scenarios every check of which passed (INFO checks are notes, not results). */
export function passedScenarios(checks: Checks): string[] {
  const byScenario = new Map<string, boolean>();
  for (const [key, value] of checks) {
    const scenario = key.slice(0, key.indexOf('/'));
    if (value.startsWith('INFO')) continue;
    byScenario.set(scenario, (byScenario.get(scenario) ?? true) && value === 'SUCCESS');
  }
  return [...byScenario].filter(([, ok]) => ok).map(([s]) => s);
}
