import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  PRECOMPILED_TEMPLATE_NAMES,
  precompileMarkdownTemplate,
  templateDigest,
} from '../../src/report/precompile.js';
import { PRECOMPILED_TEMPLATES } from '../../src/report/precompiled-templates.js';
import { BUILTIN_TEMPLATES_DIR, renderBugReport, renderFailureSummary } from '../../src/report/render.js';
import { calls, FixtureSession, summaryOfSession } from '../support/fixture-session.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const temp = tempDirPerTest();

/** A failed session with a recovered failure, a timeout, steps and warnings. */
function failedSession(): FixtureSession {
  const f = FixtureSession.create(temp.dir, { sessionId: 'precomp00001', scenario: 'save a file' });
  f.call(calls.displays());
  f.step('open Notepad', 'passed');
  f.call(calls.ambiguousFind());
  f.call(calls.findSave());
  f.call(calls.query(14, true));
  f.step('save', 'failed', 'the Saved label never appeared');
  f.call(calls.waitForTimeout());
  f.end();
  f.close();
  return f;
}

describe('precompiled Markdown templates', () => {
  it('match templates/ exactly (regenerate with `npx tsx src/report/precompile.ts` after an edit)', async () => {
    expect(Object.keys(PRECOMPILED_TEMPLATES).sort()).toEqual([...PRECOMPILED_TEMPLATE_NAMES].sort());
    for (const name of PRECOMPILED_TEMPLATE_NAMES) {
      const source = fs.readFileSync(path.join(BUILTIN_TEMPLATES_DIR, name), 'utf8');
      const stored = PRECOMPILED_TEMPLATES[name]!;
      expect(stored.sha256, `${name} changed since it was precompiled`).toBe(templateDigest(source));
      expect(stored.spec, `${name}: handlebars precompiles it differently now`).toBe(
        (await precompileMarkdownTemplate(source)).spec,
      );
    }
  });

  it('render exactly what compiling the same source at run time renders', async () => {
    const f = failedSession();
    const summary = await summaryOfSession(f.dir);
    // A trailing comment changes the source (so no precompiled spec matches) but not the output.
    const dir = tempDir('tpl-', temp.dir);
    for (const name of PRECOMPILED_TEMPLATE_NAMES) {
      const source = fs.readFileSync(path.join(BUILTIN_TEMPLATES_DIR, name), 'utf8');
      fs.writeFileSync(path.join(dir, name), `${source}{{!-- compiled at run time --}}`);
    }
    const builtIn = {
      summary: await renderFailureSummary(summary),
      bug: await renderBugReport(summary, { bundleName: 'b.zip' }),
    };
    const compiled = {
      summary: await renderFailureSummary(summary, { templatesDir: dir }),
      bug: await renderBugReport(summary, { templatesDir: dir, bundleName: 'b.zip' }),
    };
    expect(compiled).toEqual(builtIn);
    expect(builtIn.summary.split('\n')[0]).toBe('# save a file; FAIL');
    expect(builtIn.summary).toContain('failed with `wait-condition-timeout`');
    expect(builtIn.bug).toContain('b.zip');
  });

  it('load only date-fns entry points and handlebars/runtime when the built-in templates render', () => {
    const f = failedSession();
    const trace = path.join(temp.dir, 'esm.txt');
    const hooks = path.join(temp.dir, 'hooks.mjs');
    const main = path.join(temp.dir, 'main.mjs');
    fs.writeFileSync(
      hooks,
      `import fs from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(out, r.url + '\\n');
  return r;
}
`,
    );
    const dist = pathToFileURL(path.join(ROOT, 'dist')).href;
    fs.writeFileSync(
      main,
      `import { createRequire, register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { out: ${JSON.stringify(trace)} } });
const { SessionReader } = await import('${dist}/store/session-reader.js');
const { buildSummary } = await import('${dist}/report/summary.js');
const { renderFailureSummary, renderBugReport } = await import('${dist}/report/render.js');
const reader = SessionReader.open(${JSON.stringify(f.dir)});
const summary = await buildSummary(reader);
reader.close();
const text = (await renderFailureSummary(summary)) + (await renderBugReport(summary));
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ length: text.length, first: text.split('\\n')[0], cjs }));
`,
    );
    const res = spawnSync(process.execPath, [main], { encoding: 'utf8', cwd: ROOT });
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    const out = JSON.parse(res.stdout) as { length: number; first: string; cjs: string[] };
    expect(out.first).toBe('# save a file; FAIL');
    const esm = fs.readFileSync(trace, 'utf8').split('\n');
    expect(esm.some((u) => u.endsWith('/date-fns/parseISO.js'))).toBe(true);
    // The package index would load every date-fns function (150-450 ms).
    expect(esm.filter((u) => u.endsWith('/date-fns/index.js'))).toEqual([]);
    expect(esm.some((u) => u.endsWith('/handlebars/runtime.js'))).toBe(true);
    expect(esm.filter((u) => u.includes('/handlebars/lib/'))).toEqual([]);
    // No compiler: the precompiled specs ran on the runtime.
    expect(out.cjs.some((p) => p.endsWith('handlebars.runtime.js'))).toBe(true);
    expect(out.cjs.filter((p) => p.includes(`${path.sep}compiler${path.sep}`))).toEqual([]);
  });

  it('keeps handlebars and date-fns subpaths out of the report modules’ static imports', () => {
    const files = fs
      .readdirSync(path.join(ROOT, 'src/report'))
      .filter((file) => file.endsWith('.ts'))
      .map((file) => path.join(ROOT, 'src/report', file));
    for (const file of [...files, path.join(ROOT, 'src/store/session-reader.ts')]) {
      const source = fs.readFileSync(file, 'utf8');
      expect(source, file).not.toMatch(
        /^import\s+(?!type\b)[^;]*from\s+'(handlebars|date-fns|sharp)(\/[^']*)?'/m,
      );
    }
  });
});
