/**
 * The package as a consumer gets it: `npm pack`, installed into a fresh project, type-checked by a strict
 * TypeScript consumer (skipLibCheck off) and run. Catches .d.ts that name untyped modules, missing files and
 * broken subpath exports, which tests against src/ cannot see.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The package root's runtime exports, exactly: the list README's "Library API" documents. */
const ROOT_EXPORTS = [
  'DEFAULT_MAX_ARTIFACT_BYTES',
  'DEFAULT_MAX_LOG_BYTES',
  'ERROR_CATEGORIES',
  'MaskRuleError',
  'ProxyConfigError',
  'SessionReader',
  'bugReportText',
  'buildBundle',
  'buildSummary',
  'createRecorder',
  'createRedactor',
  'declareVerdict',
  'failureSummaryText',
  'listSessionSummaries',
  'parseMaskRules',
  'pruneSessions',
  'readToolOutput',
  'recorderVersion',
  'renderBugReport',
  'renderFailureSummary',
  'renderReportHtml',
  'replaySession',
  'runStdioProxy',
  'sessionIdOf',
  'startHttpProxy',
  'summarizeSession',
  'validateCaptureSummary',
  'validateEnvelope',
  'verifyBundle',
  'writeFailureSummary',
  'writeReportHtml',
];
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let work: string;
let consumer: string;
let packed: string[];

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: false });
}

beforeAll(() => {
  work = tempDir('mcec-pack-');
  const out = JSON.parse(
    run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], root),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packed = out[0]!.files.map((f) => f.path);
  consumer = path.join(work, 'consumer');
  fs.mkdirSync(consumer);
  fs.writeFileSync(
    path.join(consumer, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  // --ignore-scripts: the consumer type-checks and imports; better-sqlite3's native build is not needed to
  // prove that, and it would cost two minutes. Versions come from this repository's lock.
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string }>;
  };
  const v = (name: string) => lock.packages[`node_modules/${name}`]!.version;
  run(
    npm,
    [
      'install',
      '--prefer-offline',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      path.join(work, out[0]!.filename),
      `typescript@${v('typescript')}`,
      `@types/node@${v('@types/node')}`,
    ],
    consumer,
  );
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the published package', () => {
  it('ships the built code, schemas, templates, LICENSE and the docs the README links to, and no source maps', () => {
    expect(packed).toContain('LICENSE');
    expect(packed).toContain('dist/index.d.ts');
    expect(packed).toContain('schema/session-log-event.schema.json');
    expect(packed).toContain('templates/failure-summary.md.hbs');
    expect(packed.filter((f) => f.endsWith('.map'))).toEqual([]);
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
      .map((m) => m[1]!)
      .filter((l) => !/^[a-z]+:/i.test(l));
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) {
      expect(fs.existsSync(path.join(root, link)), `README link ${link} exists in the repository`).toBe(true);
      expect(packed, `README link ${link} is in the package`).toContain(path.posix.normalize(link));
    }
  });

  it('exports exactly the documented API at the root, and the simulator and demo at mcec-recorder/sim', () => {
    const script = [
      "const root = await import('mcec-recorder');",
      "const sim = await import('mcec-recorder/sim');",
      'console.log(JSON.stringify({ root: Object.keys(root).sort(), sim: Object.keys(sim).sort(),',
      '  simTypes: [typeof sim.createSimulator, typeof sim.runDemo, typeof sim.envelopeOf] }));',
    ].join('\n');
    const out = JSON.parse(run(process.execPath, ['--input-type=module', '-e', script], consumer)) as {
      root: string[];
      sim: string[];
      simTypes: string[];
    };
    expect(out.root).toEqual([...ROOT_EXPORTS].sort());
    expect(out.simTypes).toEqual(['function', 'function', 'function']);
    // Nothing of the simulator or the demo leaks back into the root.
    expect(out.root.filter((name) => out.sim.includes(name))).toEqual([]);
    expect(packed).toContain('dist/sim.d.ts');
    // Each root name is in the README's API section (and nothing there is missing from the root).
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const api = readme.slice(
      readme.indexOf('## Library API'),
      readme.indexOf('\n## ', readme.indexOf('## Library API') + 1),
    );
    expect(api.length).toBeGreaterThan(100);
    for (const name of ROOT_EXPORTS) expect(api, `README names ${name}`).toContain(`\`${name}\``);
  });

  it('type-checks the README example in a strict consumer without skipLibCheck', () => {
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          types: ['node'],
        },
        include: ['index.ts'],
      }),
    );
    fs.writeFileSync(
      path.join(consumer, 'index.ts'),
      [
        "import { createRecorder, sessionIdOf, type Recorder } from 'mcec-recorder';",
        "const recorder: Recorder = createRecorder({ sessionsDir: './sessions', scenario: 'consumer' });",
        'const callTool = recorder.wrap(async (tool: string, args: Record<string, unknown>) => ({',
        "  sessionId: 'abc123def456', ok: true, result: { tool, args },",
        '}));',
        "const result = await callTool('windows', {});",
        'const sessionId = sessionIdOf(result);',
        "if (sessionId) recorder.step(sessionId, 'look around', 'passed');",
        'await recorder.close();',
        "import { createSimulator, runDemo, type Simulator } from 'mcec-recorder/sim';",
        "const sim: Simulator = createSimulator({ sessionsRoot: './sim' });",
        "const demo: Promise<{ reportHtml: string }> = runDemo({ sessionsDir: './sessions', simulator: sim });",
        'void demo;',
        '',
      ].join('\n'),
    );
    const tsc = path.join(consumer, 'node_modules', 'typescript', 'bin', 'tsc');
    let out = '';
    try {
      out = run(process.execPath, [tsc, '-p', '.'], consumer);
    } catch (err) {
      out = String((err as { stdout?: string }).stdout ?? err);
    }
    expect(out).toBe('');
    // tsc over the whole declaration graph (root and /sim): 31 s on a loaded 2-core machine.
  }, 180_000);
});
