// One image is one artifact however many places referred to it: the demo's Notepad capture comes back both as
// the envelope's `result` and as an MCP image block (same sha256), so the log has two rows for one file.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionReader } from '../../src/store/session-reader.js';
import { bundleValidators, readZip } from '../bundle/helpers.js';
import { useDemoSession } from '../support/demo-session.js';

const demoSession = useDemoSession();

describe('image counts', () => {
  it('agree across session.json, the report.html tile and its timeline for a capture referred to twice', async () => {
    const demo = demoSession();
    const reader = SessionReader.open(demo.sessionDir);
    const rows = reader.artifacts().filter((a) => a.path);
    reader.close();
    const files = new Set(rows.map((a) => a.path));
    // The premise: more rows than files, one file named by a result and an image block of the same call.
    expect(rows.length).toBeGreaterThan(files.size);
    const twice = rows.filter((a) => rows.filter((b) => b.sha256 === a.sha256).length > 1);
    expect(new Set(twice.map((a) => a.role))).toEqual(new Set(['result', 'image-block']));

    const entries = await readZip(demo.bundle);
    const entry = (name: string) => entries.find((e) => e.name.endsWith(`/${name}`))!.data.toString('utf8');
    const session = JSON.parse(entry('session.json')) as {
      artifacts: string[];
      counts: { artifacts: number };
    };
    expect(bundleValidators().session(session)).toEqual([]);
    expect(session.artifacts).toHaveLength(files.size);
    expect(session.counts.artifacts).toBe(files.size);

    const html = entry('report.html');
    const tile = /<b>(\d+)<\/b><span>images<\/span>/.exec(html)?.[1];
    const timeline = /calls &middot; (\d+) images<\/span>/.exec(html)?.[1];
    expect(Number(tile)).toBe(files.size);
    expect(Number(timeline)).toBe(files.size);
    // The session dir's copy of the page is the zip's.
    expect(fs.readFileSync(path.join(demo.sessionDir, 'report.html'), 'utf8')).toBe(html);
  }, 60_000);
});
