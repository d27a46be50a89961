// Session and artifact names are UTC: run this suite in a zone far from it.
process.env.TZ = 'America/St_Johns';

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import {
  type ReportHtmlOptions,
  renderReportHtml,
  renderReportHtmlStream,
} from '../../src/report/html/render-html.js';
import { buildSummary } from '../../src/report/summary.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { readZip } from '../bundle/helpers.js';
import { useDemoSession } from '../support/demo-session.js';
import { FixtureSession, makeSessionsDir, NOTEPAD, removeDir } from '../support/fixture-session.js';
import { noisePng } from '../support/images.js';
import { HOSTILE, writeScenario } from './scenario.js';

/** The whole page (as renderReportHtml builds it) and the streamed one, chunk by chunk, of the session in `dir`. */
async function bothWays(
  dir: string,
  options: ReportHtmlOptions = {},
): Promise<{ whole: Buffer; chunks: Buffer[] }> {
  const reader = SessionReader.open(dir);
  try {
    const summary = await buildSummary(reader);
    const whole = Buffer.from(await renderReportHtml(reader, summary, options), 'utf8');
    const chunks = [...(await renderReportHtmlStream(reader, summary, options))];
    return { whole, chunks };
  } finally {
    reader.close();
  }
}

/** The streamed bytes are the whole page's, byte for byte (with where they first differ when not). */
function expectSameBytes(streamed: Buffer, whole: Buffer): void {
  let at = 0;
  while (at < whole.length && streamed[at] === whole[at]) at++;
  expect({ length: streamed.length, firstDifference: at }).toEqual({
    length: whole.length,
    firstDifference: whole.length,
  });
}

/** Text that is not Latin-1 (two-byte strings, multi-byte UTF-8) and characters the page shows as \uXXXX. */
const AWKWARD = 'Überweisung – 東京 😀 \u202eevil\u202c bell\u0007 nul\u0000 tab\t';

describe('report.html streamed row by row', () => {
  let root: string;
  let big: string;

  beforeAll(async () => {
    root = makeSessionsDir();
    // 3,000 calls with awkward text, 30 captures, failures with warnings: enough to drop, clip and share rows.
    const pngs = await Promise.all(Array.from({ length: 30 }, (_, i) => noisePng(320, 200, i + 1)));
    const s = FixtureSession.create(root, { sessionId: '9a8b7c6d5e4f', scenario: `streamed ${AWKWARD}` });
    s.db.transaction(() => {
      for (let i = 0; i < 3_000; i++) {
        if (i % 100 === 50) {
          const image = s.storePng(pngs[(i - 50) / 100]!);
          const seq = s.call({
            tool: 'capture',
            args: { title: NOTEPAD.title },
            result: { ...s.summaryOf(image) },
          });
          s.artifactRow(seq, 'result', image);
        } else if (i % 37 === 0) {
          s.call({
            tool: 'find',
            args: { window: NOTEPAD.title, value: `${AWKWARD} ${i}` },
            error: {
              code: 'selector-matched-3',
              category: 'ambiguous',
              detail: `${AWKWARD} ${'x'.repeat(i % 900)}`,
            },
            warnings: [{ code: 'slow-uia', detail: AWKWARD }],
          });
        } else {
          s.call({
            tool: 'find',
            args: { window: NOTEPAD.title, value: `item ${i}` },
            result: { element: { name: i % 7 === 0 ? AWKWARD : `item ${i}`, text: 'y'.repeat(i % 500) } },
          });
        }
      }
    })();
    s.end({ passed: false, reason: AWKWARD });
    s.close();
    big = s.dir;
  }, 120_000);

  afterAll(() => removeDir(root));

  it('gives the bytes of the whole page, in chunks of about 64 KiB, for a page at its default cap', async () => {
    const { whole, chunks } = await bothWays(big);
    expectSameBytes(Buffer.concat(chunks), whole);
    expect(whole.length).toBeGreaterThan(1_000_000);
    expect(chunks.length).toBeGreaterThan(whole.length / (128 * 1024));
    for (const chunk of chunks) expect(chunk.length).toBeLessThan(200 * 1024);
    expect(whole.toString('utf8')).toContain('\\u202e'); // format characters escaped in the rows too
  });

  it('gives the same bytes when rows are dropped, clipped and left bare to fit a small cap', async () => {
    for (const maxBytes of [100_000, 400_000, 1_500_000]) {
      const { whole, chunks } = await bothWays(big, { maxBytes, maxThumbnails: 4 });
      expectSameBytes(Buffer.concat(chunks), whole);
      const text = whole.toString('utf8');
      if (maxBytes === 100_000) expect(text).toContain('are left out of the timeline');
      if (maxBytes === 400_000) expect(text).toMatch(/are (clipped|left out) to keep this page under/);
    }
  });

  it('gives the same bytes for the report.html scenario (hostile text, failures, images)', async () => {
    const scenarioRoot = makeSessionsDir();
    try {
      const scenario = await writeScenario(scenarioRoot);
      const { whole, chunks } = await bothWays(scenario.dir);
      expectSameBytes(Buffer.concat(chunks), whole);
      expect(whole.toString('utf8')).not.toContain(HOSTILE);
    } finally {
      removeDir(scenarioRoot);
    }
  });

  it('gives the whole page at once for a template without rows', async () => {
    const templates = path.join(root, 'templates');
    fs.mkdirSync(templates, { recursive: true });
    fs.writeFileSync(
      path.join(templates, 'report.html.hbs'),
      '<!doctype html><html><head><meta charset="utf-8"></head><body><h1>{{title}}</h1></body></html>\n',
    );
    const { whole, chunks } = await bothWays(big, { templatesDir: templates });
    expect(chunks).toHaveLength(1);
    expectSameBytes(chunks[0]!, whole);
    expect(whole.toString('utf8')).toContain('<h1>streamed');
  });

  it('puts the whole page into the bundle and the session dir, streamed', async () => {
    const out = path.join(root, 'out');
    const res = await buildBundle(big, { output: `${out}/`, reportHtmlInSessionDir: true });
    const entries = await readZip(res.bundle);
    const inZip = entries.find((e) => e.name.endsWith('/report.html'))!.data;
    const { whole } = await bothWays(big);
    expectSameBytes(inZip, whole);
    expect(res.reportHtml).toBe(path.join(big, 'report.html'));
    expectSameBytes(fs.readFileSync(res.reportHtml!), whole);
    expect(fs.readdirSync(big).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });
});

describe("report.html of the demo's sessions, streamed", () => {
  const demoSession = useDemoSession();

  it("gives the whole page's bytes for every session the demo recorded, in its bundle and session dir", async () => {
    const { sessionsDir } = demoSession();
    const dirs = fs
      .readdirSync(sessionsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && fs.existsSync(path.join(sessionsDir, d.name, 'session.sqlite')))
      .map((d) => path.join(sessionsDir, d.name));
    expect(dirs.length).toBeGreaterThan(0);
    for (const dir of dirs) {
      const { whole, chunks } = await bothWays(dir);
      expectSameBytes(Buffer.concat(chunks), whole);
      const zip = `${dir}.zip`;
      if (!fs.existsSync(zip)) continue;
      const inZip = (await readZip(zip)).find((e) => e.name.endsWith('/report.html'))!.data;
      expectSameBytes(inZip, whole);
      expectSameBytes(fs.readFileSync(path.join(dir, 'report.html')), whole);
    }
    expect(dirs.some((d) => fs.existsSync(`${d}.zip`))).toBe(true);
  });
});
