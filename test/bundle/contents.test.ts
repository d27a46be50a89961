// The bundle's files come from one list (src/contract/bundle-files.ts): a real bundle holds exactly them, and its
// bug-report.md, `mcec-bundle issue-body` and the MCP server's `bundle` tool name exactly those.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { REQUIRED_FILES, verifyBundle } from '../../src/bundle/verify.js';
import { BUNDLE_FILES, bundleFileList } from '../../src/contract/bundle-files.js';
import { runDemo } from '../../src/demo/index.js';
import { TOOLS } from '../../src/mcp-server/tools.js';
import { bugReportText } from '../../src/sessions/summarize.js';
import { removeDir, tempDir } from '../support/temp.js';
import { readZip } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ALL = BUNDLE_FILES.map((f) => f.name as string).sort();

/** The zip's files as BUNDLE_FILES names them (`artifacts/` for the images), read from its manifest. */
async function filesOf(zip: string): Promise<{ files: string[]; bugReport: string }> {
  const entries = await readZip(zip);
  const at = (name: string) => entries.find((e) => e.name.endsWith(`/${name}`))!.data.toString('utf8');
  const manifest = JSON.parse(at('manifest.json')) as { files: Array<{ path: string }> };
  const listed = manifest.files.map((f) => f.path.replace(/^artifacts\/.*$/, 'artifacts/'));
  // The manifest lists every other entry: it and the zip agree.
  const zipped = entries.map((e) =>
    e.name.slice(e.name.indexOf('/') + 1).replace(/^artifacts\/.*$/, 'artifacts/'),
  );
  expect([...new Set(zipped)].sort()).toEqual([...new Set([...listed, 'manifest.json'])].sort());
  return { files: [...new Set([...listed, 'manifest.json'])].sort(), bugReport: at('bug-report.md') };
}

/** The names bug-report.md's "Agent evidence" gives the attached bundle. */
function namedInBugReport(text: string): string[] {
  const line = text.split('\n').find((l) => l.startsWith('The attached bundle holds '));
  expect(line, 'the "The attached bundle holds" line').toBeDefined();
  return [...line!.matchAll(/`([^`]+)` \(/g)].map((m) => m[1]!).sort();
}

describe('the files of a bundle (src/contract/bundle-files.ts)', () => {
  let root: string;
  let demo: Awaited<ReturnType<typeof runDemo>>;

  beforeAll(async () => {
    root = tempDir('mcec-contents-');
    demo = await runDemo({ sessionsDir: path.join(root, 'sessions'), stderr: () => {} });
  }, 120_000);
  afterAll(() => removeDir(root));

  it('a full bundle holds exactly the files BUNDLE_FILES lists, and its bug-report.md names exactly them', async () => {
    const { files, bugReport } = await filesOf(demo.bundle);
    expect(files).toEqual(ALL);
    expect(namedInBugReport(bugReport)).toEqual(ALL);
  });

  it('a bundle without images, log or run.gif names exactly what it holds', async () => {
    const out = path.join(root, 'bare.zip');
    await buildBundle(demo.sessionDir, { output: out, images: false, db: false, gif: false });
    const { files, bugReport } = await filesOf(out);
    expect(files).toEqual(ALL.filter((n) => !['artifacts/', 'session.sqlite', 'run.gif'].includes(n)));
    expect(namedInBugReport(bugReport)).toEqual(files);
    expect((await verifyBundle(out)).ok).toBe(true);
  });

  it('verify requires exactly the required files, each in every bundle', () => {
    const required = BUNDLE_FILES.filter((f) => f.required);
    expect([...REQUIRED_FILES]).toEqual(required.map((f) => f.name));
    for (const f of required) expect(f.when, f.name).toBe('always');
  });

  it('issue-body (no bundle yet), bugReportText untold and the MCP bundle tool name every file', async () => {
    const text = await bugReportText(demo.sessionDir, { bundleFiles: bundleFileList() });
    expect(namedInBugReport(text)).toEqual(ALL);
    // A library user who gives no list gets every file, as before; [] leaves the sentence out.
    expect(await bugReportText(demo.sessionDir)).toBe(text);
    expect(await bugReportText(demo.sessionDir, { bundleFiles: [] })).not.toContain(
      'The attached bundle holds',
    );
    expect(text).toContain('`run.gif` (the run as an animated GIF; when the session has two still images');
    const tool = TOOLS.find((t) => t.name === 'bundle')!;
    expect([...tool.description.matchAll(/`([^`]+)` \(/g)].map((m) => m[1]!).sort()).toEqual(ALL);
  });

  it('src/bundle/README.md lists each under "What is in the zip"', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'src/bundle/README.md'), 'utf8');
    const start = readme.indexOf('## What is in the zip');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    for (const name of ALL) expect(section, name).toContain(`\n- \`${name}`);
  });
});
