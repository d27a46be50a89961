/**
 * A real MCP server that is not MCEC answers with images in formats the recorder reads no pixels of (an SVG
 * image block, a Windows icon holding a PNG, an SVG data: URI in structuredContent), recorded through
 * `mcec-record stdio`: each is written as it came, as a file named by its declared type, only its summary in the
 * log (an icon in an embedded resource's blob, which starts like no image, stays in the log as it came); the
 * bundle holds those files and verifies; the replay gives the SDK client the server's results back. Bytes that
 * say PNG and are none (garbage, a PNG cut short) are still refused, with the reason in the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { pidAlive } from '../../src/util/temp-files.js';
import { unzipTest } from '../bundle/helpers.js';
import { waitFor } from '../proxy/helpers.js';
import { readSessions } from '../proxy/sim-script.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { RECORD_CLI, REPLAY_CLI } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/opaque-image-server.mjs', import.meta.url));
const temp = tempDirPerTest('replay-opaque-images-');
const KEPT = ['icon-svg', 'icon-ico', 'icon-uri', 'icon-resource'];
const REFUSED = ['screen-garbage', 'screen-cut'];

async function call(transport: StdioClientTransport, tools: string[]): Promise<unknown[]> {
  const client = new Client({ name: 'opaque-images-test', version: '1.0.0' });
  await client.connect(transport);
  const results: unknown[] = [];
  for (const name of tools) results.push(await client.callTool({ name, arguments: {} }));
  await client.close();
  return results;
}

describe('images in a format the recorder reads no pixels of, from a server that is not MCEC', () => {
  it('are written as they came (.svg, .ico), bundled, verified and replayed; a false PNG is still refused', async () => {
    const tools = [...KEPT, ...REFUSED];
    const direct = await call(new StdioClientTransport({ command: process.execPath, args: [SERVER] }), tools);

    const sessionsDir = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessionsDir);
    const recording = new StdioClientTransport({
      command: process.execPath,
      args: [RECORD_CLI, 'stdio', '--sessions', sessionsDir, '--', process.execPath, SERVER],
      stderr: 'ignore',
    });
    expect(await call(recording, tools)).toEqual(direct);
    await waitFor(() => !pidAlive(recording.pid!), 20_000);

    const [s] = readSessions(sessionsDir);
    const artifactsDir = path.join(s!.dir, 'artifacts');
    // The SVG of the block and of the data: URI are the same bytes: one file.
    expect(fs.readdirSync(artifactsDir).sort()).toEqual([
      expect.stringMatching(/^image-call1-.+\.svg$/),
      expect.stringMatching(/^image-call2-.+\.ico$/),
    ]);
    const svgBytes = (direct[0] as { content: Array<{ data: string }> }).content[0]!.data;
    const svgFile = fs.readdirSync(artifactsDir).find((f) => f.endsWith('.svg'))!;
    expect(fs.readFileSync(path.join(artifactsDir, svgFile)).toString('base64')).toBe(svgBytes);
    for (const c of s!.calls) expect(c.response).not.toContain(svgBytes.slice(0, 64));

    // The summary says what was kept: the declared type, no size, no blankCheck.
    const svgSummary = JSON.parse(s!.calls[0]!.response!).result.content[0].summary;
    expect(svgSummary).toMatchObject({
      encoding: 'image/svg+xml',
      width: 0,
      height: 0,
      blankCheck: null,
      notRaster: true,
      artifact: `artifacts/${svgFile}`,
    });
    // The data: URI's summary keeps what stood before its bytes, and names the same file.
    expect(JSON.parse(s!.calls[2]!.response!).result.structuredContent.icon).toMatchObject({
      kind: 'capture-summary',
      encoding: 'image/svg+xml',
      notRaster: true,
      dataUri: 'image/svg+xml;base64',
      artifact: `artifacts/${svgFile}`,
    });
    // An embedded resource's blob is taken out only when its bytes are a sniffed image (as any string is): the
    // icon's blob, which starts like no image, is the server's data and stays in the log as it came.
    const icoBytes = (direct[3] as { content: Array<{ resource: { blob: string } }> }).content[0]!.resource
      .blob;
    expect(JSON.parse(s!.calls[3]!.response!).result.content[0].resource.blob).toBe(icoBytes);
    // A false PNG is refused as before: no file, the reason in the log.
    for (const seq of [5, 6]) {
      const block = JSON.parse(s!.calls[seq - 1]!.response!).result.content[0];
      expect(block.data).toBeUndefined();
      expect(block.summary.artifactError).toMatch(seq === 5 ? /not an image/ : /truncated png/);
    }

    const zip = path.join(temp.dir, 'bug.zip');
    const bundled = await runNode([BUNDLE_CLI, s!.session.session_id, '-o', zip, '--sessions', sessionsDir]);
    expect(bundled.stderr).not.toMatch(/left out|dropped/i);
    expect(bundled.code).toBe(0);
    // The page names the SVG but links no file that is not a raster image (its script would run outside the CSP).
    const page = fs.readFileSync(path.join(s!.dir, 'report.html'), 'utf8');
    expect(page).toMatch(/image-call1-[^"<]+\.svg/);
    expect(page).not.toMatch(/href="[^"]*\.svg"/);
    const verified = await runNode([BUNDLE_CLI, 'verify', '--json', zip]);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, problems: [] });
    const listing = unzipTest(zip);
    expect(listing).toMatch(/artifacts\/image-call1-.+\.svg/);
    expect(listing).toMatch(/artifacts\/image-call2-.+\.ico/);
    expect(listing).toMatch(/No errors detected/);

    const replayed = await call(
      new StdioClientTransport({
        command: process.execPath,
        args: [REPLAY_CLI, '--stdio', '--order', 'strict', s!.dir],
        stderr: 'ignore',
      }),
      KEPT,
    );
    // The data: URI comes back whole: before, only its base64 came back, without `data:image/svg+xml;base64,`.
    expect(replayed).toEqual(direct.slice(0, KEPT.length));
  }, 60_000);
});
